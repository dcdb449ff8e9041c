"""Replays: the user's part of a dataflow run from scratch on chosen input rows (what
:meth:`CollectionExplanation.check` and the correction of explanations run).

>>> import diffflow as dd
>>> flow = dd.Dataflow(explain=True)
>>> a = flow.input("a", ["x"]); big = a.filter(dd.col("x") > 1).output()
>>> a.insert([1, 2, 3]); flow.advance()
>>> replay(flow, big.node, {"a": {(2,): 1, (1,): 1}})
{(2,): 1}
"""
from __future__ import annotations

import numpy as np

from diffflow.api.collection import Collection
from diffflow.api.features import attached
from diffflow.api.outputs import Output


def replay(flow, node, inputs: dict) -> dict:
    """``{row: multiplicity}`` of ``node`` (an output of ``flow``, a dataflow built with
    ``explain=True``) when the dataflow's own nodes run on ``inputs`` alone (input name ->
    ``{row: multiplicity}``), on one local partition: results do not depend on the
    partition count."""
    return replay_observing(flow, node, inputs, [])[0]


def replay_observing(flow, node, inputs: dict, observe) -> tuple:
    """:func:`replay`, and ``{node id: {row: multiplicity}}`` of the nodes ``observe`` in the
    same replay (a node inside a loop: its value once the loop settles)."""
    provenance = attached(flow, "explain").provenance
    twin, by_name = provenance.access.replica(len(provenance.heights.user))
    for name, rows in inputs.items():
        if rows:
            by_name[name].update(list(rows), np.array(list(rows.values()), np.int64))
    out = Output(twin, twin.graph.nodes[node.id], None)
    seen = {}
    for nid in observe:   # inside a loop: its value once the loop settles
        settled = final(twin, Collection(twin, twin.graph.nodes[nid]))
        seen[nid] = Output(twin, twin.graph.add("output", [settled.node.id],
                                                settled.schema), None)
    try:
        twin.advance()
        return out.snapshot(), {nid: o.snapshot() for nid, o in seen.items()}
    finally:
        twin.close()


def final(flow, collection):
    """``collection`` left to the root scope: its value once its loops settle."""
    while collection.scope.parent is not None:
        node = flow.graph.add("leave", [collection.node.id], collection.schema,
                              scope=collection.scope.parent, label="explain: leave")
        collection = Collection(flow, node)
    return collection
