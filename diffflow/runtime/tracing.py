"""Execution traces of diffflow's own runs: what every partition worker did, as raw events.

Usage
-----

``Dataflow(..., trace="run.trace")`` -- likewise ``Program(..., trace=...)``
and ``diffflow run prog.dl --trace run.trace`` -- records, on every runtime
(local, cluster, processes, Spark), what each partition worker did: operator
steps, chunks of rows sent between partitions, progress messages to and from
the coordinator, and waits.  The file is diffflow's raw-event format (JSON
lines, one event per line, :mod:`diffflow.runtime.events`), created (emptied) when
the dataflow is and appended to after every computed epoch; read it with
:func:`diffflow.runtime.events.read_events`.  ``trace=callable`` instead calls
``callable(events)`` with an :class:`~diffflow.runtime.events.Events` table after
every run (every ``advance()`` that computes).  A path that cannot be written
fails at once, before anything runs.  Tracing is off by default, and off it
costs one ``if`` per operator step.

>>> import diffflow as dd
>>> batches = []
>>> flow = dd.Dataflow(partitions=2, trace=batches.append)
>>> nums = flow.input("nums", ["x"]); out = nums.distinct().output()
>>> nums.insert([1, 2, 2, 3]); flow.advance()
>>> ev = batches[0]; sorted(set(ev.w.tolist())), set(ev.e.tolist())   # epoch 0, as out.changes() says
([0, 1], {0})
>>> int(ev.out[(ev.kind == 1) & (ev.op == nums.node.id)].sum())   # rows the input emitted
4

Conventions (a PAG construction relies on exactly these)
---------------------------------------------------------

* ``w``: the worker that logged the event: partition ``p`` (``0..P-1``) logs as
  worker ``p``.  The coordinator of the cluster, processes and Spark runtimes is
  worker ``P``; its events never carry ``op`` or ``name``.  The local runtime
  has no coordinator (no worker ``P``).  ``P`` is the partition count the
  dataflow started with: on those runtimes a rescale that adds partitions
  starts workers that log under numbers never used before in the trace
  (``P + 1``, ``P + 2``, ...), and a retired worker's number is not reused, so
  every worker that ever ran has a number of its own (``peer`` uses the same
  numbers); a worker restarted after a failure logs as the one it replaces.
  The local runtime's partitions are no processes: partition ``p`` is worker
  ``p`` before and after a rescale.
* ``e``: the dataflow epoch being computed, numbered as the Python API numbers
  it (``Output.changes()``, ``flow.epoch`` before the ``advance()`` that closes
  it): 0 for the run of the first ``advance()``, 1 for the second.  A run that
  computes several closed epochs logs the newest: ``advance(run=False)`` twice
  and then ``run()`` logs ``e = 1``.  (Traces written before this convention,
  and ST2's, count from 1.)
* ``seq``: per-worker logging order (0, 1, 2, ... over the whole trace).
  ``t``: ``time.perf_counter_ns()`` minus the origin taken when the dataflow
  was built (ns).  Within a worker ``t`` never decreases along ``seq``.
  Workers on the coordinator's machine (local, cluster, processes, local
  Spark) read the same monotonic clock: no skew.  A worker on another host
  aligns its clock once, when tracing starts, through the wall clock: its
  skew is the hosts' wall-clock difference (NTP: typically under a
  millisecond) plus drift since.
* Operator step: ``Start`` then ``End``, ``act="Scheduling"``, ``op`` = graph
  node id, ``name`` (written on the ``Start`` line) = the node's label, else
  its kind.  The ``End`` carries ``n`` = rows in the chunks the step consumed
  and ``out`` = rows in the chunks it emitted.  Steps that consumed and
  emitted nothing are not logged (a sweep visits every node whose frontier
  moved; most such visits do nothing).  Steps never nest and contain no other
  event.  A step inside a loop carries its round ``r`` on both lines: the
  latest round of an outermost loop among the rows it emitted, else among
  those it consumed (a step outside every loop has no ``r``).
* Compiled rounds (local runtime, :mod:`diffflow.runtime.compiled_rounds`): a
  traced run keeps every loop on the general path, so that every step is
  logged, unless its sink asks for compiled rounds
  (``TraceSink(target, compiled_rounds=True)``, what ``diffflow run --profile``
  uses).  Then each run of a loop's rounds in the kernel is one
  ``Start``/``End`` pair with ``act="Processing"`` on worker 0, ``op`` = the
  loop's variable node, ``r`` = the first round it ran (``Start``) and the last
  it completed (``End``), ``n`` = rows of work it started with, ``out`` =
  updates it added to the loop's traces.  No operator step is logged inside
  it: the kernel runs every operator of the loop, a row at a time.
* Data: the rows one step (local runtime) or one sweep (partition workers)
  routes from partition ``p`` to partition ``q`` for one consuming node are
  one message: ``Sent`` on ``p`` (``peer = q``), ``Received`` on ``q``
  (``peer = p``), ``act="DataMessage"``, ``corr`` = a counter unique per sender
  (shared by all its messages, data and control), ``ch`` = the consuming
  node's id, ``n`` = rows.  The local runtime hands chunks over in memory right
  after each step: the ``Sent`` and ``Received`` are logged then, between
  steps of the two partitions' timelines.  Partition workers exchange once per
  sweep and every worker waits for every peer's batch, even an empty one; a
  peer with no rows for ``q`` still sends a message: ``n = 0``, no ``ch``.
* Control (cluster, processes, Spark; a traced run keeps this protocol, an
  untraced one lets the workers agree among themselves, :mod:`diffflow.runtime.
  cluster`): in every sweep the coordinator sends
  each worker the frontiers (``Sent`` on ``P``, ``peer = p``; ``Received`` on
  ``p``, ``peer = P``) and each worker, at the end of its sweep, reports its
  pointstamps (``Sent`` on ``p``, ``Received`` on ``P``), ``act="ControlMessage"``,
  matched by ``corr`` (no ``ch``, no ``n``).  The coordinator's computation of
  the next frontiers is a ``Start``/``End`` pair with
  ``act="BarrierProcessing"``.
* Waiting: a ``Start``/``End`` pair with ``act="Waiting"`` ends exactly at (same
  ``t``) the ``Received`` that ended it, which follows it in ``seq``: a worker
  waiting for a peer's batch (one wait per peer, until its header arrives;
  decoding the rows follows, unlogged), a worker waiting between two sweeps of
  one epoch for the coordinator's next frontiers, and the coordinator waiting
  for each worker's report.  The wait before the first sweep of an epoch
  (the user's time between epochs) is not logged.  In the ``cluster`` runtime
  (workers as objects in one thread) waits are those of the same protocol as
  the threads interleave: a worker waits from the end of its sweep until the
  hand-over after every worker has swept.
* Epoch boundaries: every event carries ``e``; nothing else marks them.
  Events are flushed per run, ordered by ``(t, w, seq)``.
* A run interrupted by a lost worker (processes, Spark) loses the events
  not yet flushed; the recovery's replay of the epochs since the last
  checkpoint is one run, traced in full with the epoch count of that moment
  (``seq`` continues, correlators of the restarted workers start at
  ``generation << 40``).
"""
from __future__ import annotations

import time
from array import array
from time import perf_counter_ns

import numpy as np

from diffflow.runtime.events import ACTIVITY, END, RECEIVED, SENT, START, Events

SCHEDULING = ACTIVITY["Scheduling"]
WAITING = ACTIVITY["Waiting"]
DATA = ACTIVITY["DataMessage"]
CONTROL = ACTIVITY["ControlMessage"]
BARRIER = ACTIVITY["BarrierProcessing"]
PROCESSING = ACTIVITY["Processing"]


def latest_round(chunks) -> int:
    """The latest outermost-loop round among the times of ``chunks`` (``-1``: none is in a
    loop): a time inside a loop is ``(epoch, round, ...)``.

    >>> from diffflow.arrangements.updates import Updates
    >>> u = Updates(np.zeros((2, 1), np.int64), np.array([[0, 3], [0, 1]]), np.ones(2, np.int64))
    >>> latest_round([u]), latest_round([])
    (3, -1)
    """
    r = -1
    for chunk in chunks:
        times = getattr(chunk, "times", None)
        if times is not None and times.ndim == 2 and times.shape[1] > 1 and len(times):
            r = max(r, int(times[:, 1].max()))
    return r

# one logged event: Events.COLUMNS without w and seq: (e, t, act, kind, op, ch, corr, peer, n,
# out, r); -1 = absent.  A taken block has all of Events.COLUMNS, one row per event.
_WIDTH = 11


class WorkerLog:
    """One worker's events, buffered as int64 values (eleven per event) until :meth:`take`.

    ``origin`` is subtracted from ``perf_counter_ns()``; ``seq`` and ``corr``
    are where this worker's sequence numbers and correlators start.

    >>> log = WorkerLog(0); log.epoch = 1
    >>> t0 = log.now(); log.step(4, t0, [[np.zeros(3)]], [np.zeros(2)])
    >>> log.step(5, log.now(), [[]], [])          # nothing consumed or emitted: not logged
    >>> ev = log.take(); ev.kind.tolist(), ev.n.tolist(), ev.out.tolist(), ev.seq.tolist()
    ([0, 1], [-1, 3], [-1, 2], [0, 1])
    """

    __slots__ = ("worker", "epoch", "origin", "_seq", "_corr", "_buf")

    def __init__(self, worker: int, origin: int = 0, seq: int = 0, corr: int = 0):
        self.worker, self.origin = worker, origin
        self.epoch = 0
        self._seq, self._corr = seq, corr
        self._buf = array("q")

    def __len__(self) -> int:
        return len(self._buf) // _WIDTH

    def now(self) -> int:
        """This worker's clock: nanoseconds since the trace's origin."""
        return perf_counter_ns() - self.origin

    def step(self, op: int, t0: int, inputs, outs) -> None:
        """An operator step that began at ``t0`` and just ended (skipped if it did nothing).

        Inside a loop the step's round (``r``) is the latest round of the rows it emitted,
        else of those it consumed (:func:`latest_round`).
        """
        n = 0
        for port in inputs:
            for chunk in port:
                n += len(chunk)
        out = 0
        for chunk in outs:
            out += len(chunk)
        if n or out:
            e = self.epoch
            r = latest_round(outs) if out else max(latest_round(port) for port in inputs)
            self._buf.extend((e, t0, SCHEDULING, START, op, -1, -1, -1, -1, -1, r,
                              e, self.now(), SCHEDULING, END, op, -1, -1, -1, n, out, r))

    def compiled(self, op: int, t0: int, first: int, last: int, n: int, out: int) -> None:
        """A loop's rounds ``first`` to ``last`` run in one compiled kernel from ``t0`` until
        now: a ``Processing`` span on the loop's variable ``op`` (``r``: the first round on
        ``Start``, the last on ``End``; ``n``: rows of work it started with; ``out``:
        updates it added to the loop's traces).

        >>> log = WorkerLog(0); log.compiled(7, 3, 0, 4, 10, 25)
        >>> ev = log.take(); ev.r.tolist(), ev.out.tolist(), ev.op.tolist()
        ([0, 4], [-1, 25], [7, 7])
        """
        e = self.epoch
        self._buf.extend((e, t0, PROCESSING, START, op, -1, -1, -1, -1, -1, first,
                          e, self.now(), PROCESSING, END, op, -1, -1, -1, n, out, last))

    def span(self, act: int, t0: int, t1: int) -> None:
        """A ``Start``/``End`` pair of activity ``act`` (e.g. :data:`WAITING`), ``t0`` to ``t1``.

        >>> log = WorkerLog(1); log.span(WAITING, 5, 9); log.take().t.tolist()
        [5, 9]
        """
        e = self.epoch
        self._buf.extend((e, t0, act, START, -1, -1, -1, -1, -1, -1, -1,
                          e, t1, act, END, -1, -1, -1, -1, -1, -1, -1))

    def sent(self, act: int, peer: int, ch: int = -1, n: int = -1, t: int | None = None) -> int:
        """Log the ``Sent`` half of a message to ``peer``; returns its correlator.

        >>> log = WorkerLog(0, corr=7); log.sent(DATA, 1, 3, 10), log.sent(CONTROL, 2)
        (7, 8)
        """
        corr = self._corr
        self._corr = corr + 1
        self._buf.extend((self.epoch, self.now() if t is None else t, act, SENT, -1, ch, corr,
                          peer, n, -1, -1))
        return corr

    def received(self, act: int, peer: int, corr: int, ch: int = -1, n: int = -1,
                 t: int | None = None) -> None:
        """Log the ``Received`` half of message ``corr`` from ``peer``.

        >>> log = WorkerLog(1); log.received(DATA, 0, 7, 3, 10, t=50); log.take().corr.tolist()
        [7]
        """
        self._buf.extend((self.epoch, self.now() if t is None else t, act, RECEIVED, -1, ch, corr,
                          peer, n, -1, -1))

    def take(self) -> Events:
        """The events logged since the last call, as a table (the buffer is emptied).

        >>> log = WorkerLog(3, seq=10); log.span(BARRIER, 1, 2); ev = log.take()
        >>> ev.w.tolist(), ev.seq.tolist(), len(log.take())
        ([3, 3], [10, 11], 0)
        """
        return events_of_block(self.take_block())

    def take_block(self) -> np.ndarray:
        """Like :meth:`take`, as one ``(events, 13)`` int64 array (columns: ``Events.COLUMNS``).

        >>> log = WorkerLog(3); log.span(BARRIER, 1, 2); log.take_block()[:, :4].tolist()
        [[3, 0, 0, 1], [3, 0, 1, 2]]
        """
        raw = np.frombuffer(self._buf, np.int64).reshape(-1, _WIDTH)
        k = len(raw)
        block = np.empty((k, len(Events.COLUMNS)), np.int64)
        block[:, 0] = self.worker
        block[:, 1] = raw[:, 0]
        block[:, 2] = np.arange(self._seq, self._seq + k)
        block[:, 3:] = raw[:, 1:]
        self._buf = array("q")
        self._seq += k
        return block


def events_of_block(block: np.ndarray, names=None) -> Events:
    """An :class:`Events` table from rows with the columns ``Events.COLUMNS``.

    >>> events_of_block(np.array([[0, 1, 0, 5, 13, 0, -1, -1, -1, -1, -1, -1, -1]])).t.tolist()
    [5]
    """
    columns = np.ascontiguousarray(block.T)
    return Events(*columns, names=dict(names or {}))


def rows_per_consumer(pieces) -> dict:
    """``{consumer node: rows}`` of routed ``(consumer, port, chunk)`` pieces, in order.

    >>> rows_per_consumer([(4, 0, np.zeros(3)), (6, 1, np.zeros(1)), (4, 1, np.zeros(2))])
    {4: 5, 6: 1}
    """
    groups: dict = {}
    for consumer, _port, chunk in pieces:
        groups[consumer] = groups.get(consumer, 0) + len(chunk)
    return groups


def log_handover(sender: WorkerLog, receiver: WorkerLog, pieces) -> None:
    """The local runtime's in-memory exchange: ``Sent`` on the sender, ``Received`` at once.

    >>> a, b = WorkerLog(0), WorkerLog(1)
    >>> log_handover(a, b, [(4, 0, np.zeros(3))])
    >>> a.take().peer.tolist(), b.take().n.tolist()
    ([1], [3])
    """
    for consumer, n in rows_per_consumer(pieces).items():
        corr = sender.sent(DATA, receiver.worker, consumer, n)
        receiver.received(DATA, sender.worker, corr, consumer, n)


class WorkerSide:
    """A partition worker's half of the traced protocol (cluster, processes, Spark).

    The coordinator tags each sweep command with ``(epoch, corr, sweep)``;
    the worker logs the frontiers' arrival (after a wait, from the second
    sweep of an epoch on), its steps (through its engine's log), the data
    it sends (:meth:`swept`), the peers' batches (:meth:`batch_received`),
    and its report (:meth:`report`).

    >>> side = WorkerSide(WorkerLog(0), coordinator=2)
    >>> side.frontiers_received((1, 0, 0))
    >>> tags = side.swept([[], [(5, 0, np.zeros(4))]], me=0)
    >>> tags, side.report()
    ([None, {5: 0}], 1)
    >>> ev = side.log.take(); ev.kind.tolist(), ev.act.tolist(), ev.peer.tolist()
    ([3, 2, 2], [10, 11, 10], [2, 1, 2])
    """

    def __init__(self, log: WorkerLog, coordinator: int, names: list | None = None):
        self.log, self.coordinator = log, coordinator
        self.names = names   # partition -> the worker it logs as (None: its own number)
        self.idle_since: int | None = None  # when the last report went to the coordinator
        self.swept_at: int | None = None    # when the last sweep's data went to the peers

    def frontiers_received(self, tag) -> None:
        """The coordinator's sweep command ``tag = (epoch, corr, sweep)`` arrived now."""
        epoch, corr, sweep = tag
        log = self.log
        t = log.now()
        log.epoch = epoch
        if sweep and self.idle_since is not None:
            log.span(WAITING, self.idle_since, t)
        log.received(CONTROL, self.coordinator, corr, t=t)

    def swept(self, outgoing: list, me: int) -> list:
        """Log the messages of a sweep's ``outgoing[q]`` pieces; their tags per peer.

        A tag maps each consuming node to its message's correlator (``-1``: the
        empty batch); the receiver needs it to log its half.
        """
        log = self.log
        tags: list = [None] * len(outgoing)
        for q, pieces in enumerate(outgoing):
            if q == me:
                continue
            groups = rows_per_consumer(pieces)
            peer = q if self.names is None else self.names[q]
            if groups:
                tags[q] = {c: log.sent(DATA, peer, c, n) for c, n in groups.items()}
            else:
                tags[q] = {-1: log.sent(DATA, peer, -1, 0)}
        self.swept_at = log.now()
        return tags

    def batch_received(self, sender: int, pieces, tag, t: int, waited_since: int | None) -> None:
        """A peer's batch (tagged by its :meth:`swept`) arrived at ``t`` after a wait."""
        if tag is None:  # the peer failed its sweep; the run is about to fail
            return
        log = self.log
        if waited_since is not None:
            log.span(WAITING, waited_since, t)
        groups = rows_per_consumer(pieces)
        peer = sender if self.names is None else self.names[sender]
        for consumer, n in groups.items():
            log.received(DATA, peer, tag[consumer], consumer, n, t)
        if not groups:
            log.received(DATA, peer, tag[-1], -1, 0, t)

    def report(self) -> int:
        """Log the pointstamps report to the coordinator; its correlator (for the reply)."""
        corr = self.log.sent(CONTROL, self.coordinator)
        self.idle_since = self.log.now()
        return corr


class ProgressExchange:
    """The coordinator's half of one traced sweep: frontiers out, waits, reports in.

    >>> log = WorkerLog(2); log.epoch = 1; ex = ProgressExchange(log, sweep=0)
    >>> ex.send(0), ex.send(1)
    ((1, 0, 0), (1, 1, 0))
    >>> ex.sent_all(); ex.reply(0, 5); ex.reply(1, 9)
    >>> ev = log.take(); ev.kind.tolist(), ev.act.tolist()
    ([2, 2, 0, 1, 3, 0, 1, 3], [10, 10, 12, 12, 10, 12, 12, 10])
    """

    def __init__(self, log: WorkerLog, sweep: int, names: list | None = None):
        self.log, self.sweep = log, sweep
        self.names = names   # partition -> the worker it logs as (None: its own number)
        self.since: int | None = None

    def send(self, p: int) -> tuple:
        """Log the frontiers message to worker ``p``; the tag that goes with the command."""
        peer = p if self.names is None else self.names[p]
        return (self.log.epoch, self.log.sent(CONTROL, peer), self.sweep)

    def sent_all(self) -> None:
        """Every worker has its command: the coordinator waits from now."""
        self.since = self.log.now()

    def reply(self, p: int, corr) -> None:
        """Worker ``p``'s report (correlator ``corr``) arrived now."""
        if corr is None:
            return
        log = self.log
        t = log.now()
        log.span(WAITING, self.since, t)
        log.received(CONTROL, p if self.names is None else self.names[p], corr, t=t)
        self.since = t


# -- clocks ------------------------------------------------------------------------------------

def host_key() -> str:
    """What identifies this machine's monotonic clock: host name and boot id (Linux).

    >>> host_key() == host_key()
    True
    """
    import socket  # here: every run imports this module (~5 ms for socket), few trace

    boot = ""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            boot = fh.read().strip()
    except OSError:
        pass
    return f"{socket.gethostname()}/{boot}"


def clock_reference(origin: int) -> tuple:
    """``(host, origin, wall clock at origin)`` that workers align their clocks to.

    >>> host, origin, wall = clock_reference(perf_counter_ns()); host == host_key()
    True
    """
    return host_key(), origin, time.time_ns() - (perf_counter_ns() - origin)


def aligned_origin(reference: tuple) -> int:
    """This process's ``perf_counter_ns()`` value at the reference's origin.

    On the reference's machine the monotonic clock is shared, so the origin
    is used as is; on another machine it is placed through the wall clock.

    >>> aligned_origin(clock_reference(123)) == 123
    True
    """
    host, origin, wall = reference
    if host == host_key():
        return origin
    return perf_counter_ns() - (time.time_ns() - wall)
