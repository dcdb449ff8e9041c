"""The dataflow: a graph of operators with its inputs, symbol table and runtime.

A :class:`Dataflow` hands out inputs (:meth:`Dataflow.input`) and loops, and
starts its runtime -- one of :data:`RUNTIMES` -- at the first
:meth:`Dataflow.advance`; after that the graph is fixed.  Each ``advance``
closes an epoch of every input and, unless ``run=False``, computes it.

>>> import diffflow as dd
>>> flow = dd.Dataflow()
>>> nums = flow.input("nums", ["x"]); total = nums.aggregate(s=dd.sum("x")).output()
>>> nums.insert([1, 2]); flow.advance(run=False); nums.insert([3]); flow.advance(run=False)
>>> flow.epoch, total.snapshot()
(2, {})
>>> flow.run(); total.snapshot()
{(6,): 1}
"""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from . import memory
from .dataflow.graph import Graph
from .errors import GraphError
from .schema import Schema, SymbolTable

if TYPE_CHECKING:
    from .inputs import InputCollection
    from .iteration import Loop

RUNTIMES = ("local", "processes", "spark", "cluster")

# Freeing a dataflow's memory takes a collection (see memory.py).  Before a
# dataflow starts, if the dataflows still open have moved many input rows since
# the last collection, some may have been dropped: collect.  A closing dataflow
# that moved many rows collects too.
_OPEN = weakref.WeakSet()  # dataflows started and not closed
_COLLECT_AFTER_ROWS = 500_000
_rows_since_collect = [0]


def _free_dropped_dataflows() -> None:
    """Collect dropped dataflows when enough input has moved for them to matter."""
    if _rows_since_collect[0] >= _COLLECT_AFTER_ROWS and len(_OPEN):
        memory.release()
        _rows_since_collect[0] = 0


def _make_runtime(flow):
    """The runtime a :class:`Dataflow` asked for (``cluster``: in-process workers, for tests)."""
    kw = dict(checkpoint_every=flow.checkpoint_every, checkpoint_dir=flow.checkpoint_dir)
    kw["trace"] = getattr(flow, "_trace", None)  # a Dataflow pickled before tracing existed
    if flow.runtime_name == "local":
        from .runtime.local import LocalRuntime
        return LocalRuntime(flow.graph, flow.partitions, flow.symbols, trace=kw["trace"])
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
    it and replaying the inputs since.  ``trace`` records what every
    partition worker does: a file path (JSON lines of raw events, see
    :mod:`diffflow.runtime.tracing`) or a function called with the
    :class:`~diffflow.pag.events.Events` of every run; off by default.
    ``explain=True`` keeps what :meth:`Output.explain` needs to say why a row
    is in an output (:mod:`diffflow.provenance`; local runtime).  With a
    trace file, ``dashboard=PORT`` serves its live dashboard on
    ``127.0.0.1:PORT`` while the dataflow runs (``diffflow pag serve``), until
    :meth:`close`.

    >>> from diffflow import col
    >>> flow = Dataflow(partitions=2)
    >>> nums = flow.input("nums", ["x"])
    >>> big = nums.filter(col("x") > 1).output()
    >>> nums.insert([(1,), (5,)]); flow.advance()
    >>> big.snapshot()
    {(5,): 1}
    """

    _rows_moved = 0  # a Dataflow pickled before this counter existed

    explain = False     # a Dataflow pickled before explanations existed
    _provenance = None
    _dashboard = None
    _unrun = False      # epochs closed by advance(run=False) and not computed yet
    _live: list = []

    def __init__(self, partitions: int = 1, runtime: str = "local", spark=None, *,
                 checkpoint_every: int | None = None, checkpoint_dir: str | None = None,
                 trace=None, explain: bool = False, dashboard: int | None = None):
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
        if explain and runtime != "local":
            raise ValueError("explain=True runs on the local runtime (any partitions=); "
                             f"explanations of runtime={runtime!r} dataflows are not built yet")
        self.explain = bool(explain)
        self._live: list = []          # live explanations, refreshed after every advance
        self._trace = None
        if trace is not None:
            from .runtime.trace_sink import open_trace
            self._trace = open_trace(trace)  # an unwritable path fails here, before any work
        self._dashboard = None
        if dashboard is not None:
            import os

            if not isinstance(trace, (str, os.PathLike)):
                raise ValueError("dashboard= shows the trace file as it is written: give "
                                 "trace= a file path too, e.g. Dataflow(trace='run.trace', "
                                 "dashboard=8765)")
            from .pag.dashboard.server import Background
            self._dashboard = Background(trace, int(dashboard))
        self.runtime_name, self.spark = runtime, spark
        self._closed = False
        self._rows_moved = 0  # input rows staged, to decide whether closing collects
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
        # function-local: inputs.py builds on collection.py, which imports this module
        from .inputs import InputCollection

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
                _rows_since_collect[0] += len(diffs)
                self._rows_moved += len(diffs)
            handle._staged = []
        runtime.close_epoch([h.node.id for h in self._inputs])
        self.epoch += 1
        self._unrun = not run
        if self._provenance is not None:
            self._provenance.record_changes(bool(self._live))
        if run:
            runtime.run()
            self._refresh_live()

    def explanations(self, output):
        """Live explanations of rows of ``output``, kept current by every :meth:`advance`
        (:class:`~diffflow.provenance.live.LiveExplanations`: ``ask(rows)``, index by row,
        ``changes()``).  Needs ``Dataflow(explain=True)``.

        >>> flow = Dataflow(explain=True); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([1]); flow.advance(); live = flow.explanations(out); live.ask([(1,)])
        >>> a.remove([1]); flow.advance(); [(c.input, c.row, c.diff) for c in live.changes()]
        [('a', (1,), 1), (None, None, -1), ('a', (1,), -1)]
        """
        from .errors import ExplainError
        from .provenance.live import LiveExplanations

        if getattr(output, "flow", None) is not self:
            raise ExplainError("explanations(output) needs an output of this dataflow (one "
                               "made by .output() on its collections)")
        return LiveExplanations(output)

    def run(self) -> None:
        """Compute every closed epoch (see :meth:`advance`)."""
        self._ensure_runtime().run()
        self._unrun = False
        self._refresh_live()

    def _refresh_live(self) -> None:
        if self._provenance is None or not self._live:
            return
        changes = self._provenance.take_changes()
        for live in list(self._live):   # live explanations read what the epochs changed
            live.refresh(changes=changes)

    def _ensure_runtime(self):
        if self._runtime is None:
            if self._closed:
                raise GraphError("this dataflow was closed; build a new Dataflow")
            for loop in self._loops:
                loop._check_complete()
            if self.explain and self._provenance is None:
                from .provenance.search import Provenance  # builds onto the graph, once

                self._provenance = Provenance(self)
            _free_dropped_dataflows()
            self._runtime = _make_runtime(self)
            _OPEN.add(self)
        return self._runtime

    def close(self) -> None:
        """Stop the partition workers of a multi-process or Spark runtime (idempotent).

        The results go with them: read outputs before closing (afterwards they
        read as empty), and inputs refuse new rows.

        >>> flow = Dataflow(); flow.close()
        """
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.close()
        if self._dashboard is not None:
            self._dashboard.stop()
            self._dashboard = None
        self._closed = True
        _OPEN.discard(self)
        if runtime is not None and self._rows_moved >= _COLLECT_AFTER_ROWS:
            del runtime
            memory.release()
            _rows_since_collect[0] = 0

    def __enter__(self) -> "Dataflow":
        return self

    def __exit__(self, *exc) -> None:
        """``with Dataflow() as flow:`` closes the dataflow (and frees its memory) at the end.

        Read results inside the block: after it outputs read as empty.

        >>> with Dataflow() as flow:
        ...     a = flow.input("a", ["x"]); out = a.output(); a.insert([1]); flow.advance()
        ...     sorted(out.snapshot())
        [(1,)]
        """
        self.close()

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise GraphError(f"cannot {what}: this dataflow was closed (its workers and results "
                             f"went with it); read results before close(), or build a new "
                             f"Dataflow")

    def _check_building(self, what: str) -> None:
        if self._runtime is not None:
            raise GraphError(
                f"cannot add {what}: this dataflow has already started running; build every "
                f"operator before the first advance() (or use a new Dataflow)")
