"""``join``: the equi-join of two arranged collections.

Both inputs are arrangements keyed by the join key and co-partitioned (the
same key hash), so each partition joins locally.  For new left batches
``dA`` and new right batches ``dB`` the output change is

    (A + dA)(B + dB) - AB  =  dA (B + dB)  +  A dB

A shared arrangement's spine already holds the new batches when the join runs
(the arrange operator appends before it emits): the first term reads the
right spine whole, the second the left spine without dA's batches.  When the
spine has merged a new batch into an older one, the join computes
``dA (B + dB) + (A + dA) dB - dA dB`` instead, which emits the ``dA dB``
rows three times (twice added, once removed).  An
output update's time is the join (lattice least upper bound) of the input
times and its diff the product of the diffs.

For each (delta, batch) pair the tactic is chosen by size: vectorised binary
search of the delta's keys into the batch (``O(m log n)``, tiny deltas
against big traces: the low-latency path), or a linear merge of the two
sorted key columns (``O(n + m)``, bulk loads).  Either gives runs of equal
keys; once the kernels are loaded the output is written straight from them
(:func:`matching_ranges`), the numpy tactic and batches with dead bins
(rescaling) list the matching pairs first (:func:`matching_pairs`).
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar, small
from diffflow.arrangements.batch import Batch
from diffflow.arrangements.chunked import consolidate_chunks
from diffflow.arrangements.small import expand_ranges
from diffflow.arrangements.updates import Updates, concat
from diffflow.common import memory_budget
from diffflow.operators.base import Operator


def matching_pairs(probe_keys: np.ndarray, batch_keys: np.ndarray):
    """Index pairs ``(i, j)`` with ``probe_keys[i] == batch_keys[j]``; both sorted by key
    (the pairs come in no particular order).

    >>> i, j = matching_pairs(np.array([[1], [3]]), np.array([[1], [1], [2], [3]]))
    >>> i.tolist(), j.tolist()
    ([0, 0, 1], [0, 1, 3])
    """
    m, n = len(probe_keys), len(batch_keys)
    if m == 0 or n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # binary-search the smaller side's keys in the larger side when that beats one merge
    # pass: a one-row delta against a big trace batch costs O(log n), not O(n)
    searched = _searched(m, n)
    if searched == "batch":
        lo, hi = columnar.key_ranges(batch_keys, probe_keys)
        return expand_ranges(lo, hi)
    if searched == "probe":
        lo, hi = columnar.key_ranges(probe_keys, batch_keys)
        j, i = expand_ranges(lo, hi)
        return i, j
    return columnar.match_sorted(probe_keys, batch_keys)


_KERNELS = None


def _kernels():
    """The numba kernel, imported (and compiled) on first use."""
    global _KERNELS
    if _KERNELS is None:
        from diffflow.operators import _join_kernels
        _KERNELS = _join_kernels
    return _KERNELS


def _searched(m: int, n: int):
    """Which side's keys to binary-search in the other's, for ``m`` probe and ``n`` batch
    rows: "batch" (each probe row's run in the batch), "probe", or None (one merge pass)."""
    if m <= n and m * max(1, n.bit_length()) < n + m:
        return "batch"
    if n < m and n * max(1, m.bit_length()) < n + m:
        return "probe"
    return None


def matching_ranges(probe_rows: np.ndarray, batch_rows: np.ndarray, width: int):
    """``(probe_first, lo, hi)``: the runs of rows with equal keys (first ``width``
    columns; both sorted), as ranges ``[lo, hi)`` of the batch's rows per probe row
    (``probe_first``) or of the probe's rows per batch row -- the smaller side is searched
    in the larger when that beats a merge pass (which gives ranges per probe row).  Reads
    the rows in place (no key copies); needs the kernels loaded (:func:`small.loaded`).

    >>> columnar.load_kernels()
    >>> matching_ranges(np.array([[1, 7], [3, 7]]), np.array([[1, 0], [1, 1], [2, 0], [3, 0]]),
    ...                 1)[1:]
    (array([0, 3]), array([2, 4]))
    """
    searched = _searched(len(probe_rows), len(batch_rows))
    if searched == "batch":
        return (True,) + columnar.prefix_key_ranges(batch_rows, probe_rows, width)
    if searched == "probe":
        return (False,) + columnar.prefix_key_ranges(probe_rows, batch_rows, width)
    return (True,) + columnar.merge_prefix_ranges(probe_rows, batch_rows, width)


def _sources(left, key_width: int, perm: np.ndarray) -> np.ndarray:
    """Each output column's column in the left row followed by the right row (the right
    row's key columns are skipped: its sources shift past them), for the join kernels."""
    lw = left.rows.shape[1]
    return np.where(perm < lw, perm, perm + key_width)


def _reserve(n: int, total: int, left, perm: np.ndarray, pending) -> None:
    """Check ``n`` output rows (of ``total`` this join of two batches makes) fit under the
    memory limit, with what the step holds already (``pending()``)."""
    if memory_budget.limit() is None:
        return
    nbytes = n * 8 * (len(perm) + left.times.shape[1] + 1)
    what = (f"join output ({total:,} rows)" if n == total else
            f"join output (the next {n:,} of {total:,} rows, "
            f"{memory_budget.format_size(total * nbytes // n)} in all before consolidation)")
    memory_budget.reserve(nbytes, what, pending=pending() if pending is not None else 0)


def _output(left, perm: np.ndarray, n: int):
    """Empty ``(rows, times, diffs)`` for ``n`` joined updates."""
    return (np.empty((n, len(perm)), np.int64), np.empty((n, left.times.shape[1]), np.int64),
            np.empty(n, np.int64))


def join_updates(left, right, key_width: int, perm: np.ndarray) -> Updates:
    """Join two key-sorted batches: rows ``left + right[key_width:]`` reordered by ``perm``."""
    pieces = list(join_pieces(left, right, key_width, perm))
    return pieces[0] if pieces else None


def join_pieces(left, right, key_width: int, perm: np.ndarray, limit: int | None = None,
                pending=None):
    """:func:`join_updates` as chunks of about ``limit`` rows at most (whole runs of a probe
    row; None: one chunk), so a caller can consolidate a big join's output as it comes.
    Each chunk is reserved under the memory limit before it is written
    (:mod:`diffflow.common.memory_budget`), with ``pending()`` the bytes the caller still
    holds of earlier chunks.

    >>> columnar.load_kernels()
    >>> a = Batch.from_updates(Updates.from_lists([(1, 5), (2, 6)], [(0,)] * 2, [1, 1]), 1,
    ...                        None, None)
    >>> [u.rows.tolist() for u in join_pieces(a, a, 1, np.array([0, 1, 2]), limit=1)]
    [[[1, 5, 5]], [[2, 6, 6]]]
    """
    if small.loaded() and left.dead is None and right.dead is None:
        # the kernels write the output straight from the runs of equal keys: no pair arrays
        # (16 bytes a pair, plus numpy's temporaries to expand them), no key column copies
        left_first, lo, hi = matching_ranges(left.rows, right.rows, key_width)
        ends = np.cumsum(hi - lo)
        total = int(ends[-1]) if len(ends) else 0
        if not total:
            return
        source = _sources(left, key_width, perm)
        probe, batch = (left, right) if left_first else (right, left)
        cuts = [0, len(lo)]
        if limit is not None and total > limit:
            cuts = np.unique(np.concatenate([[0], np.searchsorted(
                ends, np.arange(limit, total, limit), side="right"), [len(lo)]])).tolist()
        for a, b in zip(cuts, cuts[1:]):
            n = int(ends[b - 1] - (ends[a - 1] if a else 0))
            if not n:
                continue
            _reserve(n, total, left, perm, pending)
            rows, times, diffs = _output(left, perm, n)
            _kernels().emit_ranges(probe.rows[a:b], probe.times[a:b], probe.diffs[a:b],
                                   batch.rows, batch.times, batch.diffs, lo[a:b], hi[a:b],
                                   left_first, source, rows, times, diffs)
            yield Updates(rows, times, diffs)
        return
    li, ri = matching_pairs(left.keys, right.keys)
    if len(li) and left.dead is not None:  # rows of bins that moved to another partition
        keep = left.live_mask(li)
        li, ri = li[keep], ri[keep]
    if len(li) and right.dead is not None:
        keep = right.live_mask(ri)
        li, ri = li[keep], ri[keep]
    if len(li) == 0:
        return
    # the right row's key columns are skipped: shift its sources past them
    lw = left.rows.shape[1]
    _reserve(len(li), len(li), left, perm, pending)
    if small.prefer(len(li), small.SMALL, len(li)):
        # column by column: np.take of a column is ~5x faster than gathering whole rows
        rows = np.empty((len(li), len(perm)), np.int64)
        for j, c in enumerate(perm.tolist()):
            rows[:, j] = (np.take(left.rows[:, c], li) if c < lw else
                          np.take(right.rows[:, c - lw + key_width], ri))
        times = np.take(left.times, li, axis=0)
        np.maximum(times, np.take(right.times, ri, axis=0), out=times)
        diffs = np.take(left.diffs, li)
        diffs *= np.take(right.diffs, ri)
        yield Updates(rows, times, diffs)
        return
    source, (rows, times, diffs) = _sources(left, key_width, perm), _output(left, perm, len(li))
    _kernels().emit_pairs(left.rows, left.times, left.diffs, right.rows, right.times,
                          right.diffs, li, ri, source, rows, times, diffs)
    yield Updates(rows, times, diffs)


#: rows a join step emits before it consolidates them (and then whenever what came since
#: outgrows what was consolidated): a closure's round derives each row many times over
COMPACT_ROWS = 1 << 18


class Compacting:
    """A join step's output chunks, consolidated as they come once they are many.

    Whenever the chunks not yet consolidated hold :data:`COMPACT_ROWS` rows and as many as
    the consolidated part, all are consolidated into one chunk: a step that derives each
    row ``k`` times holds about ``2 / k`` of its raw output, for sorting about twice the
    rows the next arrange would sort (a consolidated chunk alone costs that arrange one
    O(n) pass).  A consolidation that keeps nearly every row stops the rest of the step's.

    >>> c = Compacting(1, 1); c.limit = 3
    >>> c.extend([Updates.from_lists([(3,), (1,), (3,)], [(0,)] * 3, [1, 1, 1])] * 3)
    >>> [(u.rows.ravel().tolist(), u.diffs.tolist()) for u in c.chunks()]
    [([1, 3], [3, 6])]
    """

    def __init__(self, width: int, dim: int):
        self.width, self.dim, self.limit = width, dim, COMPACT_ROWS
        self.done: Updates | None = None  # the consolidated part
        self.fresh: list = []
        self.fresh_rows = 0
        self.nbytes = 0  # of the chunks held (for the memory limit)

    def extend(self, chunks) -> None:
        for u in chunks:
            if u is None or not len(u):
                continue
            self.fresh.append(u)
            self.fresh_rows += len(u)
            self.nbytes += u.rows.nbytes + u.times.nbytes + u.diffs.nbytes
            if self.fresh_rows >= max(self.limit, len(self.done) if self.done else 0):
                self._consolidate()

    def _consolidate(self) -> None:
        parts = ([self.done] if self.done is not None else []) + self.fresh
        before = sum(len(p) for p in parts)
        self.done = Updates(*consolidate_chunks(parts, self.width, self.dim))
        self.fresh, self.fresh_rows = [], 0
        self.nbytes = self.done.rows.nbytes + self.done.times.nbytes + self.done.diffs.nbytes
        if len(self.done) > 0.9 * before:  # hardly any row repeats: not worth the sorts
            self.limit = 1 << 62

    def held(self) -> int:
        """Bytes of the chunks held so far."""
        return self.nbytes

    def chunks(self) -> list:
        """The step's output: the consolidated chunk, then the chunks since."""
        return ([self.done] if self.done is not None and len(self.done) else []) + self.fresh


class JoinOp(Operator):
    """Join the batches arriving on two arranged inputs against the other side's spine."""

    kind = "join"
    frontier_blind = True

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.key_width = node.params["key_width"]
        self.perm = np.asarray(node.params["perm"], dtype=np.int64)
        self.left_spine = ctx.peer(node.inputs[0]).spine
        self.right_spine = ctx.peer(node.inputs[1]).spine

    def project(self, plan) -> None:
        """Emit only the output columns ``plan`` (a pure projection read this join)."""
        self.perm = self.perm[np.asarray(plan, dtype=np.int64)]

    def step(self, inputs, frontiers):
        kk, perm = self.key_width, self.perm
        d_left = self._delta(inputs, 0)
        d_right = self._delta(inputs, 1)
        out = Compacting(len(perm), self.ctx.dim)
        held = out.held  # (what the join holds counts under a memory limit)
        if d_left is not None:
            for batch in self.right_spine.batches:
                out.extend(join_pieces(d_left, batch, kk, perm, COMPACT_ROWS, held))
        if d_right is not None:
            fresh = _fresh_batches(inputs[0], self.left_spine) if d_left is not None else set()
            if fresh is not None:
                # dA (B + dB) + A dB: the left spine without dA's batches is A, so no term cancels
                for batch in self.left_spine.batches:
                    if id(batch) not in fresh:
                        out.extend(join_pieces(batch, d_right, kk, perm, COMPACT_ROWS, held))
            else:  # dA was merged into older batches: (A + dA) dB - dA dB
                for batch in self.left_spine.batches:
                    out.extend(join_pieces(batch, d_right, kk, perm, COMPACT_ROWS, held))
                out.extend(u.negated() for u in join_pieces(d_left, d_right, kk, perm,
                                                            pending=held))
        return out.chunks()

    def _delta(self, inputs, port):
        """The new batches of one port, as one key-sorted batch."""
        chunks = [c for c in inputs[port] if len(c)]
        if not chunks:
            return None
        if len(chunks) == 1 and isinstance(chunks[0], Batch):
            return chunks[0]
        merged = concat([c.updates() if isinstance(c, Batch) else c for c in chunks],
                        chunks[0].width, self.ctx.dim)
        return Batch.from_updates(merged, self.key_width, None, None)


def _fresh_batches(chunks, spine):
    """Ids of the spine batches that are exactly this step's new chunks, or None if some are not.

    The arrange before a join appends its batches to the shared spine before
    emitting them, so usually the spine holds each new chunk as a batch of its
    own; a spine that merged one into an older batch cannot be split again.
    """
    members = {id(b) for b in spine.batches}
    fresh = set()
    for chunk in chunks:
        if not len(chunk):
            continue
        if not isinstance(chunk, Batch) or id(chunk) not in members:
            return None
        fresh.add(id(chunk))
    return fresh
