"""Construction A: a PAG per time window from raw events (SnailTrail 1, PAG.md §1.4).

Usage: ``build_windows(events, window_ns)`` (or ``diffflow pag cp TRACE
--window 1s``, ``load(..., window="1s")``) cuts the trace into windows
``[kW, (k+1)W)`` and builds each independently:

1. messages: a ``Sent`` and the ``Received`` halves with the same sender and
   correlator in the window become edges (a broadcast, one per receiver); a
   send received after the window is projected to the window's end, a receive
   sent before it from the window's start, with a synthetic half on the other
   worker's timeline;
2. each worker's timeline, between boundary records at ``kW - 1`` and
   ``(k+1)W``, is scanned (:func:`~diffflow.pag._window_kernels.window_chains`):
   nested activities cut the outer one, messages cut the open activity;
3. gaps shorter than ``gap_ns`` are snapped shut, longer ones filled with a
   ``Waiting`` edge (the worker waited for a receive) or an ``Unknown`` one;
4. ``Waiting`` edges are ``block``, and messages longer than
   ``delayed_message_ns`` (when positive) unless the receiver was waiting.

Every worker with a record in a window gets one gap-free chain from ``kW - 1``
to ``(k+1)W``.  Vertices are ``(t, w)``; ``snap`` is the window index ``k``.

>>> from diffflow.runtime.events import Events
>>> ev = Events.from_rows([(0, -1, 100, "Start", "Processing", 1), (0, -1, 300, "End", "Processing", 1),
...                        (0, -1, 320, "Sent", "DataMessage", -1, 0, 5, 1, 9),
...                        (1, -1, 400, "Received", "DataMessage", -1, 0, 5, 0, 9)])
>>> pag = build_windows(ev, 1000, gap_ns=10)
>>> sorted(zip(pag.src_w.tolist(), pag.dst_w.tolist(), pag.src_t.tolist(), pag.dst_t.tolist(), pag.type_names()))
... # doctest: +NORMALIZE_WHITESPACE
[(0, 0, -1, 100, 'Unknown'), (0, 0, 100, 300, 'Processing'), (0, 0, 300, 320, 'Unknown'),
 (0, 0, 320, 1000, 'Unknown'), (0, 1, 320, 400, 'DataMessage'), (1, 1, -1, 400, 'Unknown'),
 (1, 1, 400, 1000, 'Unknown')]
>>> check_windows(pag, 1000)
[]
"""
from __future__ import annotations

import numpy as np

from diffflow.pag.edges import Edges
from diffflow.runtime.events import ACTIVITY, MESSAGES, RECEIVED, SENT, Events

_BOGUS = 4


def build_windows(events: Events, window_ns: int, *, gap_ns: int = 1000, insert_waiting: bool = True,
                  message_delay_ns=None, delayed_message_ns: int = 0) -> Edges:
    """The PAG of every time window of ``window_ns`` (``snap`` = window index).

    ``message_delay_ns`` first moves any receive more than that after its send
    to ``send + message_delay_ns``.

    >>> len(build_windows(Events.empty(), 10))
    0
    """
    if window_ns <= 0:
        raise ValueError(f"a window must be positive, got {window_ns} ns")
    if not len(events):
        return Edges.empty()
    if len(events) > CHUNK_EVENTS:  # whole windows at a time, so the working arrays stay in cache
        win = events.t // window_ns
        order = np.arange(len(win)) if bool((win[1:] >= win[:-1]).all()) else np.argsort(win, kind="stable")
        cuts = np.flatnonzero(np.r_[True, win[order][1:] != win[order][:-1]])
        bounds = [0]
        for cut in cuts.tolist():
            if cut - bounds[-1] >= CHUNK_EVENTS:
                bounds.append(cut)
        if len(bounds) > 1:
            bounds.append(len(win))
            options = dict(gap_ns=gap_ns, insert_waiting=insert_waiting, message_delay_ns=message_delay_ns,
                           delayed_message_ns=delayed_message_ns)
            parts = [_build(events.take(order[a:b]), window_ns, **options) for a, b in zip(bounds[:-1], bounds[1:])]
            edges = Edges.concat(parts)
            edges.names = dict(events.names)
            return edges
    return _build(events, window_ns, gap_ns=gap_ns, insert_waiting=insert_waiting,
                  message_delay_ns=message_delay_ns, delayed_message_ns=delayed_message_ns)


#: events are turned into edges whole windows at a time, about this many per chunk
CHUNK_EVENTS = 1 << 16


def _build(events: Events, window_ns: int, *, gap_ns, insert_waiting, message_delay_ns,
           delayed_message_ns) -> Edges:
    from diffflow.pag._window_kernels import window_chains

    ev = events
    if message_delay_ns is not None:
        ev = _clip_delays(ev, message_delay_ns)
    win = ev.t // window_ns
    msgs, halves = _messages(ev, win, window_ns)
    # timeline records: (window, worker, t, tie, kind, act, op); boundaries first/last in each
    is_msg = np.isin(ev.act, MESSAGES) & ((ev.kind == SENT) | (ev.kind == RECEIVED))
    local_or_msg = (ev.kind <= 1) | is_msg  # Start/End of activities, and message halves
    rec_win = np.r_[win[local_or_msg], halves[0]]
    rec_w = np.r_[ev.w[local_or_msg], halves[1]]
    rec_t = np.r_[ev.t[local_or_msg], halves[2]]
    rec_tie = np.r_[ev.seq[local_or_msg], halves[3]]
    rec_kind = np.r_[ev.kind[local_or_msg], halves[4]]
    rec_act = np.r_[ev.act[local_or_msg], halves[5]]
    rec_op = np.r_[ev.op[local_or_msg], np.full(len(halves[0]), -1, np.int64)]
    wlow, klow = int(rec_w.min()), int(rec_win.min())
    span = int(rec_w.max()) - wlow + 1
    timelines = np.unique((rec_win - klow) * span + (rec_w - wlow))  # one int64 key per (window, worker)
    tk, tw = timelines // span + klow, timelines % span + wlow
    count = len(tk)
    big = np.iinfo(np.int64).max
    rec_win = np.r_[rec_win, tk, tk]
    rec_w = np.r_[rec_w, tw, tw]
    rec_t = np.r_[rec_t, tk * window_ns - 1, (tk + 1) * window_ns]
    rec_tie = np.r_[rec_tie, np.full(count, -big), np.full(count, big)]
    rec_kind = np.r_[rec_kind, np.full(2 * count, _BOGUS)]
    rec_act = np.r_[rec_act, np.full(2 * count, -1)]
    rec_op = np.r_[rec_op, np.full(2 * count, -1)]
    order = np.lexsort((rec_tie, rec_t, rec_w, rec_win))
    key_w, key_k = rec_w[order], rec_win[order]
    change = np.r_[True, (key_w[1:] != key_w[:-1]) | (key_k[1:] != key_k[:-1])]
    group = np.cumsum(change) - 1
    g, start, end, typ, op = window_chains(group, rec_t[order], rec_kind[order], rec_act[order], rec_op[order],
                                           gap_ns, insert_waiting)
    first = np.flatnonzero(change)
    gw, gk = key_w[first][g], key_k[first][g]
    zeros = np.zeros(len(g), np.int64)
    block = typ == ACTIVITY["Waiting"]
    local = Edges(gk, gw, start, zeros, gw, end, zeros.copy(), typ, op, np.full(len(g), -1, np.int64), block,
                  names=dict(events.names))
    if delayed_message_ns > 0 and len(msgs):
        msgs.block = _delayed(msgs, local, delayed_message_ns)
    edges = Edges.concat([local, msgs])
    edges.names = dict(events.names)
    return edges


def _clip_delays(ev: Events, delay: int) -> Events:
    """Receives later than ``delay`` after their send move to ``send + delay``."""
    import pandas as pd

    is_msg = np.isin(ev.act, MESSAGES)
    sent = pd.DataFrame({"w": ev.w, "corr": ev.corr, "t": ev.t})[is_msg & (ev.kind == SENT)]
    recv = pd.DataFrame({"sw": ev.peer, "corr": ev.corr, "row": np.arange(len(ev))})[is_msg & (ev.kind == RECEIVED)]
    pairs = recv.merge(sent.rename(columns={"w": "sw"}), on=["sw", "corr"])
    t = ev.t.copy()
    rows, limit = pairs.row.to_numpy(), pairs.t.to_numpy() + delay
    t[rows] = np.minimum(t[rows], limit)
    out = ev.take(np.arange(len(ev)))
    out.t = t
    return out


def _messages(ev: Events, win: np.ndarray, window_ns: int):
    """Message edges of each window, and the synthetic half-records projection adds.

    Returns ``(edges, (window, worker, t, tie, kind, act))`` for the halves.
    """
    import pandas as pd

    is_msg = np.isin(ev.act, MESSAGES)
    s_mask, r_mask = is_msg & (ev.kind == SENT), is_msg & (ev.kind == RECEIVED)
    sent = pd.DataFrame({"k": win[s_mask], "sw": ev.w[s_mask], "corr": ev.corr[s_mask], "peer": ev.peer[s_mask],
                         "st": ev.t[s_mask], "act": ev.act[s_mask], "n": ev.n[s_mask]})
    recv = pd.DataFrame({"k": win[r_mask], "sw": ev.peer[r_mask], "corr": ev.corr[r_mask], "rw": ev.w[r_mask],
                         "rt": ev.t[r_mask], "ract": ev.act[r_mask], "rn": ev.n[r_mask]})
    # nullable integers: an outer join's missing halves must not turn ns timestamps into floats
    both = sent.astype("Int64").merge(recv.astype("Int64"), on=["k", "sw", "corr"], how="outer", indicator=True)
    matched = both[both["_merge"] == "both"]
    sent_only = both[(both["_merge"] == "left_only") & (both["peer"] >= 0)]
    recv_only = both[(both["_merge"] == "right_only") & (both["sw"] >= 0)]
    col = lambda frame, c: frame[c].to_numpy(np.int64)  # noqa: E731
    ks, kr = col(sent_only, "k"), col(recv_only, "k")
    parts = [
        (col(matched, "k"), col(matched, "sw"), col(matched, "st"), col(matched, "rw"), col(matched, "rt"),
         col(matched, "act"), col(matched, "n")),
        (ks, col(sent_only, "sw"), col(sent_only, "st"), col(sent_only, "peer"), (ks + 1) * window_ns,
         col(sent_only, "act"), col(sent_only, "n")),
        (kr, col(recv_only, "sw"), kr * window_ns - 1, col(recv_only, "rw"), col(recv_only, "rt"),
         col(recv_only, "ract"), col(recv_only, "rn")),
    ]
    k, sw, st, rw, rt, act, n = (np.concatenate([p[i] for p in parts]) for i in range(7))
    zeros = np.zeros(len(k), np.int64)
    edges = Edges(k, sw, st, zeros, rw, rt, zeros.copy(), act, np.full(len(k), -1, np.int64), n,
                  np.zeros(len(k), bool))
    big = np.iinfo(np.int64).max
    # a projected send is received at the window's end on its receiver; a projected receive was sent
    # at the window's start on its sender
    halves = (np.r_[ks, kr], np.r_[col(sent_only, "peer"), col(recv_only, "sw")],
              np.r_[(ks + 1) * window_ns, kr * window_ns - 1],
              np.r_[np.full(len(ks), big - 1), np.full(len(kr), -big + 1)],
              np.r_[np.full(len(ks), RECEIVED), np.full(len(kr), SENT)],
              np.r_[col(sent_only, "act"), col(recv_only, "ract")])
    return edges, halves


def _delayed(msgs: Edges, local: Edges, limit: int) -> np.ndarray:
    """Messages longer than ``limit`` whose receiver was not waiting for them."""
    waiting = local.type == ACTIVITY["Waiting"]
    waited = set(zip(local.snap[waiting].tolist(), local.dst_w[waiting].tolist(), local.dst_t[waiting].tolist()))
    long = msgs.duration > limit
    return np.array([bool(x) and (s, w, t) not in waited for x, s, w, t in
                     zip(long.tolist(), msgs.snap.tolist(), msgs.dst_w.tolist(), msgs.dst_t.tolist())], bool)


def check_windows(edges: Edges, window_ns: int) -> list:
    """Well-formedness of a windowed PAG (SnailTrail's Appendix A): a list of problems, empty if none.

    Every Waiting edge ends at a received message (or at the window's end,
    which cuts a longer wait); every vertex but the chains' first ones has an
    edge in; every worker's local edges form one chain from ``kW - 1`` to
    ``(k+1)W``.  (:func:`~diffflow.pag.checks.well_formedness` has the rows.)

    >>> check_windows(Edges.from_rows([(0, 0, 5, 0, 0, 9, 0, "Busy")]), 10)
    ['window 0 worker 0: the chain runs 5..9, not -1..10']
    """
    from diffflow.pag.checks import well_formedness

    return [f"window {snap} worker {w}: {message}" for snap, w, _, _, message in well_formedness(edges, window_ns)]
