"""numba kernels of the PAG package: per-worker edge typing and path counting.

Compiled on first use (``cache=True``), never at import of :mod:`diffflow`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# activity and kind codes, as in events.py (numba needs them as globals)
_SCHEDULING, _PROCESSING, _SPINNING, _WAITING, _BUSY = 3, 4, 5, 12, 13
_START, _END, _SENT, _RECEIVED = 0, 1, 2, 3


@njit(cache=True)
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


@njit(cache=True)
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
