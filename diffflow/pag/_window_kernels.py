"""numba kernels of construction A (SnailTrail 1 time windows): the per-worker scan and gap filling.

Compiled on first use (``cache=True``), never at import of :mod:`diffflow`.
"""
from __future__ import annotations

import numpy as np

from diffflow.common.jit import kernel

_START, _END, _SENT, _RECEIVED, _BOGUS = 0, 1, 2, 3, 4
_UNKNOWN, _WAITING = 0, 12
_LOCAL = -1  # item kind of a local edge (markers keep their record kind)


@kernel
def window_chains(group, t, kind, act, op, gap_ns, insert_waiting):  # pragma: no cover - numba
    """Local edges of every (window, worker) timeline (records sorted by group, then time).

    Each group starts with a Bogus record at the window's start and ends with
    one at its end.  Scan: a Start cuts the open activity; an End closes its
    activity (or, begun before the window, runs from the previous event); a
    message half or a Bogus record cuts the open activity and is a marker.
    Then gaps between consecutive items are snapped (below ``gap_ns``) or
    filled (Waiting when the worker waited for a receive, else Unknown), and
    local edges of zero length dropped: each timeline becomes one chain from
    its first to its last record.  Returns ``(group, start, end, type, op)``.
    """
    n = len(t)
    # items of the scan: local edges (kind -1) and markers, in time order
    it_group = np.empty(2 * n, np.int64)
    it_start = np.empty(2 * n, np.int64)
    it_end = np.empty(2 * n, np.int64)
    it_type = np.empty(2 * n, np.int64)
    it_op = np.empty(2 * n, np.int64)
    it_kind = np.empty(2 * n, np.int64)
    stack_act = np.empty(n + 1, np.int64)
    stack_op = np.empty(n + 1, np.int64)
    m = 0
    depth = 0
    last = 0
    for i in range(n):
        if i == 0 or group[i] != group[i - 1]:
            depth = 0
            last = t[i]
        k = kind[i]
        if k == _START:
            if depth > 0:
                it_group[m], it_start[m], it_end[m] = group[i], last, t[i]
                it_type[m], it_op[m], it_kind[m] = stack_act[depth - 1], stack_op[depth - 1], _LOCAL
                m += 1
            stack_act[depth] = act[i]
            stack_op[depth] = op[i]
            depth += 1
            last = t[i]
        elif k == _END:
            j = depth - 1
            while j >= 0 and not (stack_act[j] == act[i] and stack_op[j] == op[i]):
                j -= 1
            if j >= 0:
                depth = j
            # closed here: from the previous event (the window's start for an activity begun before it)
            it_group[m], it_start[m], it_end[m] = group[i], last, t[i]
            it_type[m], it_op[m], it_kind[m] = act[i], op[i], _LOCAL
            m += 1
            last = t[i]
        else:
            if depth > 0:
                it_group[m], it_start[m], it_end[m] = group[i], last, t[i]
                it_type[m], it_op[m], it_kind[m] = stack_act[depth - 1], stack_op[depth - 1], _LOCAL
                m += 1
            it_group[m], it_start[m], it_end[m] = group[i], t[i], t[i]
            it_type[m], it_op[m], it_kind[m] = -1, -1, k
            m += 1
            last = t[i]
    # gap filling between consecutive items of a timeline
    filler_start = np.empty(m, np.int64)
    filler_end = np.empty(m, np.int64)
    filler_type = np.full(m, -1, np.int64)  # filler_*[i]: inserted before item i
    for i in range(1, m):
        if it_group[i] != it_group[i - 1]:
            continue
        a, b = i - 1, i
        gap = it_start[b] - it_end[a]
        a_local, b_local = it_kind[a] == _LOCAL, it_kind[b] == _LOCAL
        if gap < gap_ns:
            if a_local and b_local:
                mid = it_end[a] + gap // 2
                it_end[a] = mid
                it_start[b] = mid
            elif a_local:
                it_end[a] = it_start[b]
            elif b_local:
                it_start[b] = it_end[a]
            else:
                waited = insert_waiting and it_kind[a] == _SENT and it_kind[b] == _RECEIVED
                filler_start[b], filler_end[b] = it_end[a], it_start[b]
                filler_type[b] = _WAITING if waited else _UNKNOWN
        else:
            waited = insert_waiting and it_kind[b] == _RECEIVED and (it_kind[a] == _SENT or a_local)
            filler_start[b], filler_end[b] = it_end[a], it_start[b]
            filler_type[b] = _WAITING if waited else _UNKNOWN
    out_group = np.empty(2 * m, np.int64)
    out_start = np.empty(2 * m, np.int64)
    out_end = np.empty(2 * m, np.int64)
    out_type = np.empty(2 * m, np.int64)
    out_op = np.empty(2 * m, np.int64)
    c = 0
    for i in range(m):
        if filler_type[i] >= 0 and filler_end[i] > filler_start[i]:
            out_group[c], out_start[c], out_end[c] = it_group[i], filler_start[i], filler_end[i]
            out_type[c], out_op[c] = filler_type[i], -1
            c += 1
        if it_kind[i] == _LOCAL and it_end[i] > it_start[i]:
            out_group[c], out_start[c], out_end[c] = it_group[i], it_start[i], it_end[i]
            out_type[c], out_op[c] = it_type[i], it_op[i]
            c += 1
    return out_group[:c], out_start[:c], out_end[:c], out_type[:c], out_op[:c]
