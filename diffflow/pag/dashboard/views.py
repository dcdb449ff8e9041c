"""What the dashboard shows, as plain JSON-ready dicts computed from a PAG: a snapshot's
timeline (one lane per worker), critical participation per snapshot, ST2's metrics and the
invariant violations, longest first.

>>> from diffflow.pag.edges import Edges
>>> from diffflow.pag.api import PAG
>>> pag = PAG(Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Processing"),
...                            (1, 0, 5, 0, 1, 9, 0, "DataMessage"),
...                            (1, 1, 0, 0, 1, 9, 0, "Waiting")]), epochs=True)
>>> view = timeline(pag, 1)
>>> view["workers"], [a["type"] for a in view["activities"]], len(view["messages"])
([0, 1], ['Processing', 'Waiting'], 1)
>>> summary = overview(pag)
>>> summary["snapshots"][0]["by_worker"], [v["kind"] for v in summary["violations"]]
({'0': 0.7777777777777778, '1': 0.0}, ['progress', 'progress'])
"""
from __future__ import annotations

import numpy as np

from diffflow.pag.api import PAG, cp_json
from diffflow.pag.readable import with_operator_labels
from diffflow.runtime.events import ACTIVITIES

MAX_EDGES = 20_000   # a timeline shows at most this many edges of one snapshot (the longest)


def timeline(pag: PAG, snapshot: int) -> dict:
    """One snapshot's activities (local edges) and messages (cross-worker edges)."""
    edges = pag.edges.take(np.flatnonzero(pag.edges.snap == snapshot))
    shown = len(edges)
    if shown > MAX_EDGES:   # the longest edges: what a person can see at this zoom
        edges = edges.take(np.sort(np.argsort(-edges.duration, kind="stable")[:MAX_EDGES]))
    local = edges.is_local
    names = np.array(ACTIVITIES, dtype=object)
    activities = [{"w": int(w), "t0": int(a), "t1": int(b), "type": str(k), "op": int(o),
                   "n": int(n)}
                  for w, a, b, k, o, n in zip(edges.src_w[local], edges.src_t[local],
                                              edges.dst_t[local], names[edges.type[local]],
                                              edges.op[local], edges.n[local])]
    messages = [{"src": int(s), "t0": int(a), "dst": int(d), "t1": int(b), "type": str(k),
                 "n": int(n)}
                for s, a, d, b, k, n in zip(edges.src_w[~local], edges.src_t[~local],
                                            edges.dst_w[~local], edges.dst_t[~local],
                                            names[edges.type[~local]], edges.n[~local])]
    workers = sorted({int(w) for w in np.concatenate([edges.src_w, edges.dst_w]).tolist()})
    origin = int(edges.src_t.min()) if len(edges) else 0   # times shown from the first
    return {"snapshot": int(snapshot), "workers": workers, "origin": origin,
            "activities": activities,
            "messages": messages, "edges": int(shown), "truncated": shown > len(edges)}


def khop(pag: PAG, snapshot: int, k: int = 3) -> dict:
    """ST2's k-hop wait explanation of one snapshot (``diffflow pag match`` with the
    ``khop.dl`` pattern): per hop up to ``k`` and activity type, how many activities and how
    long, summed over workers.

    >>> from diffflow.pag.edges import Edges
    >>> pag = PAG(Edges.from_rows([(1, 0, 0, 0, 1, 7, 0, "DataMessage"),
    ...                            (1, 1, 2, 0, 1, 7, 0, "Waiting")]), epochs=True)
    >>> khop(pag, 1, 2)["rows"]
    [{'hops': 1, 'type': 'DataMessage', 'count': 1, 'total_ns': 7.0}]
    """
    from diffflow.pag.relations import match

    edges = pag.edges.take(np.flatnonzero(pag.edges.snap == snapshot))
    if not len(edges):
        return {"snapshot": int(snapshot), "k": int(k), "rows": []}
    found = match(PAG(edges, pag.epochs, pag.window_ns), '#include "khop.dl"\n',
                  filename="<dashboard k-hop>", macros={"K": str(int(k))})["khop_summary"]
    rows = found.groupby(["hops", "type"], sort=True).agg(count=("count", "sum"),
                                                           total_ns=("total_ns", "sum"))
    return {"snapshot": int(snapshot), "k": int(k),
            "rows": [{"hops": int(h), "type": str(t), "count": int(r["count"]),
                      "total_ns": float(r["total_ns"])} for (h, t), r in rows.iterrows()]}


def overview(pag: PAG, **thresholds) -> dict:
    """Every snapshot's critical participation (``snapshots``, as ``diffflow pag cp
    --json`` gives it), ST2's metrics (``metrics``: per snapshot, worker pair and activity)
    and the invariant violations, longest first (``violations``: :func:`~diffflow.pag.checks.violations`'
    columns, and ``operator_name``, the operator as ``name (id N)``).  ``thresholds`` are those
    of :func:`~diffflow.pag.checks.violations` (``pag serve`` takes ``pag invariants``' options).

    >>> from diffflow.pag.edges import Edges
    >>> pag = PAG(Edges.from_rows([(1, 0, 0, 0, 0, 5_000_000, 0, "Processing", 4, 9)], names={4: "join"}),
    ...           epochs=True)
    >>> [(v["kind"], v["operator_name"]) for v in overview(pag, operator_max_ns=10**6)["violations"]]
    [('operator', 'join (id 4)')]
    """
    from diffflow.pag.activity_metrics import metrics
    from diffflow.pag.checks import violations

    snapshots = [_jsonable(s) for s in cp_json(pag)] if len(pag.edges) else []
    table = metrics(pag.edges, epochs=pag.epochs)
    table = table.rename(columns={table.columns[0]: "snapshot"})
    if thresholds.get("well_formed"):
        thresholds = {**thresholds, "window_ns": pag.window_ns}
    found = violations(pag.edges, **thresholds)
    found.insert(found.columns.get_loc("operator") + 1, "operator_name",
                 with_operator_labels(found[["operator"]], pag.edges.names)["operator"])
    return {"epochs": pag.epochs, "snapshots": snapshots,
            "metrics": _records(table), "violations": _records(found)}


def thresholds_text(thresholds: dict) -> str:
    """What the violations were checked against, for the page's status line.

    >>> thresholds_text({"progress": True, "epoch_max_ns": 5_000_000, "well_formed": True})
    'checked: epoch > 5.000 ms, silent workers, well-formedness'
    >>> thresholds_text({})
    'checked: silent workers'
    """
    from diffflow.pag.readable import format_duration

    parts = [f"{what} > {format_duration(thresholds[key])}"
             for key, what in (("epoch_max_ns", "epoch"), ("operator_max_ns", "operator"),
                               ("message_max_ns", "message"), ("progress_max_ns", "no progress for"))
             if thresholds.get(key) is not None]
    if thresholds.get("progress", True):
        parts.append("silent workers")
    if thresholds.get("well_formed"):
        parts.append("well-formedness")
    return "checked: " + (", ".join(parts) if parts else "nothing")


def _records(frame) -> list:
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dict("records")]


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if value is None or isinstance(value, float) and value != value:   # NaN: no value
        return None
    return value


def _jsonable(summary: dict) -> dict:
    return {k: ({str(kk): _plain(vv) for kk, vv in v.items()} if isinstance(v, dict)
                else _plain(v)) for k, v in summary.items()}
