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

import copy
import time
import weakref

import numpy as np

from diffflow.api import durable_flow, features
from diffflow.api.inputs import InputCollection
from diffflow.api.iteration import Loop
from diffflow.common import memory, memory_budget
from diffflow.common.errors import DiffflowError, ExplainError, GraphError, OperatorError
from diffflow.common.schema import Schema, SymbolTable
from diffflow.dataflow.graph import Graph

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
    if flow.durable:  # (checkpoints come when the durable flow says: durable_flow)
        kw["checkpoint_every"] = None
        kw["auto_checkpoint"] = False
    kw["trace"] = getattr(flow, "_trace", None)  # a Dataflow pickled before tracing existed
    if flow.runtime_name == "local":
        from diffflow.runtime.local import LocalRuntime
        return LocalRuntime(flow.graph, flow.partitions, flow.symbols, trace=kw["trace"])
    if flow.runtime_name == "spark":
        from diffflow.runtime.spark import SparkRuntime  # the only module that imports pyspark
        return SparkRuntime(flow.graph, flow.partitions, flow.symbols, flow.spark, **kw)
    from diffflow.runtime.cluster import ClusterRuntime
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
    temporary folder by default; without ``checkpoint_every``, once the inputs
    kept since the last reach 1,000 epochs or a million rows) and recover from a
    lost worker by restoring it and replaying the inputs since.  ``trace`` records what every
    partition worker does: a file path (JSON lines of raw events, see
    :mod:`diffflow.runtime.tracing`) or a function called with the
    :class:`~diffflow.runtime.events.Events` of every run; off by default.
    ``explain=True`` keeps what :meth:`Output.explain` needs to say why a row
    is in an output (:mod:`diffflow.explain`; on every runtime).  With a
    trace file, ``dashboard=PORT`` serves its live dashboard on
    ``127.0.0.1:PORT`` while the dataflow runs (``diffflow pag serve``), until
    :meth:`close`.  (Explanations and the dashboard attach through
    :mod:`diffflow.api.features`.)  ``memory_limit`` (bytes, or a size such as
    ``"512MiB"``, ``"2GB"``) stops an operator about to allocate past it, with an error
    naming the operator and its line, before the allocation: it counts the engine's
    arrays (traces and big intermediates; :mod:`diffflow.common.memory_budget`) of this
    process, or of each worker process on multi-process runtimes; off (None) by default.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(partitions=2)
    >>> nums = flow.input("nums", ["x"])
    >>> big = nums.filter(dd.col("x") > 1).output()
    >>> nums.insert([(1,), (5,)]); flow.advance()
    >>> big.snapshot()
    {(5,): 1}
    """

    _rows_moved = 0  # a Dataflow pickled before this counter existed

    explain = False     # a Dataflow pickled before explanations existed
    _features: dict = {}   # name -> attached feature (diffflow.api.features)
    _unrun = False      # epochs closed by advance(run=False) and not computed yet
    _rescaling = None   # the rescaling driver, once a plan was asked for
    memory_limit = None  # bytes per process, or None (a Dataflow pickled before limits)

    def __init__(self, partitions: int = 1, runtime: str = "local", spark=None, *,
                 checkpoint_every: int | None = None, checkpoint_dir: str | None = None,
                 trace=None, explain: bool = False, dashboard: int | None = None,
                 memory_limit: int | str | None = None, durable: bool = False,
                 resume: bool = False):
        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise ValueError(f"partitions must be a positive int, got {partitions!r}")
        if runtime not in RUNTIMES:
            raise ValueError(f"unknown runtime {runtime!r}; choose one of {', '.join(RUNTIMES)}")
        if runtime == "spark" and spark is None:
            raise ValueError("runtime='spark' needs spark=<a SparkSession>, e.g. "
                             "diffflow.runtime.spark.local_session() for local[3]")
        if runtime != "spark" and spark is not None:
            raise ValueError(f"spark= is only used with runtime='spark' (got runtime={runtime!r})")
        if checkpoint_every is not None and (not isinstance(checkpoint_every, int)
                                             or checkpoint_every < 1):
            raise ValueError(f"checkpoint_every must be a positive int or None, "
                             f"got {checkpoint_every!r}")
        self.memory_limit = memory_budget.parse_size(memory_limit)
        durable_flow.check_options(checkpoint_dir, durable, resume, runtime, checkpoint_every)
        self.durable, self._resume = bool(durable or resume), bool(resume)
        self.explain = bool(explain)
        self._features = {}
        self._trace = None
        if trace is not None:
            from diffflow.runtime.trace_sink import open_trace
            self._trace = open_trace(trace)  # an unwritable path fails here, before any work
        if dashboard is not None:
            import os

            if not isinstance(trace, (str, os.PathLike)):
                raise ValueError("dashboard= shows the trace file as it is written: give "
                                 "trace= a file path too, e.g. Dataflow(trace='run.trace', "
                                 "dashboard=8765)")
        self.runtime_name, self.spark = runtime, spark
        self._closed = False
        self._rows_moved = 0  # input rows staged, to decide whether closing collects
        self.checkpoint_every, self.checkpoint_dir = checkpoint_every, checkpoint_dir
        self.partitions = partitions
        self.graph = Graph()
        self.graph.memory_limit = self.memory_limit  # (worker processes take it from the graph)
        self.symbols = SymbolTable()
        self.epoch = 0
        self._inputs: list[InputCollection] = []
        self._runtime = None
        self._arrangements: dict = {}
        self._entered: dict = {}
        self._loops: list = []
        if self.explain:
            features.attach(self, "explain", True)
        if dashboard is not None:
            features.attach(self, "dashboard", (trace, int(dashboard)))

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if state.get("explain") and "_features" not in state:
            # pickled before features: its explanations were attributes of its own
            self._features = {}
            features.restore(self, "explain", state)

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
        """A loop scope for mutually recursive variables (see :mod:`diffflow.api.iteration`).

        ``max_rounds=None`` lets the loop run as many rounds as it needs.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); loop = flow.loop("fix", max_rounds=100)
        >>> loop.scope.dim
        2
        """
        return Loop(self, self.graph.root, name, max_rounds)

    def _new_loop(self, scope, name, max_rounds) -> Loop:
        """A loop nested in ``scope`` (``Collection.iterate``)."""
        return Loop(self, scope, name, max_rounds)

    def advance(self, run: bool = True) -> None:
        """Close the current epoch; with ``run`` compute until outputs are exact for it.

        With ``run=False`` several epochs can be closed and then computed
        together by one :meth:`run` (many epochs in flight at once).
        """
        self._check_not_failed()
        runtime = self._ensure_runtime()
        rescaling = self._rescaling
        if rescaling is not None:
            rescaling.before_epoch(runtime, self.epoch, self._compute_closed)
            self.partitions = runtime.parts
        if self._durability is not None:  # on stable storage before any of it is staged
            durable_flow.log_epoch(self)
        for handle in self._inputs:
            for rows, diffs in handle._staged:
                runtime.stage(handle.node.id, rows, diffs)
                _rows_since_collect[0] += len(diffs)
                self._rows_moved += len(diffs)
            handle._staged = []
        runtime.close_epoch([h.node.id for h in self._inputs])
        self.epoch += 1
        self._unrun = not run
        for feature in self._features.values():
            feature.after_close()
        if run:
            started = time.perf_counter()
            self._run_checked(runtime)
            if rescaling is not None:
                rescaling.after_epoch(time.perf_counter() - started)
            for feature in self._features.values():
                feature.after_run()

    def explain_plan(self) -> str:
        """Which path each loop's rounds take here, and why: compiled rounds for small deltas
        (:mod:`diffflow.runtime.compiled_rounds`), or the general path, naming the operator
        that keeps a loop on it.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); e = flow.input("e", ["src", "dst"]); r = flow.input("r", ["n"])
        >>> _ = r.iterate(lambda c: r.concat(c.join(e, left_on="n", right_on="src")
        ...                                   .select(n="dst")).distinct(), name="reach").output()
        >>> print(flow.explain_plan())  # doctest: +ELLIPSIS
        loop 'reach' (built at ...): compiled rounds for small deltas
        """
        from diffflow.dataflow.rounds import describe_loop_paths

        note = None
        if self.runtime_name != "local":
            note = (f"not on the {self.runtime_name} runtime: a round there waits for the "
                    "workers' progress barrier, which compiling cannot remove; the local "
                    "runtime runs them")
        elif self._trace is not None:
            note = "not while the dataflow is traced yet"
        lines = describe_loop_paths(self.graph, self.symbols, note)
        return "\n".join(lines) if lines else "no loops"

    def explanations(self, output):
        """Live explanations of rows of ``output``, kept current by every :meth:`advance`
        (:class:`~diffflow.explain.live.LiveExplanations`: ``ask(rows)``, index by row,
        ``changes()``).  Needs ``Dataflow(explain=True)``.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(explain=True); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([1]); flow.advance(); live = flow.explanations(out); live.ask([(1,)])
        >>> a.remove([1]); flow.advance(); [(c.input, c.row, c.diff) for c in live.changes()]
        [('a', (1,), 1), (None, None, -1), ('a', (1,), -1)]
        """
        if getattr(output, "flow", None) is not self:
            raise ExplainError("explanations(output) needs an output of this dataflow (one "
                               "made by .output() on its collections)")
        return self._explainer().live(output)

    def _explainer(self):
        """The attached explanations feature (a clear error when there is none)."""
        explainer = features.attached(self, "explain")
        if explainer is None:
            raise ExplainError("this dataflow was built without explanations: create it with "
                               "Dataflow(explain=True) to explain its outputs")
        return explainer

    # -- rescaling (diffflow.runtime.rescale) --------------------------------------------
    def rescale(self, partitions: int | None = None, strategy: str = "batched", *, table=None,
                bins_per_step: int | None = None, max_rows_per_step: int | None = None,
                start_epoch: int | None = None, steps_per_epoch: int = 1,
                replace: bool = False):
        """Move the dataflow to ``partitions`` partitions (or to routing ``table``) while it
        runs; returns the :class:`~diffflow.runtime.rescale.plans.Plan`, applied one step
        per epoch boundary from ``start_epoch`` (default: the next :meth:`advance`).

        ``strategy``: ``"batched"`` (each step sends and receives at most
        ``max_rows_per_step`` rows per partition), ``"fluid"`` (``bins_per_step`` bins
        per step) or ``"all_at_once"``; on the processes and Spark runtimes also
        ``"restart"`` (checkpoint, new workers, restore re-binned: done at once, or at
        ``start_epoch``).  Outputs are exactly those of a dataflow that never rescaled.
        A batched or fluid step whose state is not indexed yet (big batches,
        :mod:`diffflow.runtime.rescale.step_index`), or whose new workers are still
        starting (they start in the background when the plan is made:
        :mod:`diffflow.runtime.start_ahead`), waits an epoch at a time (``plan.waited``;
        see :class:`~diffflow.runtime.rescale.pacing.Background`).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(partitions=2); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([1, 2, 3]); flow.advance()
        >>> plan = flow.rescale(partitions=4, strategy="all_at_once"); flow.advance()
        >>> flow.partitions, plan.done, sorted(out.snapshot())
        (4, True, [(1,), (2,), (3,)])
        """
        runtime = self._ensure_runtime()
        plan = self._rescaler().rescale(
            runtime, self.epoch, self._compute_closed, partitions, strategy, table=table,
            bins_per_step=bins_per_step, max_rows_per_step=max_rows_per_step,
            start_epoch=start_epoch, steps_per_epoch=steps_per_epoch, replace=replace)
        self.partitions = runtime.parts
        return plan

    def rebalance(self, strategy: str = "batched", *, bins_per_step: int | None = None,
                  max_rows_per_step: int | None = None, start_epoch: int | None = None,
                  steps_per_epoch: int = 1, replace: bool = False):
        """Even out the rows per partition (same partition count) by moving bins: a
        :meth:`rescale` to a table balanced on the measured :meth:`bin_sizes`.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(partitions=2); a = flow.input("a", ["x"])
        >>> _ = a.distinct().output(); a.insert(range(1000)); flow.advance()
        >>> skewed = np.zeros(720720, np.int32)   # every bin on partition 0
        >>> _ = flow.rescale(table=skewed, partitions=2, strategy="all_at_once"); flow.advance()
        >>> _ = flow.rebalance(strategy="all_at_once"); flow.advance()
        >>> np.bincount(flow.routing_table, flow.bin_sizes()).tolist()
        [1000.0, 1000.0]
        """
        return self._rescaler().rebalance(
            self._ensure_runtime(), self.epoch, strategy, bins_per_step=bins_per_step,
            max_rows_per_step=max_rows_per_step, start_epoch=start_epoch,
            steps_per_epoch=steps_per_epoch, replace=replace)

    def _rescaler(self):
        if self._rescaling is None:
            from diffflow.runtime.rescale.driver import Rescaling

            self._rescaling = Rescaling()
        return self._rescaling

    def _compute_closed(self) -> None:
        """Compute the epochs closed by ``advance(run=False)``, if any (before a rescaling
        step: a step moves complete state)."""
        if self._unrun:
            self.run()

    @property
    def migration(self):
        """The rescaling :class:`~diffflow.runtime.rescale.plans.Plan` in progress, or
        ``None``."""
        return None if self._rescaling is None else self._rescaling.plan

    @property
    def routing_table(self) -> np.ndarray:
        """The bin -> partition table in force (a read-only int32 array)."""
        table = self._ensure_runtime().routing.table()
        table.setflags(write=False)
        return table

    def bin_sizes(self) -> np.ndarray:
        """Trace rows per bin over every arrangement and partition (for planning and skew)."""
        return self._ensure_runtime().bin_sizes()

    def run(self) -> None:
        """Compute every closed epoch (see :meth:`advance`)."""
        self._check_not_failed()
        self._run_checked(self._ensure_runtime())
        self._unrun = False
        for feature in self._features.values():
            feature.after_run()

    _failed = None  # the OperatorError that stopped this dataflow part-way through an epoch
    _durability = None  # runtime.durable.durability.Durability of a durable dataflow, once run
    durable = _resume = False  # (a Dataflow pickled before durability existed)
    _checkpoint_extra = None  # () -> dict its owner keeps with each checkpoint (a Program's facts)

    def resume(self) -> int:
        """Restore a durable dataflow's state (``resume=True``) now rather than at its first
        :meth:`advance` or read: the newest valid checkpoint, then the logged epochs after
        it, recomputed.  Returns :attr:`epoch`, the number of epochs it holds: the next
        :meth:`advance` closes that one.  See docs/DURABILITY.md.

        >>> import tempfile, diffflow as dd
        >>> flow = dd.Dataflow(checkpoint_dir=tempfile.mkdtemp(), resume=True)
        >>> _ = flow.input("a", ["x"]).output(); flow.resume()
        0
        """
        self._ensure_runtime()
        return self.epoch

    def _run_checked(self, runtime) -> None:
        """Run ``runtime``; an operator that fails leaves the epoch half computed (some
        operators took their input, others did not), so the dataflow refuses to go on
        rather than give silently incomplete results (a
        :class:`~diffflow.common.errors.MemoryLimitError` is such a failure).  The run is
        under this dataflow's memory limit (the process's otherwise)."""
        try:
            with memory_budget.limited(self.memory_limit):
                runtime.run()
        except OperatorError as exc:
            self._failed = exc
            raise
        if self._durability is not None:
            self._durability.after_run(runtime, self.epoch)

    def _check_not_failed(self) -> None:
        if self._failed is not None:
            raise DiffflowError(
                f"this dataflow stopped when an operator failed, part-way through epoch "
                f"{self.epoch - 1}, so its state is incomplete and it computes nothing more: "
                f"build it again (with the input that failed corrected). The failure was: "
                f"{str(self._failed).splitlines()[0]}")

    def _reader(self):
        """The runtime for a read of an output (a durable dataflow resumes first)."""
        if self._runtime is None and self._resume and not self._closed:
            self._ensure_runtime()
        return self._runtime

    def _ensure_runtime(self):
        if self._runtime is None:
            if self._closed:
                raise GraphError("this dataflow was closed; build a new Dataflow")
            for loop in self._loops:
                loop._check_complete()
            for feature in self._features.values():
                feature.before_start()  # (explanations build onto the graph, once)
            _free_dropped_dataflows()
            runtime = _make_runtime(self)
            if self.durable:
                durable_flow.start(self, runtime)
            self._runtime = runtime
            _OPEN.add(self)
        return self._runtime

    def _replica(self, node_count: int):
        """A new local dataflow over copies of the first ``node_count`` nodes, sharing this
        one's symbols (so rows encode alike), with its inputs among them; returns
        ``(dataflow, {input name: input})`` (what replays of explanations run)."""
        twin = Dataflow()
        twin.symbols = self.symbols
        twin.graph.root, twin.graph.scopes = self.graph.root, list(self.graph.scopes)
        for original in self.graph.nodes[:node_count]:
            twin.graph.nodes.append(copy.copy(original))
        by_name = {}
        for handle in self._inputs:
            if handle.node.id < node_count:
                copied = InputCollection(twin, twin.graph.nodes[handle.node.id], handle.name)
                twin._inputs.append(copied)
                by_name[handle.name] = copied
        return twin, by_name

    def close(self) -> None:
        """Stop the partition workers of a multi-process or Spark runtime (idempotent).

        The results go with them: read outputs before closing (afterwards they
        read as empty), and inputs refuse new rows.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); flow.close()
        """
        runtime, self._runtime = self._runtime, None
        if runtime is not None:
            runtime.close()
        if self._durability is not None:
            self._durability.close()
        for feature in self._features.values():
            feature.close()
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

        >>> import diffflow as dd
        >>> with dd.Dataflow() as flow:
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
