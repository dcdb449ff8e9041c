"""Plain numpy tactics of the columnar operations, for inputs met before the kernels load.

:mod:`.columnar` runs numba kernels once they are loaded, and these numpy tactics before.
Loading costs a fresh process ~0.25 s however small its work: numba's import (~0.15-0.2 s;
with the compiler's registries skipped, :mod:`diffflow.common.jit`), its runtime, the kernel
modules, and each kernel a query calls read from numba's on-disk cache (~3 ms each).  numpy
does the same work without it: on a handful of rows in a few microseconds (a kernel is
faster once loaded: ~5 us against 15-20 us), on large inputs ~1.3-2x slower than the
kernels (it sorts the same packed words with the same ``np.sort``, but makes more passes
over memory: ~10-15 ns a row more, and ~50 us a call).  Whether to load is a rent-or-buy
choice, made as for skis: numpy serves (rents) until what it has cost more reaches about
what loading costs, then the kernels load (buy) and serve everything from then on, so a
process pays at most about twice what the better choice in hindsight would have cost, and a
short one (a ``diffflow run``, a first query) never loads numba.  :func:`prefer` keeps the
account:

* an input of at most :data:`SMALL` rows (:data:`SMALL_PAIRS` compared pairs) counts one
  call; after :data:`LOAD_AFTER` of them the kernels load;
* a larger input counts its rows plus :data:`CALL_ROWS`, where the caller has a tactic that
  scales (every function here does: the pairwise comparisons switch to sorted words past
  :data:`SMALL_PAIRS`); past :data:`COLD_ROWS` the kernels load.  A caller without one
  (the reduce operator's closures) loads them at its first large input.

Measured on R-MAT s15 reachability (bench/bench_cold.py): a query charges ~3.1M, numpy costs
it ~45 ms more than the kernels, and the kernels load in its sixth run.

Every function here returns exactly what its kernel counterpart returns -- the same rows
in the same order -- and the tests compare the two on random inputs, small and large, keys
narrow and wider than a word.  Inputs are validated C-contiguous int64 arrays (the callers
check).  A string column still loads pandas once, for its hash (:mod:`diffflow.common.schema`).
"""
from __future__ import annotations

import itertools

import numpy as np

from diffflow.common import memory_budget

# Row counts up to which the numpy tactic sorts and merges ...
SMALL = 256
# ... and rows x queries up to which it compares every pair (searches, joins, closures).
SMALL_PAIRS = 4096
# Small calls after which the kernels are loaded anyway (~50 ms of numpy work).
LOAD_AFTER = 3000
# Rows (of large inputs, each call counting CALL_ROWS more: numpy's overhead of a call) after
# which the kernels are loaded: numpy has then cost ~10-15 ns a row more than the kernels,
# ~0.2-0.25 s, about what loading them costs.
COLD_ROWS = 16_000_000
CALL_ROWS = 4096

_state = {"kernels_loaded": False, "small_calls": 0, "cold_rows": 0}


def kernels_loaded() -> None:
    """Record that the numba kernels are loaded: from now on they serve every size."""
    _state["kernels_loaded"] = True


def loaded() -> bool:
    """Whether the numba kernels are loaded (and serve every size)."""
    return _state["kernels_loaded"]


def prefer(size: int, limit: int, rows: int | None = None) -> bool:
    """Whether an input of ``size`` (rows, or compared pairs) should take the numpy tactic.

    ``rows``: the rows a numpy tactic that scales would process; without it the tactic
    serves only sizes up to ``limit``.  See the module docstring for the account kept.

    >>> prefer(10 ** 9, SMALL)
    False
    """
    if _state["kernels_loaded"]:
        return False
    if size <= limit:
        _state["small_calls"] += 1
        return _state["small_calls"] <= LOAD_AFTER
    if rows is None:
        return False
    _state["cold_rows"] += rows + CALL_ROWS
    return _state["cold_rows"] <= COLD_ROWS


# -- rows as order-preserving words ---------------------------------------------------------

def _columns(item) -> list:
    """The columns of an array, or of a tuple of arrays side by side (rows then times)."""
    parts = item if isinstance(item, tuple) else (item,)
    return [p[:, c] for p in parts for c in range(p.shape[1])]


def _layout(columns) -> tuple:
    """``(lows, varying, total)`` of the order-preserving packing of several items' columns:
    each column's minimum as uint64, ``[(column, bits)]`` of the varying ones (their range's
    bit length, first column most significant), and the bits they take together."""
    lows, varying = [], []
    for c in range(len(columns[0])):
        present = [cols[c] for cols in columns if len(cols[c])]
        if not present:
            return [], [], 0  # no rows at all
        low = min(int(col.min()) for col in present)
        bits = (max(int(col.max()) for col in present) - low).bit_length()
        lows.append(np.uint64(low % (1 << 64)))
        if bits:
            varying.append((c, bits))
    return lows, varying, sum(bits for _, bits in varying)


def _pack(cols, n: int, lows, varying) -> np.ndarray:
    """The words of one item's columns under :func:`_layout`'s packing (total <= 64 bits)."""
    if not varying:
        return np.zeros(n, np.uint64)
    (c, _), rest = varying[0], varying[1:]
    words = np.subtract(cols[c].view(np.uint64), lows[c])  # wrapping: full int64 ranges fit
    offset = np.empty_like(words) if rest else None  # one scratch array: fewer page faults
    for c, bits in rest:
        np.subtract(cols[c].view(np.uint64), lows[c], out=offset)
        words <<= np.uint64(bits)
        words |= offset
    return words


def order_words(*items):
    """One uint64 per row of each item, ordered as the rows are (lexicographically, as
    signed int64): ``a[i] < b[j]`` iff ``words_a[i] < words_b[j]``, equal rows equal words.

    An item is a 2-D int64 array or a tuple of them side by side (``(rows, times)``); all have
    the same columns.  Each varying column, offset by its minimum over all items, takes the
    bits of its range (first column most significant), as :mod:`.columnar` packs sort keys;
    when they need more than 64 bits, the words are the rows' ranks among all distinct rows.
    Returns ``(words per item, bits)``: the words use only the low ``bits`` bits.

    >>> (a, b), bits = order_words(np.array([[1, 5], [2, -1]]), np.array([[1, 7]]))
    >>> a.tolist(), b.tolist(), bits
    ([6, 16], [8], 5)
    """
    columns = [_columns(item) for item in items]
    sizes = [(item[0] if isinstance(item, tuple) else item).shape[0] for item in items]
    lows, varying, total = _layout(columns)
    if total > 64:
        return _rank_words(columns, sizes)
    return [_pack(cols, n, lows, varying) for cols, n in zip(columns, sizes)], total


def _rank_words(columns, sizes):
    """:func:`order_words` for rows wider than a word: ranks among all distinct rows."""
    every = np.stack([np.concatenate([cols[c] for cols in columns])
                      for c in range(len(columns[0]))], axis=1)
    order = np.lexsort(every.T[::-1])
    ordered = every[order]
    new = np.ones(len(order), dtype=np.uint64)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    ranks = np.empty(len(order), dtype=np.uint64)
    ranks[order] = np.cumsum(new) - np.uint64(1)
    bounds = np.cumsum([0] + sizes)
    top = int(ranks.max()) if len(ranks) else 0
    return [ranks[a:b] for a, b in itertools.pairwise(bounds)], top.bit_length()


def sorted_order(words: np.ndarray, bits: int):
    """Stable permutation sorting ``words`` (of ``bits`` bits), and the sorted words.

    >>> perm, ordered = sorted_order(np.array([3, 1, 3, 0], np.uint64), 2)
    >>> perm.tolist(), ordered.tolist()
    ([3, 1, 0, 2], [0, 1, 3, 3])
    """
    n = len(words)
    index_bits = max(n - 1, 0).bit_length()
    if bits + index_bits <= 64:  # the index in the low bits: one plain sort, and stable
        packed = (words << np.uint64(index_bits)) | np.arange(n, dtype=np.uint64)
        packed.sort()  # numpy 2: AVX-512 / AVX2 quicksort on uint64, as columnar's
        perm = (packed & np.uint64((1 << index_bits) - 1)).astype(np.int64)
        return perm, packed >> np.uint64(index_bits)
    perm = np.argsort(words, kind="stable")
    return perm, words[perm]


def consolidate(rows: np.ndarray, times: np.ndarray, diffs: np.ndarray):
    """Sort by (row, time), sum the diffs of equal pairs, drop zero sums.

    >>> r, t, d = consolidate(np.array([[2], [1], [2]]), np.zeros((3, 1), np.int64),
    ...                       np.array([1, 1, -1]))
    >>> r.tolist(), d.tolist()
    ([[1]], [1])
    """
    n = diffs.shape[0]
    cols = _columns((rows, times))
    lows, varying, total = _layout([cols])
    decodable = total <= 64  # else the words are ranks, which do not decode to rows
    if decodable:
        words = _pack(cols, n, lows, varying)
    else:
        (words,), total = _rank_words([cols], [n])
    if n < 2 or (words[1:] > words[:-1]).all():  # strictly sorted: only zero diffs can go
        keep = diffs != 0
        return rows[keep], times[keep], diffs[keep]
    if varying and decodable:
        low = int(diffs.min())
        diff_bits = (int(diffs.max()) - low).bit_length()
        if total + diff_bits <= 64:
            return _consolidate_packed(words, diff_bits, low, diffs, lows, varying,
                                       rows.shape[1], times.shape[1])
    perm, ordered = sorted_order(words, total)
    first = np.ones(n, dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    sums = np.add.reduceat(np.take(diffs, perm), starts)  # wrapping sums, as the kernels'
    keep = sums != 0
    picked = np.take(perm, starts[keep])
    # (np.take along axis 0 gathers rows ~6x faster than fancy indexing rows[picked])
    return np.take(rows, picked, axis=0), np.take(times, picked, axis=0), sums[keep]


def _consolidate_packed(words, diff_bits, low, diffs, lows, varying, width, dim):
    """:func:`consolidate` with the diff packed below the key, as the kernels' mode 2: one
    sort, then rows decoded from the sorted words and diffs summed from them -- no gather.
    (Every temporary costs fresh pages once the dataflow has trimmed the heap, so the steps
    work in place where they can, and skip the payload when every diff is the same.)"""
    if diff_bits:
        shift = np.uint64(diff_bits)
        words <<= shift  # (words is this call's own array)
        payload = np.subtract(diffs.view(np.uint64), np.uint64(low % (1 << 64)))
        words |= payload
        words.sort()
        keys = words >> shift
    else:
        words.sort()
        keys = words
    first = np.ones(len(keys), dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    if diff_bits:
        np.bitwise_and(words, np.uint64((1 << diff_bits) - 1), out=payload)
        payload = payload.view(np.int64)
        payload += np.int64(low)  # wrapping, as the kernels' sums
        sums = np.add.reduceat(payload, starts)
    else:  # every diff is ``low``: a group sums its size times it
        sums = np.diff(starts, append=len(keys)) * np.int64(low)
    keep = sums != 0
    kept = np.take(keys, starts[keep]) if not keep.all() else np.take(keys, starts)
    out_rows = np.empty((len(kept), width), np.int64)
    out_times = np.empty((len(kept), dim), np.int64)
    bits_of = dict(varying)
    offset = sum(bits_of.values())
    column = np.empty_like(kept)
    for c in range(width + dim):
        target, j = (out_rows, c) if c < width else (out_times, c - width)
        bits = bits_of.get(c, 0)
        offset -= bits
        if not bits:  # a constant column
            target[:, j] = lows[c].view(np.int64)
            continue
        np.right_shift(kept, np.uint64(offset), out=column)
        column &= np.uint64((1 << bits) - 1)
        column += lows[c]
        target[:, j] = column.view(np.int64)
    return out_rows, out_times, sums[keep]


def is_consolidated(rows: np.ndarray, times: np.ndarray, diffs: np.ndarray) -> bool:
    """Whether ``(row, time)`` strictly increases and no diff is zero.

    >>> is_consolidated(np.array([[1], [1]]), np.array([[0], [1]]), np.array([1, 2]))
    True
    """
    if not diffs.all():
        return False
    (words,), _ = order_words((rows, times))
    return bool((words[1:] > words[:-1]).all())


def sort_permutation(rows: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Stable permutation sorting by ``rows`` then ``times``.

    >>> sort_permutation(np.array([[3], [1], [3]]), np.array([[0], [5], [-1]])).tolist()
    [1, 2, 0]
    """
    (words,), bits = order_words((rows, times))
    return sorted_order(words, bits)[0]


def merge_consolidated(ra, ta, da, rb, tb, db):
    """Merge two consolidated runs into one (consolidation is canonical, so: concat and sort).

    >>> r, t, d = merge_consolidated(np.array([[1]]), np.array([[0]]), np.array([1]),
    ...                              np.array([[1]]), np.array([[0]]), np.array([-1]))
    >>> len(d)
    0
    """
    return consolidate(np.concatenate([ra, rb]), np.concatenate([ta, tb]),
                       np.concatenate([da, db]))


def key_ranges(sorted_keys: np.ndarray, query_keys: np.ndarray):
    """Per query, ``[lo, hi)`` of the sorted rows equal to it (``lo``: the insertion point).

    >>> lo, hi = key_ranges(np.array([[1], [3], [3], [5]]), np.array([[3], [4], [0]]))
    >>> lo.tolist(), hi.tolist()
    ([1, 3, 0], [3, 3, 0])
    """
    m, n = query_keys.shape[0], sorted_keys.shape[0]
    if sorted_keys.shape[1] == 1 or m * n > SMALL_PAIRS:
        lo, hi = _searches(sorted_keys, query_keys, ("left", "right"))
        return lo, hi
    equal = np.ones((m, n), dtype=bool)
    less = np.zeros((m, n), dtype=bool)
    for c in range(sorted_keys.shape[1]):  # lexicographic comparison, column by column
        row, query = sorted_keys[None, :, c], query_keys[:, None, c]
        less |= equal & (row < query)
        equal &= row == query
    lo = less.sum(axis=1).astype(np.int64)
    return lo, lo + equal.sum(axis=1)


def searchsorted_rows(sorted_rows: np.ndarray, query_rows: np.ndarray, right: bool):
    """Lexicographic ``np.searchsorted`` of rows (``right``: after equal rows).

    >>> searchsorted_rows(np.array([[1, 0], [1, 2]]), np.array([[1, 2]]), False).tolist()
    [1]
    """
    return _searches(sorted_rows, query_rows, ("right" if right else "left",))[0]


def _searches(sorted_rows, query_rows, sides) -> list:
    """``np.searchsorted`` of rows for each side: of the one column itself when there is
    one (O(m log n); packing the sorted rows would cost O(n) a search, and a join searches
    a large batch for a few keys at every step), else of order-preserving words."""
    if sorted_rows.shape[1] == 1:
        keys, queries = sorted_rows[:, 0], query_rows[:, 0]
    else:
        (keys, queries), _ = order_words(sorted_rows, query_rows)
    return [np.searchsorted(keys, queries, side).astype(np.int64) for side in sides]


def prefix_upper_bound(rows: np.ndarray, lo: int, hi: int, bound: tuple) -> int:
    """First index in ``[lo, hi)`` whose first ``len(bound)`` columns exceed ``bound``
    (``rows`` sorted): a bisection in Python, O(log n) steps of one row each.

    >>> prefix_upper_bound(np.array([[1, 0], [2, 5], [2, 9], [3, 0]]), 0, 4, (2,))
    3
    """
    width = len(bound)
    while lo < hi:
        mid = (lo + hi) >> 1
        if tuple(rows[mid, :width].tolist()) <= bound:
            lo = mid + 1
        else:
            hi = mid
    return lo


def expand_ranges(lo: np.ndarray, hi: np.ndarray):
    """For half-open ranges ``[lo[i], hi[i])``, list (range index, position) pairs.

    >>> q, p = expand_ranges(np.array([5, 0]), np.array([7, 1]))
    >>> q.tolist(), p.tolist()
    ([0, 0, 1], [5, 6, 0])
    """
    counts = hi - lo
    total = int(counts.sum())
    # the two results, and numpy's temporaries for the positions
    memory_budget.reserve(total * 32, "a list of {:,} matching pairs", total)
    query = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    positions = np.arange(total, dtype=np.int64) + np.repeat(lo - starts, counts)
    return query, positions


def gather_prefix(rows, times, diffs, width: int, queries):
    """Updates whose first ``width`` row columns equal a query: ``(query, rows, times, diffs)``.

    >>> q, r, t, d = gather_prefix(np.array([[1, 5], [3, 6], [3, 7]]),
    ...                            np.zeros((3, 1), np.int64), np.array([1, 1, 2]), 1,
    ...                            np.array([[3], [9]]))
    >>> q.tolist(), d.tolist()
    ([0, 0], [1, 2])
    """
    query, position = expand_ranges(*key_ranges(rows[:, :width], queries))
    return (query, np.take(rows, position, axis=0), np.take(times, position, axis=0),
            np.take(diffs, position))


def match_sorted(left: np.ndarray, right: np.ndarray):
    """All pairs ``(i, j)`` with equal rows, ordered by ``i`` then ``j``.

    >>> li, ri = match_sorted(np.array([[1], [2], [2]]), np.array([[2], [3]]))
    >>> li.tolist(), ri.tolist()
    ([1, 2], [0, 0])
    """
    if left.shape[0] * right.shape[0] > SMALL_PAIRS:  # each left row's run in the right rows
        return expand_ranges(*key_ranges(right, left))
    equal = np.all(left[:, None, :] == right[None, :, :], axis=2)
    li, ri = np.nonzero(equal)
    return li.astype(np.int64), ri.astype(np.int64)


def group_starts(sorted_rows: np.ndarray) -> np.ndarray:
    """Start offsets of runs of equal rows, with ``n`` appended.

    >>> group_starts(np.array([[1], [1], [2]])).tolist()
    [0, 2, 3]
    """
    n = sorted_rows.shape[0]
    if n == 0:
        return np.zeros(1, np.int64)
    changes = np.flatnonzero(np.any(sorted_rows[1:] != sorted_rows[:-1], axis=1)) + 1
    return np.concatenate([[0], changes, [n]]).astype(np.int64)
