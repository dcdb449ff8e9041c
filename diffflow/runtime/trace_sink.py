"""Where a traced run's events go: one JSON-lines file, or a function (``Dataflow(trace=...)``).

:func:`open_trace` checks the target when the dataflow is built (a path
that cannot be written fails then, naming the fix); a :class:`TraceSink`
takes every worker's events after each run, orders them by time and writes
them (:func:`format_events`: the lines :func:`~diffflow.runtime.events.write_events`
writes, with ``name`` on ``Start`` lines only) or passes them to the function.
The conventions are in :mod:`diffflow.runtime.tracing`.

>>> import io
>>> from diffflow.runtime.events import Events, read_events
>>> ev = Events.from_rows([(0, 1, 5, "Start", "Scheduling", 3), (0, 1, 9, "End", "Scheduling", 3,
...                         -1, -1, -1, 4, 2)], names={3: "distinct"})
>>> print(format_events(ev), end="")
{"t": 5, "w": 0, "kind": "Start", "act": "Scheduling", "e": 1, "seq": 0, "op": 3, "name": "distinct"}
{"t": 9, "w": 0, "kind": "End", "act": "Scheduling", "e": 1, "seq": 1, "op": 3, "n": 4, "out": 2}
>>> read_events(io.StringIO(format_events(ev))).names
{3: 'distinct'}
"""
from __future__ import annotations

import json
import os
from operator import itemgetter
from time import perf_counter_ns

import numpy as np

from diffflow.runtime.events import ACTIVITIES, KINDS, START, Events
from diffflow.runtime.tracing import clock_reference, events_of_block

_OPTIONAL = ("e", "seq", "op", "ch", "corr", "peer", "n", "out", "r")


class TraceSink:
    """The destination of a dataflow's trace: a file path (JSON lines) or ``callable(events)``.

    ``origin`` is the ``perf_counter_ns()`` every worker's ``t`` counts from.
    ``compiled_rounds``: whether the local runtime may run loops' small deltas in
    compiled rounds while tracing (each run then one ``Processing`` span,
    :mod:`diffflow.runtime.tracing`); off, every step of every loop is logged.

    >>> from diffflow.runtime.tracing import BARRIER, WorkerLog
    >>> got, a, b = [], WorkerLog(0), WorkerLog(1); b.span(BARRIER, 3, 4); a.span(BARRIER, 1, 5)
    >>> TraceSink(got.append).emit([b.take_block(), a.take_block()], {})
    >>> got[0].w.tolist(), got[0].t.tolist()   # ordered by time
    ([0, 1, 1, 0], [1, 3, 4, 5])
    """

    def __init__(self, target, option: str = "trace=", compiled_rounds: bool = False):
        self.compiled_rounds = compiled_rounds
        self.callback = None
        self.path = None
        if callable(target):
            self.callback = target
        elif isinstance(target, (str, os.PathLike)):
            self.path = os.fspath(target)
            try:
                with open(self.path, "w", encoding="utf-8"):
                    pass
            except OSError as exc:
                raise ValueError(
                    f"{option}{self.path!r}: cannot write the trace file "
                    f"({exc.strerror or exc}); give a file path in a folder you can write to, "
                    f"or a function that takes the Events of each run") from None
        else:
            raise TypeError(f"trace= takes a file path or a function that receives the Events "
                            f"of each run, got {target!r}")
        self.origin = perf_counter_ns()

    def clock(self) -> tuple:
        """The reference workers in other processes align their clocks to."""
        return clock_reference(self.origin)

    def emit(self, blocks: list, names: dict) -> None:
        """Every worker's events of one run (:meth:`~diffflow.runtime.tracing.WorkerLog.take_block`
        arrays), ordered by ``(t, w, seq)``, named after ``names`` and delivered."""
        blocks = [b for b in blocks if b is not None and len(b)]
        if not blocks:
            return
        block = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
        block = block[np.lexsort((block[:, 2], block[:, 0], block[:, 3]))]
        if self.callback is None:
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(_format_block(block, names))
            return
        ops = np.unique(block[:, 6])
        self.callback(events_of_block(block, {op: names[op] for op in ops.tolist() if op in names}))


def open_trace(target, option: str = "trace=") -> TraceSink | None:
    """The sink for ``Dataflow(trace=target)``: ``None`` (no tracing), a path or a function.

    ``option`` names the setting in error messages (the command line's ``--trace ``).

    >>> open_trace(None) is None
    True
    >>> open_trace("/no/such/folder/run.trace")
    Traceback (most recent call last):
    ...
    ValueError: trace='/no/such/folder/run.trace': cannot write the trace file (No such file or directory); give a file path in a folder you can write to, or a function that takes the Events of each run
    """
    if target is None or isinstance(target, TraceSink):
        return target
    return TraceSink(target, option)


def operator_names(graph) -> dict:
    """``{node id: name}`` of a graph's nodes: the ``name`` of their steps in a trace.

    A Datalog node's name is its rule's text and ``file:line``
    (:attr:`~diffflow.dataflow.graph.Node.name`); any other node's is its label
    (else its kind) and where it was built, ``"distinct at flow.py:12"`` (the
    file's base name and line), so that the pag tools point at the code
    (``diffflow pag cp`` shows ``name (id N)``).

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); _ = a.distinct().output()
    >>> names = operator_names(flow.graph); names[0].split(" at ")[0], names[2].split(" at ")[0]
    ("input 'a'", 'distinct')
    """
    return {node.id: node.name if node.origin is not None else _with_location(node.name, node.location)
            for node in graph.nodes}


def _with_location(name: str, location) -> str:
    """``"name at file:line"`` with the file's base name; the bare name when the place is unknown.

    >>> _with_location("join", "/home/me/flow.py:12"), _with_location("join", "<unknown>")
    ('join at flow.py:12', 'join')
    >>> _with_location("feedback of loop 'cc' (built at /a/f.py:3)", "/a/f.py:3")
    "feedback of loop 'cc' (built at /a/f.py:3)"
    """
    location = str(location or "")
    if not location or location == "<unknown>" or location in name:   # (a loop's label says it)
        return name
    path, _, line = location.rpartition(":")
    if not path or not line.isdigit():
        return f"{name} at {location}"
    return f"{name} at {os.path.basename(path)}:{line}"


def format_events(events: Events) -> str:
    """JSON lines of ``events`` (absent fields left out; ``name`` on ``Start`` lines).

    Events of one shape (kind, activity, fields present; the operator on a
    named ``Start``) share a ``%`` template, so an event costs one template
    lookup and one ``%``: under a microsecond.

    >>> format_events(Events.from_rows([(2, 1, 7, "Sent", "ControlMessage", -1, -1, 0, 1)]))
    '{"t": 7, "w": 2, "kind": "Sent", "act": "ControlMessage", "e": 1, "seq": 0, "corr": 0, "peer": 1}\\n'
    """
    return _format_block(np.stack([getattr(events, c) for c in Events.COLUMNS], 1)
                         if len(events) else np.zeros((0, len(Events.COLUMNS)), np.int64), events.names)


# columns of Events.COLUMNS: the optional fields in the order they are written, kind, act, op
_OPTIONAL_AT = [Events.COLUMNS.index(c) for c in _OPTIONAL]
_KIND, _ACT, _OP = (Events.COLUMNS.index(c) for c in ("kind", "act", "op"))
_T, _W = Events.COLUMNS.index("t"), Events.COLUMNS.index("w")


def _format_block(block: np.ndarray, names: dict) -> str:
    if not len(block):
        return ""
    bits = (block[:, _OPTIONAL_AT] >= 0) @ (1 << np.arange(len(_OPTIONAL)))
    kind, op = block[:, _KIND], block[:, _OP]
    shape = (bits * len(KINDS) + kind) * len(ACTIVITIES) + block[:, _ACT]
    shape = np.where((kind == START) & (op >= 0), shape + ((op + 1) << 20), shape)
    templates: dict = {}
    lines = []
    for row, key, present in zip(block.tolist(), shape.tolist(), bits.tolist()):
        found = templates.get(key)
        if found is None:
            name = names.get(row[_OP]) if row[_KIND] == START else None
            found = templates[key] = _template(row[_KIND], row[_ACT], present, name)
        template, pick = found
        lines.append(template % pick(row))
    return "".join(lines)


_TEMPLATES: dict = {}  # (kind, act, fields present, name) -> (template, picker)


def _template(kind: int, act: int, present: int, name) -> tuple:
    """The ``%`` template of one event shape (``present``: a bit per optional field), and
    what picks its values from a row with the columns ``Events.COLUMNS``; built once.

    >>> text, pick = _template(1, ACTIVITIES.index("Busy"), 0b1, None)
    >>> text % pick([0, 1, 0, 5, 13, 1, -1, -1, -1, -1, -1, -1])
    '{"t": 5, "w": 0, "kind": "End", "act": "Busy", "e": 1}\\n'
    """
    key = (kind, act, present, name)
    found = _TEMPLATES.get(key)
    if found is None:
        if len(_TEMPLATES) > 100_000:  # names of many dataflows: start over
            _TEMPLATES.clear()
        fields = [j for j in range(len(_OPTIONAL)) if present >> j & 1]
        named = "" if name is None else f', "name": {json.dumps(str(name))}'.replace("%", "%%")
        text = (f'{{"t": %d, "w": %d, "kind": "{KINDS[kind]}", "act": "{ACTIVITIES[act]}"'
                + "".join(f', "{_OPTIONAL[j]}": %d' for j in fields) + named + "}\n")
        found = _TEMPLATES[key] = (text, itemgetter(_T, _W, *[_OPTIONAL_AT[j] for j in fields]))
    return found
