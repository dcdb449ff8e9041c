"""Pacing a rescaling's background work by the dataflow's own epochs.

Between the steps of a plan (:mod:`diffflow.runtime.rescale.plans`), and before its first
one, the state is indexed by step, the rows steps imported are merged, and batches a quarter
dead are copied without their dead rows.  That work is done at epoch boundaries, in slices,
within a budget of time that :class:`Background` sets from the recent epochs; it also
decides when a due step should wait an epoch.  ``docs/RESCALE.md`` explains the model.
"""
from __future__ import annotations

import time
from collections import deque

import numpy as np

BACKGROUND_SHARE = 0.5  # background rescaling work per epoch, as a share of a typical epoch
PREPARE_SLICE = 100_000  # rows of background work per call (a few milliseconds)
PREPARE_WAIT = 256  # epochs a due step may wait for its preparation (a safety valve)
PACE_WAIT = 32  # epochs a due step may wait for slack (a paced caller behind)
PACED_IDLE = 0.25  # a caller idle this share of a steady epoch between epochs is paced
BEHIND = 0.1  # a paced caller idle less than this share of a steady epoch is behind
SLACK_SHARE = 0.5  # a paced caller's background work: at most this share of its idle time


class Background:
    """Rescaling's background work and steps, paced by the dataflow's own epochs.

    Between steps, and before a plan's first one, every epoch boundary spends about
    :data:`BACKGROUND_SHARE` of a typical epoch (the median of the last steady
    epochs: no plan, no background work; not the epochs the work itself slows) on
    indexing the state by step, merging imports (into the traces' own batches once
    the plan is done, until none is left) and copying batches a quarter dead,
    a :data:`PREPARE_SLICE` of rows at a time and at
    least one slice: a budget in time, not rows, so the epochs stay within a
    fixed factor of the steady ones on any machine.  A batched or fluid step due
    while more of the state is not indexed yet than it moves waits
    (:meth:`Plan.postpone`) instead of indexing at the step, so the step's epoch
    costs about the rows it moves; after :data:`PREPARE_WAIT` epochs it goes ahead and
    scans the batches not indexed yet.  Such a step also waits while the workers of the
    partitions it adds are still starting (:meth:`must_start`).

    *Paced callers.*  A caller that leaves the dataflow idle between epochs (a
    stream with a period: idle at least :data:`PACED_IDLE` of a steady epoch, the
    median of the last steady ones) is latency-bound.  When such a caller comes back
    with (almost) no idle time (:attr:`idle`, from the previous
    :meth:`Dataflow.advance`'s end to this one's start, under :data:`BEHIND` of a
    steady epoch), its epochs are already late: a batched or fluid step due then
    waits an epoch (at most :data:`PACE_WAIT` in a row), so steps never pile onto
    a queue and the epochs between them drain it.  Its background work takes at most
    :data:`SLACK_SHARE` of the idle time it left before the epoch: near saturation the
    work slows down instead of queueing epochs.  A caller that calls back to back
    (a batch job, a test) is never paced.

    >>> pace = Background(); pace.record(0.04); pace.record(0.02); pace.typical()
    0.03
    """

    def __init__(self):
        self.epochs = deque(maxlen=16)
        self.idles = deque(maxlen=16)
        self.idle = None   # seconds between the previous advance's end and this one's start
        self._ended = None

    def begin(self) -> None:
        """An epoch boundary starts now: measure the idle time before it."""
        now = time.perf_counter()
        self.idle = None if self._ended is None else now - self._ended

    def end(self, steady_seconds: float | None = None) -> None:
        """The epoch's computation ended now; ``steady_seconds``: it was a steady epoch
        that took that long."""
        self._ended = time.perf_counter()
        if steady_seconds is not None:
            self.record(steady_seconds)
            if self.idle is not None:
                self.idles.append(self.idle)

    def record(self, seconds: float) -> None:
        """Note the compute time of a steady epoch."""
        self.epochs.append(seconds)

    def typical(self) -> float:
        """The median of the recent epochs' compute times (0 before any)."""
        return float(np.median(self.epochs)) if self.epochs else 0.0

    def paced(self) -> bool:
        """Whether the caller leaves the dataflow idle between steady epochs (at least
        :data:`PACED_IDLE` of one, median of the last 8 or more)."""
        return len(self.idles) >= 8 and float(np.median(self.idles)) >= \
            PACED_IDLE * self.typical()

    def work(self, runtime) -> bool:
        """One epoch boundary's background work, a slice at a time until a deadline (the
        last slice may overrun it; at least one slice runs); returns whether any is left.
        A paced caller's deadline is at most :data:`SLACK_SHARE` of the time it left the
        dataflow idle before this epoch (so the work does not fill its slack and queue
        epochs), and it gets one slice only when it is behind (:meth:`no_room`'s test), so
        that the epochs after drain its queue instead of carrying the whole share on top
        of it."""
        seconds = 0.0 if self.behind() else BACKGROUND_SHARE * self.typical()
        if self.paced():  # (what the caller left idle before this epoch: its slack now)
            seconds = min(seconds, SLACK_SHARE * (self.idle or 0.0))
        deadline = time.perf_counter() + seconds
        while True:
            left = runtime.rescale_prepare(PREPARE_SLICE)
            if not left or time.perf_counter() >= deadline:
                return left > 0

    @staticmethod
    def must_wait(plan, due: list, runtime) -> bool:
        """Whether the ``due`` steps of ``plan`` should wait for their preparation: while
        indexing what is left would cost more than moving their rows (indexing a row is
        several times cheaper than moving one, and merges keep making new big batches,
        so a step never waits for all of them)."""
        if plan.strategy == "all_at_once" or plan.waiting >= PREPARE_WAIT:
            return False
        moving = max(sum(s.rows_planned for s in due), 1)
        return runtime.rescale_unprepared() > moving

    @staticmethod
    def must_start(plan, due: list, runtime) -> bool:
        """Whether the ``due`` steps should wait an epoch for the workers of the partitions
        they add: started in the background since the plan was made
        (:mod:`diffflow.runtime.start_ahead`), so that no epoch waits for a process start.
        Batched and fluid steps wait (until the start is done, or failed: the step says
        why; after :data:`~diffflow.runtime.start_ahead.PATIENCE` seconds they start their
        own workers); an all-at-once step, one stall by choice, waits for them within its
        epoch if need be."""
        if plan.strategy == "all_at_once":
            return False
        return max(s.parts for s in due) > runtime.parts and not runtime.workers_ready()

    def behind(self) -> bool:
        """Whether a paced caller came back behind: idle under :data:`BEHIND` of a steady
        epoch since the previous epoch ended (its epochs are late already)."""
        return self.paced() and (self.idle or 0.0) < BEHIND * self.typical()

    def no_room(self, plan, due: list) -> bool:
        """Whether the ``due`` steps should wait an epoch because a paced caller came back
        behind (:meth:`behind`)."""
        if plan.strategy == "all_at_once" or plan.waiting >= PACE_WAIT:
            return False
        return self.behind()
