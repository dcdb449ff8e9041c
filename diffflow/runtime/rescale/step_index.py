"""A big batch's moving rows, gathered by the plan step that moves them (rescaling).

A rescaling plan (:mod:`diffflow.runtime.rescale.plans`) moves each bin at one step.  Rows of
a bin are spread over a big batch (batches are sorted by key, bins are key
hashes), so cutting a step's rows out of a 10M-row batch at the step itself
would be a gather of scattered rows: cache misses on the step's critical path.
A :class:`StepIndex` does that work ahead, at the epochs before the step
(:func:`diffflow.runtime.rescale.migrate.prepare` gives it a budget per epoch): one
stable counting sort copies every row whose bin some step moves into arrays
grouped by step, each group in key order, with the rows' bins.  A step then
sends a contiguous slice (:meth:`StepIndex.group`), and marks the bins dead in
the batch instead of copying it.  Batches are immutable, so the index stays
valid for the batch's life; it is rebuilt only for a new plan.

>>> import numpy as np
>>> from diffflow.arrangements.batch import Batch
>>> from diffflow.lattice import Antichain
>>> rows = np.arange(8).reshape(-1, 1); t = Antichain.minimum(1)
>>> batch = Batch(rows, np.zeros((8, 1), np.int64), np.ones(8, np.int64), 1, t, t)
>>> step_of_bin = np.full(BINS, -1, np.int32); step_of_bin[batch.bins(BINS)[:3]] = 0
>>> index = build(batch, (1, step_of_bin))
>>> index.group(0)[0].ravel().tolist(), work_done(batch, (1, step_of_bin)) == 3 * 8 + 3
([0, 1, 2], True)
"""
from __future__ import annotations

import weakref

import numpy as np

from diffflow.arrangements import grouping
from diffflow.arrangements.batch import Batch
from diffflow.lattice import Antichain, advance_by
from diffflow.runtime.routing import BINS

INDEX_AT_MERGE = 1 << 14  # a merge input this small, not indexed yet, is indexed at the merge
MAX_PARTS = 16  # a merged batch's index keeps at most this many parts (smallest joined)
_ACTIVE: dict = {}  # plan key -> the engines of this process running it (weak: set_plan)


class StepIndex:
    """The moving rows of one batch for one plan, grouped by step: built a slice at a time
    (``phase``: hashing is the batch's, then ``"count"``, ``"touch"``, ``"scatter"``,
    ``"done"``), or,
    for a merged batch, the ``parts`` of its inputs' indexes (:func:`merged`)."""

    __slots__ = ("key", "phase", "at", "counts", "offsets", "cursor", "rows", "times",
                 "diffs", "bins", "since", "step_of_bin", "parts")

    def __init__(self, key, groups: int, step_of_bin=None, since=None):
        self.key, self.phase, self.at = key, "count", 0
        self.counts = np.zeros(groups + 1, np.int64)  # [0]: rows no step moves
        self.offsets = self.cursor = self.rows = self.times = self.diffs = self.bins = None
        self.step_of_bin, self.since = step_of_bin, since  # (the rows' times are at since)
        self.parts = None  # [(leaf index, bins dead in its batch or None)]: a merged batch's

    def group(self, step: int) -> tuple:
        """``(rows, times, diffs, bins)`` of the rows ``step`` moves (views, key order) of a
        batch's own index (not a merged one's: :meth:`pieces`)."""
        if step + 1 >= len(self.offsets):  # (no row of this batch moves at that step)
            return self.rows[:0], self.times[:0], self.diffs[:0], self.bins[:0]
        lo, hi = int(self.offsets[step]), int(self.offsets[step + 1])
        return self.rows[lo:hi], self.times[lo:hi], self.diffs[lo:hi], self.bins[lo:hi]

    def merged(self, older: Batch, newer: Batch, merged_batch: Batch) -> StepIndex | None:
        """The index of the merge of ``older`` and ``newer`` (:func:`merged`)."""
        return merged(older, newer, merged_batch)

    def pieces(self, step: int):
        """``(rows, times, diffs, bins, dead, since)`` per part: the rows ``step`` moves,
        less those of bins in ``dead`` (None: none), their times at ``since``."""
        for leaf, dead in [(self, None)] if self.parts is None else self.parts:
            yield leaf.group(step) + (dead, leaf.since)


def moved_already(plan) -> StepIndex:
    """The index of a batch imported by one of ``plan``'s steps: none of its rows moves
    again (a plan moves each bin once).  One object per plan, shared by every such
    batch, so a merge of two of them keeps it (:func:`diffflow.arrangements.batch.merge`)
    and the imports a plan brings in are never indexed."""
    key, step_of_bin = plan
    if key not in _MOVED_ALREADY:
        index = StepIndex(key, int(step_of_bin.max()) + 1, step_of_bin)
        index.phase, index.offsets = "done", np.zeros(len(index.counts), np.int64)
        index.rows = index.times = np.zeros((0, 0), np.int64)
        index.diffs, index.bins = np.zeros(0, np.int64), np.zeros(0, np.int32)
        _MOVED_ALREADY[key] = index
        while len(_MOVED_ALREADY) > 16:  # (plans of dataflows rescaling in this process)
            del _MOVED_ALREADY[next(iter(_MOVED_ALREADY))]
    return _MOVED_ALREADY[key]


_MOVED_ALREADY: dict = {}  # plan key -> its shared empty index, the latest plans


def build(batch: Batch, plan, budget: int | None = None) -> StepIndex | None:
    """``batch``'s :class:`StepIndex` for ``plan`` (``(key, step_of_bin)``), built once per
    batch and plan.  With ``budget``, at most about that many rows of work now (hashing,
    counting, touching and copying a row cost one each: :func:`work_done`); ``None`` until
    the index is complete."""
    key, step_of_bin = plan
    index = batch._step_index
    if index is None or index.key != key:
        index = batch._step_index = StepIndex(key, int(step_of_bin.max()) + 1, step_of_bin,
                                              batch.since)
    if index.phase == "done":
        return index
    n = len(batch)
    budget = 4 * n + 1 if budget is None else budget  # (at most 4 per row: work_done)
    budget -= batch.fill_bins(BINS, budget)
    if not batch.bins_ready(BINS):
        return None
    bins = batch._bins[1]
    while budget > 0 and index.phase != "done":
        if index.phase == "touch":  # the fresh arrays' pages, a slice at a time (below)
            m = len(index.diffs)
            stop = min(m, index.at + budget)
            for array in (index.rows, index.times, index.diffs, index.bins):
                array[index.at:stop] = 0
            budget -= stop - index.at
            index.at = stop
            if stop == m:
                index.phase, index.at = "scatter", 0
            continue
        stop = min(n, index.at + budget)
        if index.phase == "count":
            grouping.count_groups(bins, step_of_bin, index.at, stop, index.counts)
        else:
            grouping.scatter_rows_by_group(bins, step_of_bin, index.at, stop, index.cursor,
                                           batch.rows, batch.times, batch.diffs, index.rows,
                                           index.times, index.diffs, index.bins)
        budget -= stop - index.at
        index.at = stop
        if stop < n:
            break
        if index.phase == "count":
            index.offsets = np.concatenate([[0], np.cumsum(index.counts[1:])])
            m = int(index.offsets[-1])
            index.cursor = index.offsets[:-1].copy()
            index.rows = np.empty((m, batch.rows.shape[1]), np.int64)
            index.times = np.empty((m, batch.times.shape[1]), np.int64)
            index.diffs = np.empty(m, np.int64)
            index.bins = np.empty(m, np.int32)
            # (the scatter writes all over them at once: their first touch, which maps
            # and zeroes every page -- 2 MB ones here -- would land on one call)
            index.phase, index.at = "touch", 0
        else:
            index.phase, index.cursor = "done", None
    return index if index.phase == "done" else None


def activate(key, engine, running: bool = True) -> None:
    """Note that ``engine`` runs plan ``key`` (or, ``running=False``, no longer does): merges
    keep indexes only of plans some live engine of this process runs (:func:`merged`)."""
    engines = _ACTIVE.setdefault(key, weakref.WeakSet())
    if running:
        engines.add(engine)
    else:
        engines.discard(engine)
    for old in [k for k, e in _ACTIVE.items() if not e]:
        del _ACTIVE[old]


def _running(key) -> bool:
    return bool(_ACTIVE.get(key))


def merged(older: Batch, newer: Batch, merged_batch: Batch) -> StepIndex | None:
    """The index of ``merged_batch``, the merge of ``older`` and ``newer``, made of theirs
    (so a merge never sends a plan's indexing back to the start): the parts of both, each
    with the bins dead in its batch (the merge dropped their rows, which must not move
    again), an input of at most :data:`INDEX_AT_MERGE` rows without an index indexed now.
    ``None`` when the plan is over or a bigger input is not indexed yet (the result is
    then indexed as any batch).  Past :data:`MAX_PARTS` parts the smallest are joined
    into one, at the merge's ``since``."""
    running = [i for i in (older._step_index, newer._step_index)
               if i is not None and i.step_of_bin is not None and _running(i.key)]
    if not running:
        return None
    index = running[0]
    plan = (index.key, index.step_of_bin)
    parts = []
    for batch in (older, newer):
        own = batch._step_index
        if not len(batch):
            continue
        if own is None or own.key != index.key:
            if len(batch) > INDEX_AT_MERGE:
                return None
            own = build(batch, plan)
        elif own.phase != "done":
            return None
        for leaf, dead in [(own, None)] if own.parts is None else own.parts:
            if len(leaf.diffs):
                mask = dead if batch.dead is None else \
                    batch.dead if dead is None else dead | batch.dead
                parts.append((leaf, mask))
    result = StepIndex(index.key, len(index.counts) - 1, index.step_of_bin, merged_batch.since)
    result.phase, result.offsets = "done", np.zeros(len(index.counts), np.int64)
    if len(parts) > MAX_PARTS:
        parts.sort(key=lambda part: -len(part[0].diffs))
        keep = MAX_PARTS // 2
        parts = parts[:keep] + [(_joined(parts[keep:], merged_batch.since), None)]
    result.parts = parts
    return result


def _joined(parts: list, since) -> StepIndex:
    """One leaf index holding the rows of ``parts`` (less their dead bins' rows), grouped by
    step, times advanced to ``since``."""
    groups = max(len(leaf.offsets) for leaf, _ in parts) - 1
    chunks = []
    for leaf, dead in parts:
        step = np.repeat(np.arange(len(leaf.offsets) - 1), np.diff(leaf.offsets))
        keep = slice(None) if dead is None else ~dead[leaf.bins]
        chunks.append((leaf.rows[keep], leaf.times[keep], leaf.diffs[keep], leaf.bins[keep],
                       step[keep]))
    rows, times, diffs, bins, step = (np.concatenate(x) for x in zip(*chunks))
    order = np.argsort(step, kind="stable")
    leaf = StepIndex(parts[0][0].key, groups, parts[0][0].step_of_bin, since)
    leaf.phase = "done"
    leaf.offsets = np.concatenate([[0], np.cumsum(np.bincount(step, minlength=groups))])
    leaf.rows, leaf.diffs, leaf.bins = rows[order], diffs[order], bins[order]
    leaf.times = advance_by(times[order], since) if len(times) else times
    return leaf


def warm_up() -> None:
    """Load the indexing kernels now (numba reads them from its cache on first call, tens of
    milliseconds each) rather than in the first epoch that prepares a plan."""
    rows = np.zeros((1, 1), np.int64)
    t = Antichain.minimum(1)
    build(Batch(rows, rows.copy(), np.ones(1, np.int64), 1, t, t), (0, np.zeros(BINS, np.int32)))


def work_done(batch: Batch, plan) -> int:
    """Rows of indexing work done on ``batch`` for ``plan``: of ``3 * len(batch)`` plus the
    moving rows (hashing, counting and scattering a row, touching a moving row's place)."""
    hashed = batch._bins[2] if batch._bins is not None and batch._bins[0] == BINS else 0
    index = batch._step_index
    if index is None or index.key != plan[0]:
        return hashed
    n = len(batch)
    moving = 0 if index.offsets is None else int(index.offsets[-1])
    return hashed + {"count": index.at, "touch": n + index.at,
                     "scatter": n + moving + index.at}.get(index.phase, 2 * n + moving)


def is_built(batch: Batch, plan) -> bool:
    """Whether ``batch``'s index for ``plan`` is complete."""
    index = batch._step_index
    return index is not None and index.key == plan[0] and index.phase == "done"
