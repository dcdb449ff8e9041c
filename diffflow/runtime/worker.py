"""Partition worker processes: a :class:`~diffflow.runtime.engine.PartitionEngine` behind a socket.

``python -m diffflow.runtime.worker HOST PORT AUTHKEY_HEX BIND_HOST`` starts a
worker that connects to the coordinator at ``HOST:PORT`` (a
:mod:`multiprocessing.connection` listener; the shared ``authkey`` keeps
strangers out), reports the address of its own listener, and then serves
commands until the coordinator closes the connection.

Three kinds of connection reach a worker:

* the **coordinator**'s (one): commands such as ``stage``, ``sweep``,
  ``checkpoint``; answered in order, one at a time;
* **peers** (one from every other worker): the chunks a sweep routes to this
  partition, as Arrow IPC streams (:mod:`diffflow.runtime.wire`);
* **I/O tasks** (Spark tasks of bulk loads and reads): ``push`` rows under a
  transaction token, committed or dropped later by the coordinator, and
  ``pull`` an output's rows as an Arrow table.  They run in threads and take
  the worker's lock, so they never see a half-finished command.

:class:`WorkerCommands` is the command set without sockets; the in-memory
transport of :mod:`diffflow.runtime.transports` drives it directly.
"""
from __future__ import annotations

import itertools
import os
import pickle
import sys
import threading
import time
import traceback

import numpy as np

from diffflow.common.schema import SymbolTable, decode_array
from diffflow.lattice.frontiers import times_frontier
from diffflow.lattice.times import minimal_tuples
from diffflow.runtime import lookups, storage
from diffflow.runtime.engine import PartitionEngine, Sweeper, merge_pointstamps
from diffflow.runtime.rescale import migrate, step_index
from diffflow.runtime.tracing import WorkerLog, WorkerSide, aligned_origin
from diffflow.runtime.wire import (decode_arrays, no_delay, recv_header, recv_pieces,
                                   send_chunks, small_batch)
from diffflow.runtime.worker_start import (in_background, load_kernel_step, load_while_idle,
                                           lowest_priority)


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

    def cmd_checkpoint(self, path: str, epoch: int = 0) -> int:
        """Write this partition's state (``epoch``: the open epoch, for re-binned restores)."""
        engine = self.engine
        state = engine.state()
        return storage.write_atomically(path, pickle.dumps(
            {"ops": state, "symbols": dict(self.symbols._text), "partition": engine.partition,
             "parts": engine.parts, "routing": engine.routing, "epoch": epoch},
            protocol=pickle.HIGHEST_PROTOCOL))

    def cmd_restore(self, paths: list) -> None:
        """Restore from a checkpoint's files (one per partition it was written with); when
        its partitions or table differ from this worker's, re-bin (every file is read)."""
        engine = self.engine
        own = [p for p in paths if p.endswith(f"part-{engine.partition}.pkl")]
        if own:
            saved = pickle.loads(storage.read_bytes(own[0]))
        if own and saved.get("routing", engine.routing) == engine.routing \
                and len(paths) == engine.parts:
            self.symbols._text.update(saved["symbols"])
            engine.restore(saved["ops"])
        else:
            states = []
            for path in paths:
                states.append(pickle.loads(storage.read_bytes(path)))
                self.symbols._text.update(states[-1]["symbols"])
            migrate.restore_rebinned(engine, states)
        self.sweeper = Sweeper(engine.topology, {engine.partition: engine}, engine.parts)

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


class WorkerServer(WorkerCommands):
    """A worker process: serves the coordinator, exchanges chunks with peers, answers I/O."""

    def __init__(self, coordinator: tuple, authkey: bytes, bind_host: str):
        from multiprocessing.connection import Client, Listener

        super().__init__()
        self.authkey = authkey
        self.listener = Listener((bind_host, 0), authkey=authkey)
        self.incoming: dict = {}
        self.outgoing: dict = {}
        self.peers_ready = threading.Condition()
        threading.Thread(target=self._accept, daemon=True).start()
        self.conn = no_delay(Client(coordinator, authkey=authkey))
        self.conn.send(("hello", self.listener.address, os.getpid()))

    def _accept(self) -> None:
        while True:
            try:
                conn = no_delay(self.listener.accept())
                kind = conn.recv()
            except Exception:  # noqa: BLE001 - a failed handshake must not stop the worker
                continue
            if kind[0] == "peer":
                with self.peers_ready:
                    self.incoming[kind[1]] = conn
                    self.peers_ready.notify_all()
            else:
                threading.Thread(target=self._serve_io, args=(conn,), daemon=True).start()

    def _serve_io(self, conn) -> None:
        try:
            while True:
                request = conn.recv()
                if request[0] == "push":  # rows with their diffs as the last column
                    _, token, node_id, texts = request
                    block = decode_arrays(conn.recv_bytes())[0]
                    self.push(token, node_id, np.ascontiguousarray(block[:, :-1]),
                              block[:, -1].copy(), texts)
                    conn.send("ok")
                elif request[0] == "pull":
                    conn.send(self.pull(request[1], request[2]))
        except (EOFError, OSError):
            pass
        except Exception as exc:  # noqa: BLE001 - report to the I/O task, keep serving others
            try:
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
            except OSError:
                pass

    def cmd_peers(self, addresses: list) -> None:
        """Connect to every peer not connected yet (all at the start; the new ones when
        the dataflow grows) and wait until every peer has connected here."""
        from multiprocessing.connection import Client

        me = self.engine.partition
        for q, address in enumerate(addresses):
            if q != me and q not in self.outgoing:
                conn = no_delay(Client(tuple(address), authkey=self.authkey))
                conn.send(("peer", me))
                self.outgoing[q] = conn
        with self.peers_ready:
            self.peers_ready.wait_for(lambda: len(self.incoming) == len(addresses) - 1,
                                      timeout=60)
        if len(self.incoming) != len(addresses) - 1:
            raise RuntimeError(f"worker {me}: only {len(self.incoming)} of "
                               f"{len(addresses) - 1} peers connected within 60 s")

    def cmd_forget_peers(self, parts: int) -> None:
        """Drop the connections of peers ``>= parts`` (retired when the dataflow shrank)."""
        for conns in (self.outgoing, self.incoming):
            for q in [q for q in conns if q >= parts]:
                conns.pop(q).close()

    def cmd_reset(self) -> None:
        """Forget the dataflow (back to the pool): drop state and peer connections."""
        for conn in list(self.outgoing.values()) + list(self.incoming.values()):
            conn.close()
        self.outgoing, self.incoming = {}, {}
        self.engine, self.sweeper, self.pushes = None, None, {}
        self.symbols = SymbolTable()
        self.tracing = None

    def cmd_sweep(self, frontiers: dict, reports: list, tag=None):
        """A sweep, then the exchange with every peer; returns ``(pointstamps, fresh strings,
        the report's correlator)`` (traced sweeps: ``tag`` from the coordinator)."""
        failure, tags = None, None
        try:
            outgoing, tags = self.sweep_local(frontiers, reports, tag)
        except Exception as exc:  # noqa: BLE001 - still exchange, so peers are not left waiting
            failure, outgoing = exc, [[] for _ in range(self.engine.parts)]
        tracing = self.tracing if tag is not None else None
        self._exchange_or_raise(failure, outgoing, tags or [None] * self.engine.parts, tracing)
        pointstamps = self.engine.pointstamps()
        return pointstamps, self.take_fresh_symbols(), self.report(tag)

    def cmd_run(self, reports: list):
        """Sweep until the run is done, agreeing with the peers without the coordinator.

        Each sweep sends every peer one message: the chunks for it, this partition's
        pointstamps after the sweep (what it still queues and holds, without what it sends),
        the times of what it sends to each partition, and the strings it made.  So after
        the exchange every worker knows every partition's pointstamps as the coordinator
        would have them (:meth:`cmd_sweep`'s protocol), computes the same frontiers, and
        stops at the same sweep.  Returns ``(frontiers, sweeps, strings made)``; a worker
        whose sweep failed tells its peers, so all stop, and raises.
        """
        engine, me, topology = self.engine, self.engine.partition, self.engine.topology
        used, sweeps, made = None, 0, {}
        while True:
            queued, held = merge_pointstamps(reports)
            frontiers = topology.frontiers(queued, held)
            if frontiers == used and not queued:
                return frontiers, sweeps, made
            failure = None
            try:
                outgoing, _ = self.sweep_local(frontiers, reports)
            except Exception as exc:  # noqa: BLE001 - still exchange: the peers stop too
                failure, outgoing = exc, [[] for _ in range(engine.parts)]
            fresh = self.take_fresh_symbols()
            made.update(fresh)
            progress = (engine.pointstamps(), _sent_times(outgoing), fresh, failure is not None)
            others = self._exchange_or_raise(failure, outgoing, [progress] * engine.parts)
            if any(stopped for _, _, _, stopped in others.values()):
                return None, sweeps, made  # (the peer whose sweep failed says why)
            others[me] = progress
            for q in range(engine.parts):
                self.symbols._text.update(others[q][2])
            reports = _partition_reports(others, engine.parts)
            used = frontiers
            sweeps += 1

    def _exchange_or_raise(self, failure, outgoing: list, tags: list, tracing=None) -> dict:
        """Send each peer ``q`` its chunks with ``tags[q]``; receive and queue theirs; return
        ``{peer: its tag}``.  Then raise this sweep's ``failure`` if there was one (after the
        exchange, so peers are not left waiting), else a failed send."""
        errors: list = []

        def send_all():
            try:
                for q, conn in self.outgoing.items():
                    send_chunks(conn, outgoing[q], tags[q])
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        sender = None
        if all(small_batch(outgoing[q]) for q in self.outgoing):
            send_all()  # (fits the sockets' buffers: no thread, whose start costs a switch)
        else:  # (a thread, so both sides read while they send: no deadlock on full buffers)
            sender = threading.Thread(target=send_all)
            sender.start()
        received = {}
        for q, conn in self.incoming.items():
            waiting = None if tracing is None else tracing.log.now()
            header = recv_header(conn)
            arrived = None if tracing is None else tracing.log.now()
            pieces = recv_pieces(conn, header)
            for consumer, port, chunk in pieces:
                self.engine.receive(consumer, port, chunk)
            if tracing is not None:
                tracing.batch_received(q, pieces, header[1], arrived, waiting)
            received[q] = header[1]
        if sender is not None:
            sender.join()
        if failure is not None:
            raise failure
        if errors:
            raise errors[0]
        return received

    def serve(self) -> None:
        while True:
            if self.warm_when_idle:  # (numba's kernels, loaded while idle: worker_start)
                self.warm_when_idle = load_while_idle(self.conn)
            try:
                cmd, args = self.conn.recv()
            except (EOFError, OSError):
                break
            if cmd == "shutdown":
                break
            try:
                with self.lock:
                    result = getattr(self, "cmd_" + cmd)(*args)
                reply = ("ok", result)
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the coordinator
                reply = error_reply(exc, traceback.format_exc())
            try:
                self.conn.send(reply)
            except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
                self.conn.send(error_reply(exc, ""))


def _sent_times(outgoing: list) -> list:
    """Per destination partition, ``{consumer: minimal times}`` of the chunks sent there."""
    sent = []
    for pieces in outgoing:
        times: dict = {}
        for consumer, _, chunk in pieces:
            if len(chunk):
                times.setdefault(consumer, []).extend(times_frontier(chunk.times))
        sent.append({nid: minimal_tuples(ts) for nid, ts in times.items()})
    return sent


def _partition_reports(progress: dict, parts: int) -> list:
    """Every partition's ``(queued, held)`` after an exchange, from each one's own
    pointstamps and the times every partition sent it (what :meth:`WorkerCommands.
    cmd_pointstamps` would say once the chunks have arrived)."""
    reports = []
    for q in range(parts):
        (queued, held), _, _, _ = progress[q]
        merged = {nid: list(ts) for nid, ts in queued.items()}
        for sender in range(parts):  # (in one order on every worker: the same reports)
            for nid, ts in progress[sender][1][q].items():
                merged.setdefault(nid, []).extend(ts)
        reports.append(({nid: minimal_tuples(ts) for nid, ts in merged.items()}, held))
    return reports


def main(argv=None) -> None:
    """Run a worker: ``python -m diffflow.runtime.worker HOST PORT AUTHKEY_HEX BIND_HOST
    [PARENT_PID]``.

    Started by a launcher (:class:`~diffflow.runtime.transports.ProcessLauncher`, a
    Spark task of :mod:`~diffflow.runtime.spark_slots`), never by hand; it serves until
    the coordinator hangs up, or until ``PARENT_PID`` (its Spark task) is gone.
    """
    argv = sys.argv[1:] if argv is None else argv
    host, port, authkey, bind_host = argv[0], int(argv[1]), bytes.fromhex(argv[2]), argv[3]
    if len(argv) > 4:
        threading.Thread(target=_watch_parent, args=(int(argv[4]),), daemon=True).start()
    server = WorkerServer((host, port), authkey, bind_host)
    server.serve()
    os._exit(0)  # peers' threads and sockets die with the process


def _watch_parent(pid: int) -> None:
    """End this worker once its parent (the Spark task holding its slot) is gone."""
    while os.getppid() == pid:
        time.sleep(0.5)
    os._exit(1)


if __name__ == "__main__":
    main()
