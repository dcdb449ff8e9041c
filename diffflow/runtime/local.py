"""The local runtime: ``P`` partition engines in this process, with an in-memory exchange.

Each partition is a :class:`~diffflow.runtime.engine.PartitionEngine`, the
same class the partition workers of the cluster, process and Spark runtimes
run, so results are identical for every runtime and every ``P``.  One
:class:`~diffflow.runtime.engine.Sweeper` steps all engines node by node,
handing chunks for another partition straight to it, so data crosses
partitions within one sweep: an acyclic dataflow settles in a single sweep.

Progress: a sweep starts from the frontiers the previous one left (valid
lower bounds, since pointstamps only ever move to larger times) and refreshes
each node's output frontier right after stepping it.  Only when something
reached an earlier node -- a loop's feedback edge -- is every frontier
recomputed exactly from all pointstamps
(:func:`~diffflow.dataflow.progress.global_frontiers`) before the next sweep.
"""
from __future__ import annotations

import numpy as np

from diffflow.common import failpoints
from diffflow.common.errors import MemoryLimitError, loop_overflow_error
from diffflow.runtime import lookups
from diffflow.runtime.base import Runtime
from diffflow.runtime.engine import (PartitionEngine, Sweeper, Topology, merge_pointstamps,
                                     overflowed, partition_rows)
from diffflow.runtime.rescale import migrate, step_index
from diffflow.runtime.routing import Routing


class LocalRuntime(Runtime):
    """Runs a graph in this process with ``parts`` partitions.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(partitions=2); nums = flow.input("nums", ["x"])
    >>> out = nums.distinct().output(); nums.insert([1, 1, 2]); flow.advance()
    >>> type(flow._runtime).__name__, flow._runtime.sweeps, sorted(out.snapshot())
    ('LocalRuntime', 1, [(1,), (2,)])
    """

    def __init__(self, graph, parts: int, symbols, trace=None):
        self.graph, self.parts, self.symbols = graph, parts, symbols
        self.routing = Routing(parts)
        self._plan = (None, None)  # the rescaling plan announced to partitions
        self.topology = Topology(graph)
        self.engines = {p: PartitionEngine(graph, p, parts, symbols, self.topology)
                        for p in range(parts)}
        self.sweeper = Sweeper(self.topology, self.engines, parts)
        self.frontiers = self.topology.initial_frontiers()
        self.sweeps = 0  # sweeps of the last run (a measure of its latency)
        self.closed = 0  # epochs closed (advance() calls): the epoch a run's events carry
        self.trace = trace  # a trace_sink.TraceSink, or None
        self.rounds = None  # compiled_rounds.CompiledRounds, built when a loop first runs
        if trace is not None:  # (tracing is imported only by a traced run: cold start)
            from diffflow.runtime.tracing import WorkerLog
            self.sweeper.logs = {p: WorkerLog(p, trace.origin) for p in range(parts)}
            for p, engine in self.engines.items():
                engine.log = self.sweeper.logs[p]

    # -- inputs ----------------------------------------------------------------------------
    def stage(self, node_id: int, rows: np.ndarray, diffs: np.ndarray) -> None:
        for p, (part_rows, part_diffs) in enumerate(partition_rows(rows, diffs, self.routing)):
            self.engines[p].stage(node_id, part_rows, part_diffs)

    def close_epoch(self, node_ids) -> None:
        for engine in self.engines.values():
            engine.close_epoch(node_ids)
        self.closed += 1

    # -- computing -------------------------------------------------------------------------
    def run(self) -> None:
        """Sweep until nothing reaches an earlier node; then compact and check loops."""
        logs = self.sweeper.logs
        if logs is not None:
            for log in logs.values():
                log.epoch = max(self.closed - 1, 0)   # the API's number of the newest epoch computed
        if self.topology.has_loops:
            self._recompute()
        self.sweeps = 1
        marked = False  # a run's first sweep looks at every node: inputs were staged
        while self.sweeper.sweep(self.frontiers, marked=marked):
            failpoints.reached("run")
            self._recompute()
            self.sweeps += 1
            marked = True
            if self.topology.has_loops and self._compiled_rounds():
                self._recompute()
                marked = False  # queues, traces and capabilities moved: look at every node
        engines = list(self.engines.values())
        overflow = overflowed([engine.finish(self.frontiers) for engine in engines],
                              lambda nids: [engine.dropped(nids) for engine in engines],
                              self.graph.nodes)
        if logs is not None:
            self.trace.emit([log.take_block() for log in logs.values()], self._names())
        if overflow:
            raise loop_overflow_error(overflow, self.graph.scopes)

    def _names(self) -> dict:
        """The nodes' names in a trace, computed again only when the graph grew (every
        run of a traced dataflow names its steps: naming every node costs ~1 µs each)."""
        from diffflow.runtime.trace_sink import operator_names

        cached = getattr(self, "_trace_names", None)
        if cached is None or cached[0] != len(self.graph.nodes):
            cached = self._trace_names = (len(self.graph.nodes), operator_names(self.graph))
        return cached[1]

    def _compiled_rounds(self) -> bool:
        """Run small deltas' loop rounds compiled (:mod:`.compiled_rounds`); whether any ran."""
        if getattr(self, "rounds", None) is None:  # (runtimes pickled before it existed)
            from diffflow.runtime.compiled_rounds import CompiledRounds, mode
            if mode() == "off":
                return False
            self.rounds = CompiledRounds(self.graph, self.symbols, self.topology.fused)
        try:
            return self.rounds.run(self)
        except MemoryLimitError as exc:  # (handing the rounds' state back to the traces)
            if exc.operator:
                raise
            raise MemoryLimitError(
                f"a loop's compiled rounds (diffflow.runtime.compiled_rounds) stopped before "
                f"allocating: {exc}. Raise the limit, or run the loop's rounds one by one "
                f"(DIFFFLOW_COMPILED_ROUNDS=0) to have the operator named.",
                exc.needed, exc.held, exc.limit, exc.what, "compiled rounds") from exc

    def _recompute(self) -> None:
        reports = [engine.pointstamps() for engine in self.engines.values()]
        before, self.frontiers = self.frontiers, self.topology.frontiers(
            *merge_pointstamps(reports))
        # a marked sweep next looks at the consumers of the frontiers that moved
        self.sweeper.mark([nid for nid, f in self.frontiers.items() if before[nid] != f])

    # -- checkpoints (diffflow.runtime.durable) ---------------------------------------------
    checkpoint_dir: str | None = None  # where checkpoint() writes (set by a durable flow)
    fingerprint = ""  # the graph's, for checkpoint manifests
    checkpoint_extra = None  # () -> {file name: bytes} a checkpoint also holds (a Program's)

    def checkpoint(self) -> str:
        """Write every partition's state as a committed checkpoint under
        :attr:`checkpoint_dir` (after a run); returns its folder."""
        root, fingerprint = self.checkpoint_dir, self.fingerprint
        from diffflow.runtime.durable import checkpoints
        from diffflow.runtime.durable.partition_state import write_partition

        return checkpoints.write(
            root, self.closed, self.parts,
            lambda folder: [write_partition(folder, engine, self.symbols._text, self.closed)
                            for engine in self.engines.values()],
            fingerprint, self.checkpoint_extra)

    def restore_checkpoint(self, manifest) -> None:
        """Start from a committed checkpoint (a resumed dataflow; re-binned if it was
        written at another partition count).  Raises CheckpointError for a damaged file,
        before any partition changes."""
        from diffflow.runtime.durable.partition_state import read_partition, restore_partition

        files = manifest.partition_files()
        # (every file read and checked before any partition changes)
        loaded = {path: read_partition(path, info) for path, info in files}
        for engine in self.engines.values():
            restore_partition(engine, files, self.symbols._text, loaded)
        self.sweeper = Sweeper(self.topology, self.engines, self.parts)
        if self.trace is not None:
            self.sweeper.logs = {p: engine.log for p, engine in self.engines.items()}
        self.closed = manifest.epoch
        self.frontiers = self.topology.initial_frontiers()
        self._recompute()

    # -- rescaling ---------------------------------------------------------------------------
    def rescale_plan(self, key, step_of_bin) -> None:
        self._plan = (key, step_of_bin)
        if key is not None:
            step_index.warm_up()
        for engine in self.engines.values():
            migrate.set_plan(engine, key, step_of_bin)

    def rescale_step(self, routing: Routing, step: int | None = None) -> int:
        failpoints.reached("rescale")
        for p in range(self.parts, routing.parts):  # partitions joining: empty, caught up
            engine = PartitionEngine(self.graph, p, routing.parts, self.symbols, self.topology,
                                     routing)
            engine.catch_up(self.closed, self.frontiers)
            migrate.set_plan(engine, *self._plan)
            if self.recording:
                lookups.record(engine, self.recording)
            if self.sweeper.logs is not None:
                from diffflow.runtime.tracing import WorkerLog
                engine.log = self.sweeper.logs[p] = WorkerLog(p, self.trace.origin)
            self.engines[p] = engine
        parcels = {p: migrate.extract(engine, routing, step)
                   for p, engine in self.engines.items()}
        moved = 0
        for sent in parcels.values():
            for q, parcel in sent.items():
                moved += migrate.install(self.engines[q], parcel)
        for p in range(routing.parts, self.parts):  # retired: everything has left
            migrate.set_plan(self.engines[p], None, None)
            del self.engines[p]
            if self.sweeper.logs is not None:
                del self.sweeper.logs[p]
        for engine in self.engines.values():
            engine.set_routing(routing)
        self.routing, self.parts = routing, routing.parts
        self.sweeper.resize(routing.parts)
        return moved

    def bin_sizes(self) -> np.ndarray:
        return sum(migrate.bin_sizes(engine) for engine in self.engines.values())

    def partition_rows(self) -> list:
        return [migrate.live_rows(self.engines[p]) for p in range(self.parts)]

    def rescale_prepare(self, budget: int) -> int:
        share = -(-budget // len(self.engines))  # one process steps every partition
        return sum(migrate.prepare(engine, share) for engine in self.engines.values())

    def rescale_unprepared(self) -> int:
        return sum(migrate.unprepared(engine) for engine in self.engines.values())

    def check_owners(self) -> int:
        return sum(migrate.check_owners(engine) for engine in self.engines.values())

    # -- reading -----------------------------------------------------------------------------
    def _partition_contents(self, node_id: int) -> list:
        return [engine.contents(node_id) for engine in self.engines.values()]

    def take_output_changes(self, node_id: int) -> list:
        return [c for engine in self.engines.values() for c in engine.take_changes(node_id)]

    def _lookup_each(self, name: str, args_per_partition: list) -> list:
        fn = lookups.COMMANDS[name]
        return [None if args is None else fn(self.engines[p], *args)
                for p, args in enumerate(args_per_partition)]

    def check_traces(self) -> int:
        return sum(engine.check_traces() for engine in self.engines.values())

    def trace_sizes(self) -> list:
        return [n for engine in self.engines.values() for n in engine.trace_sizes()]
