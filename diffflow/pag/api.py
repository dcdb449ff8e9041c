"""The Python face of ``diffflow pag``: load a trace as a PAG, then ask for CP, metrics, invariants.

Three trace formats:

* ``"diffflow"`` -- diffflow's own raw events (:mod:`diffflow.runtime.events`,
  written by ``Dataflow(trace=...)``); snapshots are epochs (construction B),
  or time windows of ``window`` ns (construction A);
* ``"st2"`` -- a PAG exported by ST2 (:mod:`diffflow.pag.st2`); snapshots are its epochs;
* ``"spark"`` -- a Spark event log (:mod:`diffflow.pag.spark`); snapshots are
  time windows (default 10 s).

>>> import io
>>> pag = load(io.StringIO('{"t": 0, "w": 0, "e": 1, "kind": "Start", "act": "Scheduling", "op": 3, "name": "map"}\\n'
...                        '{"t": 50, "w": 0, "e": 1, "kind": "End", "act": "Scheduling", "op": 3, "n": 8}\\n'))
>>> cp_frame(pag)[["epoch", "summary", "key", "cp"]].values.tolist()[:2]
[[1, 'activity', 'Processing', 1.0], [1, 'activity', 'Unknown', 0.0]]
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from diffflow.pag.critical import critical_participation
from diffflow.pag.edges import Edges
from diffflow.runtime.events import TraceError

FORMATS = ("diffflow", "st2", "spark")
AUTO = "auto"
SPARK_WINDOW_NS = 10 * 10**9
_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}


@dataclass
class PAG:
    """A program activity graph: its edges and how its snapshots were cut.

    ``epochs`` is True for epoch snapshots (padded for CP), False for time
    windows of ``window_ns``.
    """

    edges: Edges
    epochs: bool
    window_ns: int | None = None

    def windows(self) -> dict | None:
        """Each window's ``(start, end)`` (``None`` for epoch snapshots)."""
        if self.epochs:
            return None
        return {int(s): (int(s) * self.window_ns - 1, (int(s) + 1) * self.window_ns)
                for s in set(self.edges.snap.tolist())}


def parse_duration(text) -> int:
    """Nanoseconds from ``"10s"``, ``"250ms"``, ``"40us"``, ``"1000ns"`` or a bare number of ns.

    >>> parse_duration("250ms"), parse_duration(1000)
    (250000000, 1000)
    """
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ns|us|ms|s)?\s*", str(text))
    if not match:
        raise ValueError(f"cannot read {text!r} as a duration: write e.g. 10s, 250ms, 40us or 1000 (ns)")
    return int(round(float(match.group(1)) * _UNITS[match.group(2) or "ns"]))


def detect_format(source) -> str:
    """The format of a trace from its first line: ``st2`` (edges), ``spark`` (``Event``) or ``diffflow``.

    >>> import io
    >>> detect_format(io.StringIO('{"Event": "SparkListenerLogStart", "Spark Version": "3.5.0"}\\n'))
    'spark'
    """
    import gzip
    import json
    import os

    if isinstance(source, (str, os.PathLike)):
        if os.path.isdir(source) or os.fspath(source).endswith(".zstd"):
            return "spark"  # a rolling or compressed Spark event log (Spark 3+)
        opener = gzip.open if os.fspath(source).endswith(".gz") else open
        with opener(source, "rt") as fh:
            first = next((line for line in fh if line.strip()), "")
    else:
        position = source.tell()
        first = next((line for line in source if line.strip()), "")
        source.seek(position)
    try:
        obj = json.loads(first) if first else {}
    except (json.JSONDecodeError, TypeError):
        return "diffflow"  # its reader names the bad line
    if isinstance(obj, dict) and "src" in obj and "dst" in obj:
        return "st2"
    if isinstance(obj, dict) and "Event" in obj:
        return "spark"
    return "diffflow"


def load(source, format: str = AUTO, *, window=None, name: str | None = None) -> PAG:  # noqa: A002
    """Read a trace and build its PAG (epochs, or time windows when ``window`` is given).

    ``format="auto"`` tells the three formats apart by their first line.

    >>> load("x.trace", format="timely")
    Traceback (most recent call last):
    ...
    ValueError: unknown trace format 'timely' (expected auto or one of diffflow, st2, spark)
    """
    if format != AUTO and format not in FORMATS:
        raise ValueError(f"unknown trace format {format!r} (expected auto or one of {', '.join(FORMATS)})")
    if format == AUTO:
        format = detect_format(source)  # noqa: A001
    window_ns = None if window is None else parse_duration(window)
    if format == "st2":
        if window_ns is not None:
            raise ValueError("an ST2 PAG comes cut into epochs; --window applies to diffflow and Spark traces")
        from diffflow.pag.st2 import read_st2

        return PAG(read_st2(source, name=name), epochs=True)
    if format == "spark":
        from diffflow.pag.spark import read_spark

        events = read_spark(source)
        window_ns = window_ns or SPARK_WINDOW_NS
    else:
        from diffflow.runtime.events import read_events

        events = read_events(source, name=name)
    return from_events(events, window_ns)


def from_events(events, window_ns=None) -> PAG:
    """The PAG of raw events: per epoch, or per time window of ``window_ns``.

    >>> from diffflow.runtime.events import Events
    >>> from_events(Events.empty()).epochs
    True
    """
    if window_ns is None:
        from diffflow.pag.epochs import build_epochs

        return PAG(build_epochs(events), epochs=True)
    if window_ns <= 0:
        raise ValueError(f"a window must be positive, got {window_ns} ns")
    from diffflow.pag.windows import build_windows

    return PAG(build_windows(events, window_ns), epochs=False, window_ns=window_ns)


def cp_json(pag: PAG) -> list:
    """One dict per snapshot: ``epoch`` (None for windows), ``start``, ``end``, ``paths`` and the CP summaries.

    >>> cp_json(PAG(Edges.from_rows([(2, 0, 0, 0, 0, 9, 0, "Busy")]), epochs=True))[0]["by_worker"]
    {'0': 1.0}
    """
    result = critical_participation(pag.edges, pad=pag.epochs, epochs=pag.epochs, windows=pag.windows())
    return result.summaries


def cp_frame(pag: PAG):
    """Critical participation as a long pandas frame: one row per (snapshot, summary, key).

    ``summary`` is ``activity``, ``worker``, ``operator`` or ``pair``.

    >>> cp_frame(PAG(Edges.empty(), epochs=True)).columns.tolist()
    ['snapshot', 'epoch', 'start', 'end', 'paths', 'summary', 'key', 'cp']
    """
    import pandas as pd

    rows = [(s["snapshot"], s["epoch"], s["start"], s["end"], s["paths"], kind, key, value)
            for s in cp_json(pag)
            for kind in ("activity", "worker", "operator", "pair")
            for key, value in sorted(s[f"by_{kind}"].items(), key=lambda kv: -kv[1])]
    return pd.DataFrame(rows, columns=["snapshot", "epoch", "start", "end", "paths", "summary", "key", "cp"])


def as_pag(trace, format: str = AUTO, window=None) -> PAG:  # noqa: A002
    """A :class:`PAG` from a trace path or stream, a PAG, or an edge table (taken as epochs).

    >>> as_pag(Edges.empty()).epochs
    True
    """
    if isinstance(trace, PAG):
        return trace
    if isinstance(trace, Edges):
        return PAG(trace, epochs=True)
    return load(trace, format, window=window)


def cp(trace, format: str = AUTO, window=None):  # noqa: A002
    """``diffflow pag cp`` as a pandas frame: one row per (snapshot, summary, key) (see :func:`cp_frame`).

    >>> cp(Edges.from_rows([(1, 0, 0, 0, 0, 4, 0, "Busy")])).query("summary == 'worker'")[["key", "cp"]].values.tolist()
    [['0', 1.0]]
    """
    return cp_frame(as_pag(trace, format, window))


def metrics(trace, format: str = AUTO, window=None):  # noqa: A002
    """``diffflow pag metrics`` as a pandas frame (see :func:`diffflow.pag.activity_metrics.metrics`).

    >>> metrics(Edges.from_rows([(1, 0, 0, 0, 0, 4, 0, "Busy")]))["duration_ns"].tolist()
    [4]
    """
    from diffflow.pag.activity_metrics import metrics as compute

    pag = as_pag(trace, format, window)
    return compute(pag.edges, epochs=pag.epochs)


def invariants(trace, format: str = AUTO, window=None, *, progress: bool = True, epoch_max_ms=None,  # noqa: A002
               operator_max_ms=None, message_max_ms=None, progress_max_ms=None):
    """``diffflow pag invariants`` as a pandas frame of violations, longest first (thresholds in ms).

    >>> invariants(Edges.from_rows([(1, 0, 0, 0, 0, 4_000_000, 0, "Busy")]), epoch_max_ms=1)["kind"].tolist()
    ['epoch']
    """
    from diffflow.pag.checks import violations

    ns = lambda ms: None if ms is None else int(ms * 1e6)  # noqa: E731
    return violations(as_pag(trace, format, window).edges, progress=progress, epoch_max_ns=ns(epoch_max_ms),
                      operator_max_ns=ns(operator_max_ms), message_max_ns=ns(message_max_ms),
                      progress_max_ns=ns(progress_max_ms))


__all__ = ["as_pag", "cp", "metrics", "invariants", "PAG", "FORMATS", "detect_format", "TraceError", "load", "from_events", "cp_json", "cp_frame", "parse_duration"]
