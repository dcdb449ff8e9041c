"""Partition workers started in the background, ahead of the rescaling step that needs them.

Starting a worker costs about a second (a process or a Spark task, Python's imports,
numba's kernels, the graph unpickled and its engine built); done inside a step, all of it
lands on one epoch.  So when a plan adds partitions, the runtime starts their workers as
soon as the plan is made (:meth:`~diffflow.runtime.transports.SocketTransport.prepare`), in
a thread: it takes them from the pool (which launches what it lacks), sends each the graph
and its partition (``init``) and has it load its kernels (``warm``).  A worker does all of
that in threads of the lowest priority (:func:`~diffflow.runtime.worker_start.lowest_priority`),
so the start takes what the running dataflow leaves of the processors: its epochs keep
their pace, and on a busy machine the start takes longer (after :data:`PATIENCE` seconds
the step starts its own workers, as without a start ahead).  The plan's batched or
fluid steps wait an epoch at a time until that is done
(:meth:`~diffflow.runtime.rescale.pacing.Background.must_start`); the step then only
connects the workers to their peers and passes them the strings interned since.  A
restart (``strategy="restart"`` with a later ``start_epoch``) gets the pool filled with
the extra workers it will need instead: a restart builds every worker anew.

A start that fails is reported by the step that needs the workers, in one message; a
plan replaced, or a dataflow closed, before its step hands them back to the pool.

>>> class Pool:  # a pool that cannot launch a worker, as a cluster without a free slot
...     def take(self, count, background=False):
...         raise RuntimeError("no free slot")
>>> ahead = StartAhead(Pool(), 1, (b"graph", 2, 3, {})); ahead.thread.join(); ahead.ready()
True
>>> ahead.claim()
Traceback (most recent call last):
RuntimeError: starting the partition worker(s) for partitions 2..2 in the background failed: no free slot
"""
from __future__ import annotations

import threading
import time

from diffflow.common.errors import WorkerLost, WorkerTimeout
from diffflow.runtime.reply_wait import await_reply, reply_timeout

#: seconds a step waits (an epoch at a time) for workers started ahead before it starts its
#: own: the start runs at the lowest priority, and a machine kept busy may not run it at all
PATIENCE = 60.0


class StartAhead:
    """``count`` workers started in a background thread: built for partitions ``first,
    first + 1, ...`` of ``parts`` (``init``: ``(graph blob, first, parts, symbols)``), or,
    with ``init`` None, left idle in ``pool`` (started and warmed: for a restart)."""

    def __init__(self, pool, count: int, init: tuple | None = None):
        self.pool, self.count, self.init = pool, count, init
        self.what = ("restart", count) if init is None else ("live", init[1], init[2])
        self.symbols = 0 if init is None else len(init[3])  # strings the workers were given
        self.workers: list = []  # [(conn, peer address, pid)], once taken
        self.error: BaseException | None = None
        self.finished = False
        self.cancelled = False
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="diffflow-start-ahead")
        self.thread.start()

    def _run(self) -> None:
        try:
            if self.init is None:
                self.pool.fill(self.count)
            else:
                workers = self.pool.take(self.count, background=True)
                with self._lock:
                    self.workers = workers
                blob, first, parts, symbols = self.init
                authkey = self.pool.authkey
                _call_each(workers, first, "init", lambda p: (blob, p, parts, symbols, True),
                           authkey)
                _call_each(workers, first, "warm", lambda p: (), authkey)
        except BaseException as exc:  # noqa: BLE001 - told by take() at the step
            self.error = exc
        finally:
            with self._lock:
                self.finished = True
                give = (self.cancelled or self.error is not None) and self.workers
            if give:
                self._give_back()

    def ready(self) -> bool:
        """Whether the step may go ahead: the start is done (or failed: the step says why),
        or it has taken more than :data:`PATIENCE` seconds (a machine too busy to give it
        any time: the step then starts its own workers, as without a start ahead)."""
        return self.finished or time.monotonic() - self.started > PATIENCE

    def claim(self) -> list | None:
        """The workers, once started (waiting for them; raising why they could not start),
        unless the start has run out of :data:`PATIENCE`: then ``None``, and it is
        cancelled (its workers go to the pool once they have come: a launch under way
        still holds the pool's launches, so the step's own waits for it)."""
        with self._lock:
            if not self.finished and time.monotonic() - self.started > PATIENCE:
                self.cancelled = True
                return None
        return self.take()

    def take(self) -> list:
        """The workers, once started (waits for them); raises why they could not start."""
        self.thread.join()
        if self.error is not None:
            what = (f"{self.count} partition worker(s) for a restart" if self.init is None else
                    f"the partition worker(s) for partitions {self.init[1]}.."
                    f"{self.init[1] + self.count - 1}")
            raise RuntimeError(f"starting {what} in the background failed: "
                               f"{_describe(self.error)}") from self.error
        return self.workers

    def cancel(self) -> None:
        """Hand the workers back to the pool (now, or when the thread is done with them)."""
        with self._lock:
            self.cancelled = True
            give = self.finished and self.error is None and self.workers
        if give:
            self._give_back()

    def _give_back(self) -> None:
        workers, self.workers = self.workers, []
        self.pool.give_back(workers)


def _call_each(workers: list, first: int, cmd: str, args_of, authkey: bytes) -> None:
    """Send every worker ``cmd``, then read every reply (partition ``first + i``; each
    within the coordinator's bound, :mod:`~diffflow.runtime.reply_wait`: a worker silent
    past it is named, with its stacks, and it and the others not read yet are let go)."""
    for i, (conn, _, _) in enumerate(workers):
        conn.send((cmd, tuple(args_of(first + i))))
    sent, bound = time.monotonic(), reply_timeout()
    failure = None
    for i, (conn, address, _) in enumerate(workers):
        try:
            await_reply(conn, bound, sent, first + i, cmd, address, authkey)
        except WorkerTimeout:
            for unread, _, _ in workers[i:]:
                unread.close()
            raise
        try:
            reply = conn.recv()
        except (EOFError, OSError) as exc:
            failure = failure or WorkerLost(f"partition worker {first + i} is gone "
                                            f"({type(exc).__name__})")
            continue
        if reply[0] != "ok" and failure is None:
            failure = reply[1] if isinstance(reply[1], BaseException) else \
                RuntimeError(f"partition worker {first + i} failed: {reply[2]}\n{reply[3]}")
    if failure is not None:
        raise failure


def _describe(exc: BaseException) -> str:
    """``exc`` in one line for a person: its message, or its type when it has none.

    >>> _describe(TimeoutError()), _describe(ValueError("no slot"))
    ('TimeoutError', 'no slot')
    """
    text = str(exc).strip()
    return text if text else type(exc).__name__
