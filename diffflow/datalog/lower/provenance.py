"""Provenance mode: every fact carries its minimal proof height, and each clause can be asked
for the body instances that derive a given fact (Soufflé's ``-t explain`` machinery, built as
ordinary diffflow collections so both stay exact as facts are inserted and removed).

* **Heights.**  Next to each relation ``r`` the compiler keeps ``#h:r``: the relation's facts
  with one more column, ``c{arity}``, the fact's minimal proof height.  Input facts have height
  0; a clause derives its head at ``1 + max`` of its positive body atoms' heights (1 when it
  has none); a fact's height is the minimum over its derivations (a ``min`` aggregate, through
  recursion like shortest paths).  The relation itself is ``#h:r`` without the height.
  Negations and aggregate bodies read the relations themselves: a negated fact is a leaf of
  a proof, as in Soufflé, and an aggregate's members are explained on their own.
* **Witness queries.**  Each relation gets a request input ``#req:r`` (facts to explain);
  output ``#asked:r`` holds the requested facts present, with their heights.  For each
  clause a second join plan starts from the requests, joined with ``#h:r`` for the
  requested fact's height ``#H``, binds the clause's head to the fact and
  joins the body with every positive atom's height below ``#H``.  Its output rows hold every
  variable of the clause (wildcards named), so any row is one derivation of the fact of
  minimal height, and its atoms are the children of the proof tree.  With no request a
  witness plan holds nothing but its arrangements.
* **Aggregate groups.**  A witness names each aggregate's value (``n = count : {..}`` becomes
  ``n = #g1, #g1 = count : {..}``) and each aggregate gets a :class:`Group` query, asked by
  the correlated variables' values: it returns every member of a ``count`` or ``sum`` (the
  value needs the whole group) and the winning members of a ``min`` or ``max``.

:mod:`~diffflow.datalog.explain.derived` drives the search (one commit per proof level) and builds the trees.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl p(x: number, y: number)\\n"
...                   "p(x, y) :- e(x, y).\\np(x, z) :- p(x, y), e(y, z)."))
>>> c = compile_provenance(a)
>>> sorted(c.requests), {r: len(w) for r, w in c.witnesses.items()}
(['e', 'p'], {'e': 0, 'p': 2})
"""
from __future__ import annotations

from dataclasses import dataclass, field

from diffflow.api import aggregates as agg
from diffflow.dataflow.expr import Lit, col
from diffflow.datalog.lower.aggregates import aggregate_variables
from diffflow.datalog.lower.columns import (COLUMN_TYPE, UNIT, Frame, relation_columns,
                                            term_expression, var_column)
from diffflow.datalog.lower.compiler import Compiled, _Compiler
from diffflow.datalog.lower.relation_value import relation_value
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.intrinsics import is_counter
from diffflow.datalog.syntax.render import render_atom, render_clause

HEIGHTS = "#h:"     # env key prefix: a relation with its height column


def height_column(relation) -> str:
    """The column holding a fact's proof height in ``#h:relation``."""
    return f"c{relation.arity}"


@dataclass
class Witness:
    """One clause's witness query: ``variables`` name the output's columns in order;
    ``head`` says, per head attribute, which variable holds its value."""
    clause: object
    rule: int                # Soufflé's rule number (facts and clauses in source order)
    output: object
    variables: list
    head: list
    body: list               # the clause's literals with wildcards named, in source order;
                             # a positive atom's last argument is its height variable
    groups: dict = field(default_factory=dict)  # id(comparison in body) -> [Group]
    # what :mod:`~diffflow.datalog.explain.witness` evaluates without the engine: the body's other conditions (the
    # aggregates' assignments, the heights below the fact's), which variable takes which
    # column of the requested fact, and the fact's height variable
    conditions: list = field(default_factory=list)
    bind: dict = field(default_factory=dict)
    top: str = ""
    types: dict = field(default_factory=dict, repr=False)   # id(term) -> type, as analysed


@dataclass(eq=False)
class Group:
    """The members of one aggregate of a witness (or of an enclosing group): asked by
    ``key`` -- the correlated variables' values, and for ``min``/``max`` the aggregate's
    value so that only winning members come back.  ``output`` rows hold ``variables``."""
    aggregate: object        # the AggregateTerm
    value: str               # the variable holding the aggregate's value
    key: list
    request: object
    output: object
    variables: list
    body: list               # the aggregate's literals with wildcards named
    groups: dict = field(default_factory=dict)  # nested aggregates, as in Witness
    conditions: list = field(default_factory=list)  # winners' heights and values; lifted
    types: dict = field(default_factory=dict, repr=False)


@dataclass
class ProvenanceCompiled(Compiled):
    requests: dict = field(default_factory=dict)    # relation -> request InputCollection
    asked: dict = field(default_factory=dict)       # relation -> Output: requested, present
    witnesses: dict = field(default_factory=dict)   # relation -> [Witness]
    lookups: object = None  # indexes read directly (explain.witness.Lookups; Program sets it)


def compile_provenance(analysed, partitions: int = 1, outputs=None, max_rounds=None,
                       flow_options: dict | None = None,
                       changes: bool = True) -> ProvenanceCompiled:
    """:func:`~diffflow.datalog.lower.compiler.compile_program` with heights and witness queries."""
    for relation in analysed.relations.values():
        structured = [t for t in relation.types if t in analysed.structures]
        if structured:
            decl = relation.declaration
            raise DatalogError(
                f"explanations (provenance) of relations with record or ADT attributes are not "
                f"supported yet: {relation.name} has a {structured[0]}", analysed.source,
                analysed.program.filename, decl.line, decl.column,
                hint="run the program without provenance (records and ADTs work there)")
        for clause in relation.clauses:
            counter = next((a for a in ast.walk_terms(*clause.head.args) if is_counter(a)),
                           None)
            if counter is not None:
                raise DatalogError(
                    "explanations (provenance) of a program with autoinc() are not supported: "
                    "its numbers rank the rule's whole result, so every row would be part of "
                    "each row's proof", analysed.source, analysed.program.filename,
                    counter.line, counter.column,
                    hint="explain a program without autoinc(), or number the rows outside it")
            nested = next((inner for agg in clause.aggregates() for lit in agg.body
                           for inner in ast.term_aggregates(*ast.literal_terms(lit))), None)
            if nested is not None:
                raise DatalogError(
                    "explanations (provenance) of an aggregate inside an aggregate are not "
                    "supported yet", analysed.source, analysed.program.filename,
                    nested.line, nested.column,
                    hint="compute the inner aggregate in a relation of its own, or run the "
                         "program without provenance")
    compiler = _ProvenanceCompiler(analysed, partitions, outputs, max_rounds, flow_options or {})
    compiler.keep_changes = changes
    return compiler.run()


def rule_numbers(relation) -> dict:
    """``id(clause) -> n``: Soufflé numbers a relation's facts and rules from 1 in source
    order; a rule with a disjunction takes one number per alternative; an eqrel's closure
    rules come last."""
    closure = {id(rule) for rule in getattr(relation, "closure", ())}  # (older pickles)
    items = [((False, f.line, f.column), None) for f in relation.facts]
    items += [((id(c.rule) in closure, c.rule.line, c.rule.column), c)
              for c in relation.clauses]
    items.sort(key=lambda item: item[0])
    return {id(c): n for n, (_, c) in enumerate(items, 1) if c is not None}


class _ProvenanceCompiler(_Compiler):
    def __init__(self, *args):
        super().__init__(*args)
        self.push_filters = False  # (a proof names every atom's fact and its height)
        self.requests: dict = {}
        self.asked: dict = {}
        self.witnesses: dict = {}
        self._fresh = 0
        self._groups = 0

    def run(self) -> ProvenanceCompiled:
        plain = super().run()
        relations = self.analysed.relations
        for stratum in self.analysed.strata:
            for name in stratum.relations:
                self._witness_queries(relations[name])
        return ProvenanceCompiled(plain.flow, plain.inputs, plain.collections, plain.outputs,
                                  plain.unit, plain.plan, plain.warnings, plain.orders,
                                  requests=self.requests, asked=self.asked,
                                  witnesses=self.witnesses)

    # -- heights -----------------------------------------------------------------------------
    @staticmethod
    def _with_height(relation, parts, only_input: bool):
        """The ``#h`` collection of a relation from its height-carrying parts: the minimum
        height of each fact (an input-only relation's facts all have height 0)."""
        if only_input:
            return parts[0]
        cols = [c for c, _ in relation_columns(relation)]
        h = height_column(relation)
        return parts[0].concat(*parts[1:]).aggregate(by=cols, **{h: agg.min(h)})

    def _declared(self, relation, heights, env, previous=None):
        """The candidates' heights kept for the rows a choice-domain, .limitsize or
        subsumptive rules keep (:mod:`.relation_value`; eqrel is written as rules here)."""
        if not relation.shaped:
            return heights
        cols = [c for c, _ in relation_columns(relation)]
        if relation.dominated and previous is not None:  # last round's rows stay candidates
            h = height_column(relation)
            heights = heights.concat(env[HEIGHTS + relation.name]).aggregate(
                by=cols, **{h: agg.min(h)})
        candidates = heights.select(*cols)
        dominated = None
        if relation.dominated:
            scope = {**env, relation.name: candidates, HEIGHTS + relation.name: heights}
            found = [self.compile_clause(c, scope).select(*cols) for c in relation.dominated]
            dominated = found[0].concat(*found[1:])
        value = relation_value(relation, candidates, dominated, previous)
        return heights.semijoin(value, on=cols)

    def _zero(self, relation, collection):
        with self.building(relation):
            return collection.select(*collection.columns, **{height_column(relation): Lit(0)})

    def atom_text(self, atom) -> str:
        """An atom as the user wrote it (without the height this lowering reads)."""
        if atom.relation.startswith(HEIGHTS):
            atom = ast.Atom(atom.line, atom.column, atom.relation[len(HEIGHTS):], atom.args[:-1])
        return render_atom(atom)

    def compile_plain(self, relation):
        name = relation.name
        inp = self.input_of(relation)
        parts = [self._zero(relation, inp)] if inp is not None else []
        for clause in relation.clauses:
            parts.append(self.compile_clause(clause, self.values))
        with self.building(relation):
            only_input = not relation.clauses
            if not parts:
                empty = self.flow.input(f"_empty_{name}", relation_columns(relation))
                parts = [self._zero(relation, empty)]
            heights = self._declared(relation,
                                     self._with_height(relation, parts, only_input),
                                     self.values)
            self.values[HEIGHTS + name] = heights
            if inp is not None and only_input and not relation.shaped:
                self.values[name] = inp
            else:
                self.values[name] = heights.select(*[c for c, _ in relation_columns(relation)])
        self.plan.append(f"  {name}: with proof heights")

    def compile_recursive(self, relations: list):
        loop = self.stratum_loop(relations)
        variables, env = {}, dict(self.values)
        for relation in relations:
            cols = relation_columns(relation)
            with self.building(relation):
                var = loop.variable(columns=cols + [(height_column(relation), "int")])
                variables[relation.name] = var
                env[HEIGHTS + relation.name] = var
                env[relation.name] = var.select(*[c for c, _ in cols])
        for relation in relations:
            inp = self.input_of(relation)
            parts = [self._zero(relation, inp)] if inp is not None else []
            for clause in relation.clauses:
                parts.append(self.compile_clause(clause, env))
            with self.building(relation):
                variables[relation.name].set(
                    self._declared(relation, self._with_height(relation, parts, False), env,
                                   previous=env[relation.name]))
        for relation in relations:
            with self.building(relation):
                heights = variables[relation.name].leave()
                self.values[HEIGHTS + relation.name] = heights
                self.values[relation.name] = heights.select(
                    *[c for c, _ in relation_columns(relation)])

    def _compile_clause(self, clause, env):
        head = self.analysed.relations[clause.head.relation]
        self.plan.append(f"  {render_clause(clause)}  [with heights]")
        literals, heights, _ = self._rewrite(clause, name_wildcards=False)
        terms = [t for lit in clause.literals if isinstance(lit, ast.Comparison)
                 for t in (lit.left, lit.right)] + list(clause.head.args)
        self.aggregate_heights = {id(a): f"#ah{i}"
                                  for i, a in enumerate(ast.term_aggregates(*terms))}
        below = [*heights.values(), *self.aggregate_heights.values()]
        needed = {v.name for v in ast.term_variables(*clause.head.args)} | set(below)
        try:
            frame, aggregates = self.conjunction(literals, env, clause.term_types, needed,
                                                 extra_terms=clause.head.args,
                                                 plan=clause.plan)
        finally:
            self.aggregate_heights = {}
        exprs = {}
        if head.arity == 0:
            exprs[UNIT] = Lit(0)
        for i, arg in enumerate(clause.head.args):
            exprs[f"c{i}"] = term_expression(arg, clause.term_types, aggregates)
        exprs[height_column(head)] = _one_plus_max([col(var_column(h)) for h in below])
        return frame.collection.select(**exprs)

    # -- aggregate heights (called by compile_aggregate) ---------------------------------------
    def heights_of(self, literals, types):
        """An aggregate body reading ``#h`` relations: its literals and height variables."""
        out, names = [], []
        for lit in literals:
            if isinstance(lit, ast.Atom):
                h = self._var("h", types, "number")
                lit = ast.Atom(lit.line, lit.column, HEIGHTS + lit.relation, [*lit.args, h])
                names.append(h.name)
            out.append(lit)
        return out, names

    @staticmethod
    def highest(names):
        """The highest of the height variables (0 with none)."""
        return _one_plus_max([col(var_column(n)) for n in names]) - 1

    def _rewrite(self, clause, name_wildcards: bool):
        """Positive atoms read ``#h:`` relations with a height variable; with
        ``name_wildcards`` every ``_`` of a positive or negated atom becomes a variable
        (a witness names every value).  Returns ``(literals, {id(new atom): height var},
        types)`` where ``types`` adds the new variables' types to the clause's."""
        types = dict(clause.term_types)
        literals, heights = [], {}
        for lit in clause.literals:
            if isinstance(lit, ast.Atom):
                args = [self._named(a, lit.relation, i, types) if name_wildcards else a
                        for i, a in enumerate(lit.args)]
                h = self._var("h", types, "number")
                atom = ast.Atom(lit.line, lit.column, HEIGHTS + lit.relation, args + [h])
                heights[id(atom)] = h.name
                literals.append(atom)
            else:
                literals.append(lit)
        return literals, heights, types

    def _named(self, arg, relation, position, types):
        if not isinstance(arg, ast.Wildcard):
            return arg
        kind = self.analysed.relations[relation].types[position]
        return self._var("w", types, kind)

    def _var(self, prefix, types, kind):
        self._fresh += 1
        var = ast.Var(0, 0, f"#{prefix}{self._fresh}")
        types[id(var)] = kind
        return var

    # -- witness queries -----------------------------------------------------------------------
    def _witness_queries(self, relation):
        name = relation.name
        cols = relation_columns(relation)
        with self.building(relation):
            request = self.flow.input(f"#req:{name}", cols)
            names = [c for c, _ in cols]
            asked = request.join(self.values[HEIGHTS + name], on=names)
        self.requests[name] = request
        self.asked[name] = asked.output(f"#asked:{name}", changes=False)
        numbers = rule_numbers(relation)
        self.witnesses[name] = []
        for clause in relation.clauses:
            with self.building(clause):
                self.witnesses[name].append(
                    self._witness(clause, relation, asked, numbers[id(clause)]))
                self.tag("witness")  # (what explanations ask of the rule)

    def _witness(self, clause, relation, asked, rule: int) -> Witness:
        literals, heights, types = self._rewrite(clause, name_wildcards=True)
        top = self._var("H", types, "number")
        # the request binds the head: a variable's first occurrence takes the attribute,
        # anything else (constant, repeated variable, expression) becomes an equality
        head, bind, pending = [], {}, []
        for i, arg in enumerate(clause.head.args):
            if isinstance(arg, ast.Var) and arg.name not in bind:
                bind[arg.name] = f"c{i}"
                head.append(arg.name)
                continue
            var = self._var("a", types, relation.types[i])
            bind[var.name] = f"c{i}"
            head.append(var.name)
            pending.append(ast.Comparison(0, 0, "=", var, arg))
        bind[top.name] = height_column(relation)
        start = Frame(asked.select(**{var_column(v): c for v, c in bind.items()}), list(bind))
        below = [ast.Comparison(0, 0, "<", ast.Var(0, 0, h), top) for h in heights.values()]
        for c in below:
            types[id(c.left)] = "number"
        literals, lifted = self._lift_all(literals, types)
        pending, lifted_head = self._lift_all(pending, types)
        lifted.update(lifted_head)
        wanted = set(bind) | _mentioned(literals + pending)
        steps: list = []
        assignments = [a for pairs in lifted.values() for a in pairs]
        frame, _ = self.conjunction([*literals, *pending, *assignments, *below], self.values,
                                    types, wanted, start=start, steps=steps)
        variables = sorted(v for v in frame.variables if v in wanted)
        out = frame.collection.select(**{var_column(v): var_column(v) for v in variables}
                                      or {UNIT: 0})
        self.plan.append(f"  witness R{rule} of {relation.name}: " + " → ".join(steps))
        label = f"{relation.name}:R{rule}"
        groups = self._groups_of(lifted, variables, types, label, top.name)
        return Witness(clause, rule, out.output(f"#witness:{label}", changes=False), variables, head,
                       literals + pending, groups, [*assignments, *below], dict(bind),
                       top.name, types)

    # -- aggregate groups ----------------------------------------------------------------------
    def _lift_all(self, literals, types):
        """Name every aggregate of the literals' comparisons: ``n = count : {..}`` becomes
        ``n = #g1`` and the assignment ``#g1 = count : {..}``, so a witness row carries each
        aggregate's value.  Returns the new literals and ``{id(new comparison): [(#g var,
        aggregate), ...]}`` -- the assignments, as comparisons, are in those lists."""
        out, lifted = [], {}
        for lit in literals:
            if isinstance(lit, ast.Comparison) and ast.term_aggregates(lit.left, lit.right):
                found: list = []
                new = ast.Comparison(lit.line, lit.column, lit.op,
                                     self._lift(lit.left, types, found),
                                     self._lift(lit.right, types, found))
                lifted[id(new)] = [ast.Comparison(0, 0, "=", var, a) for var, a in found]
                lit = new
            out.append(lit)
        return out, lifted

    def _lift(self, term, types, found):
        if isinstance(term, ast.AggregateTerm):
            var = self._var("g", types, types[id(term)])
            found.append((var, term))
            return var
        if isinstance(term, ast.BinaryOp):
            new = ast.BinaryOp(term.line, term.column, term.op,
                               self._lift(term.left, types, found),
                               self._lift(term.right, types, found))
        elif isinstance(term, ast.Negative):
            new = ast.Negative(term.line, term.column, self._lift(term.operand, types, found))
        elif isinstance(term, ast.Functor):
            new = ast.Functor(term.line, term.column, term.name,
                              [self._lift(a, types, found) for a in term.args], term.type_name, term.user)
        else:
            return term
        types[id(new)] = types[id(term)]
        return new

    def _groups_of(self, lifted, variables, types, label, top) -> dict:
        return {key: [self._group(c.right, c.left.name, variables, types, label, top)
                      for c in assignments]
                for key, assignments in lifted.items()}

    def _group(self, aggregate, value, outer, types, label, top) -> Group:
        """A request-driven query for an aggregate's members: all of them for ``count`` and
        ``sum`` (the value needs the whole group), for ``min`` and ``max`` the winners whose
        proofs are lower than the fact's (``top``, its height variable)."""
        self._groups += 1
        key = sorted(aggregate_variables(aggregate) & set(outer))
        selective = aggregate.function in ("min", "max")
        if selective:
            key += [value, top]
        kinds = _variable_types(aggregate, value, types)
        kinds[top] = "number"
        columns = [(var_column(v), COLUMN_TYPE[kinds[v]]) for v in key] or [(UNIT, "int")]
        request = self.flow.input(f"#greq:{label}:{self._groups}", columns)
        start = Frame(request, key) if key else None
        literals = []
        for lit in aggregate.body:  # a member names every value of its positive atoms
            if isinstance(lit, ast.Atom):
                lit = ast.Atom(lit.line, lit.column, lit.relation,
                               [self._named(a, lit.relation, i, types)
                                for i, a in enumerate(lit.args)])
            literals.append(lit)
        conditions = []
        if selective:  # winners only, below the fact's height (conditions, not shown)
            literals, heights = self.heights_of(literals, types)
            for h in heights:
                conditions.append(ast.Comparison(0, 0, "<", ast.Var(0, 0, h),
                                                 ast.Var(0, 0, top)))
                types[id(conditions[-1].left)] = types[id(conditions[-1].right)] = "number"
            conditions.append(ast.Comparison(0, 0, "=", ast.Var(0, 0, value),
                                             aggregate.target))
            types[id(conditions[-1].left)] = types[id(aggregate)]
        literals, lifted = self._lift_all(literals, types)
        conditions += [a for pairs in lifted.values() for a in pairs]
        wanted = set(key) | _mentioned(literals)
        steps: list = []
        frame, _ = self.conjunction([*literals, *conditions], self.values, types, wanted,
                                    start=start, steps=steps)
        variables = sorted(v for v in frame.variables if v in wanted)
        out = frame.collection.select(**{var_column(v): var_column(v) for v in variables}
                                      or {UNIT: 0})
        name = f"{label}:{aggregate.function}{self._groups}"
        self.plan.append(f"  group {name}: " + " → ".join(steps))
        groups = self._groups_of(lifted, variables, types, label, top)
        return Group(aggregate, value, key, request, out.output(f"#group:{name}", changes=False), variables,
                     literals, groups, conditions, types)


def _mentioned(literals) -> set:
    """Variables of the literals' atoms and comparisons (not those local to aggregates)."""
    names = set()
    for lit in literals:
        names |= {v.name for v in ast.term_variables(*ast.literal_terms(lit))}
    return names


def _variable_types(aggregate, value: str, types: dict) -> dict:
    """``name -> type`` of an aggregate's variables, and of ``value``, its result."""
    kinds = {n.name: types[id(n)] for n in ast.walk_terms(aggregate, aggregates=True)
             if isinstance(n, ast.Var) and id(n) in types}
    kinds[value] = types[id(aggregate)]
    return kinds


def _one_plus_max(heights: list):
    if not heights:
        return Lit(1)
    top = heights[0]
    for h in heights[1:]:
        top = (top + h + abs(top - h)) // 2  # max of two integers, exactly
    return top + 1

