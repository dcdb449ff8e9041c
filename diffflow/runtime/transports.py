"""Transports: how the cluster coordinator reaches its partition workers.

* :class:`InMemoryTransport` -- workers as objects in this process (tests of
  the protocol); the exchange is a list hand-over.
* :class:`SocketTransport` -- worker processes reached over authenticated
  loopback (or cluster) sockets, taken from a :class:`WorkerPool`; they
  exchange chunks with each other directly.  :class:`ProcessLauncher` starts
  them on this machine, :class:`~diffflow.runtime.spark_slots.SparkLauncher` as
  long-running Spark tasks.

Every transport offers ``start``, ``call``, ``call_all``, ``sweep`` (one
sweep on every worker; returns each worker's pointstamps, the strings its
operators interned and, traced, its report's correlator), ``resize``,
``restart``, ``prepare`` and ``ready`` (workers a coming rescaling step needs, started in
the background: :mod:`~diffflow.runtime.start_ahead`), ``close`` and ``pids``.

>>> InMemoryTransport(2).pids
[]
"""
from __future__ import annotations

import atexit
import itertools
import os
import socket
import subprocess
import sys
import threading
import time

from diffflow.common.errors import DiffflowError, WorkerLost, WorkerTimeout
from diffflow.runtime.reply_wait import await_reply, reply_timeout
from diffflow.runtime.start_ahead import StartAhead
from diffflow.runtime.wire import no_delay
from diffflow.runtime.worker_commands import WorkerCommands
from diffflow.runtime.worker_start import worker_command


class InMemoryTransport:
    """Partition workers as objects in this process; the exchange is a list hand-over."""

    peers_agree = False  # (one thread: the coordinator drives every sweep)

    def __init__(self, parts: int):
        self.parts = parts
        self.workers: list[WorkerCommands] = []

    def start(self, graph, symbols: dict) -> None:
        """One worker per partition, sharing the (read-only) graph object."""
        self.graph = graph
        self.workers = []
        self.resize(self.parts, symbols)

    def resize(self, parts: int, symbols: dict) -> None:
        """Workers for partitions ``[len(workers), parts)`` added, or those ``>= parts``
        dropped (rescaling: the coordinator moves their state first)."""
        self.parts = parts
        for p in range(len(self.workers), parts):
            w = WorkerCommands()
            w.symbols._text.update(symbols)
            w.start(self.graph, p, parts)
            self.workers.append(w)
        del self.workers[parts:]

    def prepare(self, parts: int, symbols: dict, restart: bool = False) -> None:
        """Nothing to start ahead: a worker here is an object, made at once."""

    def finish_ahead(self) -> None:
        """Nothing was started ahead."""

    def ready(self) -> bool:
        return True

    @property
    def pids(self) -> list:
        """No processes of their own: the workers live in this one."""
        return []

    def call(self, p: int, cmd: str, *args):
        return getattr(self.workers[p], "cmd_" + cmd)(*args)

    def call_all(self, cmd: str, args_per_partition: list) -> list:
        """Each worker's reply (``None`` for a worker whose args are ``None``: not asked)."""
        return [None if args is None else self.call(p, cmd, *args)
                for p, args in enumerate(args_per_partition)]

    def sweep(self, frontiers: dict, reports: list, exchange=None) -> list:
        """Every worker sweeps in turn, then the hand-over; ``exchange`` (a
        :class:`~diffflow.runtime.tracing.ProgressExchange`) when traced."""
        tags, sent = [], []
        for p, w in enumerate(self.workers):
            tags.append(None if exchange is None else exchange.send(p))
            sent.append(w.sweep_local(frontiers, reports, tags[p]))
        if exchange is not None:
            exchange.sent_all()
        for q, w in enumerate(self.workers):
            waiting = None if w.tracing is None else w.tracing.swept_at
            for p, (outgoing, msg_tags) in enumerate(sent):
                if p == q:
                    continue
                for consumer, port, chunk in outgoing[q]:
                    w.engine.receive(consumer, port, chunk)
                if msg_tags is not None and w.tracing is not None:
                    w.tracing.batch_received(p, outgoing[q], msg_tags[q], w.tracing.log.now(),
                                             waiting)
                    waiting = None  # one wait: until the hand-over
        replies = []
        for p, w in enumerate(self.workers):
            replies.append((w.cmd_pointstamps(), w.take_fresh_symbols(), w.report(tags[p])))
            if exchange is not None:
                exchange.reply(p, replies[p][2])
        return replies

    def restart(self, symbols: dict, parts: int | None = None) -> None:
        raise WorkerLost("in-memory workers cannot be restarted")

    def close(self) -> None:
        self.workers = []


class ProcessLauncher:
    """Starts partition worker processes on this machine (``python -m ...worker``)."""

    def __init__(self):
        self.procs: list = []
        self.pool = None

    def launch(self, count: int, address: tuple, authkey: bytes, bind_host: str,
               background: bool = False) -> None:
        """Start ``count`` workers that connect to ``address``; ``background``: at the lowest
        priority until they serve (:func:`~diffflow.runtime.worker_start.worker_command`)."""
        env = dict(os.environ, SPARK_LOCAL_IP=bind_host)
        for _ in range(count):
            self.procs.append(subprocess.Popen(
                worker_command(address[0], address[1], authkey, bind_host,
                               background=background), env=env, stdin=subprocess.DEVNULL))

    def check(self) -> None:
        """Nothing to tell: a worker process that fails to start never connects."""

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self.procs = []


class WorkerPool:
    """Idle partition workers, connected and waiting for a dataflow.

    Starting a worker costs seconds (a process, imports, numba's cached
    kernels; on Spark a task each), so a finished dataflow hands its
    workers back (``reset``) and the next one takes them.  Workers exit when
    the pool's connection to them closes, e.g. when this process ends.
    """

    def __init__(self, launcher, bind_host: str = "127.0.0.1", start_timeout: float = 180.0):
        from multiprocessing.connection import Listener

        self.launcher, self.bind_host, self.start_timeout = launcher, bind_host, start_timeout
        launcher.pool = self  # (a launcher may retire idle workers to free what they hold)
        self.authkey = os.urandom(16)
        self.listener = Listener((bind_host, 0), authkey=self.authkey)
        self.idle: list = []  # [(conn, peer address, pid)]
        self.lock = threading.Lock()  # the idle list's (a launcher's thread may retire them)
        self._launching = threading.Lock()  # one launch at a time (held for seconds)
        self.taken = 0  # workers dataflows hold now
        self._counting = threading.Lock()  # (for taken)
        self.closed = False

    @property
    def address(self) -> tuple:
        return self.listener.address

    def take(self, count: int, background: bool = False) -> list:
        """``count`` workers, launching what the pool lacks (``background``: at the lowest
        priority until they serve, for a start ahead of a rescaling step).  Launches run
        one at a time; the idle list stays free meanwhile (workers given back go there)."""
        with self._launching:
            while True:
                with self.lock:
                    self.idle = [w for w in self.idle if _idle_and_alive(w[0])]
                    missing = count - len(self.idle)
                    if missing <= 0:
                        taken, self.idle = self.idle[:count], self.idle[count:]
                        break
                self._add(self._launch(missing, background))
        with self._counting:
            self.taken += len(taken)
        return taken

    def fill(self, count: int) -> int:
        """At least ``count`` idle workers, launching what the pool lacks in the background,
        kernels loaded (ahead of a restart: :mod:`~diffflow.runtime.start_ahead`); returns
        how many were launched."""
        with self._launching:
            with self.lock:
                self.idle = [w for w in self.idle if _idle_and_alive(w[0])]
                missing = count - len(self.idle)
            fresh = self._launch(missing, True) if missing > 0 else []
        for conn, _, _ in fresh:  # (not one launch at a time: takes may go on meanwhile)
            conn.send(("warm", ()))
        self._add([w for w in fresh if _answered(w[0])])
        return len(fresh)

    def _add(self, fresh: list) -> None:
        with self.lock:
            if self.closed:  # (closed meanwhile: nothing will take them)
                for conn, _, _ in fresh:
                    conn.close()
            else:
                self.idle.extend(fresh)

    def _launch(self, count: int, background: bool) -> list:
        """Launch ``count`` workers and wait for them to connect (even for a start ahead
        that was cancelled meanwhile: they go to the pool, none is left astray)."""
        if background:
            self.launcher.launch(count, self.address, self.authkey, self.bind_host,
                                 background=True)
        else:
            self.launcher.launch(count, self.address, self.authkey, self.bind_host)
        return self._accept(count, quiet=background)

    def _accept(self, count: int, quiet: bool = False) -> list:
        """``count`` workers' connections, as they come (within :attr:`start_timeout`);
        unless ``quiet`` (nobody waits: a start in the background), slow starts are told."""
        sock = self.listener._listener._socket  # accept() has no timeout argument
        started = time.monotonic()
        deadline = started + self.start_timeout
        found = []
        told = 0.0
        while len(found) < count:
            self.launcher.check()  # (a launch that failed says why at once)
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                raise WorkerLost(f"only {len(found)} of {count} partition workers started "
                                 f"within {self.start_timeout:.0f} s")
            if not quiet and now - started > 10 and now - told > 10:  # (executors starting)
                print(f"diffflow: waiting for {count - len(found)} of {count} partition "
                      f"worker(s) to start ({now - started:.0f} s of {self.start_timeout:.0f})",
                      file=sys.stderr, flush=True)
                told = now
            sock.settimeout(min(left, 0.5))
            try:
                conn = no_delay(self.listener.accept())
            except socket.timeout:
                continue
            finally:
                sock.settimeout(None)
            _, address, pid = conn.recv()
            found.append((conn, address, pid))
        return found

    def give_back(self, workers: list) -> None:
        """Reset workers and keep them for the next dataflow (dead ones are dropped)."""
        with self._counting:  # (a start ahead gives back from its own thread)
            self.taken = max(0, self.taken - len(workers))
        for conn, address, pid in workers:
            try:
                if self.closed:  # (nothing will take it: let it end, and what it holds)
                    conn.send(("shutdown", ()))
                    conn.close()
                    continue
                conn.send(("reset", ()))
                if conn.poll(30) and conn.recv()[0] == "ok":
                    with self.lock:
                        self.idle.append((conn, address, pid))
                    continue
            except (EOFError, OSError):
                pass
            conn.close()

    def retire_idle(self) -> int:
        """End every idle worker (what it holds, e.g. a Spark slot, is freed); how many.
        The caller holds :attr:`lock`."""
        idle, self.idle = self.idle, []
        for conn, _, _ in idle:
            try:
                conn.send(("shutdown", ()))
            except (EOFError, OSError):
                pass
            conn.close()
        return len(idle)

    def close(self) -> None:
        """End the idle workers; those dataflows hold end when given back."""
        self.closed = True
        for conn, _, _ in self.idle:
            conn.close()
        self.idle = []
        self.listener.close()
        self.launcher.stop()


def _idle_and_alive(conn) -> bool:
    """An idle worker never writes first, so anything readable is the EOF of a dead one.

    This works for workers on other hosts too, unlike checking a process id.
    """
    try:
        return not conn.closed and not conn.poll()
    except (EOFError, OSError):
        return False


def _answered(conn) -> bool:
    """Whether a worker answered its last command (a dead one's connection is closed)."""
    try:
        return conn.recv() is not None
    except (EOFError, OSError):
        conn.close()
        return False


_PROCESS_POOL: WorkerPool | None = None


def process_pool() -> WorkerPool:
    """The pool of local worker processes this process shares between dataflows.

    Created on first use (no process starts until a dataflow takes workers)
    and closed when this process exits.

    >>> process_pool() is process_pool(), process_pool().address[0]
    (True, '127.0.0.1')
    """
    global _PROCESS_POOL
    if _PROCESS_POOL is None:
        _PROCESS_POOL = WorkerPool(ProcessLauncher())
        atexit.register(_PROCESS_POOL.close)  # workers and sockets end with us, quietly
    return _PROCESS_POOL


class SocketTransport:
    """Worker processes reached over authenticated sockets; they exchange chunks directly."""

    peers_agree = True  # workers can run a whole run's sweeps among themselves (cmd_run)

    def __init__(self, parts: int, pool: WorkerPool):
        self.parts, self.pool = parts, pool
        self.workers: list = []  # [(conn, peer address, pid)] by partition
        self._graph = None
        self.ahead: StartAhead | None = None  # workers started ahead of a step (prepare)
        self.taken_ahead = 0  # workers steps took ready-made from a start ahead
        # seconds a reply may take (None: no bound; DIFFFLOW_REPLY_TIMEOUT, reply_wait)
        self.reply_timeout = reply_timeout()
        self.awaiting: dict = {}  # partition -> (command, when sent) of replies not read yet

    @property
    def conns(self) -> list:
        return [w[0] for w in self.workers]

    @property
    def pids(self) -> list:
        return [w[2] for w in self.workers]

    def start(self, graph, symbols: dict) -> None:
        try:
            import cloudpickle as pickler
        except ImportError:  # pragma: no cover - cloudpickle is a dependency
            import pickle as pickler
        self._graph = graph
        self._blob = pickler.dumps(graph)
        self.workers = []
        self.resize(self.parts, symbols)

    def prepare(self, parts: int, symbols: dict, restart: bool = False) -> None:
        """Start in the background the workers a coming step needs
        (:mod:`~diffflow.runtime.start_ahead`): those of partitions ``[len(workers),
        parts)``, built, or with ``restart`` the ones a restart at ``parts`` lacks, idle
        in the pool.  A start for anything else under way is cancelled (its workers go
        back to the pool); ``parts`` at most the workers held cancels only."""
        have = len(self.workers)
        count = parts - have
        want = ("restart", count) if restart else ("live", have, parts)
        if self.ahead is not None and self.ahead.what == want and self.ahead.error is None:
            return
        self.cancel_ahead()
        if count > 0:
            self.ahead = StartAhead(self.pool, count,
                                    None if restart else (self._blob, have, parts, symbols))

    def ready(self) -> bool:
        """Whether no start ahead is under way (:meth:`StartAhead.ready`)."""
        return self.ahead is None or self.ahead.ready()

    def cancel_ahead(self) -> None:
        """Cancel the start ahead, if any: its workers go back to the pool."""
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            ahead.cancel()

    def finish_ahead(self) -> None:
        """End a start ahead of a restart (:meth:`prepare`): wait for it, raising why it
        failed (out of patience, it is cancelled and the restart launches what it lacks)."""
        ahead = self.ahead
        if ahead is not None and ahead.init is None:
            self.ahead = None
            ahead.claim()

    def resize(self, parts: int, symbols: dict) -> None:
        """Workers for partitions ``[len(workers), parts)`` -- started ahead for this step
        (:meth:`prepare`) or taken from the pool now (launched when it lacks them) -- and
        connected to every other, or those ``>= parts`` given back (rescaling: the
        coordinator moves their state first)."""
        have = len(self.workers)
        if parts > have:
            ahead, started = self.ahead, None
            if ahead is not None and ahead.what == ("live", have, parts):
                self.ahead = None
                started = ahead.claim()  # (waits; raises why they failed; None: no patience)
            if started is not None:
                self.workers = self.workers + started
                self.parts = parts
                self.taken_ahead += parts - have
                fresh = dict(itertools.islice(symbols.items(), ahead.symbols, None))
                for p in range(have, parts) if fresh else ():  # strings interned since
                    self.call(p, "symbols", fresh)
            else:
                fresh = self.pool.take(parts - have)
                self.workers = self.workers + fresh
                self.parts = parts
                for p in range(have, parts):
                    self._send(p, "init", (self._blob, p, parts, symbols))
                for p in range(have, parts):
                    self._reply(p)
            self.call_all("peers", [([w[1] for w in self.workers],)] * parts)
        elif parts < have:
            retired, self.workers = self.workers[parts:], self.workers[:parts]
            self.parts = parts
            self.call_all("forget_peers", [(parts,)] * parts)
            self.pool.give_back(retired)

    def _reply(self, p: int):
        cmd, since = self.awaiting.pop(p, ("?", time.monotonic()))
        try:
            await_reply(self.conns[p], self.reply_timeout, since, p, cmd, self.workers[p][1],
                        self.pool.authkey)
        except WorkerTimeout:
            self._let_go(p)
            raise
        try:
            reply = self.conns[p].recv()
        except (EOFError, OSError) as exc:
            raise WorkerLost(f"partition worker {p} is gone ({type(exc).__name__})") from None
        if reply[0] == "ok":
            return reply[1]
        _, exc, description, trace = reply
        if isinstance(exc, DiffflowError):  # diffflow's own errors keep their type and fields
            raise exc
        raise RuntimeError(f"partition worker {p} failed: {description}\n{trace}")

    def _send(self, p: int, cmd: str, args) -> None:
        try:
            self.conns[p].send((cmd, tuple(args)))
        except (EOFError, OSError) as exc:
            raise WorkerLost(f"partition worker {p} is gone ({type(exc).__name__})") from None
        self.awaiting[p] = (cmd, time.monotonic())

    def _let_go(self, silent: int) -> None:
        """After worker ``silent`` timed out: close its connection and those of every
        worker whose reply is still unread, so none goes back to the pool out of step
        (the workers end; a next command finds them gone and recovers)."""
        for p in {silent, *self.awaiting}:
            self.conns[p].close()
        self.awaiting = {}

    def call(self, p: int, cmd: str, *args):
        self._send(p, cmd, args)
        return self._reply(p)

    def call_all(self, cmd: str, args_per_partition: list, exchange=None) -> list:
        """Send every worker its command, then read every reply (a worker whose args are
        ``None`` is not asked: its reply is ``None``); ``exchange`` (a
        :class:`~diffflow.runtime.tracing.ProgressExchange`, sweeps only) logs both."""
        failure = None
        sent = []
        for p, args in enumerate(args_per_partition):
            if args is None:
                continue
            try:
                if exchange is not None:
                    args = (*args, exchange.send(p))
                self._send(p, cmd, args)
                sent.append(p)
            except WorkerLost as exc:
                failure = failure or exc
        if exchange is not None:
            exchange.sent_all()
        replies = [None] * self.parts
        for p in sent:
            try:
                replies[p] = self._reply(p)
                if exchange is not None:
                    exchange.reply(p, replies[p][2])
            except WorkerTimeout:
                raise  # (the workers were let go: no reply is left to read)
            except Exception as exc:  # noqa: BLE001 - read every reply before raising
                # a lost worker explains the others' errors, so it wins
                if failure is None or (isinstance(exc, WorkerLost)
                                       and not isinstance(failure, WorkerLost)):
                    failure = exc
        if failure is not None:
            raise failure
        return replies

    def sweep(self, frontiers: dict, reports: list, exchange=None) -> list:
        return self.call_all("sweep", [(frontiers, reports)] * self.parts, exchange)

    def restart(self, symbols: dict, parts: int | None = None) -> None:
        """Survivors go back to the pool, reset; fresh ones start with the current ``symbols``
        (``parts`` of them: by default as many as before).  A start ahead of a restart ends
        here (it goes on filling the pool); one for partitions to add stays for its step."""
        ahead = self.ahead
        if ahead is not None and ahead.init is None:  # (it goes on filling the pool)
            self.ahead = None
        self.pool.give_back(self.workers)
        self.workers, self.awaiting = [], {}
        if parts is not None:
            self.parts = parts
        self.start(self._graph, symbols)

    def close(self) -> None:
        self.cancel_ahead()
        self.pool.give_back(self.workers)
        self.workers, self.awaiting = [], {}
