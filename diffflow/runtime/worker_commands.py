"""What a partition worker can be asked to do, without sockets: :class:`WorkerCommands`.

Each ``cmd_*`` method is one command of the coordinator (``stage``, ``sweep``,
``checkpoint``, ``lookup``...), answered in order.  The in-memory transport of
:mod:`diffflow.runtime.transports` drives it directly; a worker process
(:class:`diffflow.runtime.worker.WorkerServer`) adds the sockets: the coordinator's
connection, its peers' and the I/O tasks'.

>>> w = WorkerCommands(); w.cmd_symbols({1: "a"}); w.take_fresh_symbols()
{}
"""
from __future__ import annotations

import itertools
import os
import pickle
import threading

import numpy as np

from diffflow.common import memory_budget
from diffflow.common.schema import SymbolTable, decode_array
from diffflow.runtime import lookups
from diffflow.runtime.durable.partition_state import restore_partition, write_partition
from diffflow.runtime.engine import PartitionEngine, Sweeper, merge_pointstamps
from diffflow.runtime.rescale import migrate, step_index
from diffflow.runtime.tracing import WorkerLog, WorkerSide, aligned_origin
from diffflow.runtime.worker_start import in_background, load_kernel_step, lowest_priority


def error_reply(exc: Exception, trace: str) -> tuple:
    """``("error", exception, description, traceback)`` for the coordinator.

    The exception itself travels (pickled with the reply) when it survives a
    round trip, so the driver raises it by type; otherwise ``None`` and the
    description stand in for it.

    >>> from diffflow.common.errors import OperatorError
    >>> error_reply(OperatorError("operator x failed"), "")[1:3]
    (OperatorError('operator x failed'), 'OperatorError: operator x failed')
    """
    try:
        travels = type(pickle.loads(pickle.dumps(exc))) is type(exc)
    except Exception:  # noqa: BLE001 - any exception that cannot travel is described instead
        travels = False
    return ("error", exc if travels else None, f"{type(exc).__name__}: {exc}", trace)


class WorkerCommands:
    """What a partition worker can be asked to do (``cmd_*``), independent of transport."""

    def __init__(self):
        self.engine: PartitionEngine | None = None
        self.sweeper: Sweeper | None = None
        self.symbols = SymbolTable()
        self.pushes: dict = {}  # token -> [(node_id, rows, diffs)]
        self.lock = threading.RLock()
        self._reported = 0  # symbols known to the coordinator: the first entries of the table
        self._fresh: dict = {}  # strings interned here and not reported yet
        self.tracing: WorkerSide | None = None  # this worker's half of a traced protocol

    warm_when_idle = False  # load numba kernels between commands (a worker process, once built)
    owns_process = False  # a worker process (its graph's memory limit is the process's)

    def cmd_init(self, graph_blob: bytes, partition: int, parts: int, symbols: dict,
                 background: bool = False) -> int:
        """Build this partition's engine for the pickled graph; ``background``: in a thread
        of the lowest priority (a worker started ahead of a rescaling step)."""
        def build():
            if background:
                lowest_priority()
            graph = pickle.loads(graph_blob)
            self.symbols = SymbolTable()
            self.symbols._text.update(symbols)
            self.start(graph, partition, parts)
            if not self.warm_when_idle:  # numba itself with the start; kernels while idle
                self.warm_when_idle = load_kernel_step()

        in_background(build) if background else build()
        return os.getpid()

    def cmd_warm(self) -> int:
        """Load every kernel numba's cache holds now (a worker started ahead of a rescaling
        step, idle until then), in a thread of the lowest priority
        (:func:`~diffflow.runtime.worker_start.lowest_priority`: the epochs of the dataflow
        meanwhile keep the processors); returns how many steps of loading were left."""
        steps = []

        def load():
            lowest_priority()
            while load_kernel_step():
                steps.append(1)

        in_background(load)
        return len(steps)

    def start(self, graph, partition: int, parts: int) -> None:
        """Build this partition's engine for ``graph``."""
        if self.owns_process:  # (workers in the driver's process run under the driver's)
            memory_budget.set_limit(graph.memory_limit)
        self.engine = PartitionEngine(graph, partition, parts, self.symbols)
        self.sweeper = Sweeper(self.engine.topology, {partition: self.engine}, parts)
        self.pushes = {}
        self._reported, self._fresh = len(self.symbols._text), {}
        self.tracing = None

    def cmd_trace(self, clock: tuple, seq: int, corr: int, names: list | None = None,
                  coordinator: int | None = None) -> None:
        """Log this partition's events from now on (see :mod:`diffflow.runtime.tracing`):
        ``t`` aligned to the coordinator's ``clock``, numbering from ``seq`` and ``corr``;
        ``names[p]`` is the worker partition ``p`` logs as, ``coordinator`` the
        coordinator's (by default: ``p`` and ``P``)."""
        engine = self.engine
        me = engine.partition if names is None else names[engine.partition]
        log = WorkerLog(me, aligned_origin(clock), seq, corr)
        engine.log = log
        self.tracing = WorkerSide(log, engine.parts if coordinator is None else coordinator,
                                  names)

    def cmd_trace_names(self, names: list) -> None:
        """The workers partitions log as, after a rescale added or retired some."""
        if self.tracing is not None:
            self.tracing.names = names

    def cmd_take_trace(self):
        """The events logged since the last call (``None`` when not tracing)."""
        return None if self.tracing is None else self.tracing.log.take_block()

    def cmd_symbols(self, items: dict) -> None:
        """Strings the coordinator knows (from the user, or other partitions' operators)."""
        self._note_fresh()
        self.symbols._text.update(items)
        self._reported = len(self.symbols._text)

    def _note_fresh(self) -> None:
        text = self.symbols._text
        if len(text) > self._reported:
            self._fresh.update(itertools.islice(text.items(), self._reported, None))
            self._reported = len(text)

    def take_fresh_symbols(self) -> dict:
        """Strings interned here since the last call: made by this partition's operators (a
        ``map`` returning new strings) or pushed by I/O tasks.  The coordinator passes them to
        every partition, since the rows carrying them may be routed anywhere."""
        self._note_fresh()
        out, self._fresh = self._fresh, {}
        return out

    def cmd_stage(self, node_id: int, rows: np.ndarray, diffs: np.ndarray) -> None:
        self.engine.stage(node_id, rows, diffs)

    def cmd_close_epoch(self, node_ids) -> None:
        self.engine.close_epoch(node_ids)

    def cmd_pointstamps(self):
        return self.engine.pointstamps()

    def cmd_finish(self, frontiers: dict) -> dict:
        return self.engine.finish(frontiers)

    def cmd_dropped(self, node_ids) -> dict:
        return self.engine.dropped(node_ids)

    def cmd_contents(self, node_id: int):
        rows, diffs = self.engine.contents(node_id)
        return rows, diffs, self._texts(node_id, rows)

    def cmd_take_changes(self, node_id: int):
        chunks = self.engine.take_changes(node_id)
        out = [(c.rows, c.times, c.diffs) for c in chunks]
        texts: dict = {}
        for c in chunks:
            texts.update(self._texts(node_id, c.rows))
        return out, texts

    def _texts(self, node_id: int, rows: np.ndarray) -> dict:
        """The strings behind the symbol ids in an output's ``str`` columns."""
        schema = self.engine.nodes[node_id].schema
        text = self.symbols._text
        found: dict = {}
        for j, kind in enumerate(schema.types):
            if kind == "str" and len(rows):
                for sid in np.unique(rows[:, j]).tolist():
                    if sid in text:
                        found[sid] = text[sid]
        return found

    def cmd_lookup(self, name: str, args: tuple):
        """A read by key between runs (:mod:`diffflow.runtime.lookups`, for explanations)."""
        return lookups.COMMANDS[name](self.engine, *args)

    def cmd_check_traces(self) -> int:
        return self.engine.check_traces()

    def cmd_trace_sizes(self) -> list:
        return self.engine.trace_sizes()

    def cmd_checkpoint(self, folder: str, epoch: int = 0) -> tuple:
        """Write this partition's state into a checkpoint ``folder`` (``epoch``: the open
        epoch, for re-binned restores); ``(file name, manifest entry)``."""
        return write_partition(folder, self.engine, self.symbols._text, epoch)

    def cmd_restore(self, files: list) -> None:
        """Restore from a checkpoint's files (``(path, manifest entry)`` per partition it was
        written with; re-binned when its partitions or table differ from this worker's)."""
        restore_partition(self.engine, files, self.symbols._text)
        self.sweeper = Sweeper(self.engine.topology, {self.engine.partition: self.engine},
                               self.engine.parts)

    # -- rescaling (diffflow.runtime.rescale.migrate) ---------------------------------------------
    def cmd_routing(self, routing) -> None:
        """Route by ``routing`` from now on (its partition count included)."""
        self.engine.set_routing(routing)
        self.sweeper.resize(routing.parts)

    def cmd_catch_up(self, epoch: int, frontiers: dict) -> None:
        self.engine.catch_up(epoch, frontiers)

    def cmd_extract(self, routing, step=None) -> dict:
        return migrate.extract(self.engine, routing, step)

    def cmd_plan(self, key, step_of_bin) -> None:
        migrate.set_plan(self.engine, key, step_of_bin)
        if key is not None:
            step_index.warm_up()

    def cmd_install(self, parcels: list) -> int:
        return sum(migrate.install(self.engine, parcel) for parcel in parcels)

    def cmd_bin_sizes(self):
        return migrate.bin_sizes(self.engine)

    def cmd_live_rows(self) -> int:
        return migrate.live_rows(self.engine)

    def cmd_prepare(self, budget: int) -> int:
        return migrate.prepare(self.engine, budget)

    def cmd_unprepared(self) -> int:
        return migrate.unprepared(self.engine)

    def cmd_check_owners(self) -> int:
        return migrate.check_owners(self.engine)

    def cmd_commit_push(self, token: str) -> int:
        staged = self.pushes.pop(token, [])
        for node_id, rows, diffs in staged:
            self.engine.stage(node_id, rows, diffs)
        return sum(len(r) for _, r, _ in staged)

    def cmd_abort_push(self, token: str) -> None:
        self.pushes.pop(token, None)

    def sweep_local(self, frontiers: dict, reports: list, tag=None) -> tuple:
        """One sweep from the coordinator's frontiers and every partition's pointstamps
        at its start; returns, per partition, the ``(consumer, port, chunk)`` sent there,
        and (traced: ``tag`` from the coordinator) the tags of those messages per partition."""
        me = self.engine.partition
        tracing = self.tracing if tag is not None else None
        if tracing is not None:
            tracing.frontiers_received(tag)
        remote = merge_pointstamps(r for q, r in enumerate(reports) if q != me)
        self.sweeper.sweep(dict(frontiers), remote)
        outgoing = self.sweeper.take_outgoing()
        return outgoing, (None if tracing is None else tracing.swept(outgoing, me))

    def report(self, tag=None):
        """The correlator of a traced sweep's report to the coordinator (else ``None``)."""
        return None if self.tracing is None or tag is None else self.tracing.report()

    # -- I/O task requests (threads; under the lock) ---------------------------------
    def push(self, token: str, node_id: int, rows: np.ndarray, diffs: np.ndarray,
             texts: dict) -> None:
        with self.lock:
            self.symbols._text.update(texts)
            self.pushes.setdefault(token, []).append((node_id, rows, diffs))

    def pull(self, node_id: int, what: str):
        """An output's rows at this partition, decoded: ``(columns, diffs[, epochs])``."""
        with self.lock:
            schema = self.engine.nodes[node_id].schema
            if what == "snapshot":
                rows, diffs = self.engine.contents(node_id)
                epochs = None
            else:
                chunks = self.engine.take_changes(node_id)
                width, dim = schema.width, self.engine.nodes[node_id].dim
                from diffflow.arrangements.updates import concat
                merged = concat(chunks, width, dim).consolidated()
                rows, diffs, epochs = merged.rows, merged.diffs, merged.times[:, 0].copy()
            columns = [decode_array(rows[:, j], kind, self.symbols)
                       for j, kind in enumerate(schema.types)]
            return columns, diffs, epochs
