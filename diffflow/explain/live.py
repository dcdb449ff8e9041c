"""Live explanations of collection outputs: ``flow.explanations(output)`` keeps the
explanations of asked rows current as inputs change.

The engine keeps the heights and the indexes the witness queries read (:mod:`.queries`)
current with every :meth:`~diffflow.Dataflow.advance`, by the change alone, and notes which
keys of each index the advance changed (``changed_keys``).  A live explanation whose proof
read none of them is kept as it is; the others follow their proofs again -- a few index
reads per proof level, no engine commit, however long the history.
:meth:`LiveExplanations.changes` lists the input rows that entered and left each
explanation; a row that leaves the output says so with a change whose ``input`` is ``None``.

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

from diffflow.explain import vocabulary
from diffflow.explain.search import ExplainError, RowSearch, multiplicities

Change = vocabulary.Change  # what changes() lists

__all__ = ["Change", "LiveExplanations"]


class LiveExplanations(vocabulary.LiveExplanations):
    """Explanations of rows of one output, kept current by every advance (module doc).
    Index it by row: a :class:`~diffflow.explain.search.CollectionExplanation`, or
    ``None`` while the row is not in the output.  ``explanations`` is the dataflow's
    attached :class:`~diffflow.explain.feature.Explanations`."""

    def __init__(self, explanations, output):
        super().__init__()
        self.explanations = explanations
        self.provenance = explanations.ready()
        self.output, self.flow = output, output.flow
        self.reads: dict = {}      # row -> (changed_keys node, key) its proof read
        self.walks = 0             # proofs followed (a measure of the refreshes' work)
        explanations.follow(self)

    def ask(self, rows) -> None:
        """Start explaining ``rows`` (each must be in the output now; after :meth:`close`,
        the explanations are live again)."""
        self.provenance.computed()
        rows = self.provenance.asked_rows(self.output, rows)
        present = multiplicities(self.output, rows)
        missing = [r for r in rows if r not in present]
        if missing:
            raise ExplainError(f"{missing[0]!r} is not in {self.output.name or 'the output'}"
                               f" now: ask for rows it holds")
        for row in rows:
            self.current.setdefault(row, None)
        self.explanations.follow(self)
        self.refresh(initial=set(rows))

    def drop(self, rows) -> None:
        """Stop explaining ``rows``."""
        for row in rows:
            row = self.key(row)
            self.current.pop(row, None)
            self.reads.pop(row, None)

    def refresh(self, initial=frozenset(), changes: dict | None = None) -> None:
        """Read the explanations again (after an advance the dataflow calls it with the
        keys its epochs changed: a proof none of whose reads they touch is kept as it is)."""
        rows = list(self.current)
        present = multiplicities(self.output, rows)
        search = RowSearch(self.provenance)
        for row in rows:
            before = self.current[row]
            if changes is not None and row not in initial and \
                    self._unchanged(row, before, present, changes):
                continue
            after = None
            if row in present:
                self.provenance.read_log = reads = set()
                try:
                    after = self.provenance.explanation(self.output, {row: present[row]},
                                                        search)
                finally:
                    self.provenance.read_log = None
                self.reads[row] = reads
            self.current[row] = after
            self.walks += 1
            self.record(row, before, after, row in initial)

    def _unchanged(self, row, before, present, changes) -> bool:
        """Whether ``row``'s explanation must be what it was: the row is present as before
        and the epochs changed no key its proof read (a dataflow with differences replays
        its explanations, so those are always read again)."""
        if before is None or row not in present or present[row] != before.rows.get(row):
            return before is None and row not in present
        reads = self.reads.get(row)
        if reads is None or self.provenance.subtracts:
            return False
        return not any(key in changes.get(node, ()) for node, key in reads)

    def close(self) -> None:
        """Stop: later advances no longer read these explanations."""
        self.current, self.reads = {}, {}
        self.explanations.unfollow(self)
