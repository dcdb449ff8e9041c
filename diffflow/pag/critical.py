"""Critical participation (SnailTrail, PAG.md §2): how much each activity lies on critical paths.

In a snapshot ``[ts, te]`` every path from a vertex at ``ts`` to a vertex at
``te`` weighs exactly ``te - ts`` (durations telescope), so all of them are
*transient critical paths*; waiting (``block``) edges may not be used.  With
``F(v)`` the number of such paths from the start vertices to ``v`` and
``B(v)`` from ``v`` to the end vertices (both by Kahn's topological order,
in float64: real snapshots have more than 2**63 paths):

* ``tpc(e) = F(src) * B(dst)`` -- the paths through edge ``e``; ``N = sum of F`` over end vertices;

(start vertices: at ``ts`` with no usable edge in; end vertices: at ``te``
with no usable edge out)
* ``cp(e) = tpc(e) * duration(e) / (N * (te - ts))`` -- and the ``cp`` of a snapshot sum to 1.

Epoch snapshots (ST2) do not start and end every worker at common instants,
so :func:`critical_participation` pads them first (``pad=True``, PAG.md
§2.6): an ``Unknown`` edge from ``(ts, w)`` to each worker's first vertex and
from its last vertex to ``(te, w)``.

>>> from diffflow.pag.edges import Edges
>>> pag = Edges.from_rows([(0, 0, 0, 0, 0, 4, 0, "Processing"), (0, 0, 4, 0, 0, 10, 0, "Busy"),
...                        (0, 1, 0, 0, 1, 6, 0, "Waiting"), (0, 0, 4, 0, 1, 6, 0, "DataMessage"),
...                        (0, 1, 6, 0, 1, 10, 0, "Processing")])
>>> cp = critical_participation(pag, pad=False)
>>> cp.tpc.tolist(), [round(x, 2) for x in cp.cp.tolist()]
([2.0, 1.0, 0.0, 1.0, 1.0], [0.4, 0.3, 0.0, 0.1, 0.2])
>>> s = cp.summaries[0]; s["paths"], {k: round(v, 2) for k, v in s["by_activity"].items()}
(2.0, {'Busy': 0.3, 'DataMessage': 0.1, 'Processing': 0.6, 'Waiting': 0.0})
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diffflow.pag.edges import Edges
from diffflow.pag.readable import operator_label
from diffflow.runtime.events import ACTIVITIES, ACTIVITY

_FIRST, _LAST = np.iinfo(np.int64).min, np.iinfo(np.int64).max


@dataclass
class CriticalParticipation:
    """Per-edge path counts and CP of a PAG, and one summary per snapshot.

    ``edges`` is the analysed PAG (padded when asked); ``tpc`` and ``cp`` are
    aligned with it.  ``summaries`` is a list of dicts, one per snapshot:
    ``{"snapshot", "epoch", "start", "end", "paths", "by_activity",
    "by_worker", "by_operator", "by_pair"}`` (see :func:`critical_participation`).
    """

    edges: Edges
    tpc: np.ndarray
    cp: np.ndarray
    summaries: list


def pad_snapshots(edges: Edges) -> Edges:
    """Add, per snapshot and worker, ``Unknown`` edges from ``(ts, w)`` to the worker's first vertex and from its last to ``(te, w)``.

    >>> pag = Edges.from_rows([(1, 0, 2, 0, 0, 5, 0, "Busy"), (1, 1, 0, 0, 1, 9, 0, "Busy")])
    >>> p = pad_snapshots(pag); len(p), sorted(zip(p.src_t.tolist(), p.dst_t.tolist()))[:3]
    (6, [(0, 0), (0, 2), (0, 9)])
    """
    from diffflow.pag._kernels import chain_ends

    if not len(edges):
        return edges
    snap = np.concatenate([edges.snap, edges.snap])
    w = np.concatenate([edges.src_w, edges.dst_w])
    t = np.concatenate([edges.src_t, edges.dst_t])
    k = np.concatenate([edges.src_k, edges.dst_k])
    chain, first = _small_ids(snap, w)
    lo, hi = chain_ends(chain, len(first), t, k)
    span_id, span_first = _small_ids(snap, np.zeros_like(w))
    ts = np.full(len(span_first), np.iinfo(np.int64).max)
    te = np.full(len(span_first), np.iinfo(np.int64).min)
    np.minimum.at(ts, span_id, t)
    np.maximum.at(te, span_id, t)
    of_chain = span_id[first]
    count = len(first)
    unknown = np.full(count, ACTIVITY["Unknown"], np.int64)
    none = np.full(count, -1, np.int64)
    no = np.zeros(count, bool)
    head = Edges(snap[first], w[first], ts[of_chain], np.full(count, _FIRST), w[first], t[lo], k[lo],
                 unknown, none, none, no)
    tail = Edges(snap[first], w[first], t[hi], k[hi], w[first], te[of_chain], np.full(count, _LAST),
                 unknown.copy(), none.copy(), none.copy(), no.copy())
    padded = Edges.concat([edges, head, tail])
    padded.names = edges.names
    return padded


def critical_participation(edges: Edges, *, pad: bool = True, epochs: bool = True,
                           windows: dict | None = None) -> CriticalParticipation:
    """Transient path centrality and critical participation of every edge, and per-snapshot summaries.

    ``pad`` adds the per-worker boundary edges of epoch snapshots (leave it
    off for time windows, whose construction already covers the window).
    ``epochs`` says the snapshots are epochs (reported as ``"epoch"``; else
    ``None``).  ``windows`` optionally maps a snapshot to its ``(start, end)``
    (default: the earliest and latest vertex times).

    Summaries: ``paths`` is N; ``by_activity`` CP per activity type;
    ``by_worker`` CP of each worker's local activities (keys are worker
    numbers as strings); ``by_pair`` CP of messages per ``"src->dst"``;
    ``by_operator`` CP of the activities of each operator, keyed
    ``"name (id N)"`` (:func:`~diffflow.pag.readable.operator_label`).
    ``by_worker`` and ``by_pair`` together, like ``by_activity``, sum to 1.

    >>> pag = Edges.from_rows([(3, 0, 0, 0, 0, 4, 0, "Processing", 9)])
    >>> s = critical_participation(pag).summaries[0]
    >>> s["epoch"], s["paths"], s["by_operator"], s["by_worker"]
    (3, 1.0, {'id 9': 1.0}, {'0': 1.0})
    """
    if len(edges) > CHUNK_EDGES:
        return _in_chunks(edges, pad, epochs, windows)
    return _one_chunk(edges, pad, epochs, windows)


#: snapshots are analysed in groups of about this many edges, so that the vertex table and the
#: path counts of a group stay in cache (whole snapshots: a snapshot's CP needs all its edges)
CHUNK_EDGES = 1 << 16


def _in_chunks(edges: Edges, pad, epochs, windows) -> CriticalParticipation:
    """Analyse whole snapshots a chunk at a time; the PAG's own rows keep their order, padding follows."""
    snap = edges.snap
    grouped = bool((snap[1:] >= snap[:-1]).all())
    order = np.arange(len(snap)) if grouped else np.argsort(snap, kind="stable")
    sorted_snap = snap[order]
    starts = np.flatnonzero(np.r_[True, sorted_snap[1:] != sorted_snap[:-1]])
    bounds = [0]
    for start in starts.tolist():  # cut at a snapshot boundary once a chunk is big enough
        if start - bounds[-1] >= CHUNK_EDGES:
            bounds.append(start)
    bounds.append(len(snap))
    tpc = np.zeros(len(edges))
    cp = np.zeros(len(edges))
    extra, extra_tpc, extra_cp, summaries = [], [], [], []
    for a, b in zip(bounds[:-1], bounds[1:]):
        rows = order[a:b]
        part = _one_chunk(edges.take(rows), pad, epochs, windows)
        tpc[rows], cp[rows] = part.tpc[: b - a], part.cp[: b - a]
        extra.append(part.edges.take(np.arange(b - a, len(part.edges))))
        extra_tpc.append(part.tpc[b - a:])
        extra_cp.append(part.cp[b - a:])
        summaries += part.summaries
    all_edges = Edges.concat([edges, *extra])
    all_edges.names = edges.names
    return CriticalParticipation(all_edges, np.concatenate([tpc, *extra_tpc]), np.concatenate([cp, *extra_cp]),
                                 sorted(summaries, key=lambda s: s["snapshot"]))


def _one_chunk(edges: Edges, pad, epochs, windows) -> CriticalParticipation:
    from diffflow.pag._kernels import path_counts

    if pad:
        edges = pad_snapshots(edges)
    if not len(edges):
        return CriticalParticipation(edges, np.zeros(0), np.zeros(0), [])
    vid, vsnap, vt, nv = _vertex_ids(edges)
    src, dst = vid[: len(edges)], vid[len(edges):]
    snaps, which = _snapshot_index(vsnap)
    ts = np.full(len(snaps), np.iinfo(np.int64).max)
    te = np.full(len(snaps), np.iinfo(np.int64).min)
    np.minimum.at(ts, which, vt)
    np.maximum.at(te, which, vt)
    if windows:
        for i, s in enumerate(snaps.tolist()):
            if s in windows:
                ts[i], te[i] = windows[s]
    usable = ~edges.block
    # start vertices: at ts with no usable edge in (a vertex at ts reached from another one at
    # ts is a step inside a path, not a second start); end vertices symmetrically at te
    fed = np.bincount(dst[usable], minlength=nv) > 0
    feeds = np.bincount(src[usable], minlength=nv) > 0
    is_start = (vt == ts[which]) & ~fed
    is_end = (vt == te[which]) & ~feeds
    forward, reached = path_counts(nv, src, dst, usable, is_start.astype(np.float64))
    backward, _ = path_counts(nv, dst, src, usable, is_end.astype(np.float64))
    if reached < nv:
        raise ValueError(f"the PAG has a cycle ({nv - reached} vertices on or after it): "
                         "vertices are (worker, time, seq) and edges must go forward in logging order")
    tpc = np.where(usable, forward[src] * backward[dst], 0.0)
    paths = np.bincount(which[is_end], weights=forward[is_end], minlength=len(snaps))
    esnap = which[src]
    span = (te - ts).astype(np.float64)
    denom = paths[esnap] * span[esnap]
    cp = np.divide(tpc * edges.duration, denom, out=np.zeros(len(edges)), where=denom > 0)
    summaries = _summaries(snaps, epochs, ts, te, paths, edges, cp, esnap)
    return CriticalParticipation(edges, tpc, cp, summaries)


def _small_ids(a: np.ndarray, b: np.ndarray):
    """Dense ids of the pairs ``(a, b)`` (snapshot, worker: few distinct values) and a row of each."""
    from diffflow.pag._kernels import dense_ids

    alow, blow = int(a.min()), int(b.min())
    aspan, bspan = int(a.max()) - alow + 1, int(b.max()) - blow + 1
    if aspan * bspan > 1 << 24:
        return dense_ids(a, b, np.zeros_like(a), np.zeros_like(a))
    cell = (a - alow) * bspan + (b - blow)
    present = np.flatnonzero(np.bincount(cell, minlength=aspan * bspan))
    rank = np.zeros(aspan * bspan, np.int64)
    rank[present] = np.arange(len(present))
    ids = rank[cell]
    first = np.zeros(len(present), np.int64)
    first[ids[::-1]] = np.arange(len(ids) - 1, -1, -1)  # the first row of each id
    return ids, first


def _snapshot_index(snap: np.ndarray):
    """The distinct snapshots, sorted, and each row's index among them (counting when the range is small)."""
    low, high = int(snap.min()), int(snap.max())
    if high - low < 1 << 24:
        present = np.flatnonzero(np.bincount(snap - low, minlength=high - low + 1))
        rank = np.zeros(high - low + 1, np.int64)
        rank[present] = np.arange(len(present))
        return present + low, rank[snap - low]
    snaps, which = np.unique(snap, return_inverse=True)
    return snaps, which.reshape(-1)


def _vertex_ids(edges: Edges):
    """Dense ids of the vertices ``(snap, w, t, k)``: sources first, then destinations."""
    from diffflow.pag._kernels import dense_ids

    snap = np.concatenate([edges.snap, edges.snap])
    w = np.concatenate([edges.src_w, edges.dst_w])
    t = np.concatenate([edges.src_t, edges.dst_t])
    k = np.concatenate([edges.src_k, edges.dst_k])
    vid, first = dense_ids(snap, w, t, k)
    return vid, snap[first], t[first], len(first)


def _grouped(esnap, keys, weights, mask, nsnap, label) -> list:
    """Per snapshot, ``{label(key): sum of weights}`` over the rows in ``mask``.

    One counting pass over (snapshot, key) cells when the keys span a small
    range (activity types, workers, operators, worker pairs), a sort otherwise.
    """
    out = [{} for _ in range(nsnap)]
    if not mask.any():
        return out
    keys, snaps, weights = keys[mask], esnap[mask], weights[mask]
    low = int(keys.min())
    span = int(keys.max()) - low + 1
    if span * nsnap <= 1 << 24:
        cell = snaps * span + (keys - low)
        present = np.flatnonzero(np.bincount(cell, minlength=nsnap * span))
        totals = np.bincount(cell, weights=weights, minlength=nsnap * span)[present]
        key_of = lambda c: c % span + low  # noqa: E731
    else:
        uniq, inverse = np.unique(np.c_[snaps, keys], axis=0, return_inverse=True)
        totals = np.bincount(inverse.reshape(-1), weights=weights, minlength=len(uniq))
        for (snap, key), total in zip(uniq.tolist(), totals.tolist()):
            out[snap][label(key)] = total
        return [dict(sorted(d.items())) for d in out]
    names = {}
    for c, total in zip(present.tolist(), totals.tolist()):
        key = key_of(c)
        name = names.get(key)
        if name is None:
            name = names[key] = label(key)
        out[c // span][name] = total
    return [dict(sorted(d.items())) for d in out]


def _summaries(snaps, epochs, ts, te, paths, edges, cp, esnap) -> list:
    nsnap = len(snaps)
    local = edges.is_local
    everything = np.ones(len(edges), bool)
    by_activity = _grouped(esnap, edges.type, cp, everything, nsnap, lambda c: ACTIVITIES[int(c)])
    by_worker = _grouped(esnap, edges.src_w, cp, local, nsnap, lambda w: str(int(w)))
    by_operator = _grouped(esnap, edges.op, cp, edges.op >= 0, nsnap,
                           lambda o: operator_label(o, edges.names))
    pair_key = edges.src_w * (int(edges.dst_w.max(initial=0)) + 1) + edges.dst_w
    width = int(edges.dst_w.max(initial=0)) + 1
    by_pair = _grouped(esnap, pair_key, cp, ~local, nsnap, lambda k: f"{int(k) // width}->{int(k) % width}")
    return [{"snapshot": int(s), "epoch": int(s) if epochs else None, "start": int(ts[i]), "end": int(te[i]),
             "paths": float(paths[i]), "by_activity": by_activity[i], "by_worker": by_worker[i],
             "by_operator": by_operator[i], "by_pair": by_pair[i]}
            for i, s in enumerate(snaps.tolist())]
