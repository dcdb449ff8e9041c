"""Collections: rows that change over epochs, and the operators that build new ones.

:class:`Collection` methods validate their arguments against the schema --
unknown columns fail here, at graph-construction time, naming the available
ones -- and add nodes to the graph of their :class:`~diffflow.api.flow.Dataflow`;
joins and reductions go through an arrangement (:mod:`diffflow.api.arranged`).
Nothing computes until :meth:`Dataflow.advance` closes an epoch.

>>> import diffflow as dd
>>> flow = dd.Dataflow()
>>> edges = flow.input("edges", ["src", "dst"])
>>> out_degree = edges.aggregate(by=["src"], n=dd.count()).output()
>>> edges.insert([(1, 2), (1, 3), (2, 3)]); flow.advance()
>>> sorted(out_degree.snapshot())
[(1, 2), (2, 1)]
>>> _ = out_degree.changes()  # everything so far
>>> edges.remove([(1, 3)]); flow.advance()
>>> sorted(out_degree.changes())
[((1, 1), 1, 1), ((1, 2), 1, -1)]
"""
from __future__ import annotations

import builtins
from diffflow.api.arranged import (Arranged, aggregate_node, as_names, custom_reduce_node,
                                   join_keys, join_node, reduce_node)
from diffflow.api.outputs import Output
from diffflow.common.errors import GraphError
from diffflow.common.schema import Schema
from diffflow.dataflow.expr import Col, Expr, ExpressionError, Lit
from diffflow.operators.reducers import DistinctReducer, ThresholdReducer

# Annotations naming types of modules above this one (Collection, Output, Dataflow) are
# strings (``from __future__ import annotations``): they name the type without importing it.


class Collection:
    """A collection of rows that changes over epochs; methods build new collections."""

    def __init__(self, flow: Dataflow, node):  # noqa: F821
        self.flow, self.node = flow, node

    @property
    def schema(self) -> Schema:
        return self.node.schema

    @property
    def columns(self) -> list:
        """Column names, in order."""
        return list(self.schema.names)

    @property
    def scope(self):
        """The scope (root or loop) this collection lives in."""
        return self.node.scope

    def __repr__(self) -> str:
        return f"<Collection {self.node.label} {self.schema!r}>"

    # -- helpers --------------------------------------------------------------------
    def _add(self, kind, inputs, schema, **kw) -> "Collection":
        self.flow._check_building(kind)
        node = self.flow.graph.add(kind, [c.node.id for c in inputs], schema,
                                   scope=inputs[0].scope, **kw)
        return Collection(self.flow, node)

    def _derived(self, node) -> "Collection":
        """A collection of ``node``, a node built from this one (by an arrangement)."""
        return Collection(self.flow, node)

    def _enter_into(self, scope) -> "Collection":
        """This collection as seen inside ``scope``, a loop nested in its own scope."""
        if scope is self.scope:
            return self
        chain = scope.ancestors()
        if self.scope not in chain:
            raise GraphError(
                f"{self!r} belongs to {self.scope.describe()}, which does not enclose "
                f"{scope.describe()}; use the loop's results (leave()) outside of it")
        collection = self
        for inner in reversed(chain[: chain.index(self.scope)]):
            key = (collection.node.id, inner.id)
            entered = self.flow._entered.get(key)
            if entered is None:
                self.flow._check_building("enter")
                node = self.flow.graph.add("enter", [collection.node.id], collection.schema,
                                           scope=inner, label=f"enter {inner.label!r}")
                entered = Collection(self.flow, node)
                self.flow._entered[key] = entered
            collection = entered
        return collection

    def enter(self, where) -> "Collection":
        """This collection inside the loop of ``where`` (a collection or a loop).

        Binary operators enter outer collections automatically; call this when
        a loop must *start* inside another one, e.g. to ``iterate`` from an
        outer collection within a loop body.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); loop = flow.loop()
        >>> a.enter(loop).scope is loop.scope
        True
        """
        scope = getattr(where, "scope", None)
        if scope is None:
            raise TypeError(f"enter() takes a collection or a loop, got {where!r}")
        return self._enter_into(scope)

    def _align(self, *others) -> list:
        """All operands brought into the innermost of their scopes (entering outer ones)."""
        operands = [self, *others]
        for other in others:
            self._same_flow(other, "combining collections")
        inner = builtins.max((c.scope for c in operands), key=lambda s: s.depth)
        return [c._enter_into(inner) for c in operands]

    def _require(self, names, where: str) -> None:
        for n in names:
            if n not in self.schema.names:
                raise GraphError(f"unknown column {n!r} in {where}; available columns: "
                                 f"{self.columns}")

    def _infer(self, expr: Expr, where: str) -> str:
        self._require(sorted(expr.columns()), where)
        try:
            return expr.infer(self.schema)
        except ExpressionError as exc:
            raise ExpressionError(f"{where}: {exc}") from None

    def _same_flow(self, other, where: str) -> None:
        if other.flow is not self.flow:
            raise GraphError(f"{where}: both collections must belong to the same Dataflow")

    # -- linear operators --------------------------------------------------------------
    def select(self, *names, **named) -> "Collection":
        """Project, rename and compute columns.

        Positional arguments keep columns by name; keyword arguments create a
        column from another column's name or from an expression.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); c = flow.input("c", ["a", "b"])
        >>> c.select("a", y="b", z=dd.col("a") + 1).columns
        ['a', 'y', 'z']
        """
        exprs, out_names = [], []
        for n in names:
            if not isinstance(n, str):
                raise TypeError(f"select: positional arguments are column names, got {n!r}; "
                                f"name computed columns with keywords, e.g. select(x=col('a') + 1)")
            exprs.append(Col(n))
            out_names.append(n)
        for new, value in named.items():
            if isinstance(value, str):
                value = Col(value)
            elif not isinstance(value, Expr):
                value = Lit(value)
            exprs.append(value)
            out_names.append(new)
        if not exprs:
            raise GraphError("select needs at least one column")
        if len(set(out_names)) != len(out_names):
            raise GraphError(f"select would produce duplicate column names: {out_names}")
        types = [self._infer(e, "select") for e in exprs]
        plan = [self.schema.index(e.name) for e in exprs] if all(
            isinstance(e, Col) for e in exprs) else None
        return self._add("select", [self], Schema(tuple(out_names), tuple(types)),
                         params={"exprs": exprs, "plan": plan, "input_schema": self.schema})

    def filter(self, predicate: Expr) -> "Collection":
        """Keep the rows for which a boolean column expression holds.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); c = flow.input("c", ["a", "b"])
        >>> c.filter(dd.col("a") < dd.col("b")).columns
        ['a', 'b']
        """
        if not isinstance(predicate, Expr):
            raise TypeError("filter takes a column expression such as col('a') < 3; for a "
                            "Python predicate use flat_map(lambda row: [row] if ... else [])")
        if self._infer(predicate, "filter") != "bool":
            raise GraphError(f"filter: {predicate!r} is not a boolean expression")
        return self._add("filter", [self], self.schema,
                         params={"predicate": predicate, "input_schema": self.schema})

    def flat_map(self, fn, columns=None) -> "Collection":
        """Apply a Python function to every row; it returns an iterable of rows.

        Slow path: the function runs once per row in Python.  Prefer
        ``select``/``filter`` with column expressions where they suffice.
        ``columns`` declares the output columns (default: the input's).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); c = flow.input("c", ["a"])
        >>> c.flat_map(lambda row: [(row[0], i) for i in range(row[0])], ["a", "i"]).columns
        ['a', 'i']
        """
        if not callable(fn):
            raise TypeError(f"flat_map needs a function, got {fn!r}")
        schema = self.schema if columns is None else Schema.of(columns)
        return self._add("flat_map", [self], schema,
                         params={"fn": fn, "input_schema": self.schema})

    def _expand(self, fn, columns) -> "Collection":
        """Rows made from each row by a vectorised function (the fast ``flat_map``):
        ``fn(rows, symbols)`` gets the encoded ``(n, w)`` rows and returns ``(source, out)``,
        the input row of each output row and the encoded ``(m, w')`` output rows.  Used by
        Datalog's generators (``range``).

        >>> import diffflow as dd
        >>> import numpy as np
        >>> flow = dd.Dataflow(); c = flow.input("c", ["a"])
        >>> twice = lambda rows, symbols: (np.repeat(np.arange(len(rows)), 2), np.repeat(rows, 2, 0))
        >>> out = c._expand(twice, ["a"]).output(); c.insert([(7,)]); flow.advance()
        >>> out.snapshot()
        {(7,): 2}
        """
        return self._add("flat_map", [self], Schema.of(columns),
                         params={"fn": fn, "columnar": True, "input_schema": self.schema})

    def map(self, fn, columns=None) -> "Collection":
        """Apply a Python function returning one row per row (slow path, see ``flat_map``).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); c = flow.input("c", ["a"])
        >>> c.map(lambda row: (row[0] * 2,)).columns
        ['a']
        """
        if not callable(fn):
            raise TypeError(f"map needs a function, got {fn!r}")
        return self.flat_map(lambda row: (fn(row),), columns)

    def concat(self, *others: "Collection") -> "Collection":
        """Union (multiset sum) with collections of the same column types.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); b = flow.input("b", ["x"])
        >>> a.concat(b).columns
        ['x']
        """
        for other in others:
            self._same_flow(other, "concat")
            if other.schema.types != self.schema.types:
                raise GraphError(f"concat needs the same column types: {self.schema!r} vs "
                                 f"{other.schema!r}; use select() to line them up")
        if not others:
            return self
        operands = self._align(*others)
        return self._add("concat", operands, self.schema)

    def negate(self) -> "Collection":
        """Negate every multiplicity.

        >>> import diffflow as dd
        >>> dd.Dataflow().input("a", ["x"]).negate().columns
        ['x']
        """
        return self._add("negate", [self], self.schema)

    def consolidate(self) -> "Collection":
        """The same collection, with its updates summed per (row, time) and zeros dropped.

        >>> import diffflow as dd
        >>> dd.Dataflow().input("a", ["x"]).consolidate().columns
        ['x']
        """
        return self._add("consolidate", [self], self.schema,
                         exchange=[tuple(range(self.schema.width))])

    def inspect(self, callback) -> "Collection":
        """Call ``callback([(row, time, diff), ...])`` with each set of complete updates.

        Returns the same collection, so it can sit in the middle of a pipeline.
        The callback runs where each partition runs: in this process on the
        local runtime, in the partition's worker process on ``processes`` and
        Spark (so its side effects stay there; read results with ``output()``).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); seen = []
        >>> a = flow.input("a", ["x"]); _ = a.inspect(seen.extend)
        >>> a.insert([(7,)]); flow.advance(); seen
        [((7,), (0,), 1)]
        """
        if not callable(callback):
            raise TypeError(f"inspect needs a callable, got {callback!r}")
        return self._add("inspect", [self], self.schema, params={"callback": callback})

    def output(self, name: str | None = None, *, changes: bool = True) -> "Output":
        """A handle to read the collection: ``snapshot()``, ``changes()``, ``to_pandas()``.

        The change feed keeps every change until ``changes()`` reads it; an output whose
        feed no one reads (a long run that only takes snapshots) is cheaper with
        ``changes=False``, which keeps the contents only.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"])
        >>> out, latest = a.output(), a.output(changes=False)
        >>> a.insert([(1,), (1,)]); flow.advance(); out.snapshot(), latest.snapshot()
        ({(1,): 2}, {(1,): 2})
        """
        if self.scope.parent is not None:
            raise GraphError(f"output() of a collection inside {self.scope.describe()}: leave "
                             f"the loop first (iterate() returns the left result)")
        c = self._add("output", [self], self.schema, label=f"output {name or ''}".strip(),
                      params={} if changes else {"changes": False})
        return Output(self.flow, c.node, name)

    # -- arrangements, joins, reductions -------------------------------------------------
    def arrange(self, by) -> "Arranged":
        """An index of the collection by the ``by`` columns, shareable by joins and aggregates.

        Arranging the same collection by the same columns twice returns the
        same arrangement, so one index serves every operator that needs it.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); c = flow.input("c", ["k", "v"])
        >>> c.arrange(by=["k"]) is c.arrange(by=["k"])
        True
        """
        keys = as_names(by, "arrange(by=...)")
        self._require(keys, "arrange(by=...)")
        if len(set(keys)) != len(keys):
            raise GraphError(f"arrange(by={keys}) repeats a column")
        cache_key = (self.node.id, tuple(keys))
        cached = self.flow._arrangements.get(cache_key)
        if cached is not None:
            return cached
        order = [self.schema.index(k) for k in keys]
        order += [i for i in range(self.schema.width) if i not in order]
        schema = Schema(tuple(self.schema.names[i] for i in order),
                        tuple(self.schema.types[i] for i in order))
        c = self._add("arrange", [self], schema,
                      exchange=[tuple(order[: len(keys)])],
                      params={"column_order": order, "key_width": len(keys)},
                      label=f"arrange by {keys}")
        arranged = Arranged(self, c.node, keys)
        self.flow._arrangements[cache_key] = arranged
        return arranged

    def join(self, other, on=None, left_on=None, right_on=None,
             rename=None) -> "Collection":
        """Equi-join: rows of both sides with equal key columns.

        Output columns: this collection's columns, then ``other``'s non-key
        columns (renamed by ``rename={old: new}``, which avoids a copy of
        ``other`` when names clash).  ``other`` may be a :class:`Collection`
        or an :class:`Arranged`.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow()
        >>> a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k2", "y"])
        >>> a.join(b, left_on="k", right_on="k2").columns
        ['k', 'x', 'y']
        >>> a.join(a, on="k", rename={"x": "x2"}).columns
        ['k', 'x', 'x2']
        """
        left_keys, right_keys = join_keys(on, left_on, right_on)
        right = other.collection if isinstance(other, Arranged) else other
        if not isinstance(right, Collection):
            raise TypeError(f"join: expected a Collection or an arrangement, got {other!r}")
        self._same_flow(right, "join")
        self._require(left_keys, "join (left keys)")
        right._require(right_keys, "join (right keys)")
        for lk, rk in zip(left_keys, right_keys):
            lt, rt = self.schema.type_of(lk), right.schema.type_of(rk)
            if lt != rt:
                raise GraphError(f"join key types differ: left {lk!r} is {lt}, right {rk!r} is {rt}")
        left, right_in = self._align(right)
        left_arr = left.arrange(left_keys)
        right_arr = other if isinstance(other, Arranged) and other.keys == right_keys \
            and right_in is right else right_in.arrange(right_keys)
        return Collection(self.flow, join_node(left_arr, right_arr, rename or {}))

    def semijoin(self, other, on=None, left_on=None, right_on=None) -> "Collection":
        """Rows of this collection whose key appears in ``other`` (multiplicities kept).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k"])
        >>> a.semijoin(b, on="k").columns
        ['k', 'x']
        """
        left_keys, right_keys = join_keys(on, left_on, right_on)
        right = other.collection if isinstance(other, Arranged) else other
        right._require(right_keys, "semijoin (right keys)")
        present = right.select(*right_keys).distinct()
        return self.join(present, left_on=left_keys, right_on=right_keys)

    def antijoin(self, other, on=None, left_on=None, right_on=None) -> "Collection":
        """Rows of this collection whose key does not appear in ``other``.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k"])
        >>> a.antijoin(b, on="k").columns
        ['k', 'x']
        """
        return self.concat(self.semijoin(other, on, left_on, right_on).negate())

    def distinct(self) -> "Collection":
        """Each row with positive multiplicity, once.

        >>> import diffflow as dd
        >>> dd.Dataflow().input("a", ["x"]).distinct().columns
        ['x']
        """
        arranged = self.arrange(list(self.schema.names))
        return self._derived(reduce_node(arranged, DistinctReducer(), self.schema, "distinct"))

    def threshold(self, fn) -> "Collection":
        """Each row with multiplicity ``fn(m)`` where ``m`` is its multiplicity.

        ``fn`` is vectorised: it maps an int64 numpy array of multiplicities to
        an integer array of the same shape (``distinct`` is ``lambda m: m > 0``).

        >>> import diffflow as dd
        >>> dd.Dataflow().input("a", ["x"]).threshold(lambda m: m // 2).columns
        ['x']
        """
        if not callable(fn):
            raise TypeError(f"threshold needs a function of the multiplicities, got {fn!r}")
        arranged = self.arrange(list(self.schema.names))
        return self._derived(reduce_node(arranged, ThresholdReducer(fn), self.schema,
                                         "threshold"))

    def aggregate(self, by=(), **aggregates) -> "Collection":
        """One row per group of equal ``by`` columns, with named aggregates.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); c = flow.input("c", ["k", "v"])
        >>> c.aggregate(by=["k"], n=dd.count(), lo=dd.min("v")).columns
        ['k', 'n', 'lo']
        """
        keys = as_names(by, "aggregate(by=...)")
        self._require(keys, "aggregate(by=...)")
        return self._derived(aggregate_node(self.arrange(keys), aggregates))

    def reduce(self, fn, by=(), columns=None, out=None, negative: str = "drop") -> "Collection":
        """Apply a custom reducer to each group of equal ``by`` columns.

        ``fn(starts, cols, mults) -> (group_index, out_cols)`` sees the rows
        of many groups at once: group ``i`` is ``starts[i]:starts[i + 1]``
        of the ``columns`` arrays in ``cols`` (every non-``by`` column by
        default; float columns as float64), sorted, with their multiplicities.
        It returns which group each output row belongs to and the ``out``
        columns (``{name: type}`` or a list of names/pairs).  The result has
        the ``by`` columns followed by the ``out`` columns.  ``fn`` must be
        pure: a function of each group's rows only (that is what keeps the
        result exact inside loops); :func:`diffflow.per_group` wraps a
        function of one group (the slower path).  ``negative`` says what
        ``fn`` sees of rows whose multiplicity fell below zero: ``"drop"``
        them, ``"error"``, or ``"keep"`` them.  Details:
        :mod:`diffflow.operators.reduce_custom`.

        >>> import diffflow as dd
        >>> import numpy as np
        >>> def total(starts, cols, mults):        # sum of each group's v * multiplicity
        ...     sums = np.add.reduceat(cols[0] * mults, starts[:-1])
        ...     return np.arange(len(sums)), (sums,)
        >>> flow = dd.Dataflow(); c = flow.input("c", ["k", "v"])
        >>> out = c.reduce(total, by="k", out={"s": int}).output()
        >>> c.insert([(1, 2), (1, 3), (2, 5), (2, 5)]); flow.advance()
        >>> sorted(out.snapshot())
        [(1, 5), (2, 10)]
        """
        keys = as_names(by, "reduce(by=...)")
        self._require(keys, "reduce(by=...)")
        if len(set(keys)) != len(keys):
            raise GraphError(f"reduce(by={keys}) repeats a column")
        return self._derived(custom_reduce_node(self, keys, fn, columns, out, negative))

    # -- iteration --------------------------------------------------------------------------
    def iterate(self, body, *, max_rounds: int = 10_000, name: str | None = None) -> "Collection":
        """The fixpoint of ``x = body(x)`` starting from this collection.

        ``body`` receives the loop variable (a collection inside a new loop
        scope, whose times carry a round coordinate) and returns its next
        value.  Collections from enclosing scopes can be used inside ``body``
        as they are.  A loop still changing after ``max_rounds`` rounds raises
        :class:`~diffflow.common.errors.NonConvergenceError`.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow()
        >>> edges = flow.input("edges", ["src", "dst"]); roots = flow.input("roots", ["node"])
        >>> reach = roots.iterate(lambda r: roots.concat(
        ...     r.join(edges, left_on="node", right_on="src").select(node="dst")).distinct())
        >>> out = reach.output()
        >>> edges.insert([(1, 2), (2, 3), (3, 1), (4, 5)]); roots.insert([1]); flow.advance()
        >>> sorted(out.snapshot())
        [(1,), (2,), (3,)]
        """
        loop = self.flow._new_loop(self.scope, name or "iterate", max_rounds)
        variable = loop.variable(self)
        result = body(variable)
        if not isinstance(result, Collection):
            raise TypeError(f"iterate: the body must return a Collection, got {result!r}")
        variable.set(result)
        return variable.leave()

