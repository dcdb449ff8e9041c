"""Raw execution events: diffflow's trace format, and the columnar table PAGs are built from.

A trace is a JSON-lines file with one event per line (the superset of
SnailTrail 1's and ST2's log records, ``PAG.md`` §1.3)::

    {"t": 1200, "w": 0, "e": 1, "seq": 7, "kind": "Start", "act": "Scheduling",
     "op": 4, "name": "join", "n": 512}

==========  ========  ===========================================================
field       required  meaning
==========  ========  ===========================================================
``t``       yes       timestamp in nanoseconds on the worker's clock
``w``       yes       worker (a sequential timeline: a partition worker, a core)
``kind``    yes       ``Start`` / ``End`` of an activity, ``Sent`` / ``Received``
                      half of a message
``act``     yes       activity type (:data:`ACTIVITIES`), e.g. ``Scheduling``
                      for an operator step, ``DataMessage`` for a chunk of rows
``e``       no        epoch of the traced computation (the snapshot of ``--epochs``)
``seq``     no        order of logging on the worker (default: line order)
``op``      no        operator (graph node) id; ``name`` its name
``ch``      no        channel of a message (the receiving node's port)
``corr``    no        correlator pairing a message's ``Sent`` and ``Received``
``peer``    no        the other worker of a message (absent on a broadcast send)
``n``       no        record count (rows an operator step consumed, rows in a message)
``out``     no        rows an operator step emitted
``r``       no        round of an outermost loop: on a step inside a loop, the
                      latest round of the rows it emitted (else consumed); on a
                      compiled loop's ``Processing`` span (``Dataflow(trace=...)``
                      with compiled rounds, :mod:`diffflow.runtime.tracing`), the
                      first round it ran on ``Start``, the last it completed on
                      ``End``
==========  ========  ===========================================================

:func:`read_events` loads a trace into :class:`Events`, numpy columns with
``-1`` for "absent"; malformed lines raise :class:`TraceError` naming
``file:line``.

>>> import io
>>> ev = read_events(io.StringIO('{"t": 5, "w": 0, "kind": "Start", "act": "Scheduling", "op": 2}\\n'
...                              '{"t": 9, "w": 0, "kind": "End", "act": "Scheduling", "op": 2, "n": 3}\\n'))
>>> len(ev), ev.t.tolist(), ev.n.tolist(), ACTIVITIES[ev.act[0]]
(2, [5, 9], [-1, 3], 'Scheduling')
"""
from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass, field

import numpy as np

from diffflow.common.errors import DiffflowError

#: activity types: SnailTrail 1's and ST2's taxonomies together (PAG.md §1.2); codes are indices
ACTIVITIES = ("Unknown", "Input", "Buffer", "Scheduling", "Processing", "Spinning",
              "BarrierProcessing", "Serialization", "Deserialization", "FaultTolerance",
              "ControlMessage", "DataMessage", "Waiting", "Busy")
ACTIVITY = {name: code for code, name in enumerate(ACTIVITIES)}
#: event kinds; codes are indices
KINDS = ("Start", "End", "Sent", "Received")
KIND = {name: code for code, name in enumerate(KINDS)}
START, END, SENT, RECEIVED = range(4)
MESSAGES = (ACTIVITY["ControlMessage"], ACTIVITY["DataMessage"])

_OPTIONAL = ("e", "seq", "op", "ch", "corr", "peer", "n", "out", "r")


class TraceError(DiffflowError, ValueError):
    """A trace line that cannot be read; the message starts with ``file:line``."""


@dataclass
class Events:
    """A table of raw events, one numpy column per field (``-1`` = absent).

    ``act`` and ``kind`` hold codes into :data:`ACTIVITIES` and :data:`KINDS`;
    ``names`` maps operator ids to names.

    >>> ev = Events.from_rows([(0, 0, 10, "Start", "Scheduling"), (0, 0, 12, "End", "Scheduling")])
    >>> ev.seq.tolist(), ev.e.tolist()
    ([0, 1], [0, 0])
    """

    w: np.ndarray
    e: np.ndarray
    seq: np.ndarray
    t: np.ndarray
    act: np.ndarray
    kind: np.ndarray
    op: np.ndarray
    ch: np.ndarray
    corr: np.ndarray
    peer: np.ndarray
    n: np.ndarray
    out: np.ndarray
    r: np.ndarray = None   # (tables built before rounds were logged: all -1)
    names: dict = field(default_factory=dict)

    COLUMNS = ("w", "e", "seq", "t", "act", "kind", "op", "ch", "corr", "peer", "n", "out", "r")

    def __post_init__(self):
        if self.r is None:
            self.r = np.full(len(self.t), -1, np.int64)

    def __len__(self) -> int:
        return len(self.t)

    @classmethod
    def empty(cls) -> "Events":
        """An event table with no rows.

        >>> len(Events.empty())
        0
        """
        return cls(*(np.zeros(0, np.int64) for _ in cls.COLUMNS))

    @classmethod
    def from_rows(cls, rows, names=None) -> "Events":
        """Events from tuples ``(w, e, t, kind, act[, op, ch, corr, peer, n, out, r])``; ``seq`` = row order per worker.

        >>> Events.from_rows([(1, 2, 7, "Sent", "DataMessage", -1, 3, 9, 0, 100)]).corr.tolist()
        [9]
        """
        cols = {c: [] for c in cls.COLUMNS if c != "seq"}
        for row in rows:
            w, e, t, kind, act, *rest = row
            rest = list(rest) + [-1] * (7 - len(rest))
            for name, value in zip(("w", "e", "t", "kind", "act", "op", "ch", "corr", "peer", "n", "out",
                                    "r"),
                                   (w, e, t, KIND[kind], ACTIVITY[act], *rest)):
                cols[name].append(value)
        arrays = {c: np.asarray(v, np.int64).reshape(-1) for c, v in cols.items()}
        arrays["seq"] = _line_order(arrays["w"])
        return cls(**arrays, names=dict(names or {}))

    def take(self, index) -> "Events":
        """The rows at ``index`` (an index array or boolean mask).

        >>> Events.from_rows([(0, 0, 1, "Start", "Busy"), (0, 0, 2, "End", "Busy")]).take([1]).t.tolist()
        [2]
        """
        return Events(*(getattr(self, c)[index] for c in self.COLUMNS), names=self.names)

    @staticmethod
    def concat(parts) -> "Events":
        """The rows of several tables, in order.

        >>> a = Events.from_rows([(0, 0, 1, "Start", "Busy")]); len(Events.concat([a, a]))
        2
        """
        parts = list(parts)
        if not parts:
            return Events.empty()
        names = {}
        for p in parts:
            names.update(p.names)
        return Events(*(np.concatenate([getattr(p, c) for p in parts]) for c in Events.COLUMNS),
                      names=names)


def _line_order(workers: np.ndarray) -> np.ndarray:
    """Per-worker running index of each row, in row order."""
    order = np.argsort(workers, kind="stable")
    sorted_w = workers[order]
    starts = np.flatnonzero(np.r_[True, sorted_w[1:] != sorted_w[:-1]]) if len(order) else order
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    seq = np.empty(len(order), np.int64)
    seq[order] = np.arange(len(order)) - run_start
    return seq


def read_events(source, *, name: str | None = None) -> Events:
    """Read a diffflow trace (a path, ``.gz`` or not, or a stream of JSON lines) into :class:`Events`.

    Lines are parsed by pyarrow's JSON reader; on a malformed line the file is
    scanned again line by line to name it.

    >>> import io
    >>> read_events(io.StringIO('{"t": 1, "w": 0, "kind": "Begin", "act": "Busy"}\\n'), name="run.trace")
    Traceback (most recent call last):
    ...
    diffflow.runtime.events.TraceError: run.trace:1: unknown kind 'Begin' (expected one of Start, End, Sent, Received)
    """
    data, name = read_bytes(source, name)
    if not data.strip():
        return Events.empty()
    try:
        table = _arrow_table(data)
    except Exception:  # noqa: BLE001 - pyarrow's errors are re-raised as located TraceErrors
        _locate_syntax_error(data, name)
        raise  # a line-by-line parse found nothing wrong: pyarrow's own message is all we have
    return _events_from_table(table, data, name)


def read_bytes(source, name=None) -> tuple:
    """``(bytes, name)`` of a path (gzip-compressed when it ends in ``.gz``) or of a stream;
    ``name`` names the source in messages (default: the path)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as fh:
            return fh.read(), name or path
    data = source.read()
    if isinstance(data, str):
        data = data.encode()
    return data, name or getattr(source, "name", "<trace>")


def _arrow_table(data: bytes):
    import pyarrow.json as pj

    # one block holds the whole file, so every column's type is inferred from all of it
    options = pj.ReadOptions(block_size=max(1 << 20, len(data) + 1))
    return pj.read_json(io.BytesIO(data), read_options=options)


def _locate_syntax_error(data: bytes, name: str) -> None:
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{name}:{lineno}: not a JSON object ({exc.msg} at column {exc.colno}); "
                             "each line of a trace is one event") from None
        if not isinstance(obj, dict):
            raise TraceError(f"{name}:{lineno}: expected a JSON object per line, got "
                             f"{type(obj).__name__}")
        for key, value in obj.items():
            if key in ("kind", "act", "name"):
                if not isinstance(value, str):
                    raise TraceError(f"{name}:{lineno}: field {key!r} must be a string, got {value!r}")
            elif key in ("t", "w") + _OPTIONAL and not (isinstance(value, int) or value is None):
                raise TraceError(f"{name}:{lineno}: field {key!r} must be an integer, got {value!r}")
            elif key in ("t", "w") + _OPTIONAL and value is not None and not -(2**63) <= value < 2**63:
                raise TraceError(f"{name}:{lineno}: field {key!r} = {value} does not fit a 64-bit integer")


def _line_numbers(data: bytes) -> np.ndarray:
    """1-based file line of each non-blank line (pyarrow skips blank lines)."""
    lines = data.splitlines()
    return np.array([i for i, line in enumerate(lines, 1) if line.strip()], np.int64)


def _bad(data, name, row: int, message: str):
    line = int(_line_numbers(data)[row])
    raise TraceError(f"{name}:{line}: {message}")


def _int_column(table, key, data, name, required):
    import pyarrow as pa

    if key not in table.column_names:
        if required:
            _bad(data, name, 0, f"missing field {key!r}; every event needs t, w, kind and act")
        return np.full(table.num_rows, -1, np.int64)
    col = table.column(key)
    if not pa.types.is_integer(col.type) and not pa.types.is_null(col.type):
        _locate_syntax_error(data, name)
        raise TraceError(f"{name}: field {key!r} holds {col.type} values; it must be a 64-bit integer on every line")
    nulls = col.is_null().to_numpy(zero_copy_only=False)
    if required and nulls.any():
        _bad(data, name, int(np.argmax(nulls)), f"missing field {key!r}; every event needs t, w, kind and act")
    values = col.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return values


def _coded_column(table, key, codes: dict, data, name):
    if key not in table.column_names:
        _bad(data, name, 0, f"missing field {key!r}; every event needs t, w, kind and act")
    col = table.column(key)
    if col.null_count:
        nulls = col.is_null().to_numpy(zero_copy_only=False)
        _bad(data, name, int(np.argmax(nulls)), f"missing field {key!r}; every event needs t, w, kind and act")
    dictionary = col.combine_chunks().dictionary_encode()
    words = dictionary.dictionary.to_pylist()
    lookup = np.array([codes.get(word, -1) for word in words], np.int64)
    out = lookup[dictionary.indices.to_numpy(zero_copy_only=False)]
    if (out < 0).any():
        row = int(np.argmax(out < 0))
        label = "kind" if key == "kind" else "activity"
        expected = ", ".join(codes)
        _bad(data, name, row, f"unknown {label} {words[dictionary.indices[row].as_py()]!r} "
                              f"(expected one of {expected})")
    return out


def _events_from_table(table, data: bytes, name: str) -> Events:
    cols = {key: _int_column(table, key, data, name, key in ("t", "w")) for key in ("t", "w") + _OPTIONAL}
    cols["kind"] = _coded_column(table, "kind", KIND, data, name)
    cols["act"] = _coded_column(table, "act", ACTIVITY, data, name)
    if (cols["w"] < 0).any():
        _bad(data, name, int(np.argmax(cols["w"] < 0)), "worker 'w' must be >= 0")
    if (cols["seq"] < 0).all():
        cols["seq"] = _line_order(cols["w"])
    elif (cols["seq"] < 0).any():
        _bad(data, name, int(np.argmax(cols["seq"] < 0)), "'seq' is given on some lines but not this one")
    names = {}
    if "name" in table.column_names and "op" in table.column_names:
        pairs = table.select(["op", "name"]).drop_null().group_by(["op", "name"]).aggregate([])
        names = dict(zip(pairs.column("op").to_pylist(), pairs.column("name").to_pylist()))
    return Events(**cols, names=names)


def write_events(events: Events, target) -> None:
    """Write events as diffflow trace lines (absent fields are left out).

    >>> import io
    >>> buf = io.StringIO(); write_events(Events.from_rows([(0, 1, 5, "Start", "Busy")]), buf)
    >>> buf.getvalue()
    '{"t": 5, "w": 0, "kind": "Start", "act": "Busy", "e": 1, "seq": 0}\\n'
    """
    out = target if hasattr(target, "write") else open(target, "w")
    try:
        for i in range(len(events)):
            line = {"t": int(events.t[i]), "w": int(events.w[i]), "kind": KINDS[events.kind[i]],
                    "act": ACTIVITIES[events.act[i]]}
            for key in _OPTIONAL:
                value = int(getattr(events, key)[i])
                if value >= 0:
                    line[key] = value
            if line.get("op") in events.names:
                line["name"] = events.names[line["op"]]
            out.write(json.dumps(line) + "\n")
    finally:
        if out is not target:
            out.close()
