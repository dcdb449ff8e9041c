"""numba kernels of the PAG package: per-worker edge typing and path counting.

Compiled on first use (``cache=True``), never at import of :mod:`diffflow`.
"""
from __future__ import annotations

import numpy as np

from diffflow.common.jit import kernel

# activity and kind codes, as in events.py (numba needs them as globals)
_SCHEDULING, _PROCESSING, _SPINNING, _WAITING, _BUSY = 3, 4, 5, 12, 13
_START, _END, _SENT, _RECEIVED = 0, 1, 2, 3


@kernel
def local_edge_types(group, kind, act, op, n, out, edge_type, edge_op, edge_n):  # pragma: no cover - numba
    """Type the edge from each event to the next one of its group (events sorted by group, seq).

    ``edge_*[i]`` describe the edge ending at event ``i`` (unused where
    ``i`` starts its group).  The edge takes the type of the innermost
    activity open between the two events: an operator step (``Scheduling``)
    is ``Processing``, or ``Spinning`` when it consumed and emitted nothing;
    an explicit ``Waiting`` interval is ``Waiting`` up to the message that
    ends it and ``Busy`` after it.  With nothing open the worker was between
    activities: ``Busy``, or ``Waiting`` when the edge ends at a received
    message (the worker idled until it arrived).
    """
    m = len(kind)
    stack_act = np.empty(m + 1, np.int64)
    stack_op = np.empty(m + 1, np.int64)
    depth = 0
    received_in_wait = False
    for i in range(m):
        if i == 0 or group[i] != group[i - 1]:
            depth = 0
            received_in_wait = False
        else:
            k = kind[i]
            if depth == 0:
                edge_type[i] = _WAITING if k == _RECEIVED else _BUSY
                edge_op[i] = -1
            else:
                a = stack_act[depth - 1]
                edge_op[i] = stack_op[depth - 1]
                if a == _SCHEDULING:
                    if k == _END and act[i] == _SCHEDULING and n[i] <= 0 and out[i] <= 0:
                        edge_type[i] = _SPINNING
                    else:
                        edge_type[i] = _PROCESSING
                elif a == _WAITING:
                    edge_type[i] = _BUSY if received_in_wait and k != _RECEIVED else _WAITING
                else:
                    edge_type[i] = a
            edge_n[i] = n[i] if (k == _END and act[i] == _SCHEDULING) else -1
        # update the open activities with event i
        k = kind[i]
        if k == _START:
            stack_act[depth] = act[i]
            stack_op[depth] = op[i]
            depth += 1
            if act[i] == _WAITING:
                received_in_wait = False
        elif k == _END:
            j = depth - 1
            while j >= 0 and not (stack_act[j] == act[i] and stack_op[j] == op[i]):
                j -= 1
            if j >= 0:  # an End without its Start (begun before the trace) closes nothing
                depth = j
        elif k == _RECEIVED:
            received_in_wait = True


@kernel
def path_counts(n_vertices, src, dst, usable, seed):  # pragma: no cover - numba
    """Number of paths over ``usable`` edges from seeded vertices to each vertex (Kahn's order).

    ``seed[v]`` is 1.0 for a start vertex, else 0.0; counts are float64
    because real snapshots have more than 2**63 paths.  Returns the counts
    and the number of vertices reached in topological order (fewer than
    ``n_vertices`` means a cycle).
    """
    indeg = np.zeros(n_vertices, np.int64)
    outdeg = np.zeros(n_vertices + 1, np.int64)
    for e in range(len(src)):
        if usable[e]:
            indeg[dst[e]] += 1
            outdeg[src[e] + 1] += 1
    offsets = np.cumsum(outdeg)
    fill = offsets[:-1].copy()
    targets = np.empty(offsets[-1], np.int64)
    for e in range(len(src)):
        if usable[e]:
            targets[fill[src[e]]] = dst[e]
            fill[src[e]] += 1
    counts = seed.copy()
    queue = np.empty(n_vertices, np.int64)
    head, tail = 0, 0
    for v in range(n_vertices):
        if indeg[v] == 0:
            queue[tail] = v
            tail += 1
    while head < tail:
        v = queue[head]
        head += 1
        c = counts[v]
        for j in range(offsets[v], offsets[v + 1]):
            u = targets[j]
            counts[u] += c
            indeg[u] -= 1
            if indeg[u] == 0:
                queue[tail] = u
                tail += 1
    return counts, tail


@kernel
def dense_ids(a, b, c, d):  # pragma: no cover - numba
    """Dense ids of the distinct rows ``(a, b, c, d)`` in first-seen order, by open addressing.

    Returns ``(ids, first)``: each row's id, and the row where each id was first seen.
    Linear in the rows (no sort), which is what dominates PAG analysis otherwise.
    """
    n = len(a)
    size = 1
    while size < 2 * n + 2:
        size *= 2
    mask = size - 1
    table = np.full(size, -1, np.int64)
    ids = np.empty(n, np.int64)
    first = np.empty(n, np.int64)
    count = 0
    for i in range(n):
        h = np.uint64(a[i]) * np.uint64(0x9E3779B97F4A7C15)
        h = (h ^ (h >> np.uint64(29)) ^ np.uint64(b[i])) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(31)) ^ np.uint64(c[i])) * np.uint64(0x94D049BB133111EB)
        h = (h ^ (h >> np.uint64(32)) ^ np.uint64(d[i])) * np.uint64(0x9E3779B97F4A7C15)
        slot = np.int64(h >> np.uint64(17)) & mask
        while True:
            j = table[slot]
            if j < 0:
                table[slot] = count
                first[count] = i
                ids[i] = count
                count += 1
                break
            r = first[j]
            if a[r] == a[i] and b[r] == b[i] and c[r] == c[i] and d[r] == d[i]:
                ids[i] = j
                break
            slot = (slot + 1) & mask
    return ids, first[:count]


@kernel
def chain_ends(group, n_groups, t, k):  # pragma: no cover - numba
    """Per group, the row with the smallest and the largest ``(t, k)``."""
    lo = np.full(n_groups, -1, np.int64)
    hi = np.full(n_groups, -1, np.int64)
    for i in range(len(group)):
        g = group[i]
        j = lo[g]
        if j < 0 or t[i] < t[j] or (t[i] == t[j] and k[i] < k[j]):
            lo[g] = i
        j = hi[g]
        if j < 0 or t[i] > t[j] or (t[i] == t[j] and k[i] > k[j]):
            hi[g] = i
    return lo, hi
