"""Construction B: a PAG per epoch from raw events (ST2's model, PAG.md §1.5).

Each worker's events of one epoch, in logging order (``seq``), form one
chain: an edge joins every pair of consecutive events, typed by the
innermost activity open between them (:func:`~diffflow.pag._kernels.local_edge_types`
has the rule table: operator steps are Processing or Spinning, gaps between
steps Busy, a gap ending at a received message Waiting).  Messages become
edges from the ``Sent`` event to each matching ``Received`` event of the same
epoch: the same sender, correlator and channel, and the same receiver unless
the send is a broadcast (no ``peer``).  Waiting edges are ``block``: no
critical path may use them.  Vertices are events: ``(w, t, seq)``.

>>> from diffflow.runtime.events import Events
>>> ev = Events.from_rows([
...     (0, 1, 0, "Start", "Scheduling", 7, -1, -1, -1, -1),
...     (0, 1, 4, "Sent", "DataMessage", -1, 7, 1, 1, 10),
...     (0, 1, 6, "End", "Scheduling", 7, -1, -1, -1, 3, 10),
...     (1, 1, 2, "Start", "Waiting"),
...     (1, 1, 5, "Received", "DataMessage", -1, 7, 1, 0, 10),
...     (1, 1, 8, "End", "Waiting")])
>>> pag = build_epochs(ev)
>>> list(zip(pag.src_w.tolist(), pag.dst_w.tolist(), pag.type_names(), pag.block.tolist()))
[(0, 0, 'Processing', False), (0, 0, 'Processing', False), (1, 1, 'Waiting', True), (1, 1, 'Busy', False), (0, 1, 'DataMessage', False)]
"""
from __future__ import annotations

import numpy as np

from diffflow.pag.edges import Edges
from diffflow.runtime.events import ACTIVITY, MESSAGES, RECEIVED, SENT, Events


def build_epochs(events: Events) -> Edges:
    """The PAG of every epoch of ``events`` (local chains, then messages), ``snap`` = epoch.

    >>> build_epochs(Events.empty()).snap.tolist()
    []
    """
    parts = []
    for chunk in epoch_chunks(events):
        parts += [chain_edges(chunk), message_edges(chunk)]
    edges = Edges.concat(parts)
    edges.names = dict(events.names)
    return edges


#: events are turned into edges whole epochs at a time, about this many events per chunk, so that
#: the working arrays stay in cache instead of streaming gigabytes through memory
CHUNK_EVENTS = 1 << 16


def epoch_chunks(events: Events):
    """``events`` cut at epoch boundaries into chunks of about :data:`CHUNK_EVENTS` events.

    >>> [len(c) for c in epoch_chunks(Events.from_rows([(0, 2, 1, "Start", "Busy"), (0, 1, 0, "Start", "Busy")]))]
    [2]
    """
    if len(events) <= CHUNK_EVENTS:
        yield events
        return
    e = events.e
    order = np.arange(len(e)) if bool((e[1:] >= e[:-1]).all()) else np.argsort(e, kind="stable")
    sorted_e = e[order]
    starts = np.flatnonzero(np.r_[True, sorted_e[1:] != sorted_e[:-1]])
    last = 0
    for start in starts.tolist()[1:] + [len(e)]:
        if start - last >= CHUNK_EVENTS or start == len(e):
            yield events.take(order[last:start])
            last = start


def chain_edges(events: Events) -> Edges:
    """The local edges: one chain per (worker, epoch), an edge between consecutive events.

    >>> ev = Events.from_rows([(0, 1, 0, "Start", "Scheduling", 2), (0, 1, 5, "End", "Scheduling", 2, -1, -1, -1, 0, 0)])
    >>> chain_edges(ev).type_names()
    ['Spinning']
    """
    from diffflow.pag._kernels import local_edge_types

    ev = events.take(_chain_order(events))
    group = _group_ids(ev.w, ev.e)
    m = len(ev)
    edge_type = np.zeros(m, np.int64)
    edge_op = np.full(m, -1, np.int64)
    edge_n = np.full(m, -1, np.int64)
    if m:
        local_edge_types(group, ev.kind, ev.act, ev.op, ev.n, ev.out, edge_type, edge_op, edge_n)
    has_prev = np.zeros(m, bool)
    has_prev[1:] = group[1:] == group[:-1]
    cur = np.flatnonzero(has_prev)
    prev = cur - 1
    local = Edges(ev.e[cur], ev.w[prev], ev.t[prev], ev.seq[prev], ev.w[cur], ev.t[cur], ev.seq[cur],
                  edge_type[cur], edge_op[cur], edge_n[cur], edge_type[cur] == ACTIVITY["Waiting"],
                  names=dict(events.names))
    return local


def _chain_order(ev: Events) -> np.ndarray:
    """The permutation sorting events by (worker, epoch, seq): one int64 key when the ranges allow."""
    if not len(ev):
        return np.zeros(0, np.int64)
    spans = [int(c.max()) - int(c.min()) + 1 for c in (ev.w, ev.e, ev.seq)]
    if spans[0] * spans[1] * spans[2] < 1 << 62:
        key = ((ev.w - ev.w.min()) * spans[1] + (ev.e - ev.e.min())) * spans[2] + (ev.seq - ev.seq.min())
        if (key[1:] >= key[:-1]).all():  # a trace written worker by worker is sorted already
            return np.arange(len(key))
        return np.argsort(key, kind="stable")
    return np.lexsort((ev.seq, ev.e, ev.w))


def _group_ids(*cols) -> np.ndarray:
    """Run ids of equal consecutive tuples of ``cols`` (rows already sorted)."""
    if len(cols[0]) == 0:
        return np.zeros(0, np.int64)
    change = np.zeros(len(cols[0]), bool)
    for c in cols:
        change[1:] |= c[1:] != c[:-1]
    return np.cumsum(change)


def message_edges(ev: Events) -> Edges:
    """One edge per (send, matching receive) pair of the same epoch.

    >>> ev = Events.from_rows([(0, 1, 3, "Sent", "ControlMessage", -1, 0, 5, -1, -1),
    ...                        (1, 1, 4, "Received", "ControlMessage", -1, 0, 5, 0, -1),
    ...                        (2, 1, 6, "Received", "ControlMessage", -1, 0, 5, 0, -1)])
    >>> message_edges(ev).dst_w.tolist()   # a broadcast reaches every receiver
    [1, 2]
    """
    import pandas as pd

    is_msg = np.isin(ev.act, MESSAGES)
    sent = ev.take(is_msg & (ev.kind == SENT))
    recv = ev.take(is_msg & (ev.kind == RECEIVED))
    if not len(sent) or not len(recv):
        return Edges.empty()
    left = pd.DataFrame({"e": sent.e, "sw": sent.w, "corr": sent.corr, "ch": sent.ch, "act": sent.act,
                         "rw": sent.peer, "st": sent.t, "sk": sent.seq, "n": sent.n})
    right = pd.DataFrame({"e": recv.e, "sw": recv.peer, "corr": recv.corr, "ch": recv.ch, "act": recv.act,
                          "rw_r": recv.w, "rt": recv.t, "rk": recv.seq})
    pairs = left.merge(right, on=["e", "sw", "corr", "ch", "act"])
    # a send names its receiver, except a broadcast (peer -1), which reaches every other worker
    pairs = pairs[((pairs.rw == pairs.rw_r) | (pairs.rw < 0)) & (pairs.rw_r != pairs.sw)]
    col = lambda c: pairs[c].to_numpy(np.int64)  # noqa: E731
    typ = col("act")
    return Edges(col("e"), col("sw"), col("st"), col("sk"), col("rw_r"), col("rt"), col("rk"), typ,
                 np.full(len(pairs), -1, np.int64), col("n"), np.zeros(len(pairs), bool))
