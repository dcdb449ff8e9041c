"""The provenance of a dataflow built with ``explain=True``: its heights (:mod:`.heights`),
witness queries (:mod:`.queries`) and, where it subtracts, its differences
(:mod:`.correct`), built onto the graph when the dataflow starts; and the explanations
they give (:mod:`.search`).

>>> import diffflow as dd
>>> flow = dd.Dataflow(explain=True)
>>> a, b = flow.input("a", ["x"]), flow.input("b", ["x"])
>>> out = a.antijoin(b, on="x").output()
>>> a.insert([1, 2]); b.insert([2]); flow.advance()
>>> ex = out.explain([(1,)]); ex.inputs, ex.rounds
({'a': {(1,): 1}}, 1)
"""
from __future__ import annotations

from diffflow.common.errors import ExplainError
from diffflow.explain.correct import Differences
from diffflow.explain.heights import Heights
from diffflow.explain.queries import Queries, Reading
from diffflow.explain.search import CollectionExplanation, RowSearch, multiplicities


class Provenance(Reading):
    """Heights and witness queries of a dataflow (built when a dataflow made with
    ``explain=True`` starts: :mod:`.feature`); ``access`` is its
    :class:`~diffflow.api.features.FlowAccess`."""

    def __init__(self, access):
        super().__init__(access)
        self.flow = flow = access.flow
        self.heights = Heights(flow)
        self.graph = flow.graph
        self.queries = Queries(self, self.heights).build()
        changes = [self.graph.nodes[n.inputs[0]] for n in self.heights.user
                   if n.kind == "feedback"]           # a variable's definition - initial
        negated_initials = {c.inputs[1] for c in changes
                            if c.kind == "concat" and len(c.inputs) == 2}
        # differences outside the loop variables' own bookkeeping make replays diverge
        self.subtracts = any(n.kind == "negate" and n.id not in negated_initials
                             for n in self.heights.user)
        self._contents = {n.id: self.heights.collection(n.id).output(changes=False)
                          for n in self.heights.user if n.kind == "input"} \
            if self.subtracts else {}
        if self.subtracts:
            self.differences = Differences(self)

    # -- explaining ---------------------------------------------------------------------------
    def computed(self) -> None:
        """Raise unless every change has been computed (explanations read computed epochs)."""
        reason = self.access.pending()
        if reason is not None:
            raise ExplainError(reason)

    def asked_rows(self, output, rows) -> list:
        """``rows`` as tuples (one bare tuple of values is one row), each of the output's
        width (else one clear error)."""
        if isinstance(rows, tuple) and not any(isinstance(r, (tuple, list)) for r in rows):
            rows = [rows]
        rows = [tuple(r) if isinstance(r, (tuple, list)) else (r,) for r in rows]
        names = list(output.node.schema.names)
        for row in rows:
            if len(row) != len(names):
                raise ExplainError(f"{row!r} has {len(row)} values, but "
                                   f"{output.name or 'the output'} has {len(names)} columns "
                                   f"{names}: give each row in that order")
        return rows

    def explain(self, output, rows) -> "CollectionExplanation":
        self.computed()
        node = output.node
        rows = self.asked_rows(output, rows)
        present = multiplicities(output, rows)
        missing = [r for r in rows if r not in present]
        if missing:
            raise ExplainError(f"{missing[0]!r} is not in {output.name or node.label} as of "
                               f"epoch {self.flow.epoch - 1}: check its values (rows are "
                               f"tuples in the output's column order {list(node.schema.names)})")
        return self.explanation(output, {r: present[r] for r in rows}, RowSearch(self))

    def explanation(self, output, rows: dict, search) -> "CollectionExplanation":
        """The explanation of ``rows`` (present, with their multiplicities) by ``search``."""
        leaves = search.run([(output.node.id, r) for r in rows])
        inputs: dict = {}
        for nid, row, mult in sorted(leaves):
            inputs.setdefault(self.input_name(nid), {})[row] = mult
        ex = CollectionExplanation(output, rows, dict(sorted(inputs.items())), self.flow,
                                   search.reads)
        if self.subtracts and not self.differences.correct(self, ex):
            # a difference the correction rounds cannot reach (one inside a loop): the
            # whole input explains the rows
            ex.inputs, ex.whole_input = self._whole_input(), True
        return ex

    def record_changes(self, on: bool) -> None:
        """Have the indexes' ``changed_keys`` recorders note the coming epochs' keys (only
        while live explanations exist: an initial load is not worth noting)."""
        self.access.runtime.record_keys(
            [recorder.id for recorder in self.recorders.values()] if on else [])

    def take_changes(self) -> dict | None:
        """``{changed_keys node id: set of keys}`` the engine saw change in the indexes
        since the last call (each epoch's: :mod:`.live` re-reads only the proofs they
        touch); ``None`` when a worker was lost since (every proof is read again)."""
        return self.access.runtime.take_keys(
            [recorder.id for recorder in self.recorders.values()])

    def input_name(self, nid: int) -> str:
        return self.access.input_name(nid)

    def _whole_input(self) -> dict:
        inputs = {self.input_name(nid): dict(out.snapshot())
                  for nid, out in self._contents.items()}
        return dict(sorted((name, rows) for name, rows in inputs.items() if rows))
