"""Analysed Datalog to a dataflow built with the public collection API.

Translation, stratum by stratum (dependencies first):

* every relation is a collection with columns ``c0, c1, ...`` (a nullary
  relation has the single column ``_unit``, always 0);
* a relation that may receive facts (``.input``, facts in the text, or no
  rules) has an input collection; the :class:`~diffflow.dsl.program.Program`
  keeps it a set;
* a clause becomes a join plan over its positive atoms in a greedy order
  (most constants first, then the atom sharing most bound variables);
  comparisons, assignments, negations (antijoin) and aggregates are applied
  as soon as their variables are bound, and columns no later step needs are
  projected away right after each join;
* a relation's value is ``distinct`` of its input and all its clauses;
* a recursive stratum is one loop with one variable per relation;
* a relation joined on the same columns by several clauses is arranged once
  (the collection API caches arrangements per collection and key).

Numbers follow Soufflé: ``number`` arithmetic wraps to 32-bit signed,
``unsigned`` to 32-bit unsigned, ``/`` and ``%`` truncate toward zero.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import collection as coll
from ..expr import Lit, col, trunc_div, trunc_mod, wrap_int32, wrap_uint32
from . import ast
from .analysis import Analysed, Clause, Relation
from .errors import locate

COLUMN_TYPE = {"number": "int", "unsigned": "int", "float": "float", "symbol": "str"}
UNIT = "_unit"


def relation_columns(relation: Relation) -> list:
    """Internal ``(name, type)`` columns of a relation's collection."""
    if relation.arity == 0:
        return [(UNIT, "int")]
    return [(f"c{i}", COLUMN_TYPE[t]) for i, t in enumerate(relation.types)]


def var_column(name: str) -> str:
    """The column of a variable; one-to-one, so generated names (``#e1``, ``x#2``) never
    meet a user's.

    >>> var_column("x"), var_column("x_h1"), var_column("x#1"), var_column("?y")
    ('v_x', 'v_x__h1', 'v_x_h1', 'v__qy')
    """
    return "v_" + name.replace("_", "__").replace("?", "_q").replace("#", "_h")


@dataclass
class Compiled:
    flow: object
    inputs: dict            # relation name -> InputCollection
    collections: dict       # relation name -> Collection (its value)
    outputs: dict           # relation name -> Output
    unit: object            # one-row input collection, or None
    plan: list = field(default_factory=list)   # text lines


def compile_program(analysed: Analysed, partitions: int = 1, outputs=None,
                    max_rounds: int | None = None, flow_options: dict | None = None) -> Compiled:
    """Build the dataflow; ``outputs`` names relations to observe (default: all).

    ``flow_options`` go to :class:`~diffflow.Dataflow` (runtime, spark, checkpoints).
    """
    return _Compiler(analysed, partitions, outputs, max_rounds, flow_options or {}).run()


@dataclass
class _Frame:
    """Intermediate bindings: a collection and the column holding each variable.

    A *raw* frame is a relation scanned as it is (variables in its ``c*``
    columns), so a following join reads the relation's shared arrangement
    instead of a renamed copy.  ``named()`` renames to ``v_*`` columns.
    """
    collection: object
    variables: list  # variable names (internal columns excluded)
    raw: dict = None  # variable -> relation column, for a raw scan
    source: str = ""  # the scanned relation, for a raw scan

    def column(self, var: str) -> str:
        return self.raw[var] if self.raw is not None else var_column(var)

    def named(self) -> "_Frame":
        if self.raw is None:
            return self
        names = {var_column(v): self.raw[v] for v in self.variables} or {UNIT: 0}
        return _Frame(self.collection.select(**names), list(self.variables))


class _Compiler:
    def __init__(self, analysed: Analysed, partitions: int, outputs, max_rounds: int | None,
                 flow_options: dict):
        self.analysed, self.max_rounds = analysed, max_rounds
        self.flow = coll.Dataflow(partitions=partitions, **flow_options)
        self.inputs, self.values, self.outputs = {}, {}, {}
        self.wanted = set(analysed.relations) if outputs is None else set(outputs)
        self.unit = None
        self.plan: list = []
        self.arrangement_uses: dict = {}
        self._bases: dict = {}
        self._aggregate_count = 0

    def run(self) -> Compiled:
        relations = self.analysed.relations
        for stratum in self.analysed.strata:
            names = stratum.relations
            if stratum.recursive:
                self.plan.append(f"stratum {', '.join(names)} (recursive: one loop, "
                                 f"{len(names)} variable(s))")
                self.compile_recursive([relations[n] for n in names])
            else:
                self.plan.append(f"stratum {names[0]}")
                self.compile_plain(relations[names[0]])
        for name in relations:
            if name in self.wanted:
                self.outputs[name] = self.values[name].output(name)
        shared = {k: n for k, n in self.arrangement_uses.items() if n > 1}
        if shared:
            self.plan.append("shared arrangements:")
            for (rel, keys, scope), n in sorted(shared.items()):
                where = f" in loop {scope!r}" if scope else ""
                self.plan.append(f"  {rel} by ({', '.join(keys)}){where}: one index read by "
                                 f"{n} join inputs")
        for note in self.analysed.notes:
            self.plan.append(f"note: {note}")
        return Compiled(self.flow, self.inputs, self.values, self.outputs, self.unit, self.plan)

    def where(self, line: int) -> str:
        """``file:line`` of a program line as the user wrote it (before preprocessing)."""
        filename, line, _, _ = locate(self.analysed.source, self.analysed.program.filename, line)
        return f"{filename}:{line}"

    # -- strata ------------------------------------------------------------------------------
    def input_of(self, relation: Relation):
        if not relation.has_input:
            return None
        inp = self.flow.input(relation.name, relation_columns(relation))
        self.inputs[relation.name] = inp
        return inp

    def compile_plain(self, relation: Relation):
        inp = self.input_of(relation)
        parts = [inp] if inp is not None else []
        for clause in relation.clauses:
            parts.append(self.compile_clause(clause, self.values))
        if inp is not None and len(parts) == 1:
            self.plan.append(f"  {relation.name}: input facts only")
            self.values[relation.name] = inp
            return
        if not parts:  # every rule was unfolded away (inline clauses that never hold)
            self.plan.append(f"  {relation.name}: always empty")
            self.values[relation.name] = self.flow.input(f"_empty_{relation.name}",
                                                         relation_columns(relation))
            return
        self.values[relation.name] = parts[0].concat(*parts[1:]).distinct()

    def compile_recursive(self, relations: list):
        # the loop is where the recursion is written: the stratum's first rule
        first = min((c.rule.line for r in relations for c in r.clauses),
                    default=relations[0].declaration.line)
        self.flow.graph.location_override = self.where(first)
        loop = self.flow.loop(name="stratum " + ",".join(r.name for r in relations),
                              max_rounds=self.max_rounds)
        self.flow.graph.location_override = None
        variables = {}
        for relation in relations:
            variables[relation.name] = loop.variable(columns=relation_columns(relation))
        env = dict(self.values)
        env.update(variables)
        for relation in relations:
            inp = self.input_of(relation)
            parts = [inp] if inp is not None else []
            for clause in relation.clauses:
                parts.append(self.compile_clause(clause, env))
            variables[relation.name].set(parts[0].concat(*parts[1:]).distinct())
        for relation in relations:
            self.values[relation.name] = variables[relation.name].leave()

    # -- clauses -----------------------------------------------------------------------------
    def compile_clause(self, clause: Clause, env: dict):
        graph = self.flow.graph
        graph.location_override = self.where(clause.rule.line)
        try:
            return self._compile_clause(clause, env)
        finally:
            graph.location_override = None

    def _compile_clause(self, clause: Clause, env: dict):
        head = self.analysed.relations[clause.head.relation]
        self.plan.append(f"  {_render_clause(clause)}")
        needed_by_head = {v.name for a in clause.head.args for v in ast.term_variables(a)}
        if clause.plan is not None:
            self.plan.append(f"      (.plan version {clause.plan_version}: join order "
                             f"{', '.join(str(i + 1) for i in clause.plan)})")
        elif clause.rule.plan:
            self.plan.append("      (.plan not applied: inline relations were unfolded into "
                             "this clause)")
        frame, aggregates = self.conjunction(clause.literals, env, clause.term_types,
                                             needed_by_head, extra_terms=clause.head.args,
                                             plan=clause.plan)
        exprs = {}
        if head.arity == 0:
            exprs[UNIT] = Lit(0)
        for i, arg in enumerate(clause.head.args):
            exprs[f"c{i}"] = self.expr(arg, clause.term_types, aggregates)
        return frame.collection.select(**exprs)

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
        for term in [*_terms_of(pending), *extra_terms]:
            for agg in _aggregates(term):
                pending.append(agg)
                self._aggregate_count += 1
                names[id(agg)] = f"#a{self._aggregate_count}"
        needed_after = set(needed_after) | \
            {names[id(a)] for t in extra_terms for a in _aggregates(t)}

        def item_vars(item):
            inner = _aggregates_of(item) if not isinstance(item, ast.AggregateTerm) else []
            return [*_item_vars(item), *(names[id(a)] for a in inner)]

        frame = start
        bound = set(frame.variables) if frame is not None else set()
        order = _order_atoms(atoms, bound, plan)
        record = steps is None
        steps = [] if steps is None else steps
        for index, atom in enumerate(order):
            later = order[index + 1:]
            needed = needed_after | {v for a in later for v in _atom_vars(a)} | \
                {v for item in pending for v in item_vars(item)}
            frame = self.join_atom(frame, atom, env, needed, steps)
            bound = set(frame.variables)
            frame = self.apply_ready(frame, pending, env, types, aggregates, steps, later, names)
        if frame is None:  # no positive atom: start from the one-row unit collection
            frame = _Frame(self.unit_collection(), [])
            frame = self.apply_ready(frame, pending, env, types, aggregates, steps, [], names)
        frame = frame.named()
        if pending:  # analysis guarantees this cannot happen; fail loudly if it does
            raise AssertionError(f"unplaced literals {pending}")
        if record:
            self.plan.append("      " + " → ".join(steps))
        return frame, aggregates

    def unit_collection(self):
        if self.unit is None:
            self.unit = self.flow.input("_unit", [(UNIT, "int")])
        return self.unit

    def base(self, atom: ast.Atom, env) -> object:
        """The relation's collection, filtered by the atom's constants and repeated variables."""
        relation = env[atom.relation]
        conditions = []
        first = {}
        for i, arg in enumerate(atom.args):
            if isinstance(arg, (ast.Number, ast.Float, ast.String)):
                conditions.append((f"c{i}", "=", _constant(arg)))
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
        base = self.base(atom, env)
        arity = len(atom.args)
        positions = {}
        for i, arg in enumerate(atom.args):
            if isinstance(arg, ast.Var) and arg.name not in positions:
                positions[arg.name] = i
        label = _render_atom(atom)
        if frame is None:
            keep = [v for v in positions if v in needed]
            steps.append(f"scan {label}")
            return _Frame(base, keep, {v: f"c{positions[v]}" for v in keep}, atom.relation)
        shared = [v for v in positions if v in frame.variables]
        left = frame.collection
        if shared:
            left_on = [frame.column(v) for v in shared]
            right_on = [f"c{positions[v]}" for v in shared]
        else:  # a cross product: join on a constant column
            frame = frame.named()
            left = frame.collection
            if UNIT not in left.columns:
                left = left.select(*left.columns, **{UNIT: 0})
            if arity == 0:
                right_base = base
            else:
                right_base = base.select(*base.columns, **{UNIT: 0})
            left_on = right_on = [UNIT]
            base = right_base
        rest = [c for c in base.columns if c not in right_on]
        joined = left.join(base, left_on=left_on, right_on=right_on,
                           rename={c: f"_r{c}" for c in rest})
        scope = joined.scope.label if joined.scope.parent is not None else ""
        uses = [(atom.relation, tuple(right_on), scope)]
        if frame.raw is not None and shared:
            uses.append((frame.source, tuple(left_on), scope))
        for use in uses:
            self.arrangement_uses[use] = self.arrangement_uses.get(use, 0) + 1
        steps.append(f"join {label} on ({', '.join(shared) or 'nothing: cross product'})")
        variables = [v for v in frame.variables if v in needed]
        names = {var_column(v): frame.column(v) for v in variables}
        for v, i in positions.items():
            if v not in frame.variables and v in needed:
                names[var_column(v)] = f"_rc{i}"
                variables.append(v)
        if not names:
            names = {UNIT: 0}
        return _Frame(joined.select(**names), variables)

    def apply_ready(self, frame, pending, env, types, aggregates, steps, later_atoms, names):
        """Apply every pending literal whose variables are bound, until none is."""
        progress = True
        while progress:
            progress = False
            # cheap filters first, then antijoins, assignments and aggregates
            pending.sort(key=lambda item: _PRIORITY.get(type(item).__name__, 0) +
                         (1 if isinstance(item, ast.Comparison) and
                          self.assignment_target(item, set(frame.variables)) else 0))
            for item in list(pending):
                bound = set(frame.variables)
                if isinstance(item, ast.AggregateTerm):
                    correlated = _aggregate_outer_vars(item) & _all_vars_of(pending, later_atoms,
                                                                            exclude=item)
                    outer = {v for v in _aggregate_outer_vars(item) if v in bound}
                    # wait until every correlated variable the outer rule binds is bound
                    if not correlated <= bound and later_atoms:
                        continue
                    frame = self.aggregate(frame.named(), item, outer, env, types, aggregates,
                                           steps, names[id(item)])
                elif isinstance(item, ast.Negation):
                    if not set(_atom_vars(item.atom)) <= bound:
                        continue
                    frame = self.negate(frame.named(), item.atom, env, steps)
                elif isinstance(item, ast.Boolean):
                    if not item.value:
                        frame = frame.named()
                        frame = _Frame(frame.collection.filter(Lit(False) == Lit(True)),
                                       frame.variables)
                        steps.append("false")
                elif isinstance(item, ast.Comparison):
                    if any(id(a) not in aggregates for t in (item.left, item.right)
                           for a in _aggregates(t)):
                        continue
                    target = self.assignment_target(item, bound)
                    free = [v for v in _cmp_vars(item) if v not in bound]
                    if target is not None or not free:
                        frame = frame.named()
                    if target is not None:
                        var, expr = target
                        value = self.expr(expr, types, aggregates)
                        collection = frame.collection.select(
                            *frame.collection.columns, **{var_column(var): value})
                        frame = _Frame(collection, frame.variables + [var])
                        steps.append(f"assign {var} = {_render(expr)}")
                    elif free:
                        continue
                    else:
                        frame = self.compare(frame, item, types, aggregates, steps)
                pending.remove(item)
                progress = True
        return frame

    def assignment_target(self, c: ast.Comparison, bound):
        if c.op != "=":
            return None
        for target, expr in ((c.left, c.right), (c.right, c.left)):
            if isinstance(target, ast.Var) and target.name not in bound and \
                    all(v.name in bound for v in ast.term_variables(expr)):
                return target.name, expr
        return None

    def compare(self, frame, c, types, aggregates, steps):
        left = self.expr(c.left, types, aggregates)
        right = self.expr(c.right, types, aggregates)
        op = "==" if c.op == "=" else c.op
        predicate = {"==": left.__eq__, "!=": left.__ne__, "<": left.__lt__, "<=": left.__le__,
                     ">": left.__gt__, ">=": left.__ge__}[op](right)
        steps.append(f"filter {_render(c.left)} {c.op} {_render(c.right)}")
        return _Frame(frame.collection.filter(predicate), frame.variables)

    def negate(self, frame, atom, env, steps):
        base = self.base(atom, env)
        positions = {}
        for i, arg in enumerate(atom.args):
            if isinstance(arg, ast.Var) and arg.name not in positions:
                positions[arg.name] = i
        left = frame.collection
        if positions:
            left_on = [var_column(v) for v in positions]
            right_on = [f"c{i}" for i in positions.values()]
        else:
            if UNIT not in left.columns:
                left = left.select(*left.columns, **{UNIT: 0})
            base = base.select(**{UNIT: 0})
            left_on = right_on = [UNIT]
        steps.append(f"antijoin {_render_atom(atom)}")
        result = left.antijoin(base, left_on=left_on, right_on=right_on)
        if UNIT in result.columns and UNIT not in frame.collection.columns:
            result = result.select(*frame.collection.columns)
        return _Frame(result, frame.variables)

    def aggregate(self, frame, agg, outer, env, types, aggregates, steps, name):
        """Correlated aggregate: evaluate the body per binding of the outer variables.

        The result becomes the frame's variable ``name`` (column ``var_column(name)``).
        """
        from .. import collection as c

        column = var_column(name)
        group = sorted(outer)
        group_cols = [var_column(v) for v in group]
        if group:
            keys = frame.collection.select(*group_cols).distinct()
            start = _Frame(keys, list(group))
        else:
            start = None
        target_vars = {v.name for v in ast.term_variables(agg.target)}  # [] for count
        inner_steps = []
        body, inner_aggs = self.conjunction(agg.body, env, types, set(group) | target_vars,
                                            start=start, steps=inner_steps)
        body_coll = body.collection
        if agg.function == "count":
            body_coll = body_coll.select(*group_cols, _t=0) if group else \
                body_coll.select(_t=0)
            spec = c.count()
        else:
            value = self.expr(agg.target, types, inner_aggs)
            body_coll = body_coll.select(*group_cols, _t=value)
            spec = {"sum": c.sum, "min": c.min, "max": c.max}[agg.function]("_t")
        result = body_coll.aggregate(by=group_cols, **{column: spec}) if group else \
            body_coll.select(_t="_t", **{UNIT: 0}).aggregate(by=[UNIT], **{column: spec})
        if agg.function in ("count", "sum"):  # an empty group counts or sums to zero
            zero = Lit(0.0) if types[id(agg)] == "float" else Lit(0)
            if group:
                missing = start.collection.antijoin(result, on=group_cols)
                result = result.concat(missing.select(*group_cols, **{column: zero}))
            else:
                missing = self.unit_collection().antijoin(result, on=[UNIT])
                result = result.concat(missing.select(UNIT, **{column: zero}))
        left = frame.collection
        if group:
            joined = left.join(result, on=group_cols)
        else:
            if UNIT not in left.columns:
                left = left.select(*left.columns, **{UNIT: 0})
            joined = left.join(result, on=[UNIT]).select(*frame.collection.columns, column)
        aggregates[id(agg)] = column
        steps.append(f"{agg.function} by ({', '.join(group)}) of [{' → '.join(inner_steps)}]")
        return _Frame(joined, frame.variables + [name])

    # -- expressions ----------------------------------------------------------------------------
    def expr(self, node, types, aggregates):
        """A column expression for a term, in the base type ``types`` records for it."""
        kind = types[id(node)]
        if isinstance(node, ast.Var):
            return col(var_column(node.name))
        if isinstance(node, ast.Number):
            return Lit(float(node.value)) if kind == "float" else Lit(node.value)
        if isinstance(node, (ast.Float, ast.String)):
            return Lit(node.value)
        if isinstance(node, ast.AggregateTerm):
            return col(aggregates[id(node)])
        if isinstance(node, ast.Negative):
            return _wrap(-self.expr(node.operand, types, aggregates), kind)
        left = self.expr(node.left, types, aggregates)
        right = self.expr(node.right, types, aggregates)
        op = node.op
        if kind == "float":
            value = {"+": left.__add__, "-": left.__sub__, "*": left.__mul__,
                     "/": left.__truediv__, "^": left.__pow__,
                     "%": lambda r: trunc_mod(left, r)}[op](right)
            return value
        if op == "/":
            value = trunc_div(left, right)
        elif op == "%":
            value = trunc_mod(left, right)
        else:
            value = {"+": left.__add__, "-": left.__sub__, "*": left.__mul__,
                     "^": left.__pow__}[op](right)
        return _wrap(value, kind)


_PRIORITY = {"Boolean": 0, "Comparison": 0, "Negation": 2, "AggregateTerm": 3}


def _wrap(value, kind):
    if kind == "number":
        return wrap_int32(value)
    if kind == "unsigned":
        return wrap_uint32(value)
    return value


def _constant(node):
    return node.value


# -- variable bookkeeping ----------------------------------------------------------------------

def _aggregates(node):
    if isinstance(node, ast.AggregateTerm):
        return [node]
    if isinstance(node, ast.BinaryOp):
        return _aggregates(node.left) + _aggregates(node.right)
    if isinstance(node, ast.Negative):
        return _aggregates(node.operand)
    return []


def _aggregates_of(item) -> list:
    """Aggregates inside a pending literal's terms (comparisons only: analysis names the
    expressions of atoms)."""
    if isinstance(item, ast.Comparison):
        return _aggregates(item.left) + _aggregates(item.right)
    return []


def _terms_of(literals):
    for lit in literals:
        if isinstance(lit, ast.Comparison):
            yield lit.left
            yield lit.right


def _atom_vars(atom):
    return [a.name for a in atom.args if isinstance(a, ast.Var)]


def _cmp_vars(c):
    return [v.name for v in ast.term_variables(c.left) + ast.term_variables(c.right)]


def _aggregate_outer_vars(agg) -> set:
    """Every variable mentioned in an aggregate (the bound ones correlate it)."""
    names = {v.name for v in ast.term_variables(agg.target)} if agg.target is not None else set()
    for lit in agg.body:
        if isinstance(lit, ast.Atom):
            names |= set(_atom_vars(lit))
        elif isinstance(lit, ast.Negation):
            names |= set(_atom_vars(lit.atom))
        elif isinstance(lit, ast.Comparison):
            names |= set(_cmp_vars(lit))
    return names


def _item_vars(item):
    if isinstance(item, ast.Negation):
        return _atom_vars(item.atom)
    if isinstance(item, ast.Comparison):
        return _cmp_vars(item)
    if isinstance(item, ast.AggregateTerm):
        return sorted(_aggregate_outer_vars(item))
    return []


def _all_vars_of(pending, atoms, exclude):
    names = {v for a in atoms for v in _atom_vars(a)}
    for item in pending:
        if item is not exclude and not isinstance(item, ast.AggregateTerm):
            names |= set(_item_vars(item))
    return names


def _order_atoms(atoms, bound, plan=None):
    """Join order: a ``.plan``'s if given, else greedy (most shared bound variables, then
    most constants, then leftmost).

    >>> from diffflow.dsl.parser import parse
    >>> atoms = parse("r(x) :- a(x, y), b(y, 1), c(z).").rules[0].body[0].literals
    >>> [a.relation for a in _order_atoms(atoms, set())]
    ['b', 'a', 'c']
    >>> [a.relation for a in _order_atoms(atoms, set(), plan=[2, 0, 1])]
    ['c', 'a', 'b']
    """
    if plan is not None:
        return [atoms[i] for i in plan]
    remaining = list(atoms)
    bound = set(bound)
    order = []
    while remaining:
        def score(item):
            index, atom = item
            shared = len(set(_atom_vars(atom)) & bound)
            constants = sum(isinstance(a, (ast.Number, ast.Float, ast.String)) for a in atom.args)
            return (shared, constants, -index)
        index, best = max(enumerate(remaining), key=score)
        order.append(best)
        bound |= set(_atom_vars(best))
        remaining.pop(index)
    return order


# -- rendering for plans -----------------------------------------------------------------------

def _render(node) -> str:
    if isinstance(node, ast.Var):
        return node.name
    if isinstance(node, ast.Wildcard):
        return "_"
    if isinstance(node, ast.Number):
        return f"{node.value}{'u' if node.unsigned else ''}"
    if isinstance(node, ast.Float):
        return repr(node.value)
    if isinstance(node, ast.String):
        return '"' + node.value.replace('"', '\\"') + '"'
    if isinstance(node, ast.BinaryOp):
        return f"({_render(node.left)} {node.op} {_render(node.right)})"
    if isinstance(node, ast.Negative):
        return f"-{_render(node.operand)}"
    if isinstance(node, ast.AggregateTerm):
        body = ", ".join(_render_literal(l) for l in node.body)
        target = f" {_render(node.target)}" if node.target is not None else ""
        return f"{node.function}{target} : {{ {body} }}"
    return "?"


def _render_atom(atom) -> str:
    return f"{atom.relation}({', '.join(_render(a) for a in atom.args)})"


def _render_literal(lit) -> str:
    if isinstance(lit, ast.Atom):
        return _render_atom(lit)
    if isinstance(lit, ast.Negation):
        return "!" + _render_atom(lit.atom)
    if isinstance(lit, ast.Comparison):
        return f"{_render(lit.left)} {lit.op} {_render(lit.right)}"
    if isinstance(lit, ast.Boolean):
        return "true" if lit.value else "false"
    return "?"


def _render_clause(clause) -> str:
    return f"{_render_atom(clause.head)} :- {', '.join(_render_literal(l) for l in clause.literals)}."
