"""Transports: how the cluster coordinator reaches its partition workers.

* :class:`InMemoryTransport` -- workers as objects in this process (tests of
  the protocol); the exchange is a list hand-over.
* :class:`SocketTransport` -- worker processes reached over authenticated
  loopback (or cluster) sockets, taken from a
  :class:`~diffflow.runtime.worker_pool.WorkerPool`; they exchange chunks with each
  other directly.  :class:`~diffflow.runtime.worker_pool.ProcessLauncher` starts
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

import itertools
import time

from diffflow.common.errors import DiffflowError, WorkerLost, WorkerTimeout
from diffflow.runtime.reply_wait import await_reply, reply_timeout
from diffflow.runtime.start_ahead import StartAhead
from diffflow.runtime.worker_commands import WorkerCommands
from diffflow.runtime.worker_pool import WorkerPool


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
