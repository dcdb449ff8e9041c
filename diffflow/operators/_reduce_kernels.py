"""Numba kernels for the reduce driver over partially ordered times (private).

Imported lazily by :mod:`diffflow.operators.reduce` only.  The driver
validates; these kernels assume C-contiguous int64 arrays.
"""
import numpy as np

from diffflow.common.jit import kernel


@kernel
def _contains(buf, n, t):
    d = t.shape[0]
    for i in range(n):
        same = True
        for k in range(d):
            if buf[i, k] != t[k]:
                same = False
                break
        if same:
            return True
    return False


@kernel
def _stable_order(keys, order, work):
    """``order`` := the indices of ``keys`` in ascending, stable order (a merge sort; numpy's
    ``argsort`` in a kernel makes its cached code load numba's whole array library, ~0.3 s)."""
    n = keys.shape[0]
    for i in range(n):
        order[i] = i
    src, dst = order, work
    flipped = False
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if keys[src[j]] < keys[src[i]]:
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        flipped = not flipped
        width *= 2
    if flipped:
        for i in range(n):
            order[i] = work[i]


@kernel
def _chain_closure(new_t, hist_t):
    """The closure when the group's times form a chain (are totally ordered), else empty.

    In a chain the join of two times is the larger one, so the closure of the
    new times is every time at or after the smallest new time.  Inside a loop,
    once history is advanced by the frontier, a key's times usually are a chain
    (the rounds of the one epoch in flight), and this costs a sort instead of
    the pairwise closure.
    """
    n, m, d = new_t.shape[0], hist_t.shape[0], new_t.shape[1]
    times = np.empty((n + m, d), np.int64)
    times[:n] = new_t
    times[n:] = hist_t
    sums = np.empty(n + m, np.int64)
    for i in range(n + m):
        total = 0
        for k in range(d):
            total += times[i, k]
        sums[i] = total
    order = np.empty(n + m, np.int64)
    _stable_order(sums, order, np.empty(n + m, np.int64))
    for i in range(n + m - 1):
        x, y = order[i], order[i + 1]
        for k in range(d):
            if times[x, k] > times[y, k]:
                return np.empty((0, d), np.int64)
    first = n + m
    for i in range(n + m):
        if order[i] < n:
            first = i
            break
    out = np.empty((n + m - first, d), np.int64)
    count = 0
    for i in range(first, n + m):
        t = times[order[i]]
        if count > 0:
            same = True
            for k in range(d):
                if out[count - 1, k] != t[k]:
                    same = False
                    break
            if same:
                continue
        out[count] = t
        count += 1
    return out[:count]


@kernel
def _pairwise_closure(new_t, hist_t):
    """The closure of distinct ``new_t`` under join with ``hist_t`` and itself, pair by pair."""
    d = new_t.shape[1]
    scratch = np.empty((max(64, 2 * new_t.shape[0]), d), np.int64)
    tmp = np.empty(d, np.int64)
    found = 0
    for i in range(new_t.shape[0]):
        if not _contains(scratch, found, new_t[i]):
            scratch[found] = new_t[i]
            found += 1
    i = 0
    while i < found:
        # join scratch[i] with every history time and every closure time so far
        for src in range(2):
            hi = hist_t.shape[0] if src == 0 else found
            for j in range(hi):
                for k in range(d):
                    x = scratch[i, k]
                    y = hist_t[j, k] if src == 0 else scratch[j, k]
                    tmp[k] = x if x > y else y
                if not _contains(scratch, found, tmp):
                    if found == scratch.shape[0]:
                        bigger = np.empty((2 * found, d), np.int64)
                        bigger[:found] = scratch[:found]
                        scratch = bigger
                    scratch[found] = tmp
                    found += 1
        i += 1
    return scratch[:found]


@kernel
def join_closure_groups(new_t, new_starts, hist_t, hist_starts):
    """Per group, the closure of its new times under join with its history and itself.

    Groups are ``new_t[new_starts[g]:new_starts[g+1]]`` (distinct new times)
    and ``hist_t[hist_starts[g]:hist_starts[g+1]]``.  Returns ``(group,
    times)`` of every time in every closure (unsorted within a group).
    """
    groups = new_starts.shape[0] - 1
    d = new_t.shape[1]
    cap = max(16, 2 * new_t.shape[0])
    out_g = np.empty(cap, np.int64)
    out_t = np.empty((cap, d), np.int64)
    n_out = 0
    for g in range(groups):
        group_new = new_t[new_starts[g]:new_starts[g + 1]]
        group_hist = hist_t[hist_starts[g]:hist_starts[g + 1]]
        closure = _chain_closure(group_new, group_hist)  # totally ordered: a sort
        if closure.shape[0] == 0:
            closure = _pairwise_closure(group_new, group_hist)
        found = closure.shape[0]
        if n_out + found > cap:
            cap = 2 * (n_out + found)
            g2 = np.empty(cap, np.int64)
            t2 = np.empty((cap, d), np.int64)
            g2[:n_out] = out_g[:n_out]
            t2[:n_out] = out_t[:n_out]
            out_g, out_t = g2, t2
        for i in range(found):
            out_g[n_out] = g
            out_t[n_out] = closure[i]
            n_out += 1
    return out_g[:n_out].copy(), out_t[:n_out].copy()


@kernel
def ready_mask(times, starts):
    """True for times with no strictly smaller time (product order) in their group."""
    n, d = times.shape
    ready = np.ones(n, np.bool_)
    for g in range(starts.shape[0] - 1):
        a, b = starts[g], starts[g + 1]
        for i in range(a, b):
            for j in range(a, b):
                if i == j:
                    continue
                below = True
                for k in range(d):
                    if times[j, k] > times[i, k]:
                        below = False
                        break
                if below:
                    ready[i] = False
                    break
    return ready
