"""Online analysis of a growing trace: yield a PAG each time snapshots close (``--follow``).

The file is read as it grows, whole lines at a time.  A snapshot closes when
every worker seen so far has logged something past it: a later epoch, or a
time beyond the window's end.  Closed snapshots are built and yielded once;
their lines are then forgotten, so memory follows the open snapshots only.
A malformed line is reported on stderr (``file:line: ...``) and skipped;
the follower keeps going.  With ``until_idle`` it stops once the trace has
not grown for that many seconds, reporting what is still open.
"""
from __future__ import annotations

import io
import os
import sys
import time

import numpy as np

from diffflow.pag.api import PAG, from_events, parse_duration
from diffflow.runtime.events import TraceError


def follow(path, format: str = "diffflow", *, window=None, until_idle=None, poll=0.1,  # noqa: A002
           on_error=None, stopped=None):
    """Yield :class:`~diffflow.pag.api.PAG` s of newly closed snapshots of the trace at ``path``.

    A malformed line goes to ``on_error(message)`` (default: printed on stderr) and is
    skipped.  ``stopped()`` returning true ends the following (checked while waiting).

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "run.trace")
    >>> _ = open(p, "w").write('{"t": 1, "w": 0, "e": 1, "kind": "Start", "act": "Busy"}\\n'
    ...                        '{"t": 4, "w": 0, "e": 1, "kind": "End", "act": "Busy"}\\n'
    ...                        '{"t": 5, "w": 0, "e": 2, "kind": "Start", "act": "Busy"}\\n')
    >>> [sorted(set(p.edges.snap.tolist())) for p in follow(p, until_idle=0.2)]
    [[1], []]
    """
    if format == "spark":
        raise ValueError("--follow reads diffflow and st2 traces; a Spark event log is analysed once it is written")
    window_ns = None if window is None else parse_duration(window)
    reader = _Lines(path)
    pending = []  # parsed chunks of still-open snapshots
    latest: dict = {}  # worker -> the furthest snapshot it reached
    idle_since = time.monotonic()
    while True:
        chunk, first_line = reader.read()
        if chunk:
            idle_since = time.monotonic()
            parsed = _parse(chunk, first_line, reader.name, format, on_error)
            if parsed is not None:
                pending.append(parsed)
            closed, pending = _split_closed(pending, format, window_ns, False, latest)
            if closed is not None:
                yield _build(closed, format, window_ns)
        elif until_idle is not None and time.monotonic() - idle_since >= until_idle:
            closed, _ = _split_closed(pending, format, window_ns, True, latest)
            yield _build(closed, format, window_ns) if closed is not None else _empty(format, window_ns)
            return
        elif stopped is not None and stopped():
            return
        else:
            time.sleep(poll)


def wait_for_trace(path, *, until_idle=None, poll=0.1, stopped=None, who="diffflow pag") -> bool:
    """Wait until the trace at ``path`` exists and has a first line; say so once on stderr.

    ``--follow`` may start before the traced run has written anything.  Returns
    False when ``until_idle`` seconds pass first, or ``stopped()`` turns true.

    >>> import tempfile, os
    >>> wait_for_trace(os.path.join(tempfile.mkdtemp(), "none.trace"), until_idle=0.05)
    False
    """
    start, said = time.monotonic(), False
    while not os.path.exists(path) or os.path.getsize(path) == 0:
        if not said:
            what = "to appear" if not os.path.exists(path) else "to be written (it is empty)"
            print(f"{who}: waiting for {os.fspath(path)} {what}", file=sys.stderr, flush=True)
            said = True
        if stopped is not None and stopped():
            return False
        if until_idle is not None and time.monotonic() - start >= until_idle:
            return False
        time.sleep(poll)
    return True


class _Lines:
    """New complete lines of a growing file, with the number of the first one."""

    def __init__(self, path):
        self.name = os.fspath(path)
        self.handle = open(path, "rb")
        self.rest = b""
        self.line = 1

    def read(self):
        """``(bytes of the new complete lines, number of the first)``; a partial last line waits."""
        data = self.rest + self.handle.read()
        cut = data.rfind(b"\n") + 1
        chunk, self.rest = data[:cut], data[cut:]
        first = self.line
        self.line += chunk.count(b"\n")
        return chunk, first


def _report(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _parse(chunk: bytes, first_line: int, name: str, format, on_error=None):  # noqa: A002
    """Parse whole lines; a bad line is reported and dropped, the others kept."""
    if not chunk.strip():
        return None
    try:  # (the usual case, every line good: one read, not one per line)
        return _read_one(chunk if chunk.endswith(b"\n") else chunk + b"\n", format, name)
    except TraceError:
        pass  # (find the bad lines one at a time, to name and drop them)
    lines = chunk.split(b"\n")
    good = []
    for offset, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            _read_one(line, format, name)
        except TraceError as exc:
            # the reader saw one line, its line 1: name the line of the file instead
            message = str(exc).replace(f"{name}:1:", f"{name}:{first_line + offset}:", 1)
            (on_error or _report)(f"{message} (line skipped)")
            continue
        good.append(line)
    if not good:
        return None
    return _read_one(b"\n".join(good) + b"\n", format, name)


def _read_one(data: bytes, format, name):  # noqa: A002
    if format == "st2":
        from diffflow.pag.st2 import read_st2

        return read_st2(io.BytesIO(data), name=name)
    from diffflow.runtime.events import read_events

    return read_events(io.BytesIO(data), name=name)


def _progress(table, format, window_ns):
    """(worker, snapshot, how far it got) columns of parsed events or edges."""
    if format == "st2":
        return np.r_[table.src_w, table.dst_w], np.r_[table.snap, table.snap]
    if window_ns is None:
        return table.w, table.e
    return table.w, table.t // window_ns


def _split_closed(pending, format, window_ns, final, latest):
    """Closed and still-open rows; ``latest`` (worker -> furthest snapshot seen) persists across calls."""
    if not pending:
        return None, pending
    table = type(pending[0]).concat(pending)
    if final:
        return table, []
    workers, snaps = _progress(table, format, window_ns)
    # a snapshot is closed once every worker seen so far has reached a later one
    for w, s in zip(*np.unique(np.c_[workers, snaps], axis=0).T.tolist()):
        latest[w] = max(latest.get(w, s), s)
    horizon = min(latest.values())
    row_snap = table.snap if format == "st2" else (table.e if window_ns is None else table.t // window_ns)
    closed = row_snap < horizon
    if not closed.any():
        return None, [table]
    return table.take(closed), [table.take(~closed)]


def follow_flow(path, *, window=None, until_idle=None, poll=0.1, partitions=1, **thresholds):
    """Yield a :class:`FlowReport` each time snapshots (epochs, or windows) of a growing diffflow trace close.

    Events go into a :class:`~diffflow.pag.online.PagFlow` as they are read;
    the dataflow maintains the PAG, CP, metrics and violations; each report
    covers the epochs every worker has moved past, which are then retired.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "run.trace")
    >>> _ = open(p, "w").write('{"t": 1, "w": 0, "e": 1, "kind": "Start", "act": "Busy"}\\n'
    ...                        '{"t": 4, "w": 0, "e": 1, "kind": "End", "act": "Busy"}\\n'
    ...                        '{"t": 5, "w": 0, "e": 2, "kind": "Start", "act": "Busy"}\\n')
    >>> [[s["epoch"] for s in r.cp()] for r in follow_flow(p, until_idle=0.2)]
    [[1], []]
    """
    from diffflow.pag.online import PagFlow

    window_ns = None if window is None else parse_duration(window)
    reader = _Lines(path)
    flow = PagFlow(partitions=partitions, window_ns=window_ns, **thresholds)
    latest: dict = {}
    reported = None  # snapshots below this were reported and retired
    idle_since = time.monotonic()
    try:
        while True:
            chunk, first_line = reader.read()
            final = False
            if chunk:
                idle_since = time.monotonic()
                events = _parse(chunk, first_line, reader.name, "diffflow")
                if events is None:
                    continue
                snaps = events.e if window_ns is None else events.t // window_ns
                for w, e in zip(events.w.tolist(), snaps.tolist()):
                    latest[w] = max(latest.get(w, e), e)
                if reported is None:
                    reported = int(snaps.min())
                flow.feed(events)
            elif until_idle is not None and time.monotonic() - idle_since >= until_idle:
                final = True
                flow.flush()
            else:
                time.sleep(poll)
                continue
            if reported is None:  # nothing read yet
                reported = 0
            horizon = (max(latest.values()) + 1 if final else min(latest.values())) if latest else reported
            if horizon > reported or final:
                flow.advance()
                yield FlowReport(flow, range(reported, horizon), epochs=window_ns is None)
                flow.retire(horizon)
                reported = max(reported, horizon)
            if final:
                return
    finally:
        flow.close()


class FlowReport:
    """What a :class:`~diffflow.pag.online.PagFlow` holds about some closed epochs."""

    def __init__(self, flow, snapshots, epochs=True):
        self.flow, self.snapshots, self.epochs = flow, set(snapshots), epochs

    @property
    def pag(self) -> PAG:
        """The PAG of these snapshots, as the dataflow holds it."""
        edges = self.flow.edges()
        return PAG(edges.take(np.isin(edges.snap, list(self.snapshots))), epochs=self.epochs,
                   window_ns=self.flow.window_ns)

    def cp(self) -> list:
        """CP summaries of these snapshots (see :func:`~diffflow.pag.api.cp_json`)."""
        return [s for s in self.flow.cp() if s["snapshot"] in self.snapshots]

    def metrics(self):
        """ST2's metrics of these snapshots."""
        frame = self.flow.metrics()
        return frame[frame.iloc[:, 0].isin(self.snapshots)].reset_index(drop=True)

    @property
    def names(self) -> dict:
        """Operator id -> the name the trace logged for it."""
        return dict(self.flow.names)

    def violations(self):
        """The invariants these snapshots violate."""
        frame = self.flow.violations()
        return frame[frame.snapshot.isin(self.snapshots)].reset_index(drop=True)


class PagReport:
    """The same questions answered from a PAG built in one go (numpy)."""

    def __init__(self, pag: PAG, **thresholds):
        self.pag, self.thresholds = pag, thresholds

    def cp(self) -> list:
        """CP summaries of every snapshot."""
        from diffflow.pag.api import cp_json

        return cp_json(self.pag)

    def metrics(self):
        """ST2's metrics of every snapshot."""
        from diffflow.pag.activity_metrics import metrics

        return metrics(self.pag.edges, epochs=self.pag.epochs)

    @property
    def names(self) -> dict:
        """Operator id -> the name the trace logged for it."""
        return dict(self.pag.edges.names)

    def violations(self):
        """The invariants the PAG violates, with the thresholds given."""
        from diffflow.pag.checks import violations

        options = dict(self.thresholds)
        if options.get("well_formed"):
            options["window_ns"] = self.pag.window_ns
        return violations(self.pag.edges, **options)


def _build(table, format, window_ns) -> PAG:
    if format == "st2":
        return PAG(table, epochs=True)
    return from_events(table, window_ns)


def _empty(format, window_ns) -> PAG:
    from diffflow.pag.edges import Edges

    return PAG(Edges.empty(), epochs=window_ns is None, window_ns=window_ns)
