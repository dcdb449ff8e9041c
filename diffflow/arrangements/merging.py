"""Fuelled merges: two adjacent batches merged a slice of keys at a time.

A spine merges its big batches in the background, as Differential Dataflow's
spines do: every insert pays some merge work ("fuel") in proportion to its own
size, so no single insert pays for merging the whole trace at once (a merge of
millions of rows would stall the epoch that triggered it).  Until a merge is
done its two inputs stay in the spine and readers read them both; the output,
written into one buffer allocated up front, is seen by nobody until it is
whole.

Each slice ends at a key boundary in both inputs, so every key's updates are
summed, advanced and consolidated within one slice, and the slices, written
one after the other, form a consolidated batch.  :func:`diffflow.arrangements.
batch.merge` is the reference: a fuelled merge, whatever the fuel, produces
exactly its result.

Rescaling marks bins of an input *dead* (their rows left the partition) while a
merge may be half way: slices written before that still hold those rows, so
the result carries the bins that died during the merge as its own dead bins.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar, small
from diffflow.arrangements.batch import Batch, died_since, inherit
from diffflow.common import memory_budget
from diffflow.lattice import Antichain, advance_by

# the smallest slice worth a kernel call (its rows of fuel are spent at once)
MIN_SLICE = 4096


class FuelledMerge:
    """The merge of ``older`` and ``newer`` (adjacent, ``older`` first), compacted to
    ``frontier``, done as :meth:`work` is given fuel.

    >>> from diffflow.arrangements.updates import Updates
    >>> lo, mid, hi = (Antichain([(t,)]) for t in (0, 1, 2))
    >>> a = Batch.from_updates(Updates.from_lists([(1,), (3,)], [(0,), (0,)], [1, 1]), 1, lo, mid)
    >>> b = Batch.from_updates(Updates.from_lists([(2,), (3,)], [(1,), (1,)], [1, 1]), 1, mid, hi)
    >>> m = FuelledMerge(a, b, lo)
    >>> m.work(100)   # (a slice is at least MIN_SLICE rows: this finishes it)
    True
    >>> merged = m.result(lo, hi)
    >>> merged.rows.tolist(), merged.times.tolist()
    ([[1], [2], [3], [3]], [[0], [1], [0], [1]])
    """

    __slots__ = ("older", "newer", "frontier", "_dead", "_out", "_at", "_written", "_bins")

    def __init__(self, older: Batch, newer: Batch, frontier: Antichain):
        self.older, self.newer, self.frontier = older, newer, frontier
        self._dead = (older.dead, newer.dead)  # the dead bins when the merge began
        cap = len(older) + len(newer)
        memory_budget.reserve(cap * 8 * (older.width + older.dim + 1),
                              "a merge of two trace batches ({:,} rows)", cap)
        self._out = (np.empty((cap, older.width), np.int64),
                     np.empty((cap, older.dim), np.int64), np.empty(cap, np.int64))
        self._bins = None  # (bin count, the result's bins, how many are hashed): see below
        self._at = [0, 0]  # next row of each input
        self._written = 0

    def __len__(self) -> int:
        return len(self.older) + len(self.newer)

    def buffer_bytes(self) -> int:
        """Bytes of the result's buffer (allocated whole when the merge starts)."""
        return 0 if self._out is None else sum(a.nbytes for a in self._out)

    @property
    def left(self) -> int:
        """Input rows not merged yet."""
        return len(self) - self._at[0] - self._at[1]

    def holds(self, batch: Batch) -> bool:
        return batch is self.older or batch is self.newer

    def work(self, fuel: int) -> bool:
        """Merge about ``fuel`` more input rows (at least :data:`MIN_SLICE`, whole keys);
        True once every row is merged."""
        inputs = (self.older, self.newer)
        while fuel > 0 and self.left:
            if self.left <= max(fuel, MIN_SLICE):
                stops = [len(self.older), len(self.newer)]
            else:
                stops = self._slice_ends(inputs, max(fuel, MIN_SLICE) // 2)
            fuel -= stops[0] - self._at[0] + stops[1] - self._at[1]
            self._merge_slice(inputs, stops)
        return not self.left

    def _slice_ends(self, inputs, half: int) -> list:
        """Where the next slice ends in each input: after every row whose key is at most
        the smaller of the keys ``half`` rows on in each input (so each input gives at
        most ``half`` rows plus one key's, and at least one row)."""
        width = self.older.key_width
        if not small.loaded():  # a bisection in Python (O(log n) rows): no kernel to load
            bound = min(tuple(batch.rows[min(len(batch) - 1, at + half), :width].tolist())
                        for batch, at in zip(inputs, self._at) if at < len(batch))
            return [small.prefix_upper_bound(batch.rows, at, len(batch), bound)
                    for batch, at in zip(inputs, self._at)]
        kernels = columnar._k()
        bound = None
        for batch, at in zip(inputs, self._at):
            if at < len(batch):
                probe = min(len(batch) - 1, at + half)
                if bound is None or kernels._cmp_prefix(batch.rows, probe, bound[0], bound[1],
                                                        width) < 0:
                    bound = (batch.rows, probe)
        return [kernels.prefix_upper_bound(batch.rows, at, len(batch), bound[0], bound[1], width)
                for batch, at in zip(inputs, self._at)]

    def _merge_slice(self, inputs, stops) -> None:
        parts = []
        for batch, at, stop in zip(inputs, self._at, stops):
            rows, times, diffs = batch.rows[at:stop], batch.times[at:stop], batch.diffs[at:stop]
            keep = batch.live_mask(np.arange(at, stop)) if batch.dead is not None else None
            if keep is not None:
                rows, times, diffs = rows[keep], times[keep], diffs[keep]
            if batch.since != self.frontier and len(diffs):
                rows, times, diffs = columnar.consolidate(rows, advance_by(times, self.frontier),
                                                          diffs)
            parts.append((rows, times, diffs))
        (ra, ta, da), (rb, tb, db) = parts
        out_r, out_t, out_d = self._out
        w = self._written
        n = len(da) + len(db)
        if small.prefer(n, small.SMALL, n):
            rows, times, diffs = small.merge_consolidated(ra, ta, da, rb, tb, db)
            m = len(diffs)
            out_r[w:w + m], out_t[w:w + m], out_d[w:w + m] = rows, times, diffs
            self._written += m
        else:
            self._written += columnar._k().merge_consolidated(ra, ta, da, rb, tb, db,
                                                              out_r[w:], out_t[w:], out_d[w:])
        self._hash_bins(2 * (self._written - w))
        self._at = list(stops)

    def _hash_bins(self, budget: int) -> None:
        """Once an input has dead bins (rescaling moves bins away), hash up to ``budget`` of
        the result's rows written so far: bins that die during the merge are dead in the
        result, and counting its rows of them needs every row's bin -- hashed along with the
        slices (twice their pace, to catch up with rows written before), not all at once
        when the merge is done."""
        if self._bins is None:
            dead = next((b.dead for b in (self.older, self.newer) if b.dead is not None), None)
            if dead is None:
                return
            self._bins = (len(dead), np.empty(len(self), np.int32), 0)
        count, bins, hashed = self._bins
        stop = min(self._written, hashed + budget)
        if stop > hashed:
            columnar.bin_of_prefix(self._out[0], self.older.key_width, count, bins, hashed,
                                   stop)
            self._bins = (count, bins, stop)

    def result(self, lower: Antichain, upper: Antichain) -> Batch:
        """The merged batch, described ``[lower, upper)`` (call once :meth:`work` is done).
        Bins that died in an input while the merge ran are dead in the result."""
        assert not self.left, "the merge is not done"
        self._hash_bins(self._written)  # (what the slices left: rows written early)
        rows, times, diffs = columnar._finish(self._out, self._written)
        self._out = None
        merged = inherit(Batch(rows, times, diffs, self.older.key_width, lower, upper,
                               self.frontier), self.older, self.newer)
        if self._bins is not None:
            count, bins, _ = self._bins
            merged._bins, self._bins = (count, columnar.trim(bins, len(merged)), len(merged)), None
        died = [died_since(before, batch.dead)
                for batch, before in zip((self.older, self.newer), self._dead)]
        died = [d for d in died if d is not None]
        return merged.mark_died(None if not died else died[0] if len(died) == 1
                                else died[0] | died[1])
