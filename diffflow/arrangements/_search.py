"""Numba kernels: the updates of many keys in one sorted batch, their lower bounds searched in
groups.

A binary search is a chain of dependent loads: each probe waits for the one before, and in a
batch of millions of rows most probes miss the cache.  Sorted queries (the usual case: a
step's keys, consolidated) are searched ``GROUP`` at a time in lockstep -- every query of a
group takes its next probe before any takes the one after -- so the probes of a group are
independent loads that the processor overlaps.  A group's range is bracketed by galloping
from the previous group's answer to its last query, so sorted queries still cost
O(m log(n / m)) probes.  Imported (and compiled) only by the kernels that use it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import _cmp_prefix, prefix_upper_bound

GROUP = 16  # queries searched in lockstep (enough loads in flight to hide most of a miss)


@njit(cache=True)
def _sorted_run(queries, g0, g1, width):
    """Whether ``queries[g0:g1]`` is non-decreasing and not below ``queries[g0 - 1]``."""
    for j in range(max(g0, 1), g1):
        if _cmp_prefix(queries, j - 1, queries, j, width) > 0:
            return False
    return True


@njit(cache=True)
def prefix_lower_bounds(rows, queries, width, out):
    """``out[j]``: the first index ``i`` with ``rows[i, :width] >= queries[j, :width]``.

    ``rows`` sorted lexicographically; queries in any order (a group that is not sorted
    after its predecessor is searched over the whole batch).
    """
    n = rows.shape[0]
    m = queries.shape[0]
    base = np.empty(GROUP, np.int64)
    start = 0  # the previous group's last answer: a sorted group's answers are not below it
    for g0 in range(0, m, GROUP):
        g1 = min(g0 + GROUP, m)
        ordered = _sorted_run(queries, g0, g1, width)
        lo = start if ordered else 0
        # bracket: hi == n or rows[hi] >= the group's largest query (if ordered, its last)
        hi = lo if ordered else n
        step = 1
        while hi < n and _cmp_prefix(rows, hi, queries, g1 - 1, width) < 0:
            lo = hi + 1 if g1 - g0 == 1 else lo  # (a lone query may skip what it passed)
            hi = hi + step
            step *= 2
        if hi > n:
            hi = n
        # branchless lower bound in rows[lo:hi], every query of the group in lockstep
        for g in range(g1 - g0):
            base[g] = lo
        size = hi - lo
        while size > 1:
            half = size >> 1
            for g in range(g1 - g0):
                less = _cmp_prefix(rows, base[g] + half, queries, g0 + g, width) < 0
                base[g] += half * less
            size -= half
        for g in range(g1 - g0):
            b = base[g]
            if b < hi and _cmp_prefix(rows, b, queries, g0 + g, width) < 0:
                b += 1
            out[g0 + g] = b
        start = out[g1 - 1]


@njit(cache=True)
def gather_prefix(rows, times, diffs, width, queries):
    """Every update whose first ``width`` row columns equal a query row.

    ``rows`` sorted lexicographically; queries in any order (sorted ones cost
    O(m log(n/m)) probes, see :func:`prefix_lower_bounds`), then one copy pass.
    Returns ``(query_index, rows, times, diffs)``.
    """
    n = rows.shape[0]
    m = queries.shape[0]
    lo = np.empty(m, np.int64)
    prefix_lower_bounds(rows, queries, width, lo)
    hi = np.empty(m, np.int64)
    total = 0
    for j in range(m):
        a = lo[j]
        step = 1  # gallop to the end of the (usually short) run of matches
        while a + step <= n and _cmp_prefix(rows, a + step - 1, queries, j, width) <= 0:
            a += step
            step *= 2
        hi[j] = prefix_upper_bound(rows, a, a + step - 1 if a + step - 1 < n else n, queries, j,
                                   width)
        total += hi[j] - lo[j]
    w = rows.shape[1]
    d = times.shape[1]
    out_q = np.empty(total, np.int64)
    out_r = np.empty((total, w), np.int64)
    out_t = np.empty((total, d), np.int64)
    out_d = np.empty(total, np.int64)
    p = 0
    for j in range(m):
        for i in range(lo[j], hi[j]):
            out_q[p] = j
            for k in range(w):
                out_r[p, k] = rows[i, k]
            for k in range(d):
                out_t[p, k] = times[i, k]
            out_d[p] = diffs[i]
            p += 1
    return out_q, out_r, out_t, out_d
