"""Consolidate a list of chunks as if concatenated, without concatenating them.

An arrangement receives its input as several chunks (a join emits one per
spine batch, a concatenation one per input).  Concatenating them first and
then consolidating copies every row twice -- into the concatenation, then
into the packed sort words.  :func:`consolidate_chunks` packs each chunk
straight into its slice of one words array (column ranges taken over all
chunks), so the rows are read once; the sort and the decode are those of
:func:`.columnar.consolidate`.  Keys too wide for one word, and inputs small
enough for the numpy tactics, still concatenate (rare or cheap).

The result is exactly ``columnar.consolidate`` of the concatenation, in the
same fresh, exactly sized arrays that never alias the chunks.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar, layout, small
from diffflow.common import memory_budget


def _concat(parts):
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


def _sorted_run(parts, K) -> bool:
    """Whether the concatenation of ``parts`` is sorted (checked cheaply first:
    the chunk boundaries, then each chunk, each check stopping at its first
    inversion)."""
    for (ra, ta, _), (rb, tb, _) in zip(parts, parts[1:]):
        if tuple(ra[-1]) + tuple(ta[-1]) > tuple(rb[0]) + tuple(tb[0]):
            return False
    return all(K.sortedness(r, t) for r, t, _ in parts)


def consolidate_chunks(chunks, width: int, dim: int, consume: bool = False):
    """:func:`.columnar.consolidate` of the concatenation of ``(rows, times, diffs)`` chunks.

    ``chunks`` is a sequence of triples (e.g. :class:`.updates.Updates`) of
    ``width`` row and ``dim`` time columns; empty chunks are ignored.
    Returns fresh C-contiguous ``(rows, times, diffs)``, sorted by (row,
    time) with equal pairs summed and zeros dropped.  Complexity: that of
    ``consolidate`` on the concatenation, minus one copy of the rows.

    With ``consume``, ``chunks`` (a list) is emptied once the sort words hold what the
    result needs: chunks nothing else refers to are freed before the result is written, so
    a big arrange holds its input and its output at once no longer.

    >>> a = (np.array([[2], [1]]), np.array([[0], [0]]), np.array([1, 1]))
    >>> b = (np.array([[2]]), np.array([[0]]), np.array([-1]))
    >>> r, t, d = consolidate_chunks([a, b], 1, 1)
    >>> r.tolist(), t.tolist(), d.tolist()
    ([[1]], [[0]], [1])
    """
    parts = []
    for c in chunks:
        r, t, d = columnar._triple(*c)
        if r.shape[1] != width or t.shape[1] != dim:
            raise ValueError(f"chunk of {r.shape[1]} row and {t.shape[1]} time columns, "
                             f"expected {width} and {dim}")
        if len(d):
            parts.append((r, t, d))
    if len(parts) <= 1:
        return columnar.consolidate(*(parts[0] if parts else (
            np.zeros((0, width), np.int64), np.zeros((0, dim), np.int64), np.zeros(0, np.int64))))
    n = sum(len(p[2]) for p in parts)
    # the result and the sort's words (and the concatenation some tactics need)
    memory_budget.reserve(n * 8 * (2 * (width + dim + 1) + 1),
                          "consolidating {:,} updates of {} chunks", n, len(parts))
    if small.prefer(n, small.SMALL, n):
        return small.consolidate(*_concat(parts))
    K = columnar._k()
    if _sorted_run(parts, K):  # consolidate's O(n) path for sorted input
        return columnar.consolidate(*_concat(parts))
    mins, maxs = layout.minmax(K, parts, width + dim)
    cols, total = layout.key_bits(mins, maxs)
    dranges = [K.minmax1(d) for _, _, d in parts]
    dmin, dmax = min(int(lo) for lo, _ in dranges), max(int(hi) for _, hi in dranges)
    mode, low = layout.payload((n - 1).bit_length(), total, dmin, dmax)
    if total == 0 or total + low > 64:
        # all rows equal (unsorted chunks cannot be: _sorted_run) or keys wider than
        # a word: the permutation sort reads rows by index, so concatenate
        return columnar.consolidate(*_concat(parts))
    c_sh, c_mask, p_col = layout.fields(cols, total, low, width + dim)
    words = np.empty(n, dtype=np.uint64)  # numpy allocation: huge pages
    off = 0
    for r, t, d in parts:  # each chunk into its slice; mode 1 payloads are global indices
        K.pack_single(r, t, mins, p_col, c_sh[p_col], d, dmin, mode, words[off:off + len(d)], off)
        off += len(d)
    # mode 2 decodes diffs from the words; mode 1 reads them by global index
    diffs = np.concatenate([d for _, _, d in parts]) if mode == 1 else np.zeros(0, np.int64)
    if consume:  # the words (and mode 1's diffs) are all the decode reads
        del c, r, t, d
        parts.clear()
        chunks.clear()
    words = columnar._sort_u64(words, low, low + total)
    out = (np.empty((n, width), np.int64), np.empty((n, dim), np.int64), np.empty(n, np.int64))
    return columnar._finish(out, K.consolidate_packed(words, low, mode, mins.view(np.uint64),
                                                      c_sh, c_mask, diffs, dmin, *out))
