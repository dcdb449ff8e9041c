"""Semantic checks and normal form: names, arity, types, range restriction, strata.

:func:`analyse` turns a parsed :class:`~diffflow.dsl.ast.Program` into an
:class:`Analysed` program the compiler can translate without further checks:

* every relation is declared, used with its arity, and its attribute types
  resolved to one of ``number``, ``unsigned``, ``float``, ``symbol``;
* bodies are in disjunctive normal form: one :class:`Clause` per alternative;
* every variable of a head, a negation, a comparison or an aggregate's
  correlation is bound by a positive atom (or by ``x = expr`` of bound ones);
* every variable has one type, and expressions are well typed;
* relations are grouped into strata (strongly connected components in
  dependency order).  Negation, ``count`` and ``sum`` through recursion are
  rejected; ``min`` and ``max`` through recursion are accepted (monotonic
  aggregation, as in BigDatalog): the result is the fixpoint that iterating
  the rules from empty relations reaches;
* facts with constant expressions are evaluated (:mod:`.constants`),
  ``.pragma`` settings read (:mod:`.pragmas`), ``.plan`` orders checked
  (:mod:`.plans`), and relations declared ``inline`` unfolded into the rules
  that use them (:mod:`.inline`), so ``relations`` holds only what is computed.

>>> from diffflow.dsl.parser import parse
>>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl p(x: number, y: number)\\n"
...                   "p(x, y) :- e(x, y).\\np(x, z) :- p(x, y), e(y, z)."))
>>> [(s.relations, s.recursive) for s in a.strata]
[(['e'], False), (['p'], True)]
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from . import ast
from .constants import fold_fact
from .errors import DatalogError, did_you_mean

BASE_TYPES = ("number", "unsigned", "float", "symbol")
# accepted qualifiers; inline, no_inline and no_magic are read by .inline
_IGNORED_QUALIFIERS = {"btree", "brie", "inline", "no_inline", "magic", "no_magic", "override",
                       "btree_delete", "overridable"}
_OLD_IO_QUALIFIERS = {"input", "output", "printsize"}
_IO_PARAMS = {"IO", "filename", "delimiter", "headers", "attributeNames", "rfc4180",
              "compress"}
NUMBER_RANGE = (-(2**31), 2**31 - 1)
UNSIGNED_RANGE = (0, 2**32 - 1)


@dataclass
class Relation:
    name: str
    attributes: list      # names
    types: list           # base types
    declaration: ast.Declaration
    inputs: list = field(default_factory=list)     # .input directives
    outputs: list = field(default_factory=list)    # .output directives
    printsize: list = field(default_factory=list)  # .printsize directives
    facts: list = field(default_factory=list)      # ground rules from the program text
    clauses: list = field(default_factory=list)    # Clause objects with this head
    ruled: bool = False  # has rules in the text (even if unfolding left no clause)

    @property
    def arity(self) -> int:
        return len(self.attributes)

    @property
    def has_input(self) -> bool:
        """Whether facts can be inserted: ``.input``, facts in the text, or no rules at all."""
        return bool(self.inputs or self.facts or not (self.clauses or self.ruled))


@dataclass
class Clause:
    """One alternative of a rule: ``head :- literals`` with a flat conjunction.

    ``plan`` is the join order a ``.plan`` asked for (0-based positions of the
    positive atoms, see :mod:`.plans`); ``unfolded`` names the inline relations
    unfolded into this clause and ``seed_types`` the variable types their
    declarations gave (see :mod:`.inline`).
    """
    head: ast.Atom
    literals: list         # Atom | Negation | Comparison | Boolean
    rule: ast.Rule
    var_types: dict = field(default_factory=dict)
    plan: list | None = None
    plan_version: int | None = None
    seed_types: dict = field(default_factory=dict)
    unfolded: list = field(default_factory=list)


@dataclass
class Stratum:
    relations: list
    recursive: bool


@dataclass
class Analysed:
    program: ast.Program
    source: str
    relations: dict                        # name -> Relation, in declaration order
    strata: list                           # Stratum, in evaluation order
    notes: list = field(default_factory=list)
    pragmas: dict = field(default_factory=dict)    # key -> value, see .pragmas
    warnings: list = field(default_factory=list)   # DatalogWarning
    inlined: dict = field(default_factory=dict)    # name -> Relation unfolded, never computed


def analyse(program: ast.Program, source: str = "") -> Analysed:
    """Check a parsed program and bring it to the compiler's normal form."""
    return _Analyser(program, source).run()


class _Analyser:
    def __init__(self, program: ast.Program, source: str):
        self.program, self.source = program, source
        self.types: dict = {}
        self.relations: dict = {}
        self.fresh = 0
        self.synthetic: set = set()  # ids of comparisons made by name_expressions
        self.directives = list(program.directives)  # plus old-style qualifiers
        self._lenient = False  # see check_clause

    def error(self, message, node, hint=None):
        return DatalogError(message, self.source, self.program.filename,
                            getattr(node, "line", None), getattr(node, "column", None), hint)

    def run(self) -> Analysed:
        from . import inline as inlining
        from .plans import check_plans
        from .pragmas import read_pragmas

        self.resolve_types()
        self.declare()
        self.attach_directives()
        pragmas, warnings, pragma_notes = read_pragmas(self.program.pragmas, self.source,
                                                       self.program.filename)
        for rule in self.program.rules:
            self.add_rule(rule)
        inline = inlining.select(self, pragmas)
        for relation in self.relations.values():
            for clause in relation.clauses:
                self.check_clause(clause, lenient=relation.name in inline)
        inlining.check_uses(self, inline)
        strata, notes = self.stratify()
        check_plans(self, self.relations, strata)
        if inline:
            unfolded, inline_notes = inlining.unfold(self, inline)
            for name in inline:
                del self.relations[name]
            for name, clauses in unfolded.items():
                relation = self.relations[name]
                relation.ruled = bool(relation.clauses)
                relation.clauses = clauses
            strata, _ = self.stratify()
            notes += inline_notes
        return Analysed(self.program, self.source, self.relations, strata,
                        pragma_notes + notes, pragmas, warnings, inline)

    # -- declarations ----------------------------------------------------------------------
    def resolve_types(self):
        pending = {t.name: t for t in self.program.types}
        for t in self.program.types:
            if t.name in BASE_TYPES:
                raise self.error(f"type {t.name!r} is built in and cannot be redefined", t)

        def resolve(name, node, seen=()):
            if name in BASE_TYPES:
                return name
            if name in self.types:
                return self.types[name]
            if name in seen:
                raise self.error(f"type {name!r} is defined in terms of itself", node)
            decl = pending.get(name)
            if decl is None:
                raise self.error(f"unknown type {name!r}"
                                 f"{did_you_mean(name, [*BASE_TYPES, *pending])}", node,
                                 hint="use number, unsigned, float, symbol or a .type you "
                                      "declare")
            members = decl.alternatives or [decl.base]
            bases = {resolve(m, decl, (*seen, name)) for m in members}
            if len(bases) != 1:
                raise self.error(f"union type {name!r} mixes {sorted(bases)}; diffflow "
                                 f"supports unions only of one base type", decl)
            self.types[name] = bases.pop()
            return self.types[name]

        for t in self.program.types:
            resolve(t.name, t)

    def base_type(self, name, node) -> str:
        if name in BASE_TYPES:
            return name
        if name in self.types:
            return self.types[name]
        raise self.error(f"unknown type {name!r}{did_you_mean(name, [*BASE_TYPES, *self.types])}",
                         node, hint="use number, unsigned, float, symbol or a .type you declare")

    def declare(self):
        for decl in self.program.declarations:
            if decl.relation in self.relations:
                first = self.relations[decl.relation].declaration
                raise self.error(f"relation {decl.relation!r} is declared twice (first at line "
                                 f"{first.line})", decl)
            names = [a.name for a in decl.attributes]
            for a in decl.attributes:
                if names.count(a.name) > 1:
                    raise self.error(f"attribute {a.name!r} appears twice in {decl.relation!r}", a)
            types = [self.base_type(a.type, a) for a in decl.attributes]
            relation = Relation(decl.relation, names, types, decl)
            for q in decl.qualifiers:
                if q == "eqrel":
                    raise self.error(f"{decl.relation!r}: eqrel relations are not supported",
                                     decl, hint="write the symmetric and transitive rules "
                                                "explicitly")
                if q in _OLD_IO_QUALIFIERS:
                    directive = ast.Directive(decl.line, decl.column, q, decl.relation, {})
                    self.directives.append(directive)
                elif q not in _IGNORED_QUALIFIERS:
                    raise self.error(f"unknown qualifier {q!r} on {decl.relation!r}", decl,
                                     hint="supported: input, output, printsize, inline, "
                                          "no_inline and the ignored data-structure hints "
                                          "btree, brie")
            self.relations[decl.relation] = relation

    def lookup(self, name, node) -> Relation:
        relation = self.relations.get(name)
        if relation is None:
            raise self.error(f"unknown relation {name!r}{did_you_mean(name, self.relations)}",
                             node, hint=f"declare it first, e.g. .decl {name}(x: number)")
        return relation

    def attach_directives(self):
        for d in self.directives:
            relation = self.lookup(d.relation, d)
            for key in d.params:
                if key not in _IO_PARAMS:
                    raise self.error(f"unknown parameter {key!r} in .{d.kind} {d.relation}", d,
                                     hint=f"supported: {', '.join(sorted(_IO_PARAMS))}")
            if d.params.get("delimiter") == "":
                raise self.error(f"an empty delimiter in .{d.kind} {d.relation}", d,
                                 hint='omit delimiter for TAB, or give one, e.g. delimiter=","')
            io = d.params.get("IO", "file")
            if io not in ("file", "stdout") or (io == "stdout" and d.kind == "input"):
                raise self.error(f"unsupported IO={io!r} in .{d.kind} {d.relation}", d,
                                 hint="use IO=file (or IO=stdout for outputs)")
            {"input": relation.inputs, "output": relation.outputs,
             "printsize": relation.printsize}[d.kind].append(d)

    # -- rules ----------------------------------------------------------------------------
    def add_rule(self, rule: ast.Rule):
        relation = self.lookup(rule.head.relation, rule.head)
        self.check_atom(rule.head)
        if not rule.body:
            if rule.plan:
                raise self.error("a fact has no body to plan", rule.plan[0],
                                 hint="remove the .plan after the fact")
            fact = fold_fact(self, rule, relation)  # constant expressions evaluated
            if fact is not None:
                relation.facts.append(fact)
            return
        for arg in rule.head.args:
            if isinstance(arg, ast.Wildcard):
                raise self.error(f"'_' in the head of {rule.head.relation}: a head needs a value "
                                 f"for every attribute", arg, hint="use a variable bound in the "
                                 "body or a constant")
        for alternative in rule.body:
            for literals in self.expand(alternative):
                relation.clauses.append(Clause(rule.head, self.name_expressions(literals), rule))

    def name_expressions(self, literals):
        """``r(x, y + 1)`` in a body becomes ``r(x, #e1), #e1 = y + 1`` (likewise aggregates)."""
        out, extra = [], []
        for lit in literals:
            atom = lit.atom if isinstance(lit, ast.Negation) else lit
            if isinstance(atom, ast.Atom) and any(
                    isinstance(a, (ast.BinaryOp, ast.Negative, ast.AggregateTerm))
                    for a in atom.args):
                args = []
                for a in atom.args:
                    if isinstance(a, (ast.BinaryOp, ast.Negative, ast.AggregateTerm)):
                        self.fresh += 1
                        var = ast.Var(a.line, a.column, f"#e{self.fresh}")
                        comparison = ast.Comparison(a.line, a.column, "=", var, a)
                        self.synthetic.add(id(comparison))
                        extra.append(comparison)
                        args.append(var)
                    else:
                        args.append(a)
                atom = ast.Atom(atom.line, atom.column, atom.relation, args)
                lit = ast.Negation(lit.line, lit.column, atom) \
                    if isinstance(lit, ast.Negation) else atom
            out.append(lit)
        return out + extra

    def expand(self, conjunction: ast.Conjunction):
        """Disjunctive normal form of a conjunction (nested ``;`` groups multiply out)."""
        options = []
        for literal in conjunction.literals:
            if isinstance(literal, ast.Disjunction):
                options.append([lits for alt in literal.alternatives for lits in self.expand(alt)])
            else:
                options.append([[literal]])
        for combination in itertools.product(*options):
            yield [lit for part in combination for lit in part]

    def check_atom(self, atom: ast.Atom) -> Relation:
        relation = self.lookup(atom.relation, atom)
        if len(atom.args) != relation.arity:
            decl = relation.declaration
            raise self.error(f"{atom.relation} has {relation.arity} attribute(s) but is used with "
                             f"{len(atom.args)}", atom,
                             hint=f"declared at line {decl.line}: .decl {atom.relation}("
                                  + ", ".join(f"{n}: {t}" for n, t in
                                              zip(relation.attributes, relation.types)) + ")")
        return relation

    def check_constant(self, node, kind):
        if isinstance(node, ast.String):
            if kind != "symbol":
                raise self.error(f"type clash: a string where a {kind} is expected", node)
        elif isinstance(node, ast.Float):
            if kind != "float":
                raise self.error(f"type clash: a float where a {kind} is expected", node)
        elif isinstance(node, ast.Number):
            if kind == "symbol":
                raise self.error("type clash: a number where a symbol is expected", node,
                                 hint='write symbols in double quotes, e.g. "a"')
            if node.unsigned and kind == "number":
                raise self.error("type clash: an unsigned constant where a number is expected",
                                 node)
            low, high = UNSIGNED_RANGE if kind == "unsigned" else NUMBER_RANGE
            if kind != "float" and not low <= node.value <= high:
                raise self.error(f"{node.value} does not fit a 32-bit {kind}", node,
                                 hint="use unsigned (e.g. 4000000000u) or float for larger "
                                      "values" if kind == "number" else None)

    # -- one clause: binding and types ------------------------------------------------------
    def check_clause(self, clause: Clause, lenient: bool = False):
        """Binding and types of one clause; sets ``clause.var_types``.

        ``lenient`` (for the clauses of an inline relation) skips the binding checks,
        which apply to the clauses it is unfolded into, and types the head's
        variables from the declaration.
        """
        types: dict = {}
        origin: dict = {}
        seeds = dict(clause.seed_types)
        if lenient:
            head = self.relations[clause.head.relation]
            for arg, kind in zip(clause.head.args, head.types):
                if isinstance(arg, ast.Var):
                    seeds.setdefault(arg.name, kind)
        for name, kind in seeds.items():
            types[name] = kind
            origin[name] = "declared by an inline relation's attribute"
        self._lenient = lenient
        try:
            self._check_clause(clause, types, origin)
        finally:
            self._lenient = False

    def _check_clause(self, clause: Clause, types: dict, origin: dict):

        def set_type(var: ast.Var, kind: str, where: str):
            known = types.get(var.name)
            if known is None:
                types[var.name] = kind
                origin[var.name] = where
            elif known != kind:
                raise self.error(f"type clash: variable {var.name!r} is a {known} "
                                 f"({origin[var.name]}) but a {kind} here", var,
                                 hint="a variable has one type; rename one of the uses or "
                                      "convert explicitly")

        def positive_atoms(literals):
            return [l for l in literals if isinstance(l, ast.Atom)]

        # variables bound by positive atoms (outside aggregates) and their types
        bound = set()
        for atom in positive_atoms(clause.literals):
            relation = self.check_atom(atom)
            for arg, kind in zip(atom.args, relation.types):
                if isinstance(arg, ast.Var):
                    set_type(arg, kind, f"attribute {relation.attributes[atom.args.index(arg)]!r}"
                             f" of {atom.relation} at line {arg.line}")
                    bound.add(arg.name)
                elif isinstance(arg, ast.Wildcard):
                    pass
                elif isinstance(arg, (ast.Number, ast.Float, ast.String)):
                    self.check_constant(arg, kind)
                else:  # pragma: no cover - name_expressions removed these
                    raise AssertionError(arg)
        comparisons = [l for l in clause.literals if isinstance(l, ast.Comparison)]
        self.bind_assignments(comparisons, bound)
        for lit in clause.literals:
            if isinstance(lit, ast.Negation):
                self.check_atom(lit.atom)
                self.require_bound(lit.atom.args, bound, f"the negation !{lit.atom.relation}")
            elif isinstance(lit, ast.Comparison):
                where = "an expression inside an atom" if id(lit) in self.synthetic \
                    else "a comparison"
                for side in (lit.left, lit.right):
                    self.require_bound([side], bound, where, aggregates=True)
            elif isinstance(lit, ast.Atom):
                pass
        self.require_bound(clause.head.args, bound, f"the head of {clause.head.relation}",
                           aggregates=True)
        # aggregates: their body binds local variables
        for agg in self.aggregates_in(clause):
            self.check_aggregate(agg, bound, types)
        # expression types (assignments first, in binding order)
        def attempt(node):
            try:
                return self.expr_type(node, types, strict=False)
            except _Unknown:
                return _UNKNOWN

        pending = list(comparisons)
        progress = True
        while pending and progress:
            progress = False
            for c in list(pending):
                left, right = attempt(c.left), attempt(c.right)
                for target, kind, other in ((c.left, left, right), (c.right, right, left)):
                    if c.op == "=" and kind is None and isinstance(target, ast.Var) and \
                            other not in (None, _UNKNOWN):
                        set_type(target, "number" if other == "literal" else other,
                                 f"assigned at line {c.line}")
                        self.check_literal_ranges(c.left, types[target.name])
                        self.check_literal_ranges(c.right, types[target.name])
                        break
                else:
                    if left in (None, _UNKNOWN) or right in (None, _UNKNOWN):
                        continue
                    self.check_comparison(c, left, right)
                pending.remove(c)
                progress = True
        for c in pending:  # still unknown: variables only compared with each other
            raise self.error("cannot infer the type of this comparison", c)
        for lit in clause.literals:
            if isinstance(lit, ast.Negation):
                relation = self.relations[lit.atom.relation]
                self.check_args_against(lit.atom, relation, types)
        head = self.relations[clause.head.relation]
        for arg, kind, name in zip(clause.head.args, head.types, head.attributes):
            got = self.expr_type(arg, types)
            if got != kind and not (got == "literal" and kind != "symbol"):
                raise self.error(f"type clash: attribute {name!r} of {head.name} is a {kind}, "
                                 f"but this is a {_kind_name(got)}", arg)
            if isinstance(arg, (ast.Number, ast.Float, ast.String)):
                self.check_constant(arg, kind)
            else:
                self.check_literal_ranges(arg, kind)
        clause.var_types = types

    def check_args_against(self, atom, relation, types):
        for arg, kind in zip(atom.args, relation.types):
            if isinstance(arg, ast.Var) and types.get(arg.name) not in (None, kind):
                raise self.error(f"type clash: variable {arg.name!r} is a {types[arg.name]} but "
                                 f"{atom.relation} expects a {kind} here", arg)
            if isinstance(arg, (ast.Number, ast.Float, ast.String)):
                self.check_constant(arg, kind)

    def aggregates_in(self, clause):
        found = []

        def walk(node):
            if isinstance(node, ast.AggregateTerm):
                found.append(node)
            elif isinstance(node, ast.BinaryOp):
                walk(node.left), walk(node.right)
            elif isinstance(node, ast.Negative):
                walk(node.operand)

        for lit in clause.literals:
            if isinstance(lit, ast.Comparison):
                walk(lit.left), walk(lit.right)
        for arg in clause.head.args:
            walk(arg)
        return found

    def check_aggregate(self, agg: ast.AggregateTerm, outer_bound: set, types: dict):
        local_bound = set()
        for lit in agg.body:
            if isinstance(lit, ast.Disjunction):
                raise self.error("';' inside an aggregate body is not supported", lit,
                                 hint="aggregate over a helper relation defined by several "
                                      "rules")
            if isinstance(lit, ast.Atom):
                relation = self.check_atom(lit)
                for arg, kind in zip(lit.args, relation.types):
                    if isinstance(arg, ast.Var):
                        known = types.get(arg.name)
                        if known is not None and known != kind:
                            raise self.error(f"type clash: variable {arg.name!r} is a {known} "
                                             f"but {lit.relation} expects a {kind} here", arg)
                        types.setdefault(arg.name, kind)
                        local_bound.add(arg.name)
                    elif isinstance(arg, (ast.Number, ast.Float, ast.String)):
                        self.check_constant(arg, kind)
                    elif not isinstance(arg, ast.Wildcard):
                        raise self.error("an expression inside a body atom; bind it to a "
                                         "variable first", arg)
        if not any(isinstance(l, ast.Atom) for l in agg.body):
            raise self.error(f"the body of {agg.function} needs at least one positive atom", agg)
        bound = outer_bound | local_bound
        self.bind_assignments([l for l in agg.body if isinstance(l, ast.Comparison)], bound)
        for lit in agg.body:
            if isinstance(lit, ast.Negation):
                self.check_atom(lit.atom)
                self.require_bound(lit.atom.args, bound, f"the negation !{lit.atom.relation}")
            elif isinstance(lit, ast.Comparison):
                if any(isinstance(n, ast.AggregateTerm) for n in _walk_term(lit.left, lit.right)):
                    raise self.error("nested aggregates are not supported", lit)
                self.require_bound([lit.left, lit.right], bound, "a comparison")
        if agg.target is not None:
            self.require_bound([agg.target], bound, f"the {agg.function} target")
        # body comparisons: types
        for lit in agg.body:
            if isinstance(lit, ast.Comparison):
                left = self.expr_type(lit.left, types, strict=False)
                right = self.expr_type(lit.right, types, strict=False)
                if lit.op == "=" and isinstance(lit.left, ast.Var) and lit.left.name not in types:
                    types[lit.left.name] = right
                elif lit.op == "=" and isinstance(lit.right, ast.Var) and \
                        lit.right.name not in types:
                    types[lit.right.name] = left
                else:
                    self.check_comparison(lit, left, right)
            elif isinstance(lit, ast.Negation):
                self.check_args_against(lit.atom, self.relations[lit.atom.relation], types)
        if agg.target is not None:
            kind = self.expr_type(agg.target, types)
            if kind == "symbol":
                raise self.error(f"{agg.function} of a symbol is not supported", agg.target,
                                 hint="aggregate a number, unsigned or float")

    def bind_assignments(self, comparisons, bound: set) -> None:
        """Add to ``bound`` every ``x = expr`` target whose expression is bound (fixpoint)."""
        changed = True
        while changed:
            changed = False
            for c in comparisons:
                if c.op != "=":
                    continue
                for target, expr in ((c.left, c.right), (c.right, c.left)):
                    if isinstance(target, ast.Var) and target.name not in bound and \
                            self.bindable(expr, bound):
                        bound.add(target.name)
                        changed = True
                        break

    def bindable(self, expr, bound) -> bool:
        if isinstance(expr, ast.AggregateTerm):
            return True  # its correlation variables are checked separately
        return all(v.name in bound for v in _variables(expr))

    def require_bound(self, terms, bound, where, aggregates=False):
        if self._lenient:
            return
        for term in terms:
            for var in _variables(term, into_aggregates=False):
                if var.name not in bound:
                    raise self.error(f"variable {var.name!r} in {where} is not bound by a positive "
                                     f"atom", var,
                                     hint=f"add an atom that contains {var.name!r} to the body, "
                                          f"or assign it with {var.name} = <expression>")

    # -- expression types ---------------------------------------------------------------------
    def expr_type(self, node, types, strict=True):
        """Base type of a term; ``"literal"`` for an untyped integer, None for a free var."""
        if isinstance(node, ast.Var):
            kind = types.get(node.name)
            if kind is None and strict:
                raise _Unknown()
            return kind
        if isinstance(node, ast.Number):
            return "unsigned" if node.unsigned else "literal"
        if isinstance(node, ast.Float):
            return "float"
        if isinstance(node, ast.String):
            return "symbol"
        if isinstance(node, ast.Wildcard):
            raise self.error("'_' is only allowed as an atom argument", node)
        if isinstance(node, ast.AggregateTerm):
            if node.function == "count":
                return "number"
            return self.expr_type(node.target, types, strict)
        if isinstance(node, ast.Negative):
            kind = self.expr_type(node.operand, types, strict)
            if kind == "symbol":
                raise self.error("unary minus of a symbol", node)
            if kind == "unsigned":
                raise self.error("unary minus of an unsigned value", node)
            return kind
        if isinstance(node, ast.BinaryOp):
            left = self.expr_type(node.left, types, strict)
            right = self.expr_type(node.right, types, strict)
            if "symbol" in (left, right):
                raise self.error(f"arithmetic '{node.op}' on a symbol", node,
                                 hint="symbols support only = and != comparisons")
            return _unify(self, node, left, right)
        raise AssertionError(node)

    def check_literal_ranges(self, node, kind):
        """Integer constants inside a term must fit the term's 32-bit type."""
        for n in _walk_term(node):
            if isinstance(n, ast.Number) and kind in ("number", "unsigned"):
                low, high = NUMBER_RANGE if kind == "number" else UNSIGNED_RANGE
                if not low <= n.value <= high:
                    raise self.error(f"{n.value} does not fit a 32-bit {kind}", n,
                                     hint="use unsigned (e.g. 4000000000u) or float for "
                                          "larger values" if kind == "number" else None)

    def check_comparison(self, c: ast.Comparison, left, right):
        if left is None or right is None:
            raise self.error("cannot infer the type of this comparison", c)
        what = "an expression inside an atom" if id(c) in self.synthetic else "comparison"
        kind = _unify(self, c, left, right, what=what)
        self.check_literal_ranges(c.left, kind)
        self.check_literal_ranges(c.right, kind)
        if "symbol" in (left, right) and c.op not in ("=", "!="):
            raise self.error(f"symbols compare only with = and !=, not {c.op!r}", c,
                             hint="diffflow stores symbols as hashes, so they have no order")

    # -- strata ---------------------------------------------------------------------------
    def stratify(self):
        names = list(self.relations)
        edges = {n: [] for n in names}  # head -> [(body relation, kind, node)]
        for relation in self.relations.values():
            for clause in relation.clauses:
                for lit in clause.literals:
                    if isinstance(lit, ast.Atom):
                        edges[relation.name].append((lit.relation, "positive", lit))
                    elif isinstance(lit, ast.Negation):
                        edges[relation.name].append((lit.atom.relation, "negation", lit))
                for agg in self.aggregates_in(clause):
                    for lit in agg.body:
                        if isinstance(lit, ast.Atom):
                            edges[relation.name].append((lit.relation, agg.function, lit))
                        elif isinstance(lit, ast.Negation):
                            edges[relation.name].append((lit.atom.relation, "negation", lit))
        components = _tarjan(names, {n: [b for b, _, _ in edges[n]] for n in names})
        component_of = {n: i for i, comp in enumerate(components) for n in comp}
        notes = []
        for head in names:
            for body, kind, node in edges[head]:
                if component_of[body] != component_of[head]:
                    continue
                if kind in ("negation", "count", "sum"):
                    cycle = _cycle_through(head, body, edges, component_of)
                    what = "negation" if kind == "negation" else f"the {kind} aggregate"
                    through = [r for r in cycle if r != body]
                    via = f" through {', '.join(repr(r) for r in through)}" if through else ""
                    raise self.error(
                        f"{what} of {body!r} is in a cycle{via} — the program is not "
                        f"stratifiable", node,
                        hint=f"{body!r} depends on {head!r}; break the cycle (compute "
                             f"{body!r} in an earlier stratum)" +
                             ("; min and max may recur, count and sum may not"
                              if kind != "negation" else ""))
                if kind in ("min", "max"):
                    notes.append(f"{head}: {kind} through recursion via {body} (monotonic "
                                 f"aggregation; the fixpoint of iterating from empty)")
        strata = []
        for comp in components:  # Tarjan yields components in reverse topological order
            ordered = [n for n in names if n in comp]
            recursive = len(ordered) > 1 or any(b == ordered[0] for b, _, _ in edges[ordered[0]])
            strata.append(Stratum(ordered, recursive))
        return strata, notes


class _Unknown(Exception):
    """An expression's type depends on a variable whose type is not known yet."""


_UNKNOWN = "?"


def _unify(analyser, node, left, right, what="arithmetic"):
    if left is None or right is None:
        raise _Unknown()
    if "literal" in (left, right) and "symbol" in (left, right):
        raise analyser.error(f"type clash in {what}: a number and a symbol", node,
                             hint='write symbols in double quotes, e.g. "a"')
    if left == "literal":
        return right
    if right == "literal" or left == right:
        return left
    raise analyser.error(f"type clash in {what}: {left} {node.op} {right}", node,
                         hint="both sides need the same type; diffflow, like Soufflé, "
                              "does not convert between number, unsigned, float and symbol")


def _kind_name(kind):
    return "number" if kind == "literal" else kind


def _variables(node, into_aggregates=False):
    """Variables in a term (aggregate bodies are separate scopes unless asked)."""
    if isinstance(node, ast.Var):
        return [node]
    if isinstance(node, ast.BinaryOp):
        return _variables(node.left, into_aggregates) + _variables(node.right, into_aggregates)
    if isinstance(node, ast.Negative):
        return _variables(node.operand, into_aggregates)
    if isinstance(node, ast.AggregateTerm) and into_aggregates:
        out = _variables(node.target, True) if node.target is not None else []
        for lit in node.body:
            if isinstance(lit, ast.Atom):
                out += [v for a in lit.args for v in _variables(a)]
        return out
    return []


def _walk_term(*nodes):
    """Every sub-term of the given terms (aggregate bodies are not entered)."""
    stack = list(nodes)
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, ast.BinaryOp):
            stack += [n.left, n.right]
        elif isinstance(n, ast.Negative):
            stack.append(n.operand)


def _tarjan(nodes, successors):
    """Strongly connected components, dependencies before dependents."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = itertools.count()

    def visit(root):
        work = [(root, iter(successors[root]))]
        index[root] = low[root] = next(counter)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = next(counter)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(component)

    for n in nodes:
        if n not in index:
            visit(n)
    return out


def _cycle_through(head, body, edges, component_of):
    """Relations on a dependency path from ``body`` back to ``head`` (for messages)."""
    target = component_of[head]
    previous, frontier = {body: None}, [body]
    while frontier:
        nxt = []
        for n in frontier:
            if n == head:
                path = []
                while n is not None:
                    path.append(n)
                    n = previous[n]
                return path[::-1]
            for succ, _, _ in edges[n]:
                if succ not in previous and component_of[succ] == target:
                    previous[succ] = n
                    nxt.append(succ)
        frontier = nxt
    return [body, head]
