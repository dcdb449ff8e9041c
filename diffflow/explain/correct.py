"""Replay and correct for collection dataflows (``docs/EXPLAIN.md`` §5): differences a proof
does not carry.

A proof says why a row is in a collection, not why rows are *out* of the collections it
subtracts.  ``q = (a ⋉ b) ▷ (b ▷ d)``: the proof of ``q(1)`` holds ``a(1)`` and ``b(1)``;
replayed on those alone, ``b ▷ d`` keeps ``b(1)`` (no ``d(1)`` to remove it) and ``q(1)`` is
lost.  Each round replays the dataflow on the explanation, observing both sides of every
difference (``concat`` with a negated input: ``antijoin``, ``a - b``; inside a loop, their
values once it settles), and takes the first difference, in the order the dataflow was
built, where the replay lacks subtracted rows that the full input has and that the replay's
positive side holds: those rows are explained in the full input and join the explanation.  A
round that finds none leaves the caller to fall back to the whole input.

>>> import diffflow as dd
>>> flow = dd.Dataflow(explain=True)
>>> a, b, d = (flow.input(n, ["x"]) for n in "abd")
>>> q = a.semijoin(b, on="x").antijoin(b.antijoin(d, on="x"), on="x").output()
>>> a.insert([1, 2]); b.insert([1, 2]); d.insert([1, 5]); flow.advance()
>>> ex = q.explain([(1,)])
>>> ex.inputs, ex.rounds
({'a': {(1,): 1}, 'b': {(1,): 1}, 'd': {(1,): 1}}, 2)
"""
from __future__ import annotations

from diffflow.explain.replay import final, replay_observing
from diffflow.explain.search import RowSearch
from diffflow.explain.vocabulary import replay_and_correct


class Differences:
    """The differences of a dataflow and observers of both their sides' final values (a
    difference inside a loop is observed through ``leave``: its value once the loop
    settles)."""

    def __init__(self, provenance):
        graph, user = provenance.graph, provenance.heights.user
        # a loop variable's feedback carries definition - initial: bookkeeping, not a
        # difference of the user's
        changes = {graph.nodes[f].inputs[0] for f in provenance.heights.feeds}
        self.items = []   # (positive input ids, subtracted node id), in build order
        for node in user:
            if node.kind != "concat" or node.id in changes:
                continue
            negated = [i for i in node.inputs if graph.nodes[i].kind == "negate"]
            positive = [i for i in node.inputs if i not in negated]
            self.items += [(positive, graph.nodes[i].inputs[0]) for i in negated]
        observed = sorted({i for positive, s in self.items for i in (*positive, s)})
        self.observed = observed
        self.reference = {nid: final(provenance.flow, provenance.heights.collection(nid))
                          .output(changes=False) for nid in observed}

    def correct(self, provenance, ex) -> bool:
        """Grow ``ex.inputs`` until a replay reproduces ``ex.rows``; ``False`` when a round
        finds nothing to add."""
        reference = {nid: out.snapshot() for nid, out in self.reference.items()}

        def replay():
            return replay_observing(provenance.flow, ex.output.node, ex.inputs,
                                    self.observed)

        def reproduces(replayed) -> bool:
            got, _seen = replayed
            return all(got.get(r) == m for r, m in ex.rows.items())

        def grow(replayed) -> bool:
            _got, seen = replayed
            for positive, subtracted in self.items:
                missing = [x for x, m in sorted(reference[subtracted].items())
                           if m > seen[subtracted].get(x, 0)
                           and any(seen[p].get(x, 0) > 0 for p in positive)]
                if missing:
                    break
            else:
                return False
            grown = False
            for nid, row, mult in RowSearch(provenance).run([(subtracted, x) for x in missing]):
                rows = ex.inputs.setdefault(provenance.input_name(nid), {})
                if rows.get(row) != mult:
                    rows[row] = mult
                    grown = True
            ex.inputs = {n: dict(sorted(r.items())) for n, r in sorted(ex.inputs.items())}
            return grown

        reproduced, rounds = replay_and_correct(replay, reproduces, grow)
        if reproduced:
            ex.rounds = rounds
        return reproduced
