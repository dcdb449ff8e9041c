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
  the worker's lock, so they never see a half-finished command.  The coordinator
  asks here for the ``stacks`` of a worker that did not answer in time
  (:mod:`diffflow.runtime.reply_wait`): no lock, the main thread may be stuck.

:class:`~diffflow.runtime.worker_commands.WorkerCommands` is the command set without sockets
(:mod:`.worker_commands`); the in-memory transport of :mod:`diffflow.runtime.transports` drives
it directly.
"""
from __future__ import annotations

import os
import pickle
import sys
import threading
import time
import traceback

import numpy as np

from diffflow.common.schema import SymbolTable
from diffflow.lattice.frontiers import times_frontier
from diffflow.lattice.times import minimal_tuples
from diffflow.runtime.engine import merge_pointstamps
from diffflow.runtime.reply_wait import thread_stacks
from diffflow.runtime.wire import (decode_arrays, no_delay, recv_header, recv_pieces,
                                   send_chunks, small_batch)
from diffflow.runtime.worker_commands import WorkerCommands, error_reply
from diffflow.runtime.worker_start import (load_while_idle)


class WorkerServer(WorkerCommands):
    """A worker process: serves the coordinator, exchanges chunks with peers, answers I/O."""

    owns_process = True

    def __init__(self, coordinator: tuple, authkey: bytes, bind_host: str):
        from multiprocessing.connection import Client, Listener

        super().__init__()
        self.authkey = authkey
        self.listener = Listener((bind_host, 0), authkey=authkey)
        self.incoming: dict = {}
        self.outgoing: dict = {}
        self.peers_ready = threading.Condition()
        self.serving = None  # (command, since) the main thread serves; None: between commands
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
                elif request[0] == "stacks":
                    conn.send(thread_stacks(self.serving))
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
            self.serving = (cmd, time.monotonic())
            try:
                with self.lock:
                    result = getattr(self, "cmd_" + cmd)(*args)
                reply = ("ok", result)
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the coordinator
                reply = error_reply(exc, traceback.format_exc())
            self.serving = None
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

    Started by a launcher (:class:`~diffflow.runtime.worker_pool.ProcessLauncher`, a
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
