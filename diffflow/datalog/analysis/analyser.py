"""The state of a program under analysis, and the checks and rewrites analysis makes on it.

An :class:`Analyser` holds what the analysis passes (listed in order in
:mod:`diffflow.datalog.passes`) build up -- types, record and ADT structures, relations with
their clauses, pragmas, strata -- and the checks that read declarations and rules: relations
declared once, used with their arity; bodies in disjunctive normal form, one
:class:`~diffflow.datalog.analysis.analysed.Clause` per alternative; expressions in atoms
named (``r(x + 1)`` is ``r(#e1), #e1 = x + 1``); every variable bound and typed
(:mod:`.clauses`, :mod:`.types`, inherited).  Errors point at the program text.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl p(x: number, y: number)\\n"
...                   "p(x, y) :- e(x, y).\\np(x, z) :- p(x, y), e(y, z)."))
>>> [(s.relations, s.recursive) for s in a.strata]
[(['e'], False), (['p'], True)]
"""
from __future__ import annotations

import dataclasses
import itertools

from diffflow.datalog.analysis.aggregate_scopes import (
    check_mutual_dependence,
    scope_aggregates,
)
from diffflow.datalog.analysis.analysed import Clause, Relation
from diffflow.datalog.analysis.clauses import ClauseChecks
from diffflow.datalog.analysis.constants import fold_fact
from diffflow.datalog.analysis.anonymous_records import take_apart_anonymous
from diffflow.datalog.analysis.patterns import negated_patterns
from diffflow.datalog.analysis.types import base_type
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogError, did_you_mean
from diffflow.datalog.syntax.intrinsics import GENERATORS, is_counter

# accepted qualifiers; inline, no_inline and no_magic are read by .inline
_IGNORED_QUALIFIERS = {"btree", "brie", "inline", "no_inline", "magic", "no_magic", "override",
                       "btree_delete", "overridable"}
_OLD_IO_QUALIFIERS = {"input", "output", "printsize"}
_IO_PARAMS = {"IO", "filename", "delimiter", "headers", "attributeNames", "rfc4180",
              "compress", "format"}


class Analyser(ClauseChecks):
    """A program under analysis (see module doc); ``functors`` binds its user-defined
    functors, ``eqrel_as_rules`` writes each eqrel relation as its closure rules."""

    def __init__(self, program: ast.Program, source: str, functors: dict | None = None,
                 eqrel_as_rules: bool = False):
        self.program, self.source = program, source
        self.eqrel_as_rules = eqrel_as_rules
        self.bindings = dict(functors or {})  # user-defined functors' Python callables
        self.types: dict = {}
        self.structures: dict = {}  # record and ADT types
        self.relations: dict = {}
        self.fresh = 0
        self.synthetic: set = set()  # ids of comparisons made by name_expressions
        self.directives = list(program.directives)  # plus old-style qualifiers
        self.pragmas: dict = {}      # .pragma settings, then what reading them found:
        self.warnings: list = []
        self.pragma_notes: list = []
        self.notes: list = []        # what the plan shows about the program's rewrites
        self.inline: dict = {}       # relations to unfold (transform.inline)
        self.strata: list = []

    def error(self, message, node, hint=None):
        return DatalogError(message, self.source, self.program.filename,
                            getattr(node, "line", None), getattr(node, "column", None), hint)

    # -- declarations ----------------------------------------------------------------------
    def declare(self):
        for decl in self.program.declarations:
            if decl.relation in self.relations:
                first = self.relations[decl.relation].declaration
                raise self.error(f"relation {decl.relation!r} is declared twice (first at line "
                                 f"{first.line})", decl)
            if decl.relation in self.types:
                kind = next(t for t in self.program.types if t.name == decl.relation)
                raise self.error(f"relation {decl.relation!r} has the name of the type declared "
                                 f"at line {kind.line}; as in Soufflé, a type and a relation "
                                 f"need different names", decl,
                                 hint="rename the relation or the type")
            names = [a.name for a in decl.attributes]
            for a in decl.attributes:
                if names.count(a.name) > 1:
                    raise self.error(f"attribute {a.name!r} appears twice in {decl.relation!r}", a)
            types = [base_type(a.type, a, self.types, self.error) for a in decl.attributes]
            relation = Relation(decl.relation, names, types, decl)
            for q in decl.qualifiers:
                if q == "eqrel":
                    if len(types) != 2 or types[0] != types[1]:
                        raise self.error(f"eqrel relation {decl.relation!r} must have two "
                                         f"attributes of one type", decl,
                                         hint=f".decl {decl.relation}(a: number, b: number) "
                                              f"eqrel")
                    relation.eqrel = True
                elif q in _OLD_IO_QUALIFIERS:
                    directive = ast.Directive(decl.line, decl.column, q, decl.relation, {})
                    self.directives.append(directive)
                elif q not in _IGNORED_QUALIFIERS:
                    raise self.error(f"unknown qualifier {q!r} on {decl.relation!r}", decl,
                                     hint="supported: input, output, printsize, inline, "
                                          "no_inline and the ignored data-structure hints "
                                          "btree, brie")
            relation.choice = self.choice_domains(decl, names)
            if relation.eqrel and relation.choice:
                raise self.error(f"{decl.relation!r} is eqrel and has a choice-domain; an "
                                 f"equivalence relation cannot also pick one tuple per value",
                                 decl.choice[0])
            self.relations[decl.relation] = relation

    def closure_rules(self) -> list:
        """With ``eqrel_as_rules``: each eqrel relation's transitive, symmetric and
        reflexive rules, placed at its declaration, written and numbered after its own rules
        as Soufflé writes them (``A(x,z) :- A(x,y), A(y,z).``, ``A(x,y) :- A(y,x).``,
        ``A(x,x) :- A(x,_).``)."""
        rules = []
        for relation in self.relations.values():
            if not (relation.eqrel and self.eqrel_as_rules):
                continue
            relation.eqrel = False
            # as a relation without rules would: its own rules do not make it derived only
            relation.takes_facts = not any(r.body and r.head.relation == relation.name
                                           for r in self.program.rules)
            at = relation.declaration.line, relation.declaration.column

            def atom(a, b, name=relation.name):
                return ast.Atom(*at, name, [ast.Wildcard(*at) if v == "_" else ast.Var(*at, v)
                                            for v in (a, b)])

            for head, *body in [(atom("x", "z"), atom("x", "y"), atom("y", "z")),
                                (atom("x", "y"), atom("y", "x")),
                                (atom("x", "x"), atom("x", "_"))]:
                relation.closure.append(ast.Rule(*at, head, [ast.Conjunction(*at, body)]))
            rules += relation.closure
        return rules

    def choice_domains(self, decl, names: list) -> list:
        """``choice-domain x, (y, z)`` as lists of attribute positions, checked.

        As in Soufflé, an attribute named twice in one key (``(x, x)``) counts once, and a
        key given twice (``x, x`` or ``(x, y), (y, x)``) is one key."""
        domains = []
        for domain in decl.choice:
            positions = []
            for name in domain.attributes:
                if name not in names:
                    raise self.error(f"choice-domain of {decl.relation!r} names {name!r}, "
                                     f"which is not one of its attributes"
                                     f"{did_you_mean(name, names)}", domain,
                                     hint=f"attributes: {', '.join(names)}")
                if names.index(name) not in positions:
                    positions.append(names.index(name))
            if sorted(positions) not in [sorted(d) for d in domains]:
                domains.append(positions)
        return domains

    def attach_directives(self):
        for d in self.directives:
            relation = self.lookup(d.relation, d)
            if d.kind == "limitsize":
                self.limit_size(relation, d)
                continue
            for key in d.params:
                if key not in _IO_PARAMS:
                    raise self.error(f"unknown parameter {key!r} in .{d.kind} {d.relation}", d,
                                     hint=f"supported: {', '.join(sorted(_IO_PARAMS))}")
            if d.params.get("delimiter") == "":
                raise self.error(f"an empty delimiter in .{d.kind} {d.relation}", d,
                                 hint='omit delimiter for TAB, or give one, e.g. delimiter=","')
            io = d.params.get("IO", "file")
            if io not in ("file", "stdout", "json", "jsonfile") or (
                    io in ("stdout", "json") and d.kind == "input"):
                raise self.error(f"unsupported IO={io!r} in .{d.kind} {d.relation}", d,
                                 hint="use IO=file or IO=jsonfile (or IO=stdout or IO=json "
                                      "for outputs)")
            if d.params.get("format", "list") not in ("list", "object"):
                raise self.error(f"format={d.params['format']!r} in .{d.kind} {d.relation}: "
                                 f"JSON rows are format=list or format=object", d)
            if d.kind == "printsize" and relation.printsize:
                first, again = sorted([relation.printsize[0], d],
                                      key=lambda n: (n.line, n.column))
                raise self.error(f".printsize {d.relation} is given twice (first at line "
                                 f"{first.line})", again,
                                 hint="a relation's size is printed once; remove one")
            {"input": relation.inputs, "output": relation.outputs,
             "printsize": relation.printsize}[d.kind].append(d)

    def limit_size(self, relation, directive):
        """``.limitsize r(n=N)``: at most N rows (the first N in value order)."""
        n = directive.params.get("n")
        if set(directive.params) != {"n"} or n is None or not str(n).isdigit():
            raise self.error(f".limitsize {relation.name} needs one parameter n=<count>, a "
                             f"non-negative integer", directive,
                             hint=f".limitsize {relation.name}(n=100)")
        if relation.limit is not None:
            raise self.error(f".limitsize {relation.name} is given twice", directive)
        relation.limit = int(n)

    # -- rules ----------------------------------------------------------------------------
    def add_rule(self, rule: ast.Rule):
        relation = self.lookup(rule.head.relation, rule.head)
        self.check_atom(rule.head)
        if rule.dominating is not None:
            return self.add_subsumption(rule, relation)
        if not rule.body and (_generators(*rule.head.args) or any(
                isinstance(n, (ast.RecordTerm, ast.Nil, ast.BranchTerm)) or
                isinstance(n, ast.Functor) and n.user is not None and
                n.user.result in self.structures for n in ast.walk_terms(*rule.head.args))):
            # r(range(1, 5)). makes rows; r([1, nil]). builds records: rules with no body
            rule = ast.Rule(rule.line, rule.column, rule.head,
                            [ast.Conjunction(rule.line, rule.column, [])], rule.plan)
        elif not rule.body and _aggregates_over_atoms(rule.head.args):
            # r(sum w : { e(w) }).: a rule with no body, as in Soufflé (its variables are the
            # aggregate's own)
            rule = ast.Rule(rule.line, rule.column, rule.head,
                            [ast.Conjunction(rule.line, rule.column, [])], rule.plan)
        if not rule.body:
            counter = next((n for n in ast.walk_terms(*rule.head.args) if is_counter(n)), None)
            if counter is not None:
                raise self.error("a fact has only constants, but autoinc() numbers a rule's "
                                 "rows", counter, hint=f"write a rule: "
                                 f"{rule.head.relation}(..., autoinc()) :- true.")
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
                literals = take_apart_anonymous(rule.head, negated_patterns(self, literals))
                for agg in ast.term_aggregates(*rule.head.args):
                    agg.body = negated_patterns(self, agg.body)
                check_mutual_dependence(self, literals)
                head, literals = self.lift_generators(rule.head, literals)
                head, literals = scope_aggregates(self, head, literals)
                relation.clauses.append(Clause(head, self.name_expressions(literals), rule))

    def add_subsumption(self, rule: ast.Rule, relation):
        """``r(a) <= r(b) :- body.``: clauses deriving the dominated candidates ``r(a)``.

        A row never dominates itself, so ``a`` and ``b`` must differ in some attribute:
        one clause per attribute ``i`` adds ``a_i != b_i`` (their union is "differ
        somewhere").  Wildcards become variables, so they can be compared.
        """
        dominating = rule.dominating
        if dominating.relation != rule.head.relation:
            raise self.error(f"a subsumptive rule compares tuples of one relation, but "
                             f"{rule.head.relation!r} <= {dominating.relation!r}", dominating,
                             hint=f"write {rule.head.relation}(...) <= "
                                  f"{rule.head.relation}(...) :- ...")
        self.check_atom(dominating)
        dominated = self.named_wildcards(rule.head)
        dominating = self.named_wildcards(dominating)
        for alternative in rule.body:
            for literals in self.expand(alternative):
                # (expressions and records in the atoms named: the rows compare by them)
                body = self.name_expressions([dominated, dominating, *literals])
                low, high = body[0], body[1]
                for a, b in zip(low.args, high.args):
                    differ = ast.Comparison(a.line, a.column, "!=", a, b)
                    relation.dominated.append(Clause(low, [*body, differ], rule))

    def lift_generators(self, head: ast.Atom, literals: list):
        """Every ``range(...)`` that is not already the side of ``x = range(...)`` becomes
        a variable bound by such a literal: a generator makes rows, so the body binds it.
        Returns the new head and literals."""
        if not _generators(*head.args, *[t for lit in literals
                                         for t in ast.literal_terms(lit)]):
            return head, literals
        scopes = [[]]  # the literals each scope (the rule, an aggregate's body) gains

        def lift(term, top=False):
            if isinstance(term, ast.AggregateTerm):
                inner = _generators(term.target) if term.target is not None else []
                if inner:
                    raise self.error("range(...) in an aggregate's target is not supported",
                                     inner[0], hint=f"bind it in the body: {term.function} "
                                     f"x : {{ x = range(...), ... }}")
                if not _generators(*[t for lit in term.body for t in ast.literal_terms(lit)]):
                    return term
                scopes.append([])  # (a generator in the body binds a variable of the body)
                body = lift_literals(term.body)
                return dataclasses.replace(term, body=body + scopes.pop())
            if isinstance(term, ast.BinaryOp):
                return dataclasses.replace(term, left=lift(term.left), right=lift(term.right))
            if isinstance(term, ast.Negative):
                return dataclasses.replace(term, operand=lift(term.operand))
            if not isinstance(term, ast.Functor):
                return term
            term = dataclasses.replace(term, args=[lift(a) for a in term.args])
            if term.name not in GENERATORS:
                return term
            if not 2 <= len(term.args) <= 3:
                raise self.error(f"range takes 2 or 3 arguments (begin, end[, step]), got "
                                 f"{len(term.args)}", term)
            if top:
                return term
            self.fresh += 1
            var = ast.Var(term.line, term.column, f"#g{self.fresh}")
            scopes[-1].append(ast.Comparison(term.line, term.column, "=", var, term))
            return var

        def lift_literals(literals):
            out = []
            for lit in literals:
                if isinstance(lit, ast.Comparison):
                    direct = lit.op == "=" and any(isinstance(side, ast.Var) for side in
                                                   (lit.left, lit.right))
                    lit = dataclasses.replace(lit, left=lift(lit.left, direct),
                                              right=lift(lit.right, direct))
                elif isinstance(lit, ast.Atom):
                    lit = dataclasses.replace(lit, args=[lift(a) for a in lit.args])
                elif isinstance(lit, ast.Negation) and _generators(*lit.atom.args):
                    raise self.error("range(...) inside a negation is not supported",
                                     _generators(*lit.atom.args)[0],
                                     hint="bind it first: x = range(a, b), !r(x)")
                out.append(lit)
            return out

        out = lift_literals(literals)
        head = dataclasses.replace(head, args=[lift(a) for a in head.args])
        return head, out + scopes[0]

    def named_wildcards(self, atom: ast.Atom) -> ast.Atom:
        args = []
        for a in atom.args:
            if isinstance(a, ast.Wildcard):
                self.fresh += 1
                a = ast.Var(a.line, a.column, f"#w{self.fresh}")
            args.append(a)
        return ast.Atom(atom.line, atom.column, atom.relation, args)

    def name_expressions(self, literals):
        """``r(x, y + 1)`` in a body becomes ``r(x, #e1), #e1 = y + 1`` (likewise aggregates)."""
        out, extra = [], []
        terms = (ast.BinaryOp, ast.Negative, ast.AggregateTerm, ast.Functor, ast.RecordTerm,
                 ast.Nil, ast.BranchTerm)
        for lit in literals:
            atom = lit.atom if isinstance(lit, ast.Negation) else lit
            if isinstance(atom, ast.Atom) and any(isinstance(a, terms) for a in atom.args):
                args = []
                for a in atom.args:
                    if isinstance(a, terms):
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
        """Disjunctive normal form of a conjunction (see :func:`alternatives`)."""
        return alternatives(conjunction)


def alternatives(conjunction: ast.Conjunction):
    """Disjunctive normal form of a conjunction: each alternative's literals (nested ``;``
    groups multiply out).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(x) :- e(x), (x = 1 ; x = 2).").rules
    >>> len(list(alternatives(rule.body[0])))
    2
    """
    options = []
    for literal in conjunction.literals:
        if isinstance(literal, ast.Disjunction):
            options.append([lits for alt in literal.alternatives for lits in alternatives(alt)])
        else:
            options.append([[literal]])
    for combination in itertools.product(*options):
        yield [lit for part in combination for lit in part]


def _aggregates_over_atoms(args) -> bool:
    """Whether a fact's arguments aggregate over atoms, and have no variable or ``_`` outside
    their aggregates (else it is no fact, and folding it says so)."""
    outside = [n for n in ast.walk_terms(*args) if isinstance(n, (ast.Var, ast.Wildcard))]
    return not outside and any(
        isinstance(lit, (ast.Atom, ast.Negation)) for agg in ast.term_aggregates(*args)
        for n in ast.walk_terms(agg, aggregates=True) if isinstance(n, ast.AggregateTerm)
        for lit in n.body)


def _generators(*terms) -> list:
    """The generator calls (``range(...)``) among terms and their parts, aggregates
    included."""
    return [n for n in ast.walk_terms(*terms, aggregates=True)
            if isinstance(n, ast.Functor) and n.name in GENERATORS]
