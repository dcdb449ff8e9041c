"""ST2's invariants (PAG.md §3.3): what should always hold in an execution, and where it did not.

* ``progress``: every worker active in a snapshot of two or more workers sent
  some progress (a ``ControlMessage``) in it -- a silent worker stalls
  everyone's frontier;
* ``progress_max_ns``: no worker goes longer than this without sending progress;
* ``epoch_max_ns``: a snapshot spans at most this (earliest to latest vertex);
* ``operator_max_ns``: an operator invocation (its Processing/Spinning
  fragments from step start to step end) lasts at most this;
* ``message_max_ns``: a message takes at most this from send to receive;
* ``well_formed``: the PAG is well formed (:func:`well_formedness`, SnailTrail's Appendix A).

:func:`violations` returns them as a pandas DataFrame, longest first.

>>> from diffflow.pag.edges import Edges
>>> pag = Edges.from_rows([(1, 0, 0, 0, 0, 9, 0, "Processing", 4, 100), (1, 0, 9, 0, 1, 30, 0, "DataMessage")])
>>> violations(pag, message_max_ns=10, progress=False)[["kind", "worker", "duration_ns"]].to_dict("records")
[{'kind': 'message', 'worker': 0, 'duration_ns': 21}]
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from diffflow.pag.edges import Edges
from diffflow.runtime.events import ACTIVITIES, ACTIVITY

COLUMNS = ["kind", "snapshot", "worker", "peer", "operator", "start", "end", "duration_ns", "detail"]
_CONTROL = ACTIVITY["ControlMessage"]
_STEP = (ACTIVITY["Processing"], ACTIVITY["Spinning"])


def violations(edges: Edges, *, progress: bool = True, progress_max_ns=None, epoch_max_ns=None,
               operator_max_ns=None, message_max_ns=None, well_formed: bool = False, window_ns=None):
    """Every violated invariant of ``edges`` as a DataFrame (columns :data:`COLUMNS`), longest first.

    >>> violations(Edges.empty()).columns.tolist()[:3]
    ['kind', 'snapshot', 'worker']
    """
    import pandas as pd

    rows = []
    if well_formed:
        rows += [("well-formedness", snap, w, None, None, a, b, b - a, problem)
                 for snap, w, a, b, problem in well_formedness(edges, window_ns)]
    if progress:
        rows += _silent_workers(edges)
    if progress_max_ns is not None:
        rows += _progress_pauses(edges, progress_max_ns)
    if epoch_max_ns is not None:
        rows += _long_snapshots(edges, epoch_max_ns)
    if operator_max_ns is not None:
        rows += [r[:8] + (_records(r[8]),) for r in invocations(edges, longer_than=operator_max_ns)]
    if message_max_ns is not None:
        e = edges.take(~edges.is_local & (edges.duration > message_max_ns))
        rows += [("message", s, w, p, None, a, b, b - a, ACTIVITIES[t])
                 for s, w, p, a, b, t in zip(e.snap.tolist(), e.src_w.tolist(), e.dst_w.tolist(),
                                             e.src_t.tolist(), e.dst_t.tolist(), e.type.tolist())]
    frame = pd.DataFrame(rows, columns=COLUMNS).astype(
        {c: "Int64" for c in ("snapshot", "worker", "peer", "operator", "start", "end", "duration_ns")})
    return frame.sort_values("duration_ns", ascending=False, kind="stable").reset_index(drop=True)


def well_formedness(edges: Edges, window_ns=None) -> list:
    """SnailTrail's Appendix-A properties: ``(snapshot, worker, start, end, problem)`` per violation.

    * every Waiting edge ends when a message arrives at its worker (Assumption 2;
      for time windows, a wait the window's end cuts is fine);
    * each worker's local edges in a snapshot form one unbroken chain (and,
      for windows of ``window_ns``, it runs from ``kW - 1`` to ``(k+1)W``);
    * every vertex but a chain's first has an edge in (Property 1).

    >>> pag = Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Waiting"), (1, 0, 5, 0, 0, 9, 0, "Busy")])
    >>> [row[4] for row in well_formedness(pag)]
    ['the Waiting edge 0..5 does not end at a receive']
    """
    problems = []
    local = edges.is_local
    # the instants messages arrive at each worker (a trace may log the wait's end and the receive
    # as two events of one instant)
    arrivals = set(zip(edges.snap[~local].tolist(), edges.dst_w[~local].tolist(), edges.dst_t[~local].tolist()))
    waits = edges.take(local & (edges.type == ACTIVITY["Waiting"]))
    for snap, w, a, b in zip(waits.snap.tolist(), waits.dst_w.tolist(), waits.src_t.tolist(), waits.dst_t.tolist()):
        cut = window_ns is not None and b == (snap + 1) * window_ns
        if (snap, w, b) not in arrivals and not cut:
            problems.append((snap, w, a, b, f"the Waiting edge {a}..{b} does not end at a receive"))
    chains: dict = {}
    for snap, w, a, ak, b, bk in zip(edges.snap[local].tolist(), edges.src_w[local].tolist(),
                                     edges.src_t[local].tolist(), edges.src_k[local].tolist(),
                                     edges.dst_t[local].tolist(), edges.dst_k[local].tolist()):
        chains.setdefault((snap, w), []).append(((a, ak), (b, bk)))
    heads = set()
    for (snap, w), spans in sorted(chains.items()):
        spans.sort()
        heads.add((snap, w) + spans[0][0])
        if window_ns is not None:
            lo, hi = snap * window_ns - 1, (snap + 1) * window_ns
            if spans[0][0][0] != lo or spans[-1][1][0] != hi:
                problems.append((snap, w, spans[0][0][0], spans[-1][1][0],
                                 f"the chain runs {spans[0][0][0]}..{spans[-1][1][0]}, not {lo}..{hi}"))
        for (_, end), (start, _) in zip(spans, spans[1:]):
            if start != end:
                problems.append((snap, w, end[0], start[0], f"the chain breaks between {end[0]} and {start[0]}"))
    targets = set(zip(edges.snap.tolist(), edges.dst_w.tolist(), edges.dst_t.tolist(), edges.dst_k.tolist()))
    sources = set(zip(edges.snap.tolist(), edges.src_w.tolist(), edges.src_t.tolist(), edges.src_k.tolist()))
    for snap, w, t, _ in sorted(sources - targets - heads):
        problems.append((snap, w, t, t, f"vertex at {t} has no edge in"))
    return problems


def _silent_workers(edges: Edges) -> list:
    """Workers of a snapshot with two or more workers that sent no ControlMessage in it."""
    active = set(zip(edges.snap.tolist(), edges.src_w.tolist())) | set(zip(edges.snap.tolist(), edges.dst_w.tolist()))
    workers = Counter(s for s, _ in active)
    active = {(s, w) for s, w in active if workers[s] > 1}  # alone, a worker has no one to tell
    control = ~edges.is_local & (edges.type == _CONTROL)
    sent = set(zip(edges.snap[control].tolist(), edges.src_w[control].tolist()))
    return [("progress", s, w, None, None, None, None, 0, "sent no progress (ControlMessage) in this snapshot")
            for s, w in sorted(active - sent)]


def _progress_pauses(edges: Edges, limit) -> list:
    """Per worker, the longest stretches between its progress sends (and from its first activity)."""
    rows = []
    control = ~edges.is_local & (edges.type == _CONTROL)
    for w in np.unique(edges.src_w).tolist():
        mine = edges.src_w == w
        first = int(edges.src_t[mine].min())
        last = int(edges.dst_t[mine & edges.is_local].max()) if (mine & edges.is_local).any() else first
        sends = np.unique(edges.src_t[mine & control])
        marks = np.r_[first, sends, last]
        gaps = np.diff(marks)
        for i in np.flatnonzero(gaps > limit).tolist():
            snap = int(edges.snap[mine][np.argmin(np.abs(edges.src_t[mine] - marks[i]))])
            rows.append(("progress_pause", snap, w, None, None, int(marks[i]), int(marks[i + 1]),
                         int(gaps[i]), "no progress sent for this long"))
    return rows


def _long_snapshots(edges: Edges, limit) -> list:
    rows = []
    for snap, e in edges.snapshots():
        start, end = int(min(e.src_t.min(), e.dst_t.min())), int(max(e.src_t.max(), e.dst_t.max()))
        if end - start > limit:
            rows.append(("epoch", snap, None, None, None, start, end, end - start, "snapshot took this long"))
    return rows


def _records(n: int) -> str:
    """The detail of an operator invocation: its record count, if the trace has one."""
    return f"{n} records" if n >= 0 else "records not logged"


def invocations(edges: Edges, longer_than=-1) -> list:
    """Operator invocations rebuilt from their Processing/Spinning fragments (ST2's rule).

    A fragment carrying a record count (it ends the step) or a Spinning edge
    closes an invocation; contiguous fragments of one operator before it belong to it.
    Rows are ``("operator", snapshot, worker, None, operator, start, end, duration, records)``
    (records -1 where the trace does not count them)
    for the invocations longer than ``longer_than`` ns.

    >>> pag = Edges.from_rows([(1, 0, 0, 0, 0, 3, 0, "Processing", 5), (1, 0, 3, 0, 0, 4, 0, "Processing", 5, 70)])
    >>> [r[5:] for r in invocations(pag)]
    [(0, 4, 4, 70)]
    """
    step = edges.is_local & np.isin(edges.type, _STEP) & (edges.op >= 0)
    e = edges.take(step)
    order = np.lexsort((e.src_k, e.src_t, e.src_w, e.snap))
    e = e.take(order)
    if not len(e):
        return []
    closes = (e.n >= 0) | (e.type == ACTIVITY["Spinning"])
    new = np.ones(len(e), bool)
    same = (e.snap[1:] == e.snap[:-1]) & (e.src_w[1:] == e.src_w[:-1]) & (e.op[1:] == e.op[:-1])
    contiguous = (e.src_t[1:] == e.dst_t[:-1]) & (e.src_k[1:] == e.dst_k[:-1])
    new[1:] = ~(same & contiguous & ~closes[:-1])
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], len(e)] - 1
    long = e.dst_t[ends] - e.src_t[starts] > longer_than
    starts, ends = starts[long], ends[long]
    return [("operator", int(e.snap[a]), int(e.src_w[a]), None, int(e.op[a]), int(e.src_t[a]), int(e.dst_t[b]),
             int(e.dst_t[b] - e.src_t[a]), int(e.n[b]))
            for a, b in zip(starts.tolist(), ends.tolist())]
