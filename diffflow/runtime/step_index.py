"""A big batch's moving rows, gathered by the plan step that moves them (rescaling).

A rescaling plan (:mod:`diffflow.rescale`) moves each bin at one step.  Rows of
a bin are spread over a big batch (batches are sorted by key, bins are key
hashes), so cutting a step's rows out of a 10M-row batch at the step itself
would be a gather of scattered rows: cache misses on the step's critical path.
A :class:`StepIndex` does that work ahead, at the epochs before the step
(:func:`diffflow.runtime.migrate.prepare` gives it a budget per epoch): one
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
>>> index.group(0)[0].ravel().tolist(), work_done(batch, (1, step_of_bin)) == 3 * 8
([0, 1, 2], True)
"""
from __future__ import annotations

import numpy as np

from ..arrangements import columnar
from ..arrangements.batch import Batch
from ..lattice import Antichain
from .routing import BINS


class StepIndex:
    """The moving rows of one batch for one plan, grouped by step: built a slice at a time
    (``phase``: hashing is the batch's, then ``"count"``, ``"scatter"``, ``"done"``)."""

    __slots__ = ("key", "phase", "at", "counts", "offsets", "cursor", "rows", "times",
                 "diffs", "bins")

    def __init__(self, key, groups: int):
        self.key, self.phase, self.at = key, "count", 0
        self.counts = np.zeros(groups + 1, np.int64)  # [0]: rows no step moves
        self.offsets = self.cursor = self.rows = self.times = self.diffs = self.bins = None

    def group(self, step: int) -> tuple:
        """``(rows, times, diffs, bins)`` of the rows ``step`` moves (views, key order)."""
        lo, hi = int(self.offsets[step]), int(self.offsets[step + 1])
        return self.rows[lo:hi], self.times[lo:hi], self.diffs[lo:hi], self.bins[lo:hi]


def moved_already(plan) -> StepIndex:
    """The index of a batch imported by one of ``plan``'s steps: none of its rows moves
    again (a plan moves each bin once).  One object per plan, shared by every such
    batch, so a merge of two of them keeps it (:func:`diffflow.arrangements.batch.merge`)
    and the imports a plan brings in are never indexed."""
    key, step_of_bin = plan
    if key not in _MOVED_ALREADY:
        index = StepIndex(key, int(step_of_bin.max()) + 1)
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
    counting and copying a row cost one each); ``None`` until the index is complete."""
    key, step_of_bin = plan
    index = batch._step_index
    if index is None or index.key != key:
        index = batch._step_index = StepIndex(key, int(step_of_bin.max()) + 1)
    if index.phase == "done":
        return index
    n = len(batch)
    budget = 3 * n if budget is None else budget
    budget -= batch.fill_bins(BINS, budget)
    if not batch.bins_ready(BINS):
        return None
    kernels, bins = columnar._k(), batch._bins[1]
    while budget > 0 and index.phase != "done":
        stop = min(n, index.at + budget)
        if index.phase == "count":
            kernels.count_groups(bins, step_of_bin, index.at, stop, index.counts)
        else:
            kernels.scatter_rows_by_group(bins, step_of_bin, index.at, stop, index.cursor,
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
            index.phase, index.at = "scatter", 0
        else:
            index.phase, index.cursor = "done", None
    return index if index.phase == "done" else None


def warm_up() -> None:
    """Load the indexing kernels now (numba reads them from its cache on first call, tens of
    milliseconds each) rather than in the first epoch that prepares a plan."""
    rows = np.zeros((1, 1), np.int64)
    t = Antichain.minimum(1)
    build(Batch(rows, rows.copy(), np.ones(1, np.int64), 1, t, t), (0, np.zeros(BINS, np.int32)))


def work_done(batch: Batch, plan) -> int:
    """Rows of indexing work done on ``batch`` for ``plan`` (of ``3 * len(batch)``)."""
    hashed = batch._bins[2] if batch._bins is not None and batch._bins[0] == BINS else 0
    index = batch._step_index
    if index is None or index.key != plan[0]:
        return hashed
    return hashed + {"count": index.at, "scatter": len(batch) + index.at}.get(
        index.phase, 2 * len(batch))


def is_built(batch: Batch, plan) -> bool:
    """Whether ``batch``'s index for ``plan`` is complete."""
    index = batch._step_index
    return index is not None and index.key == plan[0] and index.phase == "done"
