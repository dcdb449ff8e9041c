"""Reader of ST2 (SnailTrail 2) PAG exports: JSON lines, one edge per line (PAG.md §5.1).

``{"src": {"t": ns, "w": worker, "e": epoch}, "dst": {...}, "type": "Busy",
"operator": 3, "traverse": "Unbounded", "length": 0}``; operator 0 and length
0 mean "none".  Snapshots are the epochs.

>>> import io
>>> line = ('{"src": {"t": 5, "w": 0, "e": 1}, "dst": {"t": 9, "w": 0, "e": 1}, "type": "Processing", '
...         '"operator": 2, "traverse": "Unbounded", "length": 40}\\n')
>>> e = read_st2(io.StringIO(line)); e.snap.tolist(), e.op.tolist(), e.n.tolist(), e.block.tolist()
([1], [2], [40], [False])
"""
from __future__ import annotations

import json

import numpy as np

from diffflow.pag.edges import Edges
from diffflow.runtime.events import ACTIVITY, TraceError, read_bytes

_TYPES = ("Processing", "Spinning", "Busy", "Waiting", "ControlMessage", "DataMessage")


def read_st2(source, *, name: str | None = None) -> Edges:
    """Read an ST2 PAG export (a path or a stream) into :class:`~diffflow.pag.edges.Edges`.

    >>> import io
    >>> read_st2(io.StringIO('{"src": {"t": 1}}\\n'), name="pag.jsonl")
    Traceback (most recent call last):
    ...
    diffflow.runtime.events.TraceError: pag.jsonl:1: missing field 'src.w' of an ST2 PAG edge
    """
    data, name = read_bytes(source, name)
    rows = []
    lines = data.splitlines()
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{name}:{lineno}: not a JSON object ({exc.msg} at column {exc.colno}); "
                             "an ST2 PAG has one edge per line") from None
        rows.append(_edge_row(obj, name, lineno))
    if not rows:
        return Edges.empty()
    cols = np.array(rows, np.int64).reshape(-1, 10)
    snap, sw, st, dw, dt, typ, op, n, block, dst_e = cols.T
    # ST2 exports have no per-worker sequence numbers: a vertex is (t, w) within its epoch
    zeros = np.zeros(len(snap), np.int64)
    op = np.where(op == 0, -1, op)
    n = np.where(n == 0, -1, n)
    return Edges(snap, sw, st, zeros, dw, dt, zeros.copy(), typ, op, n, block.astype(bool))


def _edge_row(obj, name, lineno):
    if not isinstance(obj, dict):
        raise TraceError(f"{name}:{lineno}: expected a JSON object per line, got {type(obj).__name__}")
    values = []
    for end in ("src", "dst"):
        vertex = obj.get(end)
        for key in ("t", "w", "e"):
            value = vertex.get(key) if isinstance(vertex, dict) else None
            if key == "e" and value is None:
                value = 0  # epoch 0 (setup) is left out by ST2's export
            if not isinstance(value, int):
                what = "missing" if value is None else f"non-integer {value!r} in"
                raise TraceError(f"{name}:{lineno}: {what} field '{end}.{key}' of an ST2 PAG edge")
            values.append(value)
    kind = obj.get("type")
    if kind not in _TYPES:
        raise TraceError(f"{name}:{lineno}: unknown edge type {kind!r} (expected one of {', '.join(_TYPES)})")
    traverse = obj.get("traverse", "Block" if kind == "Waiting" else "Unbounded")
    if traverse not in ("Unbounded", "Block"):
        raise TraceError(f"{name}:{lineno}: unknown traverse {traverse!r} (expected Unbounded or Block)")
    op, length = obj.get("operator", 0), obj.get("length", 0)
    for key, value in (("operator", op), ("length", length)):
        if not isinstance(value, int):
            raise TraceError(f"{name}:{lineno}: field {key!r} must be an integer, got {value!r}")
    st, sw, se, dt, dw, de = values
    return (se, sw, st, dw, dt, ACTIVITY[kind], op, length, traverse == "Block", de)
