"""The public collection API: build a dataflow, feed it, read exact results.

A :class:`Dataflow` owns a graph of operators, a symbol table and (once it
runs) a runtime.  :class:`Collection` methods validate their arguments against
the schema -- unknown columns fail here, at graph-construction time, naming
the available ones -- and add nodes to the graph.  Nothing computes until
:meth:`Dataflow.advance` closes an epoch.

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
from dataclasses import dataclass

import numpy as np

from .dataflow.graph import Graph
from .errors import GraphError
from .expr import Col, Expr, ExpressionError, Lit
from .operators.reducers import AggregateReducer, DistinctReducer, ThresholdReducer
from .schema import Schema, SymbolTable, decode_rows, encode_column




# -- aggregates ---------------------------------------------------------------------

@dataclass(frozen=True)
class Aggregate:
    """An aggregate for :meth:`Collection.aggregate`: ``count()``, ``sum(c)``, ``min(c)``, ``max(c)``."""

    kind: str
    column: str | None = None


def count() -> Aggregate:
    """Number of rows in the group (the sum of multiplicities).

    >>> count()
    Aggregate(kind='count', column=None)
    """
    return Aggregate("count")


def sum(column: str) -> Aggregate:  # noqa: A001 - mirrors SQL and the DESIGN's public names
    """Multiplicity-weighted sum of an int or float column.

    >>> sum("v").kind
    'sum'
    """
    return Aggregate("sum", column)


def min(column: str) -> Aggregate:  # noqa: A001
    """Smallest value of a column among the group's rows.

    >>> min("v").column
    'v'
    """
    return Aggregate("min", column)


def max(column: str) -> Aggregate:  # noqa: A001
    """Largest value of a column among the group's rows.

    >>> max("v").column
    'v'
    """
    return Aggregate("max", column)


# -- the dataflow -----------------------------------------------------------------------

RUNTIMES = ("local", "processes", "spark", "cluster")


def _make_runtime(flow):
    """The runtime a :class:`Dataflow` asked for (``cluster``: in-process workers, for tests)."""
    kw = dict(checkpoint_every=flow.checkpoint_every, checkpoint_dir=flow.checkpoint_dir)
    if flow.runtime_name == "local":
        from .runtime.local import LocalRuntime
        return LocalRuntime(flow.graph, flow.partitions, flow.symbols)
    if flow.runtime_name == "spark":
        from .runtime.spark import SparkRuntime  # the only module that imports pyspark
        return SparkRuntime(flow.graph, flow.partitions, flow.symbols, flow.spark, **kw)
    from .runtime.cluster import ClusterRuntime
    if flow.runtime_name == "processes":
        return ClusterRuntime.processes(flow.graph, flow.partitions, flow.symbols, **kw)
    return ClusterRuntime.in_memory(flow.graph, flow.partitions, flow.symbols, **kw)


class Dataflow:
    """A dataflow graph with its inputs, outputs and runtime.

    ``partitions`` splits every arrangement by key hash into that many
    partitions (results are identical for every value).  ``runtime`` picks
    where the partitions run: ``"local"`` (this process, the default),
    ``"processes"`` (one worker process per partition on this machine) or
    ``"spark"`` (partition workers placed by Spark; pass ``spark=session``,
    see :mod:`diffflow.runtime.spark`).  Multi-process runtimes write a
    checkpoint every ``checkpoint_every`` epochs (into ``checkpoint_dir``, a
    temporary folder by default) and recover from a lost worker by restoring
    it and replaying the inputs since.

    >>> flow = Dataflow(partitions=2)
    >>> nums = flow.input("nums", ["x"])
    >>> big = nums.filter(col("x") > 1).output()
    >>> nums.insert([(1,), (5,)]); flow.advance()
    >>> big.snapshot()
    {(5,): 1}
    """

    def __init__(self, partitions: int = 1, runtime: str = "local", spark=None, *,
                 checkpoint_every: int | None = None, checkpoint_dir: str | None = None):
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise ValueError(f"partitions must be a positive int, got {partitions!r}")
        if runtime not in RUNTIMES:
            raise ValueError(f"unknown runtime {runtime!r}; choose one of {', '.join(RUNTIMES)}")
        if runtime == "spark" and spark is None:
            raise ValueError("runtime='spark' needs spark=<a SparkSession>, e.g. "
                             "diffflow.runtime.spark.local_session() for local[2]")
        if runtime != "spark" and spark is not None:
            raise ValueError(f"spark= is only used with runtime='spark' (got runtime={runtime!r})")
        if checkpoint_every is not None and (not isinstance(checkpoint_every, int)
                                             or checkpoint_every < 1):
            raise ValueError(f"checkpoint_every must be a positive int or None, "
                             f"got {checkpoint_every!r}")
        self.runtime_name, self.spark = runtime, spark
        self._closed = False
        self.checkpoint_every, self.checkpoint_dir = checkpoint_every, checkpoint_dir
        self.partitions = partitions
        self.graph = Graph()
        self.symbols = SymbolTable()
        self.epoch = 0
        self._inputs: list[InputCollection] = []
        self._runtime = None
        self._arrangements: dict = {}
        self._entered: dict = {}
        self._loops: list = []

    def input(self, name: str, columns) -> "InputCollection":
        """Declare an input collection: ``columns`` are names (int) or ``(name, type)`` pairs."""
        self._check_building("input")
        if not isinstance(name, str):
            raise TypeError(f"input name must be a str, got {name!r}")
        if any(i.name == name for i in self._inputs):
            raise GraphError(f"an input named {name!r} already exists")
        schema = Schema.of(columns)
        node = self.graph.add("input", [], schema, label=f"input {name!r}")
        handle = InputCollection(self, node, name)
        self._inputs.append(handle)
        return handle

    def loop(self, name: str | None = None, max_rounds: int | None = 10_000) -> "Loop":
        """A loop scope for mutually recursive variables (see :mod:`diffflow.iteration`).

        ``max_rounds=None`` lets the loop run as many rounds as it needs.

        >>> flow = Dataflow(); loop = flow.loop("fix", max_rounds=100)
        >>> loop.scope.dim
        2
        """
        from .iteration import Loop

        return Loop(self, self.graph.root, name, max_rounds)

    def advance(self, run: bool = True) -> None:
        """Close the current epoch; with ``run`` compute until outputs are exact for it.

        With ``run=False`` several epochs can be closed and then computed
        together by one :meth:`run` (many epochs in flight at once).
        """
        runtime = self._ensure_runtime()
        for handle in self._inputs:
            for rows, diffs in handle._staged:
                runtime.stage(handle.node.id, rows, diffs)
            handle._staged = []
        runtime.close_epoch([h.node.id for h in self._inputs])
        self.epoch += 1
        if run:
            runtime.run()

    def run(self) -> None:
        """Compute every closed epoch (see :meth:`advance`)."""
        self._ensure_runtime().run()

    def _ensure_runtime(self):
        if self._runtime is None:
            if self._closed:
                raise GraphError("this dataflow was closed; build a new Dataflow")
            for loop in self._loops:
                loop._check_complete()
            self._runtime = _make_runtime(self)
        return self._runtime

    def close(self) -> None:
        """Stop the partition workers of a multi-process or Spark runtime (idempotent).

        >>> flow = Dataflow(); flow.close()
        """
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.close()
        self._closed = True

    def _check_building(self, what: str) -> None:
        if self._runtime is not None:
            raise GraphError(
                f"cannot add {what}: this dataflow has already started running; build every "
                f"operator before the first advance() (or use a new Dataflow)")


# -- collections ----------------------------------------------------------------------------

def _as_names(value, what: str) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    names = list(value)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{what} must be column names, got {n!r}")
    return names


class Collection:
    """A collection of rows that changes over epochs; methods build new collections."""

    def __init__(self, flow: Dataflow, node):
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

        >>> flow = Dataflow(); a = flow.input("a", ["x"]); loop = flow.loop()
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
            raise GraphError(f"{where}: {exc}") from None

    def _same_flow(self, other, where: str) -> None:
        if other.flow is not self.flow:
            raise GraphError(f"{where}: both collections must belong to the same Dataflow")

    # -- linear operators --------------------------------------------------------------
    def select(self, *names, **named) -> "Collection":
        """Project, rename and compute columns.

        Positional arguments keep columns by name; keyword arguments create a
        column from another column's name or from an expression.

        >>> flow = Dataflow(); c = flow.input("c", ["a", "b"])
        >>> c.select("a", y="b", z=col("a") + 1).columns
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

        >>> flow = Dataflow(); c = flow.input("c", ["a", "b"])
        >>> c.filter(col("a") < col("b")).columns
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

        >>> flow = Dataflow(); c = flow.input("c", ["a"])
        >>> c.flat_map(lambda row: [(row[0], i) for i in range(row[0])], ["a", "i"]).columns
        ['a', 'i']
        """
        if not callable(fn):
            raise TypeError(f"flat_map needs a function, got {fn!r}")
        schema = self.schema if columns is None else Schema.of(columns)
        return self._add("flat_map", [self], schema,
                         params={"fn": fn, "input_schema": self.schema})

    def map(self, fn, columns=None) -> "Collection":
        """Apply a Python function returning one row per row (slow path, see ``flat_map``).

        >>> flow = Dataflow(); c = flow.input("c", ["a"])
        >>> c.map(lambda row: (row[0] * 2,)).columns
        ['a']
        """
        if not callable(fn):
            raise TypeError(f"map needs a function, got {fn!r}")
        return self.flat_map(lambda row: (fn(row),), columns)

    def concat(self, *others: "Collection") -> "Collection":
        """Union (multiset sum) with collections of the same column types.

        >>> flow = Dataflow(); a = flow.input("a", ["x"]); b = flow.input("b", ["x"])
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

        >>> Dataflow().input("a", ["x"]).negate().columns
        ['x']
        """
        return self._add("negate", [self], self.schema)

    def consolidate(self) -> "Collection":
        """The same collection, with its updates summed per (row, time) and zeros dropped.

        >>> Dataflow().input("a", ["x"]).consolidate().columns
        ['x']
        """
        return self._add("consolidate", [self], self.schema,
                         exchange=[tuple(range(self.schema.width))])

    def inspect(self, callback) -> "Collection":
        """Call ``callback([(row, time, diff), ...])`` with each set of complete updates.

        Returns the same collection, so it can sit in the middle of a pipeline.

        >>> flow = Dataflow(); seen = []
        >>> a = flow.input("a", ["x"]); _ = a.inspect(seen.extend)
        >>> a.insert([(7,)]); flow.advance(); seen
        [((7,), (0,), 1)]
        """
        if not callable(callback):
            raise TypeError(f"inspect needs a callable, got {callback!r}")
        return self._add("inspect", [self], self.schema, params={"callback": callback})

    def output(self, name: str | None = None) -> "Output":
        """A handle to read the collection: ``snapshot()``, ``changes()``, ``to_pandas()``.

        >>> flow = Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([(1,), (1,)]); flow.advance(); out.snapshot()
        {(1,): 2}
        """
        if self.scope.parent is not None:
            raise GraphError(f"output() of a collection inside {self.scope.describe()}: leave "
                             f"the loop first (iterate() returns the left result)")
        c = self._add("output", [self], self.schema, label=f"output {name or ''}".strip())
        return Output(self.flow, c.node, name)

    # -- arrangements, joins, reductions -------------------------------------------------
    def arrange(self, by) -> "Arranged":
        """An index of the collection by the ``by`` columns, shareable by joins and aggregates.

        Arranging the same collection by the same columns twice returns the
        same arrangement, so one index serves every operator that needs it.

        >>> flow = Dataflow(); c = flow.input("c", ["k", "v"])
        >>> c.arrange(by=["k"]) is c.arrange(by=["k"])
        True
        """
        keys = _as_names(by, "arrange(by=...)")
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

        >>> flow = Dataflow()
        >>> a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k2", "y"])
        >>> a.join(b, left_on="k", right_on="k2").columns
        ['k', 'x', 'y']
        >>> a.join(a, on="k", rename={"x": "x2"}).columns
        ['k', 'x', 'x2']
        """
        left_keys, right_keys = _join_keys(on, left_on, right_on)
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
        return _join_arranged(left_arr, right_arr, rename or {})

    def semijoin(self, other, on=None, left_on=None, right_on=None) -> "Collection":
        """Rows of this collection whose key appears in ``other`` (multiplicities kept).

        >>> flow = Dataflow(); a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k"])
        >>> a.semijoin(b, on="k").columns
        ['k', 'x']
        """
        left_keys, right_keys = _join_keys(on, left_on, right_on)
        right = other.collection if isinstance(other, Arranged) else other
        right._require(right_keys, "semijoin (right keys)")
        present = right.select(*right_keys).distinct()
        return self.join(present, left_on=left_keys, right_on=right_keys)

    def antijoin(self, other, on=None, left_on=None, right_on=None) -> "Collection":
        """Rows of this collection whose key does not appear in ``other``.

        >>> flow = Dataflow(); a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k"])
        >>> a.antijoin(b, on="k").columns
        ['k', 'x']
        """
        return self.concat(self.semijoin(other, on, left_on, right_on).negate())

    def distinct(self) -> "Collection":
        """Each row with positive multiplicity, once.

        >>> Dataflow().input("a", ["x"]).distinct().columns
        ['x']
        """
        arranged = self.arrange(list(self.schema.names))
        return _reduce(arranged, DistinctReducer(), self.schema, "distinct")

    def threshold(self, fn) -> "Collection":
        """Each row with multiplicity ``fn(m)`` where ``m`` is its multiplicity.

        ``fn`` is vectorised: it maps an int64 numpy array of multiplicities to
        an integer array of the same shape (``distinct`` is ``lambda m: m > 0``).

        >>> Dataflow().input("a", ["x"]).threshold(lambda m: m // 2).columns
        ['x']
        """
        if not callable(fn):
            raise TypeError(f"threshold needs a function of the multiplicities, got {fn!r}")
        arranged = self.arrange(list(self.schema.names))
        return _reduce(arranged, ThresholdReducer(fn), self.schema, "threshold")

    def aggregate(self, by=(), **aggregates) -> "Collection":
        """One row per group of equal ``by`` columns, with named aggregates.

        >>> flow = Dataflow(); c = flow.input("c", ["k", "v"])
        >>> c.aggregate(by=["k"], n=count(), lo=min("v")).columns
        ['k', 'n', 'lo']
        """
        keys = _as_names(by, "aggregate(by=...)")
        self._require(keys, "aggregate(by=...)")
        return _aggregate(self.arrange(keys), aggregates)

    # -- iteration --------------------------------------------------------------------------
    def iterate(self, body, *, max_rounds: int = 10_000, name: str | None = None) -> "Collection":
        """The fixpoint of ``x = body(x)`` starting from this collection.

        ``body`` receives the loop variable (a collection inside a new loop
        scope, whose times carry a round coordinate) and returns its next
        value.  Collections from enclosing scopes can be used inside ``body``
        as they are.  A loop still changing after ``max_rounds`` rounds raises
        :class:`~diffflow.runtime.local.NonConvergenceError`.

        >>> flow = Dataflow()
        >>> edges = flow.input("edges", ["src", "dst"]); roots = flow.input("roots", ["node"])
        >>> reach = roots.iterate(lambda r: roots.concat(
        ...     r.join(edges, left_on="node", right_on="src").select(node="dst")).distinct())
        >>> out = reach.output()
        >>> edges.insert([(1, 2), (2, 3), (3, 1), (4, 5)]); roots.insert([1]); flow.advance()
        >>> sorted(out.snapshot())
        [(1,), (2,), (3,)]
        """
        from .iteration import Loop

        loop = Loop(self.flow, self.scope, name or "iterate", max_rounds)
        variable = loop.variable(self)
        result = body(variable)
        if not isinstance(result, Collection):
            raise TypeError(f"iterate: the body must return a Collection, got {result!r}")
        variable.set(result)
        return variable.leave()


class InputCollection(Collection):
    """An input: change it with ``insert``/``remove``/``update``, then ``flow.advance()``."""

    def __init__(self, flow, node, name):
        super().__init__(flow, node)
        self.name = name
        self._staged: list = []

    def insert(self, rows) -> None:
        """Add rows (each once) at the current epoch.

        Accepts a list of tuples, a 2-D numpy array, a pandas DataFrame or a
        pyarrow Table (columns by name); a one-column input also takes scalars.
        Nothing of a call is applied if any row is bad.

        >>> flow = Dataflow(); a = flow.input("a", ["x"]); a.insert([1, 2]); a.insert([(3,)])
        """
        encoded = self._encode(rows)
        self._staged.append((encoded, np.ones(len(encoded), np.int64)))

    def remove(self, rows) -> None:
        """Remove rows (each once) at the current epoch; same formats as :meth:`insert`.

        >>> flow = Dataflow(); a = flow.input("a", ["x"]); a.remove([(3,)])
        """
        encoded = self._encode(rows)
        self._staged.append((encoded, -np.ones(len(encoded), np.int64)))

    def update(self, rows, diffs) -> None:
        """Change the multiplicity of each row by the matching entry of ``diffs``.

        >>> flow = Dataflow(); a = flow.input("a", ["x"]); a.update([(1,), (2,)], [3, -1])
        """
        encoded = self._encode(rows)
        diffs_arr = _as_diffs(diffs, len(encoded), self.name)
        self._staged.append((encoded, diffs_arr))

    def insert_dataframe(self, df) -> None:
        """Add the rows of a Spark DataFrame at the current epoch (Spark runtime only).

        Spark tasks push the rows straight to the partition workers as Arrow
        batches (nothing is collected on the driver).  Columns must match the
        input's names and types; on any error nothing is staged.

        >>> flow = Dataflow(); a = flow.input("a", ["x"])
        >>> a.insert_dataframe(None)
        Traceback (most recent call last):
        TypeError: input 'a': insert_dataframe needs runtime='spark'; on this runtime pass rows (e.g. df.toPandas()) to insert()
        """
        self._push_dataframe(df, +1)

    def remove_dataframe(self, df) -> None:
        """Remove the rows of a Spark DataFrame at the current epoch (see :meth:`insert_dataframe`).

        >>> flow = Dataflow(); a = flow.input("a", ["x"])
        >>> a.remove_dataframe(None)
        Traceback (most recent call last):
        TypeError: input 'a': remove_dataframe needs runtime='spark'; on this runtime pass rows (e.g. df.toPandas()) to remove()
        """
        self._push_dataframe(df, -1)

    def update_dataframe(self, df) -> None:
        """Apply a DataFrame of changes: the input's columns plus an integer ``diff`` column.

        >>> flow = Dataflow(); a = flow.input("a", ["x"])
        >>> a.update_dataframe(None)
        Traceback (most recent call last):
        TypeError: input 'a': update_dataframe needs runtime='spark'; on this runtime pass rows (e.g. df.toPandas()) to update()
        """
        self._push_dataframe(df, None)

    def _push_dataframe(self, df, sign) -> None:
        method = {1: "insert", -1: "remove", None: "update"}[sign]
        if self.flow.runtime_name != "spark":
            raise TypeError(f"input {self.name!r}: {method}_dataframe needs runtime='spark'; on "
                            f"this runtime pass rows (e.g. df.toPandas()) to {method}()")
        if not hasattr(df, "mapInArrow"):
            raise TypeError(f"input {self.name!r}: {method}_dataframe expects a Spark DataFrame, "
                            f"got {type(df).__name__}")
        runtime = self.flow._ensure_runtime()
        runtime.push_dataframe(self.node.id, self.schema, df, sign, self.name)

    def _stage_encoded(self, rows: np.ndarray, diffs: np.ndarray) -> None:
        """Stage rows already encoded by :meth:`_encode` (no second validation)."""
        self._staged.append((rows, diffs))

    def _encode(self, data, labels=None) -> np.ndarray:
        """Validated int64 rows; ``labels`` name the columns in errors (default: the input's)."""
        columns = _columns_of(data, self.schema, self.name)
        schema, symbols = self.schema, self.flow.symbols
        n = len(columns[0]) if columns else _row_count(data)
        rows = np.empty((n, schema.width), np.int64)
        for j, (name, kind) in enumerate(zip(schema.names, schema.types)):
            where = labels[j] if labels else f"input {self.name!r} column {name!r}"
            rows[:, j] = encode_column(columns[j], kind, symbols, where)
        return rows


class Arranged:
    """A shared index of a collection by key columns (from :meth:`Collection.arrange`).

    ``join``, ``semijoin``, ``antijoin`` and ``aggregate`` read it directly, so
    several operators share one copy of the indexed data.
    """

    def __init__(self, collection: Collection, node, keys):
        self.collection, self.node, self.keys = collection, node, list(keys)
        self.flow = collection.flow

    def __repr__(self) -> str:
        return f"<Arranged by {self.keys} of {self.collection!r}>"

    def join(self, other, on=None, left_on=None, right_on=None, rename=None) -> Collection:
        """Join with another collection or arrangement; this side's keys are the arrangement's.

        >>> flow = Dataflow(); a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k", "y"])
        >>> a.arrange(by=["k"]).join(b, on="k").columns
        ['k', 'x', 'y']
        """
        left_keys, _ = _join_keys(on, left_on, right_on)
        if left_keys != self.keys:
            raise GraphError(f"this arrangement is keyed by {self.keys}; join on those columns "
                             f"(got {left_keys}) or arrange by the columns you need")
        return self.collection.join(other, on, left_on, right_on, rename)

    def semijoin(self, other, on=None, left_on=None, right_on=None) -> Collection:
        """See :meth:`Collection.semijoin`."""
        return self.collection.semijoin(other, on, left_on, right_on)

    def antijoin(self, other, on=None, left_on=None, right_on=None) -> Collection:
        """See :meth:`Collection.antijoin`."""
        return self.collection.antijoin(other, on, left_on, right_on)

    def aggregate(self, **aggregates) -> Collection:
        """Aggregate per key of the arrangement.

        >>> flow = Dataflow(); a = flow.input("a", ["k", "x"])
        >>> a.arrange(by=["k"]).aggregate(n=count()).columns
        ['k', 'n']
        """
        return _aggregate(self, aggregates)

    def output(self, name: str | None = None) -> "Output":
        """See :meth:`Collection.output`."""
        return self.collection.output(name)


def _join_keys(on, left_on, right_on):
    if on is not None:
        if left_on is not None or right_on is not None:
            raise GraphError("join: give either on= or left_on=/right_on=, not both")
        keys = _as_names(on, "join on=")
        return keys, keys
    if left_on is None or right_on is None:
        raise GraphError("join needs on= (same names) or both left_on= and right_on=")
    left, right = _as_names(left_on, "left_on"), _as_names(right_on, "right_on")
    if len(left) != len(right):
        raise GraphError(f"join: left_on {left} and right_on {right} differ in length")
    return left, right


def _join_arranged(left: Arranged, right: Arranged, rename: dict) -> Collection:
    kk = len(left.keys)
    lschema, rschema = left.collection.schema, right.collection.schema
    right_rest = [n for n in rschema.names if n not in right.keys]
    unknown = [n for n in rename if n not in right_rest]
    if unknown:
        raise GraphError(f"join rename={rename}: {unknown[0]!r} is not a non-key column of the "
                         f"other side; those are {right_rest}")
    out_rest = [rename.get(n, n) for n in right_rest]
    clash = [n for n in out_rest if n in lschema.names]
    if len(set(out_rest)) != len(out_rest):
        raise GraphError(f"join rename={rename} gives two output columns the same name")
    if clash:
        raise GraphError(
            f"join output would have two columns named {clash[0]!r} (one from each side); "
            f"pass rename={{{clash[0]!r}: {clash[0] + '_right'!r}}} to name the other side's "
            f"column differently")
    # arranged rows: left = keys + left rest, right = keys + right rest
    left_arranged = list(left.node.schema.names)
    perm = [left_arranged.index(n) for n in lschema.names]
    perm += [len(left_arranged) + i for i in range(len(right_rest))]
    names = tuple(lschema.names) + tuple(out_rest)
    types = tuple(lschema.types) + tuple(rschema.type_of(n) for n in right_rest)
    flow = left.flow
    flow._check_building("join")
    node = flow.graph.add("join", [left.node.id, right.node.id], Schema(names, types),
                          params={"key_width": kk, "perm": perm}, scope=left.node.scope,
                          label=f"join on {left.keys}={right.keys}")
    return Collection(flow, node)


def _reduce(arranged: Arranged, reducer, schema: Schema, label: str) -> Collection:
    flow = arranged.flow
    flow._check_building(label)
    node = flow.graph.add("reduce", [arranged.node.id], schema,
                          params={"key_width": len(arranged.keys), "reducer": reducer},
                          scope=arranged.node.scope,
                          label=label)
    return Collection(flow, node)


def _aggregate(arranged: Arranged, aggregates: dict) -> Collection:
    if not aggregates:
        raise GraphError("aggregate needs at least one named aggregate, e.g. n=dd.count()")
    arr_schema = arranged.node.schema
    kk = len(arranged.keys)
    specs, names, types = [], list(arranged.keys), [arr_schema.types[i] for i in range(kk)]
    for out_name, agg in aggregates.items():
        if not isinstance(agg, Aggregate):
            raise TypeError(f"aggregate {out_name}=...: expected dd.count(), dd.sum(col), "
                            f"dd.min(col) or dd.max(col), got {agg!r}")
        if out_name in names:
            raise GraphError(f"aggregate output column {out_name!r} clashes with a group column")
        if agg.kind == "count":
            specs.append(("count", None, "int"))
            kind = "int"
        else:
            if agg.column not in arr_schema.names:
                raise GraphError(f"unknown column {agg.column!r} in aggregate {out_name}="
                                 f"{agg.kind}(...); available columns: "
                                 f"{list(arranged.collection.schema.names)}")
            position = arr_schema.names.index(agg.column)
            if position < kk:
                raise GraphError(f"aggregate {out_name}={agg.kind}({agg.column!r}): the column "
                                 f"is a group column; aggregate another column")
            kind = arr_schema.types[position]
            if agg.kind == "sum" and kind not in ("int", "float"):
                raise GraphError(f"sum({agg.column!r}) needs an int or float column, not {kind}")
            specs.append((agg.kind, position - kk, kind))
        names.append(out_name)
        types.append(kind)
    return _reduce(arranged, AggregateReducer(specs), Schema(tuple(names), tuple(types)),
                   f"aggregate {list(aggregates)} by {arranged.keys}")


# -- outputs ---------------------------------------------------------------------------------

class Output:
    """Reads a collection's current contents and its changes."""

    def __init__(self, flow: Dataflow, node, name):
        self.flow, self.node, self.name = flow, node, name

    def _decode(self, rows):
        return decode_rows(rows, self.node.schema, self.flow.symbols)

    def snapshot(self) -> dict:
        """``{row: multiplicity}`` of the collection after the last computed epoch.

        >>> flow = Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([3, 3, 4]); flow.advance(); out.snapshot()
        {(3,): 2, (4,): 1}
        """
        if self.flow._runtime is None:
            return {}
        rows, diffs = self.flow._runtime.output_contents(self.node.id)
        return dict(zip(self._decode(rows), diffs.tolist()))

    def changes(self) -> list:
        """``[(row, epoch, diff), ...]`` since the last call, consolidated, by epoch then row.

        >>> flow = Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([1]); flow.advance(); a.remove([1]); a.insert([2]); flow.advance()
        >>> out.changes()
        [((1,), 0, 1), ((1,), 1, -1), ((2,), 1, 1)]
        """
        if self.flow._runtime is None:
            return []
        chunks = self.flow._runtime.take_output_changes(self.node.id)
        if not chunks:
            return []
        from .arrangements.updates import concat
        merged = concat(chunks, self.node.schema.width, self.node.dim).consolidated()
        items = list(zip(self._decode(merged.rows), merged.times[:, 0].tolist(),
                         merged.diffs.tolist()))
        return sorted(items, key=lambda item: (item[1], item[0]))

    def to_pandas(self):
        """The current collection as a pandas DataFrame, one line per copy of a row.

        >>> flow = Dataflow(); a = flow.input("a", ["x", ("s", str)]); out = a.output()
        >>> a.insert([(1, "p")]); flow.advance(); out.to_pandas().values.tolist()
        [[1, 'p']]
        """
        import pandas as pd

        snap = self.snapshot()
        negative = [r for r, m in snap.items() if m < 0]
        if negative:
            raise ValueError(f"output has negative multiplicities (e.g. {negative[0]!r}); "
                             f"read it with snapshot() instead")
        rows = [r for r, m in snap.items() for _ in range(m)]
        return pd.DataFrame(rows, columns=list(self.node.schema.names))

    def to_dataframe(self):
        """The current collection as a Spark DataFrame, one row per copy (Spark runtime only).

        Spark tasks pull each partition's rows from its worker; the result is
        materialised at once, so it stays the snapshot of this moment.
        """
        return self._spark_runtime("to_dataframe").output_dataframe(
            self.node.id, self.node.schema, "snapshot")

    def changes_dataframe(self):
        """The changes since the last read as a Spark DataFrame ``(columns..., epoch, diff)``.

        Like :meth:`changes`, each change is handed out once.
        """
        return self._spark_runtime("changes_dataframe").output_dataframe(
            self.node.id, self.node.schema, "changes")

    def _spark_runtime(self, method: str):
        if self.flow.runtime_name != "spark":
            raise TypeError(f"output {self.name!r}: {method}() needs runtime='spark'; on this "
                            f"runtime use to_pandas() or changes()")
        return self.flow._ensure_runtime()

    def __repr__(self) -> str:
        return f"<Output {self.name or self.node.id} {self.node.schema!r}>"


# -- input conversion ----------------------------------------------------------------------------

def _row_count(data) -> int:
    try:
        return len(data)
    except TypeError:
        return 0


def _columns_of(data, schema: Schema, name: str) -> list:
    """Split user data into one sequence per schema column, validating shape."""
    width = schema.width
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        missing = [c for c in schema.names if c not in data.columns]
        extra = [c for c in data.columns if c not in schema.names]
        if missing or extra:
            raise ValueError(f"input {name!r}: DataFrame columns {list(data.columns)} do not "
                             f"match the input's columns {list(schema.names)}")
        return [_plain(data[c].to_numpy()) for c in schema.names]
    if module == "pyarrow":
        got = list(data.column_names)
        if sorted(got) != sorted(schema.names):
            raise ValueError(f"input {name!r}: table columns {got} do not match the input's "
                             f"columns {list(schema.names)}")
        return [_plain(data.column(c).to_numpy(zero_copy_only=False)) for c in schema.names]
    if isinstance(data, np.ndarray) and data.dtype != object:
        if data.ndim == 1 and width == 1:
            return [data]
        if data.ndim != 2 or data.shape[1] != width:
            raise ValueError(f"input {name!r}: array of shape {data.shape} does not have "
                             f"{width} columns {list(schema.names)}")
        return [data[:, j] for j in range(width)]
    if isinstance(data, (str, bytes)) or not hasattr(data, "__iter__"):
        raise TypeError(f"input {name!r}: expected rows (a list of tuples, an array or a "
                        f"DataFrame), got {type(data).__name__}")
    rows = list(data)
    for i, row in enumerate(rows):
        if isinstance(row, (tuple, list)):
            if len(row) != width:
                raise ValueError(f"input {name!r}: row {i} {tuple(row)!r} has {len(row)} values; "
                                 f"expected {width} for columns {list(schema.names)}")
        elif width == 1 and not isinstance(row, np.ndarray):
            rows[i] = (row,)
        else:
            raise ValueError(f"input {name!r}: row {i} {row!r} is not a tuple of {width} "
                             f"values for columns {list(schema.names)}")
    if not rows:
        return [[] for _ in range(width)]
    return [list(c) for c in zip(*rows)]


def _plain(values: np.ndarray) -> np.ndarray:
    if values.dtype == object:
        return values.tolist()
    return values


def _as_diffs(diffs, n: int, name: str) -> np.ndarray:
    values = list(diffs) if not isinstance(diffs, np.ndarray) else diffs
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"input {name!r}: update() got {arr.shape[0] if arr.ndim else 0} diffs "
                         f"for {n} rows")
    if arr.dtype.kind not in "iu" and n:
        raise TypeError(f"input {name!r}: diffs must be integers, got {arr.dtype}")
    return arr.astype(np.int64)


# column expressions are re-exported from the package root as dd.col / dd.lit
from .expr import col, lit  # noqa: E402,F401
