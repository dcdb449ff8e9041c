"""Checks of one clause: every variable bound (range restriction) and typed, terms well typed.

:meth:`ClauseChecks.check_clause` is what analysis runs on every clause; it
sets the clause's ``var_types`` and, through :mod:`.types`, its
``term_types``.  Every variable of a head, a negation, a comparison or an
aggregate's correlation must be bound by a positive atom (or by ``x = expr``
of bound ones); every variable has one type.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> analyse(parse(".decl e(x: number)\\n.decl r(x: number)\\nr(y) :- e(x)."))
Traceback (most recent call last):
...
diffflow.common.errors.DatalogError: <program>:3:3: error: variable 'y' in the head of r is not bound by a positive atom
...
"""
from __future__ import annotations

from diffflow.common.errors import DiffflowError
from diffflow.datalog.analysis.analysed import Clause, Relation
from diffflow.datalog.analysis.patterns import take_apart, take_apart_literals
from diffflow.datalog.analysis.types import LITERAL, NIL, RECORD, TermTyping, Unknown, kind_name
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import did_you_mean

_UNKNOWN = "?"  # a side whose type waits for a variable's


class ClauseChecks(TermTyping):
    """Relation uses and clause checks; the analyser supplies ``relations`` and ``error``."""
    _lenient = False  # see check_clause

    def lookup(self, name, node) -> Relation:
        relation = self.relations.get(name)
        if relation is None:
            raise self.error(f"unknown relation {name!r}{did_you_mean(name, self.relations)}",
                             node, hint=f"declare it first, e.g. .decl {name}(x: number)")
        return relation

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

    def check_clause(self, clause: Clause, lenient: bool = False):
        """Binding and types of one clause; sets ``clause.var_types`` and ``clause.term_types``.

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
            take_apart(self, clause)
            self.check_built_records(clause)
            self._check_clause(clause, types, origin)
        except (DiffflowError, Unknown):
            raise
        except Exception as exc:  # (a bug here, not the program's: said so, at its rule)
            raise self.error(f"internal error (a bug in diffflow; please report it) checking "
                             f"this rule: {type(exc).__name__}: {exc}", clause.head) from exc
        finally:
            self._lenient = False

    def check_built_records(self, clause: Clause) -> None:
        """A record or branch term that is built, not matched (in a head, a negation, a
        comparison other than a pattern's ``=``) needs every field: no ``_`` inside."""
        places = [(f"the head of {clause.head.relation}", clause.head.args)]
        negated = {a.name: lit.atom.relation for lit in clause.literals
                   if isinstance(lit, ast.Negation) for a in lit.atom.args
                   if isinstance(a, ast.Var)}  # (analysis moved terms out of negated atoms)
        for lit in clause.literals:
            if isinstance(lit, ast.Negation):
                places.append((f"the negation !{lit.atom.relation}", lit.atom.args))
            elif isinstance(lit, ast.Comparison):
                owner = next((negated[side.name] for side in (lit.left, lit.right)
                              if isinstance(side, ast.Var) and side.name in negated and
                              side.name.startswith("#")), None)
                where = "a comparison" if owner is None else f"the negation !{owner}"
                places.append((where, [lit.left, lit.right]))
        for where, terms in places:
            for term in ast.walk_terms(*terms):
                if not isinstance(term, (ast.RecordTerm, ast.BranchTerm)):
                    continue
                hole = next((a for a in ast.walk_terms(*term.args)
                             if isinstance(a, ast.Wildcard)), None)
                if hole is not None:
                    raise self.error(f"'_' inside a record or ADT value in {where}: there it "
                                     f"is built, so every field needs a value", hole,
                                     hint="'_' matches anything only in a pattern, e.g. "
                                          "r([x, _]) in a positive atom; for a negation, "
                                          "match in a helper relation and negate that")

    def _pattern_types(self, term, kind: str, out: dict) -> None:
        """``out[variable] = type`` for the variables of ``term`` (a variable, or a record
        or ADT term of them) where a ``kind`` is expected."""
        if isinstance(term, ast.Var):
            out.setdefault(term.name, kind)
            return
        structure = self.structures.get(kind)
        if structure is None:
            return
        if isinstance(term, ast.RecordTerm) and structure.is_record:
            fields = structure.fields
        elif isinstance(term, ast.BranchTerm) and not structure.is_record:
            fields = structure.branches.get(term.branch, ())
        else:
            return
        if len(fields) == len(term.args):
            for arg, (_, field) in zip(term.args, fields):
                self._pattern_types(arg, field, out)

    def _type_from_context(self, pending: list, types: dict, head_vars: dict,
                           set_type) -> bool:
        """Type one untyped variable of a stalled clause from its context: the attribute it
        fills (``head_vars``), or a comparison with a side of a known type.  Returns whether
        to keep deferring plain integers' ``number`` (False once nothing gives a type)."""
        numeric = ("number", "unsigned", "float")
        for c in pending:  # (a variable of a record in the head: its field's type)
            for var in ast.term_variables(c.left, c.right):
                if var.name not in types and var.name in head_vars:
                    set_type(var, head_vars[var.name], "the attribute it fills")
                    return True
        for c in pending:
            for target, other in ((c.left, c.right), (c.right, c.left)):
                if not isinstance(target, ast.Var) or target.name in types:
                    continue
                if head_vars.get(target.name) in numeric:
                    set_type(target, head_vars[target.name], "the attribute it fills")
                    return True
                try:
                    kind = self.expr_type(other, types, strict=False)
                except Unknown:
                    continue
                if kind in numeric or kind == "symbol":
                    set_type(target, kind, f"compared at line {c.line}")
                    return True
        return False

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
        named = {c.left.name: c.right for c in comparisons  # (what analysis moved out of atoms)
                 if id(c) in self.synthetic and isinstance(c.left, ast.Var)}
        for lit in clause.literals:
            if isinstance(lit, ast.Negation):
                self.check_atom(lit.atom)
                args = [named.get(a.name, a) if isinstance(a, ast.Var) else a
                        for a in lit.atom.args]
                self.require_bound(args, bound, f"the negation !{lit.atom.relation}")
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
        waiting = []  # aggregate body comparisons typed only once the clause's are
        targets = []
        for agg in clause.aggregates():
            waiting += self.check_aggregate(agg, bound, types, targets)
        # expression types (assignments first, in binding order)
        def attempt(node):
            try:
                return self.expr_type(node, types, strict=False)
            except Unknown:
                return _UNKNOWN

        pending = list(comparisons) + waiting
        progress = True
        # where [a, b] or nil meets an untyped variable: the attribute the variable fills
        context = [(clause.head, self.relations[clause.head.relation])] + [
            (lit.atom, self.relations.get(lit.atom.relation)) for lit in clause.literals
            if isinstance(lit, ast.Negation)]
        head_vars: dict = {}  # (variables inside records there: their fields' types)
        for atom, relation in context:
            for arg, kind in zip(atom.args, relation.types if relation is not None else ()):
                self._pattern_types(arg, kind, head_vars)
        # an untyped variable assigned a plain integer (x = 3, x = range(1, 5)) takes the type
        # the rest of the clause gives it -- the attribute it fills, a typed value it meets --
        # and is a number only when nothing does (Soufflé's numeric constants are polymorphic)
        defer = True
        while pending and (progress or defer):
            if not progress:
                defer = self._type_from_context(pending, types, head_vars, set_type)
            progress = False
            for c in list(pending):
                left, right = attempt(c.left), attempt(c.right)
                if c.op == "=" and {left, right} & {RECORD, NIL}:
                    for side, kind in ((c.left, left), (c.right, right)):
                        if kind is None and isinstance(side, ast.Var) and \
                                side.name in head_vars:  # a record's type from the head
                            set_type(side, head_vars[side.name], "the attribute it fills")
                            left, right = attempt(c.left), attempt(c.right)
                for target, kind, other in ((c.left, left, right), (c.right, right, left)):
                    if c.op == "=" and kind is None and isinstance(target, ast.Var) and \
                            other not in (None, _UNKNOWN, RECORD, NIL) and \
                            not (defer and other == LITERAL):
                        set_type(target, kind_name(other),
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
        for agg in targets:
            self.check_aggregate_target(agg, types)
        for lit in clause.literals:
            if isinstance(lit, ast.Negation):
                relation = self.relations[lit.atom.relation]
                self.check_args_against(lit.atom, relation, types)
        head = self.relations[clause.head.relation]
        for arg, kind, name in zip(clause.head.args, head.types, head.attributes):
            got = self.expr_type(arg, types)
            if not self.fits(got, kind):
                raise self.error(f"type clash: attribute {name!r} of {head.name} is a {kind}, "
                                 f"but this is a {kind_name(got)}", arg)
            if isinstance(arg, (ast.Number, ast.Float, ast.String)):
                self.check_constant(arg, kind)
            else:
                self.check_literal_ranges(arg, kind)
        clause.var_types = types
        clause.term_types = self.clause_term_types(clause, head.types, types)

    def check_args_against(self, atom, relation, types):
        for arg, kind in zip(atom.args, relation.types):
            if isinstance(arg, ast.Var) and types.get(arg.name) not in (None, kind):
                raise self.error(f"type clash: variable {arg.name!r} is a {types[arg.name]} but "
                                 f"{atom.relation} expects a {kind} here", arg)
            if isinstance(arg, (ast.Number, ast.Float, ast.String)):
                self.check_constant(arg, kind)

    def check_aggregate(self, agg: ast.AggregateTerm, outer_bound: set, types: dict,
                        targets: list) -> list:
        """Binding and types inside an aggregate (and those nested in it); returns the body
        comparisons whose types wait for the clause's, and adds to ``targets`` the
        aggregates whose targets :meth:`check_aggregate_target` checks at the end."""
        structured = (ast.RecordTerm, ast.Nil, ast.BranchTerm)
        if any(isinstance(a, structured) for lit in agg.body
               if isinstance(lit, (ast.Atom, ast.Negation, ast.Comparison))
               for a in ast.literal_terms(lit)):
            # records matched in the body: named, then taken apart (as in a rule's body)
            agg.body = take_apart_literals(self, self.name_expressions(agg.body), outer_bound)
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
        # (a body of constraints only, ``sum s : { s = 1 }``, is evaluated once per group,
        # as Soufflé's nullary atom in such a body makes it)
        bound = outer_bound | local_bound
        self.bind_assignments([l for l in agg.body if isinstance(l, ast.Comparison)], bound)
        for lit in agg.body:
            if isinstance(lit, ast.Negation):
                self.check_atom(lit.atom)
                self.require_bound(lit.atom.args, bound, f"the negation !{lit.atom.relation}")
            elif isinstance(lit, ast.Comparison):
                self.require_bound([lit.left, lit.right], bound, "a comparison")
        waiting = []
        for lit in agg.body:  # nested aggregates: correlated by what this body binds
            if isinstance(lit, ast.Comparison):
                for inner in ast.term_aggregates(lit.left, lit.right):
                    waiting += self.check_aggregate(inner, bound, types, targets)
        if agg.target is not None:
            self.require_bound([agg.target], bound, f"the {agg.function} target")
        # body comparisons: types (assignments first, in binding order); a term moved out of
        # a negated atom has the attribute's type
        for lit in agg.body:
            if isinstance(lit, ast.Negation):
                for arg, kind in zip(lit.atom.args, self.relations[lit.atom.relation].types):
                    if isinstance(arg, ast.Var) and arg.name.startswith("#"):
                        types.setdefault(arg.name, kind)
        pending = [lit for lit in agg.body if isinstance(lit, ast.Comparison)] + waiting
        progress = True
        while pending and progress:
            progress = False
            for lit in list(pending):
                try:
                    left = self.expr_type(lit.left, types, strict=False)
                    right = self.expr_type(lit.right, types, strict=False)
                except Unknown:
                    continue
                if lit.op == "=" and isinstance(lit.left, ast.Var) and \
                        lit.left.name not in types and right not in (None, RECORD, NIL):
                    types[lit.left.name] = kind_name(right)
                elif lit.op == "=" and isinstance(lit.right, ast.Var) and \
                        lit.right.name not in types and left not in (None, RECORD, NIL):
                    types[lit.right.name] = kind_name(left)
                elif left is None or right is None:
                    continue
                else:
                    self.check_comparison(lit, left, right)
                pending.remove(lit)
                progress = True
        for lit in agg.body:
            if isinstance(lit, ast.Negation):
                self.check_args_against(lit.atom, self.relations[lit.atom.relation], types)
        targets.append(agg)
        return pending  # (typed with the clause's comparisons: ``x = 1, n = count : {
        # y = range(x, 9)}`` knows x's type only then)

    def check_aggregate_target(self, agg: ast.AggregateTerm, types: dict) -> None:
        """An aggregate's target is a number, unsigned or float."""
        if agg.target is not None:
            kind = self.expr_type(agg.target, types)
            if kind == "symbol" or self.is_structured(kind):
                what = "a symbol" if kind == "symbol" else "a record or ADT value"
                raise self.error(f"{agg.function} of {what} is not supported", agg.target,
                                 hint="aggregate a number, unsigned or float (as Soufflé)")

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
        return all(v.name in bound for v in ast.term_variables(expr))

    def require_bound(self, terms, bound, where, aggregates=False):
        if self._lenient:
            return
        for term in terms:
            for var in ast.term_variables(term):
                if var.name not in bound:
                    raise self.error(f"variable {var.name!r} in {where} is not bound by a positive "
                                     f"atom", var,
                                     hint=f"add an atom that contains {var.name!r} to the body, "
                                          f"or assign it with {var.name} = <expression>")
