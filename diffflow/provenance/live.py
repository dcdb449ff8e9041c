"""Live explanations of collection outputs: ``flow.explanations(output)`` keeps the
explanations of asked rows current as inputs change.

The engine keeps the heights and the indexes the witness queries read (:mod:`.queries`)
current with every :meth:`~diffflow.Dataflow.advance`, by the change alone; after it, each
live explanation follows its proof through them again -- a few index reads per proof level,
no engine commit, however long the history.  :meth:`LiveExplanations.changes` lists the
input rows that entered and left each explanation; a row that leaves the output says so
with a change whose ``input`` is ``None``.

>>> import diffflow as dd
>>> from diffflow import graphs
>>> flow = dd.Dataflow(explain=True)
>>> edges = flow.input("edges", ["src", "dst"]); roots = flow.input("roots", ["node"])
>>> reach = graphs.reachable(edges, roots).output()
>>> edges.insert([(1, 2), (2, 3), (3, 4)]); roots.insert([1]); flow.advance()
>>> live = flow.explanations(reach); live.ask([(4,)])
>>> [(c.input, c.row, c.diff) for c in live.changes()]
[('edges', (1, 2), 1), ('edges', (2, 3), 1), ('edges', (3, 4), 1), ('roots', (1,), 1)]
>>> edges.insert([(1, 4)]); flow.advance()             # a shorter path
>>> [(c.input, c.row, c.diff) for c in live.changes()]
[('edges', (1, 2), -1), ('edges', (1, 4), 1), ('edges', (2, 3), -1), ('edges', (3, 4), -1)]
"""
from __future__ import annotations

from typing import NamedTuple

from .search import ExplainError, _Search, multiplicities, provenance_of


class Change(NamedTuple):
    """An input row entering (``diff`` +1) or leaving (-1) the explanation of ``target``;
    ``input`` ``None``: the target itself left (-1) or came back to (+1) the output."""
    target: tuple
    input: str | None
    row: tuple | None
    diff: int


class LiveExplanations:
    """Explanations of rows of one output, kept current by every advance (module doc).
    Index it by row: a :class:`~diffflow.provenance.search.CollectionExplanation`, or
    ``None`` while the row is not in the output."""

    def __init__(self, output):
        self.provenance = provenance_of(output.flow)
        self.output, self.flow = output, output.flow
        self.current: dict = {}
        self._changes: list = []
        self.flow._live.append(self)

    def ask(self, rows) -> None:
        """Start explaining ``rows`` (each must be in the output now)."""
        rows = [tuple(r) if isinstance(r, (tuple, list)) else (r,) for r in rows]
        present = multiplicities(self.output, rows)
        missing = [r for r in rows if r not in present]
        if missing:
            raise ExplainError(f"{missing[0]!r} is not in {self.output.name or 'the output'}"
                               f" now: ask for rows it holds")
        for row in rows:
            self.current.setdefault(row, None)
        self.refresh(initial=set(rows))

    def drop(self, rows) -> None:
        """Stop explaining ``rows``."""
        for row in rows:
            row = tuple(row) if isinstance(row, (tuple, list)) else (row,)
            self.current.pop(row, None)

    def __getitem__(self, row):
        return self.current[tuple(row) if isinstance(row, (tuple, list)) else (row,)]

    def __iter__(self):
        return iter(list(self.current))

    def refresh(self, initial=frozenset()) -> None:
        """Read every explanation again (after an advance; the dataflow calls it)."""
        present = multiplicities(self.output, list(self.current))
        search = _Search(self.provenance)
        for row in list(self.current):
            before = self.current[row]
            after = None
            if row in present:
                after = self.provenance.explanation(self.output, {row: present[row]}, search)
            self.current[row] = after
            self._record(row, before, after, row in initial)

    def _record(self, row, before, after, initial: bool) -> None:
        old = before.inputs if before is not None else {}
        new = after.inputs if after is not None else {}
        if (before is None) != (after is None) and not initial:
            self._changes.append(Change(row, None, None, 1 if after is not None else -1))
        for name in sorted(set(old) | set(new)):
            was, now = old.get(name, {}), new.get(name, {})
            for r in sorted(set(was) | set(now)):
                diff = now.get(r, 0) - was.get(r, 0)
                if diff:
                    self._changes.append(Change(row, name, r, diff))

    def changes(self) -> list:
        """:class:`Change` s since the previous call (the first: the first explanations)."""
        out, self._changes = self._changes, []
        return out

    def close(self) -> None:
        """Stop: later advances no longer read these explanations."""
        self.current = {}
        if self in self.flow._live:
            self.flow._live.remove(self)
