"""Provenance mode: every fact carries its minimal proof height, and each clause can be asked
for the body instances that derive a given fact (Soufflé's ``-t explain`` machinery, built as
ordinary diffflow collections so both stay exact as facts are inserted and removed).

* **Heights.**  Next to each relation ``r`` the compiler keeps ``#h:r``: the relation's facts
  with one more column, ``c{arity}``, the fact's minimal proof height.  Input facts have height
  0; a clause derives its head at ``1 + max`` of its positive body atoms' heights (1 when it
  has none); a fact's height is the minimum over its derivations (a ``min`` aggregate, through
  recursion like shortest paths).  The relation itself is ``#h:r`` without the height.
  Negations and aggregate bodies read the relations themselves: a negated fact and an
  aggregate's group are leaves of a proof, as in Soufflé.
* **Witness queries.**  Each relation gets a request input ``#req:r`` (facts to explain);
  output ``#asked:r`` holds the requested facts present, with their heights.  For each
  clause a second join plan starts from the requests, joined with ``#h:r`` for the
  requested fact's height ``#H``, binds the clause's head to the fact and
  joins the body with every positive atom's height below ``#H``.  Its output rows hold every
  variable of the clause (wildcards named), so any row is one derivation of the fact of
  minimal height, and its atoms are the children of the proof tree.  With no request a
  witness plan holds nothing but its arrangements.

:mod:`.explain` drives the search (one commit per proof level) and builds the trees.

>>> from diffflow.dsl.analysis import analyse
>>> from diffflow.dsl.parser import parse
>>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl p(x: number, y: number)\\n"
...                   "p(x, y) :- e(x, y).\\np(x, z) :- p(x, y), e(y, z)."))
>>> c = compile_provenance(a)
>>> sorted(c.requests), {r: len(w) for r, w in c.witnesses.items()}
(['e', 'p'], {'e': 0, 'p': 2})
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import aggregates as agg
from ..expr import Lit, col
from . import ast
from .columns import UNIT, Frame, relation_columns, term_expression, var_column
from .compiler import Compiled, _Compiler
from .render import render_clause

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


@dataclass
class ProvenanceCompiled(Compiled):
    requests: dict = field(default_factory=dict)    # relation -> request InputCollection
    asked: dict = field(default_factory=dict)       # relation -> Output: requested, present
    witnesses: dict = field(default_factory=dict)   # relation -> [Witness]


def compile_provenance(analysed, partitions: int = 1, outputs=None, max_rounds=None,
                       flow_options: dict | None = None) -> ProvenanceCompiled:
    """:func:`~diffflow.dsl.compiler.compile_program` with heights and witness queries."""
    return _ProvenanceCompiler(analysed, partitions, outputs, max_rounds,
                               flow_options or {}).run()


def rule_numbers(relation) -> dict:
    """``id(clause) -> n``: Soufflé numbers a relation's facts and rules from 1 in source
    order; a rule with a disjunction takes one number per alternative."""
    items = [((f.line, f.column), None) for f in relation.facts]
    items += [((c.rule.line, c.rule.column), c) for c in relation.clauses]
    items.sort(key=lambda item: item[0])
    return {id(c): n for n, (_, c) in enumerate(items, 1) if c is not None}


class _ProvenanceCompiler(_Compiler):
    def __init__(self, *args):
        super().__init__(*args)
        self.requests: dict = {}
        self.asked: dict = {}
        self.witnesses: dict = {}
        self._fresh = 0

    def run(self) -> ProvenanceCompiled:
        plain = super().run()
        relations = self.analysed.relations
        for stratum in self.analysed.strata:
            for name in stratum.relations:
                self._witness_queries(relations[name])
        return ProvenanceCompiled(plain.flow, plain.inputs, plain.collections, plain.outputs,
                                  plain.unit, plain.plan, self.requests, self.asked,
                                  self.witnesses)

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

    @staticmethod
    def _zero(relation, collection):
        return collection.select(*collection.columns, **{height_column(relation): Lit(0)})

    def compile_plain(self, relation):
        name = relation.name
        inp = self.input_of(relation)
        parts = [self._zero(relation, inp)] if inp is not None else []
        for clause in relation.clauses:
            parts.append(self.compile_clause(clause, self.values))
        with self.located(relation.declaration.line):
            only_input = not relation.clauses
            if not parts:
                empty = self.flow.input(f"_empty_{name}", relation_columns(relation))
                parts = [self._zero(relation, empty)]
            heights = self._with_height(relation, parts, only_input)
            self.values[HEIGHTS + name] = heights
            if inp is not None and only_input:
                self.values[name] = inp
            else:
                self.values[name] = heights.select(*[c for c, _ in relation_columns(relation)])
        self.plan.append(f"  {name}: with proof heights")

    def compile_recursive(self, relations: list):
        loop = self.stratum_loop(relations)
        variables, env = {}, dict(self.values)
        for relation in relations:
            cols = relation_columns(relation)
            with self.located(relation.declaration.line):
                var = loop.variable(columns=cols + [(height_column(relation), "int")])
                variables[relation.name] = var
                env[HEIGHTS + relation.name] = var
                env[relation.name] = var.select(*[c for c, _ in cols])
        for relation in relations:
            inp = self.input_of(relation)
            parts = [self._zero(relation, inp)] if inp is not None else []
            for clause in relation.clauses:
                parts.append(self.compile_clause(clause, env))
            with self.located(relation.declaration.line):
                variables[relation.name].set(self._with_height(relation, parts, False))
        for relation in relations:
            with self.located(relation.declaration.line):
                heights = variables[relation.name].leave()
                self.values[HEIGHTS + relation.name] = heights
                self.values[relation.name] = heights.select(
                    *[c for c, _ in relation_columns(relation)])

    def _compile_clause(self, clause, env):
        head = self.analysed.relations[clause.head.relation]
        self.plan.append(f"  {render_clause(clause)}  [with heights]")
        literals, heights, _ = self._rewrite(clause, name_wildcards=False)
        needed = {v.name for v in ast.term_variables(*clause.head.args)} | set(heights.values())
        frame, aggregates = self.conjunction(literals, env, clause.term_types, needed,
                                             extra_terms=clause.head.args, plan=clause.plan)
        exprs = {}
        if head.arity == 0:
            exprs[UNIT] = Lit(0)
        for i, arg in enumerate(clause.head.args):
            exprs[f"c{i}"] = term_expression(arg, clause.term_types, aggregates)
        exprs[height_column(head)] = _one_plus_max([col(var_column(h))
                                                    for h in heights.values()])
        return frame.collection.select(**exprs)

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
        with self.located(relation.declaration.line):
            request = self.flow.input(f"#req:{name}", cols)
            names = [c for c, _ in cols]
            asked = request.join(self.values[HEIGHTS + name], on=names)
        self.requests[name] = request
        self.asked[name] = asked.output(f"#asked:{name}")
        numbers = rule_numbers(relation)
        self.witnesses[name] = []
        for clause in relation.clauses:
            with self.located(clause.rule.line):
                self.witnesses[name].append(
                    self._witness(clause, relation, asked, numbers[id(clause)]))

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
        wanted = set(bind)
        for lit in literals:
            atom = lit.atom if isinstance(lit, ast.Negation) else lit
            if isinstance(atom, ast.Atom):
                wanted |= {a.name for a in atom.args if isinstance(a, ast.Var)}
            elif isinstance(lit, ast.Comparison):
                wanted |= {v.name for v in ast.term_variables(lit.left, lit.right)}
        steps: list = []
        frame, _ = self.conjunction([*literals, *pending, *below], self.values, types, wanted,
                                    start=start, steps=steps)
        variables = sorted(v for v in frame.variables if v in wanted)
        out = frame.collection.select(**{var_column(v): var_column(v) for v in variables}
                                      or {UNIT: 0})
        self.plan.append(f"  witness R{rule} of {relation.name}: " + " → ".join(steps))
        return Witness(clause, rule, out.output(f"#witness:{relation.name}:R{rule}"),
                       variables, head, literals)


def _one_plus_max(heights: list):
    if not heights:
        return Lit(1)
    top = heights[0]
    for h in heights[1:]:
        top = (top + h + abs(top - h)) // 2  # max of two integers, exactly
    return top + 1

