"""A conjunction as a join plan over its positive atoms.

The positive atoms are joined in a greedy order (most shared bound variables,
then most constants), or in a ``.plan``'s; comparisons, assignments,
negations (antijoin) and aggregates (:mod:`.aggregates`) are applied as soon
as their variables are bound, and columns no later step needs are projected
away right after each join.  A relation joined on the same columns by several
clauses is arranged once (the collection API caches arrangements per
collection and key); ``arrangement_uses`` counts the join inputs that share one.

>>> from diffflow.datalog.syntax.parser import parse
>>> atoms = parse("r(x) :- a(x, y), b(y, 1), c(z).").rules[0].body[0].literals
>>> [a.relation for a in order_atoms(atoms, {"y"})]
['b', 'a', 'c']
"""
from __future__ import annotations

from diffflow.dataflow.expr import Lit, col
from diffflow.datalog.analysis.bindings import assignment
from diffflow.datalog.lower.aggregates import aggregate_variables, compile_aggregate
from diffflow.datalog.lower.body_items import (_aggregates_of, _generator_side, _atom_vars, _cmp_vars, _item_vars, _assigned_later, _all_vars_of)
from diffflow.datalog.lower.columns import COLUMN_TYPE, UNIT, Frame, term_expression, var_column
from diffflow.datalog.lower.shared_bodies import atom_code, renamed, step_key
from diffflow.datalog.lower.naming import Naming
from diffflow.datalog.lower.join_order import (filter_atoms, first_positions, local_literals,
                                               order_atoms, semijoin_reducers)
from diffflow.datalog.syntax import ast, intrinsics
from diffflow.datalog.syntax.render import render_atom, render_literal, render_term
from diffflow.datalog.values import functors
from diffflow.datalog.values.generators import RangeGenerator


class ClauseCompiler(Naming):
    """Builds the join plans of clauses into ``flow``; ``plan`` collects their text."""

    def __init__(self, flow):
        self.flow = flow
        self.plan: list = []
        self.unit = None  # the one-row input collection, once a plan needs it
        self.arrangement_uses: dict = {}
        self._bases: dict = {}
        self._filtered: dict = {}  # step parts -> an atom's rows joined to its filters
        self._aggregate_count = 0
        self._generated = 0  # scratch columns of generators compared with bound variables
        self.sizes: dict | None = None  # relation -> estimated rows, for the join order
        self.orders: list = []  # every conjunction's order: what a re-plan by sizes reads
        self.cross_products: list = []  # ((line, column, head), atom) joined on nothing
        self.clause_line = None  # the clause being planned: (line, column, head relation)
        self.filters: dict = {}  # id(atom) -> atoms joined to its relation first (join_order)
        self.reducers: dict = {}  # id(atom) -> (later atom, variables): its semijoin first
        self.distinct = None  # (relation, position) -> distinct values, for the semijoins
        self.steps: dict = {}  # step key -> (canonical names, frame, line): joins done once
        self.push_filters = True  # (provenance keeps every atom's own height: off there)

    def conjunction(self, literals, env, types, needed_after, extra_terms=(), start=None,
                    steps=None, plan=None):
        """Join plan for a conjunction; returns the frame and the aggregate column names.

        ``start`` is an initial frame (for correlated aggregate bodies).
        ``needed_after`` are variables the caller still needs from the frame.
        ``plan`` is a ``.plan`` order of the positive atoms (0-based), if any.
        """
        atoms = [l for l in literals if isinstance(l, ast.Atom)]
        pending = [l for l in literals if not isinstance(l, ast.Atom)]
        aggregates: dict = {}  # id(AggregateTerm) -> column
        # an aggregate's result is a variable of the frame (named now, bound when it is
        # computed), so later joins keep it for the comparisons and head terms that use it
        names: dict = {}  # id(AggregateTerm) -> variable name
        comparisons = [lit for lit in pending if isinstance(lit, ast.Comparison)]
        for term in [*(t for c in comparisons for t in ast.literal_terms(c)), *extra_terms]:
            for agg in ast.term_aggregates(term):
                pending.append(agg)
                self._aggregate_count += 1
                names[id(agg)] = f"#a{self._aggregate_count}"
        needed_after = set(needed_after) | \
            {names[id(a)] for a in ast.term_aggregates(*extra_terms)}
        frame = start
        bound = set(frame.variables) if frame is not None else set()
        outer = self.filters, self.reducers  # (an aggregate's body is planned inside its rule's)
        self.filters, self.reducers = {}, {}  # (magic sets copy atoms between clauses: per plan)
        if plan is None and self.push_filters:
            atoms, self.filters = filter_atoms(atoms)
        try:
            return self._conjunction(atoms, pending, frame, bound, env, types, needed_after,
                                     plan, comparisons, steps, aggregates, names)
        finally:
            self.filters, self.reducers = outer

    def _conjunction(self, atoms, pending, frame, bound, env, types, needed_after, plan,
                     comparisons, steps, aggregates, names):
        def item_vars(item):
            inner = _aggregates_of(item) if not isinstance(item, ast.AggregateTerm) else []
            return [*_item_vars(item), *(names[id(a)] for a in inner)]

        order = order_atoms(atoms, bound, plan, comparisons, self.sizes)
        self.orders.append((atoms, set(bound), plan, comparisons, [id(a) for a in order]))
        if plan is None and self.push_filters and self.sizes is not None:
            self.reducers = semijoin_reducers(order, self.sizes, self.distinct)
        record = steps is None
        # (a step is shared only while the steps before it were: none applied a literal)
        key = () if record and frame is None and plan is None and self.push_filters and \
            self.clause_line is not None else None
        canon: dict = {}
        steps = [] if steps is None else steps
        for index, atom in enumerate(order):
            later = order[index + 1:]
            needed = needed_after | {v for a in later for v in _atom_vars(a)} | \
                {v for item in pending for v in item_vars(item)}
            local = local_literals(atom, pending, set(frame.variables)) \
                if frame is not None else []
            if local:
                key = None
                frame = self.join_computed(frame, atom, env, needed, steps, local, pending,
                                           types, aggregates, names)
            elif frame is None:
                frame = self.join_atom(frame, atom, env, needed, steps)
                key = step_key(key, self.step_parts(atom, env, canon), frame.variables, canon)
            elif key is None:
                frame = self.join_atom(frame, atom, env, needed, steps)
            else:
                frame, key = self.join_shared(frame, atom, env, needed, steps, key, canon,
                                              order[:index])
            self.tag(self.atom_text(atom))
            bound = set(frame.variables)
            waiting = len(pending)
            frame = self.apply_ready(frame, pending, env, types, aggregates, steps, later, names)
            if len(pending) != waiting:
                key = None
        if frame is None:  # no positive atom: start from the one-row unit collection
            frame = Frame(self.unit_collection(), [])
        if pending:  # no positive atom, or a start frame that binds what they need
            frame = self.apply_ready(frame, pending, env, types, aggregates, steps, [], names)
        frame = frame.named()
        if pending:  # analysis guarantees this cannot happen; fail loudly if it does
            raise AssertionError(f"unplaced literals {pending}")
        if record:
            self.plan.append("      " + (" → ".join(steps) or "one row"))
        return frame, aggregates

    def atom_text(self, atom) -> str:
        """An atom as the names of the nodes that join it show it."""
        return render_atom(atom)

    def sized(self, atom) -> str:
        """An atom as the plan shows it, with its relation's estimated rows once known and
        the atoms that filter it first (``⋉``)."""
        def one(a):
            text = render_atom(a)
            if self.sizes is not None and a.relation in self.sizes:
                text += f" ~{self.sizes[a.relation]:,}"
            return text
        text = " ⋉ ".join(one(a) for a in [atom, *self.filters.get(id(atom), ())])
        if id(atom) in self.reducers:
            later, shared = self.reducers[id(atom)]
            text += f" ⋉ {{{', '.join(shared)} : {one(later)}}}"  # (its values there)
        return text

    def reduced(self, atom) -> bool:
        """Whether the atom's rows are its relation's joined first to filters or a semijoin
        (so the join does not read the relation's own index)."""
        return id(atom) in self.filters or id(atom) in self.reducers

    def filtered(self, atom, env):
        """The atom's relation (:meth:`base`) joined first to the atoms that only filter it,
        on their variables (each a set, so every row stays once), and to the distinct
        values of the later atom that reduces it (:func:`semijoin_reducers`)."""
        if not self.reduced(atom):
            return self.base(atom, env)
        key = tuple(self.step_parts(atom, env, {}))  # (the same filters of another rule)
        if None not in key and key in self._filtered:
            return self._filtered[key]
        base = self.base(atom, env)
        first = first_positions(atom)
        # (a filter on all its variables: a set already; a semijoin on the shared ones only:
        # the later atom's values there, kept distinct)
        joins = [(f, list(first_positions(f)), False) for f in self.filters.get(id(atom), ())]
        if id(atom) in self.reducers:
            joins.append((*self.reducers[id(atom)], True))
        for other_atom, variables, distinct in joins:
            theirs = first_positions(other_atom)
            other = self.base(other_atom, env).select(*[f"c{theirs[v]}" for v in variables])
            base = base.join(other.distinct() if distinct else other,
                             left_on=[f"c{first[v]}" for v in variables],
                             right_on=[f"c{theirs[v]}" for v in variables])
        if None not in key:
            self._filtered[key] = base
        return base

    def unit_collection(self):
        if self.unit is None:
            with self.unnamed():  # (every rule's: no one rule's)
                self.unit = self.flow.input("_unit", [(UNIT, "int")])
        return self.unit

    def base(self, atom: ast.Atom, env) -> object:
        """The relation's collection, filtered by the atom's constants and repeated variables."""
        relation = env[atom.relation]
        conditions = []
        first = {}
        for i, arg in enumerate(atom.args):
            if isinstance(arg, (ast.Number, ast.Float, ast.String)):
                conditions.append((f"c{i}", "=", arg.value))
            elif isinstance(arg, ast.Var):
                if arg.name in first:
                    conditions.append((f"c{i}", "==col", first[arg.name]))
                else:
                    first[arg.name] = f"c{i}"
        if not conditions:
            return relation
        key = (relation.node.id, tuple((c, op, repr(v)) for c, op, v in conditions))
        cached = self._bases.get(key)
        if cached is None:
            predicate = None
            for column, op, value in conditions:
                term = col(column) == (col(value) if op == "==col" else Lit(value))
                predicate = term if predicate is None else predicate & term
            cached = self._bases[key] = relation.filter(predicate)
        return cached

    def join_atom(self, frame, atom, env, needed, steps):
        base = self.filtered(atom, env)
        arity = len(atom.args)
        positions = first_positions(atom)
        label = render_atom(atom)
        if frame is None:
            keep = [v for v in positions if v in needed]
            steps.append(f"scan {self.sized(atom)}")
            source = atom.relation if not self.reduced(atom) else ""  # (not its index)
            return Frame(base, keep, {v: f"c{positions[v]}" for v in keep}, source)
        shared = [v for v in positions if v in frame.variables]
        left = frame.collection
        exists = left_exists = False
        if shared:
            left_on = [frame.column(v) for v in shared]
            right_on = [f"c{positions[v]}" for v in shared]
        else:  # a cross product: join on a constant column
            # an atom none of whose values are needed later only says whether it holds: its
            # facts reduced to one row, so the product costs one row per row on the left
            # (and the same for the rows on the left when none of theirs is needed)
            exists = arity and not any(v in needed for v in positions) and \
                set(base.columns) == {f"c{i}" for i in range(arity)}
            frame = frame.named()
            left = frame.collection
            left_exists = not any(v in needed for v in frame.variables) and set(left.columns) \
                == ({frame.column(v) for v in frame.variables} if frame.variables else {UNIT})
            if arity and not exists and not left_exists and UNIT not in base.columns and \
                    frame.variables and self.clause_line is not None:
                self.cross_products.append((self.clause_line, label))
            if left_exists:
                left = left.select(**{UNIT: 0}).distinct()
            elif UNIT not in left.columns:
                left = left.select(*left.columns, **{UNIT: 0})
            if arity == 0 or UNIT in base.columns:   # a nullary relation (with its height)
                right_base = base
            elif exists:
                right_base = base.select(**{UNIT: 0}).distinct()
            else:
                right_base = base.select(*base.columns, **{UNIT: 0})
            left_on = right_on = [UNIT]
            base = right_base
        rest = [c for c in base.columns if c not in right_on]
        joined = left.join(base, left_on=left_on, right_on=right_on,
                           rename={c: f"_r{c}" for c in rest})
        scope = joined.scope.label if joined.scope.parent is not None else ""
        uses = [(atom.relation, tuple(right_on), scope)] \
            if not self.reduced(atom) else []
        if frame.raw is not None and shared and frame.source:
            uses.append((frame.source, tuple(left_on), scope))
        for use in uses:
            self.arrangement_uses[use] = self.arrangement_uses.get(use, 0) + 1
        how = ", ".join(shared) or ("nothing: one row if it holds" if exists else
                                    "nothing: one row if the atoms before hold"
                                    if left_exists else "nothing: cross product")
        steps.append(f"join {self.sized(atom)} on ({how})")
        variables = [v for v in frame.variables if v in needed]
        names = {var_column(v): frame.column(v) for v in variables}
        for v, i in positions.items():
            if v not in frame.variables and v in needed:
                names[var_column(v)] = f"_rc{i}"
                variables.append(v)
        if not names:
            names = {UNIT: 0}
        return Frame(joined.select(**names), variables)

    def join_shared(self, frame, atom, env, needed, steps, key, canon, before):
        """:meth:`join_atom` -- or, when an earlier rule's body made the same join on the
        same rows (:func:`~diffflow.datalog.lower.shared_bodies.step_key`), its rows under
        this rule's variable names (``before``: the atoms joined so far, each a step of the
        shared run); returns the frame and the step's key."""
        positions = first_positions(atom)
        parts = self.step_parts(atom, env, canon)
        kept = {v for v in [*frame.variables, *positions] if v in needed}
        step = step_key(key, parts, kept, canon) \
            if set(positions) & set(frame.variables) else None  # (no cross products)
        if step is None:
            return self.join_atom(frame, atom, env, needed, steps), None
        if step in self.steps:
            names, shared_frame, (line, column) = self.steps[step]
            joined = renamed(shared_frame, names, canon)
            whose = "another clause of this rule" if (line, column) == self.clause_line[:2] \
                else f"the rule at {self.where(line)}"
            # (a run is shared only while it is all joins: its steps so far are those joins)
            steps[:] = [f"{' ⋈ '.join(self.sized(a) for a in [*before, atom])}: the rows "
                        f"of {whose}, shared"]
            return joined, step
        joined = self.join_atom(frame, atom, env, needed, steps)
        self.steps[step] = (dict(canon), joined, self.clause_line[:2])
        return joined, step

    def step_parts(self, atom, env, canon) -> list:
        """What an atom's rows in a join step depend on: the atom, the atoms that filter it
        and its semijoin (:func:`~diffflow.datalog.lower.shared_bodies.atom_code`)."""
        parts = [atom_code(atom, env, canon)]
        parts += [atom_code(f, env, canon) for f in self.filters.get(id(atom), ())]
        if id(atom) in self.reducers:
            reducer, shared = self.reducers[id(atom)]
            parts.append((atom_code(reducer, env, canon), tuple(canon[v] for v in shared)))
        return parts

    def join_computed(self, frame, atom, env, needed, steps, local, pending, types,
                      aggregates, names):
        """Join ``atom`` after it applies ``local`` (see
        :func:`~diffflow.datalog.lower.join_order.local_literals`) on its own rows: the
        variables those equalities compute are join keys, not filters after the join."""
        positions = first_positions(atom)
        inner: list = []
        todo = list(local)
        scan = Frame(self.filtered(atom, env), list(positions),
                     {v: f"c{i}" for v, i in positions.items()}, atom.relation).named()
        right = self.apply_ready(scan, todo, env, types, aggregates, inner, [], names)
        if todo:  # local_literals picks only what the atom's own columns compute
            raise AssertionError(f"unplaced local literals {todo}")
        for item in local:
            pending[:] = [p for p in pending if p is not item]
        shared = [v for v in right.variables if v in frame.variables]
        extra = [v for v in right.variables if v not in frame.variables and v in needed]
        right_columns = [var_column(v) for v in shared + extra]
        right_rows = right.collection.select(*right_columns)
        frame = frame.named()
        keys = [var_column(v) for v in shared]
        joined = frame.collection.join(right_rows, left_on=keys, right_on=keys,
                                       rename={var_column(v): f"_r{var_column(v)}"
                                               for v in extra})
        inner_text = ", ".join(s.removeprefix("assign ").removeprefix("filter ")
                               for s in inner)
        steps.append(f"join {self.sized(atom)} [{inner_text}] on ({', '.join(shared)})")
        variables = [v for v in frame.variables if v in needed]
        columns = {var_column(v): var_column(v) for v in variables}
        for v in extra:
            columns[var_column(v)] = f"_r{var_column(v)}"
            variables.append(v)
        if not columns:
            columns = {UNIT: 0}
        return Frame(joined.select(**columns), variables)

    def apply_ready(self, frame, pending, env, types, aggregates, steps, later_atoms, names):
        """Apply every pending literal whose variables are bound, until none is."""
        progress, waited = True, False  # waited: an aggregate waits for an assignment
        while progress or (waited and not later_atoms):
            # (with nothing else to do, an aggregate stops waiting: circular assignments)
            forced, progress, waited = waited and not progress, False, False
            # cheap filters first, then antijoins, assignments and aggregates
            pending.sort(key=lambda item: _PRIORITY.get(type(item).__name__, 0) +
                         (1 if isinstance(item, ast.Comparison) and
                          assignment(item, set(frame.variables)) else 0))
            for item in list(pending):
                bound = set(frame.variables)
                if isinstance(item, ast.AggregateTerm):
                    correlated = aggregate_variables(item) & \
                        _all_vars_of(pending, later_atoms, exclude=item)
                    outer = {v for v in aggregate_variables(item) if v in bound}
                    # wait until every correlated variable the outer rule binds is bound
                    # (by a later atom, or an assignment such as w = min ... : { ... })
                    if not correlated <= bound and later_atoms:
                        continue
                    if not correlated <= bound and not forced and \
                            _assigned_later(pending, item, correlated - bound):
                        waited = True
                        continue
                    frame = compile_aggregate(self, frame.named(), item, outer, env, types,
                                              aggregates, steps, names[id(item)])
                elif isinstance(item, ast.Negation):
                    if not set(_atom_vars(item.atom)) <= bound:
                        continue
                    frame = self.negate(frame.named(), item.atom, env, steps)
                elif isinstance(item, ast.Boolean):
                    if not item.value:
                        frame = frame.named()
                        frame = Frame(frame.collection.filter(Lit(False) == Lit(True)),
                                      frame.variables)
                        steps.append("false")
                elif isinstance(item, ast.Comparison):
                    if any(id(a) not in aggregates
                           for a in ast.term_aggregates(item.left, item.right)):
                        continue
                    target = assignment(item, bound)
                    free = [v for v in _cmp_vars(item) if v not in bound]
                    if target is not None or not free:
                        frame = frame.named()
                    generator = _generator_side(item)
                    if generator is not None and (target is not None or not free):
                        frame = self.generate(frame, item, generator, target, types,
                                              aggregates, steps)
                    elif target is not None:
                        var, expr = target
                        value = term_expression(expr, types, aggregates)
                        collection = frame.collection.select(
                            *frame.collection.columns, **{var_column(var): value})
                        frame = Frame(collection, frame.variables + [var])
                        steps.append(f"assign {var} = {render_term(expr)}")
                    elif free:
                        continue
                    else:
                        frame = self.compare(frame, item, types, aggregates, steps)
                self.tag(render_term(item) if isinstance(item, ast.AggregateTerm)
                         else render_literal(item))
                pending.remove(item)
                progress = True
        return frame

    def generate(self, frame, c, generator, target, types, aggregates, steps):
        """``x = range(a, b[, step])``: one row per value, into ``x`` when it is unbound,
        else into a scratch column compared with ``x`` and dropped."""
        kind = types[id(generator)]
        args = [term_expression(a, types, aggregates) for a in generator.args]
        schema = frame.collection.schema
        self._generated += 1
        name = target[0] if target is not None else f"#range{self._generated}"
        column = var_column(name)
        out = [*zip(schema.names, schema.types), (column, COLUMN_TYPE[kind])]
        collection = frame.collection._expand(
            RangeGenerator(args, schema, kind), out)
        steps.append(f"generate {name} = {render_term(generator)}")
        if target is not None:
            return Frame(collection, frame.variables + [name])
        other = c.right if generator is c.left else c.left
        keep = collection.filter(col(column) == term_expression(other, types, aggregates))
        return Frame(keep.select(*schema.names), frame.variables)

    def compare(self, frame, c, types, aggregates, steps):
        left = term_expression(c.left, types, aggregates)
        right = term_expression(c.right, types, aggregates)
        op = "==" if c.op == "=" else c.op
        if op.lstrip("!") in intrinsics.CONSTRAINTS or (  # contains(sub, s), match(regex, s)
                op in ("<", "<=", ">", ">=") and types[id(c.left)] == "symbol"):  # text order
            predicate = functors.constraint(op, left, right)  # (!match: not simply negated)
            steps.append(f"filter {render_literal(c)}")
        else:
            predicate = {"==": left.__eq__, "!=": left.__ne__, "<": left.__lt__,
                         "<=": left.__le__, ">": left.__gt__, ">=": left.__ge__}[op](right)
            steps.append(f"filter {render_literal(c)}")
        return Frame(frame.collection.filter(predicate), frame.variables)

    def negate(self, frame, atom, env, steps):
        base = self.base(atom, env)
        positions = first_positions(atom)
        left = frame.collection
        if positions:
            left_on = [var_column(v) for v in positions]
            right_on = [f"c{i}" for i in positions.values()]
        else:
            if UNIT not in left.columns:
                left = left.select(*left.columns, **{UNIT: 0})
            base = base.select(**{UNIT: 0})
            left_on = right_on = [UNIT]
        steps.append(f"antijoin {render_atom(atom)}")
        result = left.antijoin(base, left_on=left_on, right_on=right_on)
        if UNIT in result.columns and UNIT not in frame.collection.columns:
            result = result.select(*frame.collection.columns)
        return Frame(result, frame.variables)


_PRIORITY = {"Boolean": 0, "Comparison": 0, "Negation": 2, "AggregateTerm": 3}


# -- variable bookkeeping ----------------------------------------------------------------------
