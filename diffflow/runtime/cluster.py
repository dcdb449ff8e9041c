"""The cluster runtime: partition workers driven by a central progress coordinator.

:class:`ClusterRuntime` runs on the driver.  It owns no data: ``P`` partition
workers, each a :class:`~diffflow.runtime.engine.PartitionEngine` (the class
the local runtime steps in-process), hold the operators and arrangements of
their partitions, and the runtime only

* hands user updates to the partitions that own them (split by the same row
  hash as the local runtime),
* coordinates progress as Naiad's central tracker: between *sweeps* it
  gathers every worker's pointstamps, derives the exact frontier of every
  node (:func:`~diffflow.dataflow.progress.global_frontiers`) and sends it
  back; the run ends when no data is queued anywhere and frontiers no longer
  move.  Worker processes that are not traced do this among themselves: each
  sweep's message to a peer carries, with its chunks, the sender's pointstamps
  and the times it sent, so every worker derives the same frontiers and stops
  at the same sweep (:meth:`~diffflow.runtime.worker.WorkerServer.cmd_run`,
  ~15-20 % less per update epoch than the round trips through here, which
  traced runs keep: the trace conventions of :mod:`diffflow.runtime.tracing`
  name them),
* keeps the inputs since the last checkpoint, so a lost worker is replaced by
  restoring every partition from that checkpoint and replaying them; outputs
  drop the changes a reader already took before the failure, so what a user
  reads is exactly what an uninterrupted run gives.

Where the workers live is the transport's business
(:mod:`diffflow.runtime.transports`): in this process (tests of the
protocol), or worker processes started on this machine or by long-running
Spark tasks (:mod:`diffflow.runtime.spark_slots`).

>>> import diffflow as dd
>>> flow = dd.Dataflow(partitions=3)
>>> edges = flow.input("edges", ["a", "b"])
>>> out = edges.join(edges.select(b2="a", c="b"), left_on="b", right_on="b2").output()
>>> flow._runtime = ClusterRuntime.in_memory(flow.graph, 3, flow.symbols)
>>> edges.insert([(1, 2), (2, 3)]); flow.advance(); out.snapshot()
{(1, 2, 3): 1}
"""
from __future__ import annotations

import itertools
import shutil
import tempfile
import weakref

import numpy as np

from diffflow.arrangements.updates import Updates
from diffflow.common import failpoints
from diffflow.common.errors import WorkerLost, loop_overflow_error
from diffflow.runtime.base import Runtime
from diffflow.runtime.cluster_recovery import Recovery, logged_rows
from diffflow.runtime.engine import Topology, merge_pointstamps, overflowed, partition_rows
from diffflow.runtime.routing import Routing
from diffflow.runtime.trace_sink import operator_names
from diffflow.runtime.tracing import BARRIER, ProgressExchange, WorkerLog
from diffflow.runtime.transports import InMemoryTransport, SocketTransport
from diffflow.runtime.worker_pool import process_pool


class ClusterRuntime(Recovery, Runtime):
    """Drives ``parts`` partition workers through a transport (see the module docstring).

    ``checkpoint_every`` epochs (after a run that leaves nothing staged) every
    worker writes its state under ``checkpoint_dir``.  With ``None`` and
    ``auto_checkpoint``, it does once the input log kept for recovery holds
    :data:`~.cluster_recovery.AUTO_EPOCHS` epochs or ``AUTO_ROWS`` rows, so that log
    (and a recovery's replay) stays bounded however long the run; without
    ``auto_checkpoint`` (a durable dataflow, whose checkpoints its durability
    decides) never.  Checkpoints and recovery: :class:`~.cluster_recovery.Recovery`.
    """

    def __init__(self, graph, parts: int, symbols, transport, checkpoint_every: int | None = None,
                 checkpoint_dir: str | None = None, trace=None, auto_checkpoint: bool = True):
        self.graph, self.parts, self.symbols = graph, parts, symbols
        self.routing = Routing(parts)
        self._plan = (None, None)  # the rescaling plan announced to partitions
        self.topology = Topology(graph)
        self.frontiers = self.topology.initial_frontiers()  # as the last run left them
        self.transport = transport
        self.checkpoint_every = checkpoint_every
        self.auto_checkpoint = auto_checkpoint and checkpoint_every is None
        self.log_rows = 0  # input rows in log_closed (the automatic checkpoints' measure)
        self._own_checkpoint_dir = checkpoint_dir is None and checkpoint_every is not None
        self.checkpoint_dir = checkpoint_dir
        if self._own_checkpoint_dir:
            self.checkpoint_dir = tempfile.mkdtemp(prefix="diffflow-checkpoint-")
        self.checkpoint_path: str | None = None  # the last complete checkpoint
        self.checkpoint_files: list = []  # its files, (path, manifest entry) per partition
        self.fingerprint = ""  # the graph's, for checkpoint manifests (set by a durable flow)
        self.checkpoint_extra = None  # () -> {file name: bytes} a checkpoint also holds
        self.checkpoint_epoch = 0
        self.log_closed: list = []  # per epoch closed since the checkpoint: its input entries
        # the checkpoint before it and the log from there to it (files, epoch, folder, log):
        # recovery falls back to it when the last one is found damaged
        self.previous_checkpoint = None
        self.log_open: list = []    # entries of the open epoch
        self.closed = 0             # epochs closed
        self.computed = 0           # epochs computed by the last complete run
        self.delivered: dict = {}   # node -> epochs whose changes a reader took (every partition)
        self.recoveries = 0
        self.sweeps = 0             # sweeps of the last run (a measure of its latency)
        self._synced_symbols = 0
        self.trace = trace  # a trace_sink.TraceSink, or None
        self.trace_log = None if trace is None else WorkerLog(parts, trace.origin)  # worker P
        # partition p logs as worker trace_names[p]: p at first; partitions a rescale adds
        # get numbers never used before (the coordinator keeps P), so a trace names every
        # worker that ever ran, and a retired one's number is never reused
        self.trace_names = list(range(parts))
        self._next_trace_name = parts + 1
        self._trace_seq: dict = {}  # worker -> where its seq continues after a restart
        self._trace_generation = 0
        self.transport.start(graph, dict(symbols._text))
        # workers go back to their pool even if the user never calls close()
        self._release = weakref.finalize(self, transport.close)
        self._synced_symbols = len(symbols._text)
        self._start_tracing()

    @classmethod
    def in_memory(cls, graph, parts: int, symbols, **kw) -> "ClusterRuntime":
        """Workers as objects in this process (for tests of the protocol)."""
        return cls(graph, parts, symbols, InMemoryTransport(parts), **kw)

    @classmethod
    def processes(cls, graph, parts: int, symbols, **kw) -> "ClusterRuntime":
        """Workers as processes on this machine, bound to loopback."""
        return cls(graph, parts, symbols, SocketTransport(parts, process_pool()), **kw)

    # -- inputs ----------------------------------------------------------------------------
    def stage(self, node_id: int, rows: np.ndarray, diffs: np.ndarray) -> None:
        """Stage user updates at the open epoch, on the partitions owning each row."""
        entry = ("rows", node_id, rows, diffs)
        self.log_open.append(entry)
        self._applying(self._apply_entry, entry)

    def _apply_entry(self, entry) -> None:
        self._sync_symbols()
        kind, node_id = entry[0], entry[1]
        if kind == "rows":
            pieces = partition_rows(entry[2], entry[3], self.routing)
            self.transport.call_all("stage", [(node_id, rows, diffs) for rows, diffs in pieces])
        else:
            self._apply_external(entry)

    def _apply_external(self, entry) -> None:
        raise NotImplementedError(f"input entry {entry[0]!r} needs the Spark runtime")

    def close_epoch(self, node_ids) -> None:
        entries, self.log_open = self.log_open, []
        self.log_closed.append((list(node_ids), entries))
        self.log_rows += logged_rows(entries)
        self.closed += 1
        self._applying(self.transport.call_all, "close_epoch",
                       [(list(node_ids),)] * self.parts)

    def _sync_symbols(self) -> None:
        text = self.symbols._text
        if len(text) > self._synced_symbols:
            fresh = dict(itertools.islice(text.items(), self._synced_symbols, None))
            self.transport.call_all("symbols", [(fresh,)] * self.parts)
            self._synced_symbols = len(text)

    def _applying(self, fn, *args) -> None:
        """Apply an already-logged input change; a lost worker is rebuilt from the log."""
        try:
            fn(*args)
        except WorkerLost:
            self._recover()

    # -- running ---------------------------------------------------------------------------
    def run(self) -> None:
        """Sweep until no data is queued and frontiers are final; then compact and check loops."""
        for attempt in range(3):
            try:
                self._run()
                break
            except WorkerLost:
                if attempt == 2:
                    raise
                self._recover(run=False)
        self._maybe_checkpoint()

    def _run(self) -> None:
        self._sync_symbols()
        log = self.trace_log
        if log is not None:
            log.epoch = max(self.closed - 1, 0)   # the API's number of the newest epoch computed
        reports = self.transport.call_all("pointstamps", [()] * self.parts)
        failpoints.reached("run")
        if log is None and self.transport.peers_agree:
            # the workers sweep and agree on progress among themselves (worker.cmd_run):
            # one message per peer a sweep, none through here
            replies = self.transport.call_all("run", [(reports,)] * self.parts)
            frontiers, self.sweeps = replies[0][0], replies[0][1]
            for reply in replies:
                self.symbols._text.update(reply[2])
        else:  # (a traced run logs the protocol docs/ARCHITECTURE.md's trace conventions name)
            frontiers = self._coordinated_sweeps(reports, log)
        overflow = overflowed(
            self.transport.call_all("finish", [(frontiers,)] * self.parts),
            lambda nids: self.transport.call_all("dropped", [(nids,)] * self.parts),
            self.graph.nodes)
        self.computed = self.closed
        self.frontiers = frontiers
        if log is not None:
            self._flush_trace()
        if overflow:
            raise loop_overflow_error(overflow, self.graph.scopes)

    def _coordinated_sweeps(self, reports: list, log) -> dict:
        """Sweeps driven from here: the frontiers out, every worker's pointstamps back."""
        used = None
        self.sweeps = 0
        while True:
            started = None if log is None else log.now()
            queued, held = merge_pointstamps(reports)
            frontiers = self.topology.frontiers(queued, held)
            if log is not None:
                log.span(BARRIER, started, log.now())
            if frontiers == used and not queued:
                return frontiers
            self._sync_symbols()  # strings one partition made, for all (rows move anywhere)
            exchange = None if log is None else ProgressExchange(log, self.sweeps,
                                                                 self.trace_names)
            replies = self.transport.sweep(frontiers, reports, exchange)
            reports = [reply[0] for reply in replies]
            for reply in replies:
                self.symbols._text.update(reply[1])
            used = frontiers
            self.sweeps += 1

    # -- tracing ---------------------------------------------------------------------------------
    def _start_tracing(self, partitions=None) -> None:
        """Workers (``partitions``, by default all: fresh ones after a restart too) log from
        now on; ``seq`` continues and every start gets correlators of its own
        (``generation << 40``)."""
        if self.trace is None:
            return
        self._name_partitions(self.parts)
        clock, corr = self.trace.clock(), self._trace_generation << 40
        self._trace_generation += 1
        names, coordinator = list(self.trace_names), self.trace_log.worker
        starting = set(range(self.parts) if partitions is None else partitions)
        self.transport.call_all("trace", [
            (clock, self._trace_seq.get(names[p], 0), corr, names, coordinator)
            if p in starting else None for p in range(self.parts)])

    def _name_partitions(self, parts: int) -> None:
        """Trace names for ``parts`` partitions: new numbers for partitions added."""
        while len(self.trace_names) < parts:
            self.trace_names.append(self._next_trace_name)
            self._next_trace_name += 1
        del self.trace_names[parts:]

    def _trace_resized(self, old: int) -> None:
        """After a rescale step from ``old`` partitions: added workers start logging under
        new names, and every worker knows the names of its peers."""
        if self.trace is None:
            return
        self._name_partitions(self.parts)
        if self.parts > old:
            self._start_tracing(range(old, self.parts))
        self.transport.call_all("trace_names", [(list(self.trace_names),)] * self.parts)

    def _flush_trace(self) -> None:
        """Every worker's events of the run, with the coordinator's, to the trace."""
        parts = self.transport.call_all("take_trace", [()] * self.parts)
        for p, block in enumerate(parts):
            if block is not None and len(block):
                self._trace_seq[self.trace_names[p]] = int(block[:, 2].max()) + 1
        parts.append(self.trace_log.take_block())
        self.trace.emit(parts, operator_names(self.graph))

    def _read(self, p: int, cmd: str, node_id: int):
        try:
            return self.transport.call(p, cmd, node_id)
        except WorkerLost:
            self._recover()
            return self.transport.call(p, cmd, node_id)

    def _take_changes(self, p: int, node_id: int) -> list:
        chunks, texts = self._read(p, "take_changes", node_id)
        self.symbols._text.update(texts)
        seen = self.delivered.get(node_id, 0)
        out = []
        for rows, times, diffs in chunks:
            if seen and len(times) and times[:, 0].min() < seen:  # replayed after a recovery
                keep = times[:, 0] >= seen
                rows, times, diffs = rows[keep], times[keep], diffs[keep]
            if len(diffs):
                out.append(Updates(rows, times, diffs))
        return out

    # -- reading -----------------------------------------------------------------------------
    def _partition_contents(self, node_id: int) -> list:
        found = []
        for p in range(self.parts):
            rows, diffs, texts = self._read(p, "contents", node_id)
            self.symbols._text.update(texts)
            found.append((rows, diffs))
        return found

    def _lookup_each(self, name: str, args_per_partition: list) -> list:
        try:
            return self._lookup_unsafe(name, args_per_partition)
        except WorkerLost:
            self._recover()
            return self._lookup_unsafe(name, args_per_partition)

    def _lookup_unsafe(self, name: str, args_per_partition: list) -> list:
        """(no recovery: what a recovery itself sends)"""
        return self.transport.call_all("lookup", [None if args is None else (name, args)
                                                  for args in args_per_partition])

    def _send_recording(self, partitions) -> None:
        """Fresh workers (``partitions``) note the keys of :attr:`recording` (exactly those:
        a restored checkpoint may have noted others)."""
        told = set(partitions)
        self._lookup_unsafe("record", [(sorted(self.recording),) if p in told else None
                                       for p in range(self.transport.parts)])

    def take_output_changes(self, node_id: int) -> list:
        out = [c for p in range(self.parts) for c in self._take_changes(p, node_id)]
        self.delivered[node_id] = self.computed
        return out

    def trace_sizes(self) -> list:
        return [n for sizes in self.transport.call_all("trace_sizes", [()] * self.parts)
                for n in sizes]

    def check_traces(self) -> int:
        """Check the invariants of every trace on every worker; returns how many were checked."""
        return sum(self.transport.call_all("check_traces", [()] * self.parts))

    # -- rescaling -------------------------------------------------------------------------------
    def rescale_plan(self, key, step_of_bin) -> None:
        self._plan = (key, step_of_bin)
        self.transport.call_all("plan", [(key, step_of_bin)] * self.parts)

    def rescale_step(self, routing: Routing, step: int | None = None) -> int:
        """Move bins to their owners under ``routing`` (between runs); a lost worker is
        replaced as in a run (at the old table) and the step done again."""
        for attempt in range(3):
            try:
                return self._rescale_step(routing, step)
            except WorkerLost:
                if attempt == 2:
                    raise
                self._recover()

    def _rescale_step(self, routing: Routing, step: int | None) -> int:
        failpoints.reached("rescale")
        self._sync_symbols()
        old = self.parts
        if routing.parts > old:
            self.transport.resize(routing.parts, dict(self.symbols._text))
            fresh = range(old, routing.parts)
            for p in fresh:
                self.transport.call(p, "routing", routing)
                self.transport.call(p, "catch_up", self.closed, self.frontiers)
                self.transport.call(p, "plan", *self._plan)
            self._send_recording(fresh)
        count = self.transport.parts
        sent = self.transport.call_all("extract", [(routing, step)] * count)
        parcels: list = [[] for _ in range(count)]
        for by_dest in sent:
            for q, parcel in by_dest.items():
                parcels[q].append(parcel)
        moved = sum(self.transport.call_all("install", [(p,) for p in parcels]))
        self.transport.call_all("routing", [(routing,)] * count)
        if routing.parts < old:
            self.transport.resize(routing.parts, dict(self.symbols._text))
        self.routing, self.parts = routing, routing.parts
        self._trace_resized(old)
        return moved

    def prepare_workers(self, parts: int, restart: bool = False) -> None:
        """The transport starts the workers a coming step (or ``restart``) to ``parts``
        partitions needs in the background (:mod:`~diffflow.runtime.start_ahead`)."""
        self.transport.prepare(parts, dict(self.symbols._text), restart)

    def workers_ready(self) -> bool:
        return self.transport.ready()

    def restart_at(self, routing: Routing) -> str:
        """Rescale by restart (all at once): checkpoint now, start ``routing.parts`` fresh
        workers, restore the checkpoint re-binned to ``routing``; returns its folder."""
        if self.log_open:
            raise RuntimeError("a rescale by restart needs an epoch boundary with nothing "
                               "staged yet (DataFrames inserted for the open epoch)")
        self.transport.finish_ahead()  # workers started ahead of it: ready, or why not
        folder = self.checkpoint()
        self.routing, self.parts = routing, routing.parts
        self._recover(run=False)
        self.recoveries -= 1  # a planned restart, not a failure
        return folder

    def bin_sizes(self) -> np.ndarray:
        return sum(self.transport.call_all("bin_sizes", [()] * self.parts))

    def partition_rows(self) -> list:
        return self.transport.call_all("live_rows", [()] * self.parts)

    def rescale_prepare(self, budget: int) -> int:
        return self._background("prepare", budget)

    def rescale_unprepared(self) -> int:
        return self._background("unprepared")

    def _background(self, cmd: str, *args) -> int:
        """A background rescaling call summed over workers; a lost worker is rebuilt (as in
        a run) and the call answers 0: background work can wait for the next boundary."""
        try:
            return sum(self.transport.call_all(cmd, [args] * self.parts))
        except WorkerLost:
            self._recover()
            return 0

    def check_owners(self) -> int:
        return sum(self.transport.call_all("check_owners", [()] * self.parts))

    def worker_pids(self) -> list:
        """Process ids of the partition workers (for monitoring, and tests that kill one)."""
        return list(self.transport.pids)

    def close(self) -> None:
        """Stop the workers and remove this runtime's own checkpoint folder."""
        self._release()
        if self._own_checkpoint_dir and self.checkpoint_dir:
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)
