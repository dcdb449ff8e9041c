"""Analysed Datalog to a dataflow built with the public collection API.

Translation, stratum by stratum (dependencies first):

* every relation is a collection with columns ``c0, c1, ...`` (a nullary
  relation has the single column ``_unit``, always 0);
* a relation that may receive facts (``.input``, facts in the text, or no
  rules) has an input collection; the :class:`~diffflow.datalog.program.Program`
  keeps it a set;
* a clause becomes a join plan over its positive atoms (:mod:`.joins`, with
  aggregates in :mod:`.aggregates`), every term computed in the type analysis
  recorded for it (:mod:`.columns`, :mod:`~diffflow.datalog.analysis.types`);
* a relation's value is ``distinct`` of its input and all its clauses;
* a recursive stratum is one loop with one variable per relation;
* a relation joined on the same columns by several clauses is arranged once
  (the collection API caches arrangements per collection and key).

Numbers follow Soufflé: ``number`` arithmetic wraps to 32-bit signed,
``unsigned`` to 32-bit unsigned, ``/`` and ``%`` truncate toward zero.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".decl e(x: number)\\n.decl r(x: number)\\nr(x + 1) :- e(x)."))
>>> compile_program(a).plan[2:]
['stratum r', '  r((x + 1)) :- e(x).', '      scan e(x)']
"""
from __future__ import annotations

from dataclasses import dataclass, field

from diffflow.api.flow import Dataflow
from diffflow.dataflow.expr import Lit, col
from diffflow.datalog.analysis.analysed import Analysed, Clause, Relation
from diffflow.datalog.lower.columns import UNIT, relation_columns, term_expression, var_column
from diffflow.datalog.lower.joins import ClauseCompiler
from diffflow.datalog.lower.relation_value import number_rows, relation_value
from diffflow.datalog.lower.shared_bodies import body_key, canonical_names, renamed
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogWarning, locate
from diffflow.datalog.syntax.intrinsics import is_counter
from diffflow.datalog.syntax.render import render_atom, render_clause


def relation_columns_names(relation: Relation) -> list:
    return [name for name, _ in relation_columns(relation)]


@dataclass
class Compiled:
    flow: object
    inputs: dict            # relation name -> InputCollection
    collections: dict       # relation name -> Collection (its value)
    outputs: dict           # relation name -> Output
    unit: object            # one-row input collection, or None
    plan: list = field(default_factory=list)   # text lines
    warnings: list = field(default_factory=list)  # DatalogWarning: rules joined on nothing
    orders: list = field(default_factory=list)  # each conjunction's join order (see .joins)


def compile_program(analysed: Analysed, partitions: int = 1, outputs=None,
                    max_rounds: int | None = None, flow_options: dict | None = None,
                    sizes: dict | None = None, symbols=None, distinct=None,
                    changes: bool = True) -> Compiled:
    """Build the dataflow; ``outputs`` names relations to observe (default: all), each with a
    change feed unless ``changes`` is false (a feed holds every change until it is read).

    ``flow_options`` go to :class:`~diffflow.Dataflow` (runtime, spark, checkpoints);
    ``sizes`` (relation -> estimated rows) orders joins and, with ``distinct`` (see
    :func:`~diffflow.datalog.lower.join_order.distinct_counts`), picks semijoins;
    ``symbols`` is a symbol table to share (so rows encoded for another build of the
    program mean the same).

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> compiled = compile_program(analyse(parse(".decl e(x: number)\\n.decl r(x: number)\\n"
    ...                                          "r(x) :- e(x), !e(x + 1).")))
    >>> sorted(compiled.inputs), sorted(compiled.outputs)
    (['e'], ['e', 'r'])
    """
    compiler = _Compiler(analysed, partitions, outputs, max_rounds, flow_options or {})
    compiler.sizes, compiler.distinct, compiler.keep_changes = sizes, distinct, changes
    if symbols is not None:
        compiler.flow.symbols = symbols
    return compiler.run()


def recompiled_by_sizes(compiled: Compiled, analysed: Analysed, input_sizes: dict,
                        partitions, outputs, max_rounds, options,
                        always: bool = False, distinct=None,
                        changes: bool = True) -> Compiled | None:
    """The program compiled again with its joins ordered by ``input_sizes`` (relation ->
    facts), sharing ``compiled``'s symbols; ``None`` when no order would change and no
    semijoin would be added (unless ``always``) or no relation has facts."""
    from diffflow.datalog.lower.join_order import estimate_sizes, order_atoms, semijoin_reducers

    sizes = estimate_sizes(analysed, input_sizes)
    if not any(sizes.values()):
        return None

    def same(atoms, bound, plan, comparisons, chosen):
        order = order_atoms(atoms, bound, plan, comparisons, sizes)
        return [id(a) for a in order] == chosen and \
            (plan is not None or not semijoin_reducers(order, sizes, distinct))
    if not always and all(same(*order) for order in compiled.orders):
        return None
    return compile_program(analysed, partitions, outputs, max_rounds, options, sizes=sizes,
                           symbols=compiled.flow.symbols, distinct=distinct, changes=changes)


class _Compiler(ClauseCompiler):
    def __init__(self, analysed: Analysed, partitions: int, outputs, max_rounds: int | None,
                 flow_options: dict):
        super().__init__(Dataflow(partitions=partitions, **flow_options))
        self.analysed, self.max_rounds = analysed, max_rounds
        self.inputs, self.values, self.outputs = {}, {}, {}
        self.wanted = set(analysed.relations) if outputs is None else set(outputs)
        self.bodies: dict = {}  # body key -> (clause, frame): bodies joined once
        self.keep_changes = True  # (outputs with change feeds)

    def run(self) -> Compiled:
        relations = self.analysed.relations
        needed = self.needed()
        for stratum in self.analysed.strata:
            names = stratum.relations
            if not any(n in needed for n in names):
                self.plan.append(f"stratum {', '.join(names)}: not computed (no output reads "
                                 f"it; Program.query asks it on demand)")
                continue
            if stratum.recursive:
                self.plan.append(f"stratum {', '.join(names)} (recursive: one loop, "
                                 f"{len(names)} variable(s))")
                self.compile_recursive([relations[n] for n in names])
            else:
                self.plan.append(f"stratum {names[0]}")
                self.compile_plain(relations[names[0]])
        for name in relations:
            if name in self.wanted and name in self.values:
                with self.building(relations[name]):
                    self.outputs[name] = self.values[name].output(
                        name, changes=self.keep_changes)
        shared = {k: n for k, n in self.arrangement_uses.items() if n > 1}
        if shared:
            self.plan.append("shared arrangements:")
            for (rel, keys, scope), n in sorted(shared.items()):
                where = f" in loop {scope!r}" if scope else ""
                self.plan.append(f"  {rel} by ({', '.join(keys)}){where}: one index read by "
                                 f"{n} join inputs")
        for note in self.analysed.notes:
            self.plan.append(f"note: {note}")
        return Compiled(self.flow, self.inputs, self.values, self.outputs, self.unit, self.plan,
                        self.cross_product_warnings(), self.orders)

    def cross_product_warnings(self) -> list:
        """One located warning per rule whose body joins atoms that share no variable."""
        warnings, seen = [], set()
        for (line, column, head), atom in self.cross_products:
            if (line, column) in seen:
                continue
            seen.add((line, column))
            warnings.append(DatalogWarning(
                f"the rule for {head} joins {atom} with the atoms before it on no variable: "
                f"a cross product (every pair of their facts)", self.analysed.source,
                self.analysed.program.filename, line, column,
                hint="share a variable between the atoms (or an equality such as x = y + 1) "
                     "if the pairs are then filtered; if every pair is wanted, nothing is "
                     "wrong"))
        return warnings

    def needed(self) -> set:
        """The relations to compute: what the outputs read, transitively, and every relation
        that takes facts (so facts can be inserted whatever is read)."""
        relations = self.analysed.relations
        todo = [n for n in self.wanted if n in relations]
        todo += [n for n, r in relations.items() if r.has_input]
        needed: set = set()
        while todo:
            name = todo.pop()
            if name in needed:
                continue
            needed.add(name)
            relation = relations[name]
            for clause in relation.clauses + relation.dominated:
                todo.extend(n for n in ast.clause_relations(clause.literals, clause.head.args)
                            if n in relations)
        return needed

    def where(self, line: int) -> str:
        """``file:line`` of a program line as the user wrote it (before preprocessing)."""
        filename, line, _, _ = locate(self.analysed.source, self.analysed.program.filename, line)
        return f"{filename}:{line}"

    # -- strata ------------------------------------------------------------------------------
    def input_of(self, relation: Relation):
        if not relation.has_input:
            return None
        with self.building(relation):
            inp = self.flow.input(relation.name, relation_columns(relation))
        self.inputs[relation.name] = inp
        return inp

    def compile_plain(self, relation: Relation):
        inp = self.input_of(relation)
        parts = [inp] if inp is not None else []
        for clause in relation.clauses:
            parts.append(self.compile_clause(clause, self.values))
        if inp is not None and len(parts) == 1 and not relation.shaped:
            self.plan.append(f"  {relation.name}: input facts only")
            self.values[relation.name] = inp
            return
        if not parts:  # every rule was unfolded away (inline clauses that never hold)
            self.plan.append(f"  {relation.name}: always empty")
            with self.building(relation):
                self.values[relation.name] = self.flow.input(f"_empty_{relation.name}",
                                                             relation_columns(relation))
            return
        self.values[relation.name] = self.value_of(relation, parts, self.values)

    def stratum_loop(self, relations: list):
        """The loop of a recursive stratum, located where the recursion is written: the
        stratum's first rule."""
        first = min((c.rule.line for r in relations for c in r.clauses),
                    default=relations[0].declaration.line)
        with self.located(first):
            return self.flow.loop(name="stratum " + ",".join(r.name for r in relations),
                                  max_rounds=self.max_rounds)

    def compile_recursive(self, relations: list):
        loop = self.stratum_loop(relations)
        variables = {}
        for relation in relations:
            with self.building(relation):
                variables[relation.name] = loop.variable(columns=relation_columns(relation))
        env = dict(self.values)
        env.update(variables)
        for relation in relations:
            inp = self.input_of(relation)
            parts = [inp] if inp is not None else []
            for clause in relation.clauses:
                parts.append(self.compile_clause(clause, env))
            value = self.value_of(relation, parts, env, previous=variables[relation.name])
            with self.building(relation):
                variables[relation.name].set(value)
        for relation in relations:
            with self.building(relation):
                self.values[relation.name] = variables[relation.name].leave()

    def value_of(self, relation: Relation, parts: list, env: dict, previous=None):
        """A relation's value: the distinct union of its parts, then what its declaration
        adds (:mod:`.relation_value`); subsumptive rules read the candidates as the
        relation; ``previous`` is its loop variable inside recursion."""
        with self.building(relation):
            candidates = parts[0].concat(*parts[1:]).distinct()
        dominated = None
        if relation.dominated and previous is not None:  # last round's rows stay candidates
            with self.building(relation):
                candidates = candidates.concat(previous).distinct()
        if relation.dominated:
            self.plan.append(f"  {relation.name}: minus the candidates its subsumptive rules "
                             f"dominate")
            scope = dict(env)
            scope[relation.name] = candidates
            found = [self.compile_clause(c, scope) for c in relation.dominated]
            dominated = found[0].concat(*found[1:])
        if relation.eqrel:
            self.plan.append(f"  {relation.name}: equivalence closure (eqrel)")
        if relation.choice:
            self.plan.append(f"  {relation.name}: one row per choice-domain value, the first "
                             f"in value order" + (" among values not chosen in earlier rounds"
                                                  if previous is not None else ""))
        if relation.limit is not None:
            self.plan.append(f"  {relation.name}: the first {relation.limit} rows in value "
                             f"order (.limitsize)")
        with self.building(relation):
            return relation_value(relation, candidates, dominated, previous)

    # -- clauses -----------------------------------------------------------------------------
    def compile_clause(self, clause: Clause, env: dict):
        with self.building(clause):
            rows = self._compile_clause(clause, env)
            self.tag(render_atom(clause.head))  # (what builds the head's rows)
            return rows

    def _compile_clause(self, clause: Clause, env: dict):
        head = self.analysed.relations[clause.head.relation]
        # (a subsumptive rule compares pairs of candidates by design: no warning)
        dominated = any(clause is d for d in head.dominated)
        self.clause_line = None if dominated else \
            (clause.rule.line, clause.rule.column, clause.head.relation)
        self.plan.append(f"  {render_clause(clause)}")
        needed_by_head = {v.name for v in ast.term_variables(*clause.head.args)}
        if clause.plan is not None:
            self.plan.append(f"      (.plan version {clause.plan_version}: join order "
                             f"{', '.join(str(i + 1) for i in clause.plan)})")
        elif clause.rule.plan:
            self.plan.append("      (.plan not applied: inline relations were unfolded into "
                             "this clause)")
        key = body_key(clause, env, needed_by_head) if self.clause_line else None
        if key is not None and key in self.bodies:
            first, frame, products = self.bodies[key]
            frame, aggregates = renamed(frame, canonical_names(first), canonical_names(clause)), {}
            self.plan.append(f"      the joins of the rule at {self.where(first.rule.line)}, "
                             f"shared")
            self.cross_products += [(self.clause_line, atom) for atom in products]
        else:
            before = len(self.cross_products)
            frame, aggregates = self.conjunction(clause.literals, env, clause.term_types,
                                                 needed_by_head, extra_terms=clause.head.args,
                                                 plan=clause.plan)
            if key is not None:
                products = [atom for _, atom in self.cross_products[before:]]
                self.bodies[key] = (clause, frame, products)
        exprs = {}
        if head.arity == 0:
            exprs[UNIT] = Lit(0)
        counters, numbered, late, kinds = {}, {}, {}, []
        for i, arg in enumerate(clause.head.args):
            inner = [n for n in ast.walk_terms(arg) if is_counter(n)]
            if is_counter(arg):
                counters[f"c{i}"] = arg.counter
            elif inner:  # autoinc() inside an expression: the row is its variables' values
                for node in inner:
                    numbered[id(node)] = f"_n{len(numbered)}"
                    counters[numbered[id(node)]] = node.counter
                late[f"c{i}"] = arg
                for var in ast.term_variables(arg):
                    if var_column(var.name) not in exprs:
                        exprs[var_column(var.name)] = col(var_column(var.name))
                        kinds.append(clause.term_types[id(var)])
            else:
                exprs[f"c{i}"] = term_expression(arg, clause.term_types, aggregates)
                kinds.append(head.types[i])
        if not exprs:  # r(autoinc()) :- body: one row to number
            exprs["_row"], kinds = Lit(0), ["number"]
        rows = frame.collection.select(**exprs)
        if counters:
            self.plan.append("      autoinc(): its distinct rows numbered in value order")
            rows = number_rows(rows.distinct(), kinds, counters)
            rows = rows.select(**{name: term_expression(late[name], clause.term_types, numbered)
                                  if name in late else col(name)
                                  for name in relation_columns_names(head)})
        return rows
