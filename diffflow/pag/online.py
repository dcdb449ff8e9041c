"""The PAG of a growing trace, maintained by a diffflow dataflow as events arrive.

:class:`PagFlow` takes raw events in any batches (``feed``) and keeps, after
each ``advance``, the PAG's edges, ST2's metrics, the invariant violations
and the spans of its epoch snapshots as incrementally maintained collections:

* a worker's chain for an epoch is typed by a kernel once that worker has
  moved to a later epoch (ST2 builds chains per worker the same way), then
  inserted as rows of the ``chains`` input;
* every message half goes in at once (``sent``, ``received``); the dataflow
  joins the halves by (epoch, sender, correlator, channel, activity), so a
  message edge appears as soon as both halves have arrived, in any order;
* metrics are an ``aggregate``, long messages and snapshots ``filter`` s,
  silent workers an ``antijoin``, and critical participation a custom
  reducer per snapshot (:func:`critical_rows`, the same kernels as
  :func:`~diffflow.pag.critical.critical_participation`) -- all maintained by
  the engine, at any number of partitions: a snapshot's CP is recomputed
  only when its edges change.

``retire(before)`` removes the rows of old snapshots, so a long-running
analysis keeps only the snapshots it still reports.

>>> from diffflow.runtime.events import Events
>>> flow = PagFlow(message_max_ns=3, progress=False)
>>> flow.feed(Events.from_rows([(0, 1, 0, "Sent", "DataMessage", -1, 1, 7, 1, 5)]))
>>> flow.advance(); len(flow.edges())
0
>>> flow.feed(Events.from_rows([(1, 1, 9, "Received", "DataMessage", -1, 1, 7, 0, 5)]))
>>> flow.advance(); flow.edges().type_names(), flow.violations()["kind"].tolist()
(['DataMessage'], ['message'])
>>> flow.close()
"""
from __future__ import annotations

import numpy as np

from diffflow.pag.checks import COLUMNS as VIOLATION_COLUMNS
from diffflow.pag.checks import _records, invocations
from diffflow.pag.edges import Edges
from diffflow.pag.epochs import chain_edges
from diffflow.pag.readable import operator_label
from diffflow.runtime.events import ACTIVITIES, ACTIVITY, MESSAGES, RECEIVED, SENT, Events

EDGE_COLUMNS = ["snap", "src_w", "src_t", "src_k", "dst_w", "dst_t", "dst_k", "type", "op", "n", "block"]
_KEY = ["snap", "sw", "corr", "ch", "act"]


class PagFlow:
    """A diffflow dataflow maintaining a PAG and its analyses from a stream of raw events."""

    def __init__(self, *, partitions: int = 1, runtime: str = "local", window_ns=None, message_max_ns=None,
                 epoch_max_ns=None, operator_max_ns=None, progress: bool = True):
        import diffflow.api as dd

        # epochs (ST2) by default; time windows of window_ns (SnailTrail 1, construction A)
        self.window_ns = window_ns
        self._latest: dict = {}  # worker -> its latest timestamp (window mode)
        self.flow = flow = dd.Dataflow(partitions=partitions, runtime=runtime)
        self._pending = Events.empty()
        self.names: dict = {}
        self.chains = flow.input("chains", EDGE_COLUMNS)
        self.sent = flow.input("sent", _KEY + ["rw", "st", "sk", "n"])
        self.received = flow.input("received", _KEY + ["rw_r", "rt", "rk"])
        self.invocations = flow.input("invocations", ["snap", "w", "op", "start", "end", "n"])
        # what each input holds, so that retire() can take old snapshots out again
        self._inputs = [(inp, inp.output(changes=False)) for inp in (self.chains, self.sent, self.received, self.invocations)]
        col = dd.col
        pairs = self.sent.join(self.received, on=_KEY)
        messages = (pairs.filter(((col("rw") == col("rw_r")) | (col("rw") < 0)) & (col("rw_r") != col("sw")))
                    .select("snap", src_w="sw", src_t="st", src_k="sk", dst_w="rw_r", dst_t="rt", dst_k="rk",
                            type="act", op=dd.lit(-1), n="n", block=dd.lit(0)))
        edges = self.chains.concat(messages)
        self._edges = edges.output("edges", changes=False)
        duration = col("dst_t") - col("src_t")
        self._metrics = (edges.select("snap", "src_w", "dst_w", "type", d=(duration + abs(duration)) // 2,
                                      r=(col("n") + abs(col("n"))) // 2)
                         .aggregate(by=["snap", "src_w", "dst_w", "type"], count=dd.count(),
                                    duration_ns=dd.sum("d"), records=dd.sum("r"))
                         .output("metrics", changes=False))
        vertices = edges.select("snap", w="src_w", t="src_t").concat(edges.select("snap", w="dst_w", t="dst_t"))
        spans = vertices.aggregate(by=["snap"], start=dd.min("t"), end=dd.max("t"))
        self._spans = spans.output("spans", changes=False)
        self._cp = edges.reduce(critical_rows, by=["snap"], columns=EDGE_COLUMNS[1:],
                                out={"summary": int, "key": int, "cp": float, "paths": float, "start": int,
                                     "end": int}).output("cp", changes=False)
        self._checks = {}
        if message_max_ns is not None:
            self._checks["message"] = edges.filter((col("src_w") != col("dst_w")) & (duration > message_max_ns)).output(changes=False)
        if epoch_max_ns is not None:
            self._checks["epoch"] = spans.filter(col("end") - col("start") > epoch_max_ns).output(changes=False)
        if operator_max_ns is not None:
            self._checks["operator"] = self.invocations.filter(
                col("end") - col("start") > operator_max_ns).output(changes=False)
        if progress:
            control = edges.filter((col("type") == ACTIVITY["ControlMessage"]) & (col("src_w") != col("dst_w")))
            talking = control.select("snap", w="src_w").distinct()
            active = vertices.select("snap", "w").distinct()
            # alone in a snapshot, a worker has no one to send progress to
            crowded = active.aggregate(by=["snap"], workers=dd.count()).filter(col("workers") > 1)
            self._checks["progress"] = active.semijoin(crowded, on="snap").antijoin(
                talking, on=["snap", "w"]).output(changes=False)

    # -- input -----------------------------------------------------------------------------------
    def feed(self, events: Events) -> None:
        """Stage raw events (any batch, any order across workers; one worker's epochs in order).

        >>> f = PagFlow(); f.feed(Events.empty()); f.close()
        """
        self.names.update(events.names)
        if self.window_ns is not None:
            self._pending = Events.concat([self._pending, events])
            # a window is complete once every worker seen so far has logged something after its end
            for w, t in zip(*_latest_per_worker(events.w, events.t)):
                self._latest[w] = max(self._latest.get(w, t), t)
            if self._latest:
                horizon = min(self._latest.values()) // self.window_ns
                self._insert_windows(self._pending.t // self.window_ns < horizon)
            return
        is_msg = np.isin(events.act, MESSAGES)
        sent = events.take(is_msg & (events.kind == SENT))
        recv = events.take(is_msg & (events.kind == RECEIVED))
        if len(sent):
            self.sent.insert(np.c_[sent.e, sent.w, sent.corr, sent.ch, sent.act, sent.peer, sent.t, sent.seq, sent.n])
        if len(recv):
            self.received.insert(np.c_[recv.e, recv.peer, recv.corr, recv.ch, recv.act, recv.w, recv.t, recv.seq])
        self._pending = Events.concat([self._pending, events])
        # a worker's chain of an epoch is complete once it logged something of a later epoch
        latest = np.full(int(self._pending.w.max(initial=-1)) + 1, np.iinfo(np.int64).min)
        np.maximum.at(latest, self._pending.w, self._pending.e)
        self._insert_chains(self._pending.e < latest[self._pending.w])

    def flush(self) -> None:
        """Take every staged chain (or window) as complete (the trace has ended)."""
        everything = np.ones(len(self._pending), bool)
        if self.window_ns is not None:
            self._insert_windows(everything)
        else:
            self._insert_chains(everything)

    def _insert_windows(self, done: np.ndarray) -> None:
        """Build the PAG of complete windows (construction A: messages paired within the window)."""
        from diffflow.pag.windows import build_windows

        if not done.any():
            return
        edges = build_windows(self._pending.take(done), self.window_ns)
        self._pending = self._pending.take(~done)
        self._insert_edges(edges)

    def _insert_chains(self, done: np.ndarray) -> None:
        if not done.any():
            return
        chains = chain_edges(self._pending.take(done))
        self._pending = self._pending.take(~done)
        self._insert_edges(chains)

    def _insert_edges(self, chains: Edges) -> None:
        if len(chains):
            self.chains.insert(np.c_[[getattr(chains, c).astype(np.int64) for c in EDGE_COLUMNS]].T)
            rows = invocations(chains)
            if rows:
                self.invocations.insert([(r[1], r[2], r[4], r[5], r[6], r[8]) for r in rows])

    def retire(self, before: int) -> None:
        """Forget the snapshots numbered below ``before`` (their rows leave every collection).

        >>> f = PagFlow(); f.retire(3); f.close()
        """
        for inp, out in self._inputs:
            rows = _rows(out.snapshot(), len(inp.columns))
            old = rows[rows[:, 0] < before]
            if len(old):
                inp.remove(old)

    def advance(self) -> None:
        """Compute everything fed so far."""
        self.flow.advance()

    def close(self) -> None:
        """Release the dataflow (and its workers)."""
        self.flow.close()

    # -- results --------------------------------------------------------------------------------
    def edges(self) -> Edges:
        """The PAG as it stands: complete chains and every message whose two halves arrived."""
        rows = _rows(self._edges.snapshot(), len(EDGE_COLUMNS))
        cols = [rows[:, i].copy() for i in range(len(EDGE_COLUMNS))]
        cols[-1] = cols[-1].astype(bool)
        return Edges(*cols, names=dict(self.names))

    def metrics(self):
        """ST2's metrics, as :func:`diffflow.pag.activity_metrics.metrics` computes them from scratch."""
        snap = "epoch" if self.window_ns is None else "window"
        frame = self._metrics.to_pandas().rename(columns={"snap": snap, "src_w": "from_worker",
                                                          "dst_w": "to_worker", "type": "activity"})
        frame["activity"] = [ACTIVITIES[c] for c in frame["activity"].tolist()]
        return frame.sort_values([snap, "from_worker", "to_worker"], kind="stable").reset_index(drop=True)

    def cp(self) -> list:
        """Per snapshot, CP summaries in the form of :func:`~diffflow.pag.critical.critical_participation`'s."""
        out = {}
        for snap, kind, key, value, paths, start, end in sorted(self._cp.snapshot()):
            epoch = snap if self.window_ns is None else None
            s = out.setdefault(snap, {"snapshot": snap, "epoch": epoch, "start": start, "end": end, "paths": paths,
                                      "by_activity": {}, "by_worker": {}, "by_operator": {}, "by_pair": {}})
            if kind == _ACTIVITY:
                s["by_activity"][ACTIVITIES[key]] = value
            elif kind == _WORKER:
                s["by_worker"][str(key)] = value
            elif kind == _OPERATOR:
                s["by_operator"][operator_label(key, self.names)] = value
            elif kind == _PAIR:
                s["by_pair"][f"{key >> 32}->{key & 0xFFFFFFFF}"] = value
        for s in out.values():
            for part in ("by_activity", "by_worker", "by_operator", "by_pair"):
                s[part] = dict(sorted(s[part].items()))
        return [out[k] for k in sorted(out)]

    def spans(self) -> dict:
        """``{snapshot: (start, end)}``: the earliest and latest instants of each snapshot."""
        return {s: (a, b) for (s, a, b) in self._spans.snapshot()}

    def violations(self):
        """The violated invariants, as :func:`diffflow.pag.checks.violations` lists them."""
        import pandas as pd

        rows = []
        for kind, out in self._checks.items():
            for row in out.snapshot():
                if kind == "message":
                    s, sw, st, _, dw, dt, _, typ = row[:8]
                    rows.append(("message", s, sw, dw, None, st, dt, dt - st, ACTIVITIES[typ]))
                elif kind == "epoch":
                    s, a, b = row
                    rows.append(("epoch", s, None, None, None, a, b, b - a, "snapshot took this long"))
                elif kind == "operator":
                    s, w, op, a, b, n = row
                    rows.append(("operator", s, w, None, op, a, b, b - a, _records(n)))
                else:
                    s, w = row
                    rows.append(("progress", s, w, None, None, None, None, 0,
                                 "sent no progress (ControlMessage) in this snapshot"))
        frame = pd.DataFrame(rows, columns=VIOLATION_COLUMNS).astype(
            {c: "Int64" for c in ("snapshot", "worker", "peer", "operator", "start", "end", "duration_ns")})
        return frame.sort_values(["duration_ns", "kind", "snapshot", "worker"], ascending=[False, True, True, True],
                                 kind="stable").reset_index(drop=True)


_ACTIVITY, _WORKER, _OPERATOR, _PAIR = 0, 1, 2, 3


def critical_rows(starts, cols, mults):
    """Custom reducer: the critical participation summaries of each snapshot (group) of edges.

    ``cols`` are the edge columns after ``snap``; each snapshot yields rows
    ``(summary, key, cp, paths, start, end)``: summary 0 = activity type code,
    1 = worker, 2 = operator id, 3 = worker pair ``src << 32 | dst`` (every
    snapshot has activity rows: its padding edges at least).  Pure: a
    function of the snapshot's edges only.

    >>> cols = tuple(np.array([v]) for v in (0, 0, 0, 0, 5, 0, ACTIVITY["Busy"], -1, -1, 0))
    >>> index, (kind, key, cp, paths, start, end) = critical_rows(np.array([0, 1]), cols, np.ones(1, np.int64))
    >>> kind.tolist(), key.tolist(), cp.tolist(), paths.tolist(), end.tolist()
    ([0, 0, 1], [0, 13, 0], [0.0, 1.0, 1.0], [1.0, 1.0, 1.0], [5, 5, 5])
    """
    from diffflow.pag.critical import _grouped, critical_participation

    groups = len(starts) - 1
    snap = np.repeat(np.arange(groups), np.diff(starts))
    src_w, src_t, src_k, dst_w, dst_t, dst_k, typ, op, n, block = cols
    edges = Edges(snap, src_w, src_t, src_k, dst_w, dst_t, dst_k, typ, op, n, block.astype(bool))
    result = critical_participation(edges, pad=True)
    e, cp = result.edges, result.cp
    which = e.snap  # group index of every (padded) edge
    local = e.is_local
    parts = [(_ACTIVITY, e.type, np.ones(len(e), bool)), (_WORKER, e.src_w, local), (_OPERATOR, e.op, e.op >= 0),
             (_PAIR, (e.src_w << 32) | e.dst_w, ~local)]
    index, kinds, keys, values = [], [], [], []
    for kind, key, mask in parts:
        for g, sums in enumerate(_grouped(which, key, cp, mask, groups, int)):
            index += [g] * len(sums)
            kinds += [kind] * len(sums)
            keys += list(sums)
            values += list(sums.values())
    index = np.array(index, np.int64)
    spans = {s["snapshot"]: s for s in result.summaries}
    paths = np.array([spans[g]["paths"] for g in index.tolist()], np.float64)
    start = np.array([spans[g]["start"] for g in index.tolist()], np.int64)
    end = np.array([spans[g]["end"] for g in index.tolist()], np.int64)
    return index, (np.array(kinds, np.int64), np.array(keys, np.int64), np.array(values, np.float64),
                   paths, start, end)


def _latest_per_worker(w: np.ndarray, t: np.ndarray):
    """The workers of a batch and each one's latest timestamp in it."""
    workers, index = np.unique(w, return_inverse=True)
    latest = np.full(len(workers), np.iinfo(np.int64).min)
    np.maximum.at(latest, index.reshape(-1), t)
    return workers.tolist(), latest.tolist()


def _rows(snapshot: dict, width: int) -> np.ndarray:
    """The rows of an output snapshot (each as often as its multiplicity) as an int64 array."""
    if not snapshot:
        return np.zeros((0, width), np.int64)
    rows = np.array(list(snapshot.keys()), np.int64).reshape(-1, width)
    return np.repeat(rows, np.array(list(snapshot.values()), np.int64), axis=0)
