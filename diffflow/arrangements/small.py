"""Plain numpy tactics of the columnar operations, for small inputs.

:mod:`.columnar` runs its numba kernels on anything sizeable; below
:data:`SMALL` rows (:data:`SMALL_PAIRS` compared pairs) it calls these instead.  A numba kernel costs several
microseconds per call to dispatch and, the first time in a process, tens of
milliseconds to load from the on-disk cache (plus ~0.3 s to import numba
itself); numpy on a handful of rows costs a few microseconds and nothing to
load.  Once loaded, though, a kernel is faster even on a few rows (about
5 us against 15-20 us here).  So the numpy tactics serve small inputs only
until the kernels are loaded -- by the first large input, or after
:data:`LOAD_AFTER` small calls, when the process has shown it keeps
computing and the one-time load pays for itself.  A first small query in a
fresh process (any partition count) never touches numba; a string column
still loads pandas once, for its hash (:mod:`diffflow.common.schema`).

Every function here returns exactly what its kernel counterpart returns --
the same rows in the same order -- and the tests compare the two on random
inputs.  Inputs are validated C-contiguous int64 arrays (the callers check).
"""
from __future__ import annotations

import numpy as np

# Row counts up to which the numpy tactic sorts and merges ...
SMALL = 256
# ... and rows x queries up to which it compares every pair (searches, joins, closures).
SMALL_PAIRS = 4096
# Small calls after which the kernels are loaded anyway (~50 ms of numpy work).
LOAD_AFTER = 3000

_state = {"kernels_loaded": False, "small_calls": 0}


def kernels_loaded() -> None:
    """Record that the numba kernels are loaded: from now on they serve every size."""
    _state["kernels_loaded"] = True


def prefer(size: int, limit: int) -> bool:
    """Whether an input of ``size`` (rows, or compared pairs) should take the numpy tactic.

    >>> prefer(10 ** 9, SMALL)
    False
    """
    if size > limit or _state["kernels_loaded"]:
        return False
    _state["small_calls"] += 1
    return _state["small_calls"] <= LOAD_AFTER


def _lex_order(keys: np.ndarray) -> np.ndarray:
    """Stable permutation sorting the rows of ``keys`` lexicographically (signed int64)."""
    if keys.shape[1] == 0:
        return np.arange(keys.shape[0], dtype=np.int64)
    return np.lexsort(keys.T[::-1])


def consolidate(rows: np.ndarray, times: np.ndarray, diffs: np.ndarray):
    """Sort by (row, time), sum the diffs of equal pairs, drop zero sums.

    >>> r, t, d = consolidate(np.array([[2], [1], [2]]), np.zeros((3, 1), np.int64),
    ...                       np.array([1, 1, -1]))
    >>> r.tolist(), d.tolist()
    ([[1]], [1])
    """
    n = diffs.shape[0]
    if n == 0:
        return rows.copy(), times.copy(), diffs.copy()
    keys = np.concatenate([rows, times], axis=1)
    order = _lex_order(keys)
    ordered = keys[order]
    first = np.ones(n, dtype=bool)
    first[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    starts = np.flatnonzero(first)
    sums = np.add.reduceat(diffs[order], starts)
    keep = sums != 0
    picked = order[starts[keep]]
    return (np.ascontiguousarray(rows[picked]), np.ascontiguousarray(times[picked]),
            np.ascontiguousarray(sums[keep]))


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
    equal = np.ones((m, n), dtype=bool)
    less = np.zeros((m, n), dtype=bool)
    for c in range(sorted_keys.shape[1]):  # lexicographic comparison, column by column
        row, query = sorted_keys[None, :, c], query_keys[:, None, c]
        less |= equal & (row < query)
        equal &= row == query
    lo = less.sum(axis=1).astype(np.int64)
    return lo, lo + equal.sum(axis=1)


def expand_ranges(lo: np.ndarray, hi: np.ndarray):
    """For half-open ranges ``[lo[i], hi[i])``, list (range index, position) pairs.

    >>> q, p = expand_ranges(np.array([5, 0]), np.array([7, 1]))
    >>> q.tolist(), p.tolist()
    ([0, 0, 1], [5, 6, 0])
    """
    counts = hi - lo
    total = int(counts.sum())
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
    query, position = expand_ranges(*key_ranges(np.ascontiguousarray(rows[:, :width]), queries))
    return (query, np.ascontiguousarray(rows[position]), np.ascontiguousarray(times[position]),
            np.ascontiguousarray(diffs[position]))


def match_sorted(left: np.ndarray, right: np.ndarray):
    """All pairs ``(i, j)`` with equal rows, ordered by ``i`` then ``j``.

    >>> li, ri = match_sorted(np.array([[1], [2], [2]]), np.array([[2], [3]]))
    >>> li.tolist(), ri.tolist()
    ([1, 2], [0, 0])
    """
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
