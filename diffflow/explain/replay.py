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

import copy

import numpy as np


def replay(flow, node, inputs: dict) -> dict:
    """``{row: multiplicity}`` of ``node`` (an output of ``flow``) when the dataflow's own
    nodes run on ``inputs`` alone (input name -> ``{row: multiplicity}``), on one local
    partition: results do not depend on the partition count."""
    return replay_observing(flow, node, inputs, [])[0]


def replay_observing(flow, node, inputs: dict, observe) -> tuple:
    """:func:`replay`, and ``{node id: {row: multiplicity}}`` of the nodes ``observe`` in the
    same replay (a node inside a loop: its value once the loop settles)."""
    from diffflow.api.flow import Dataflow
    from diffflow.api.inputs import InputCollection
    from diffflow.api.outputs import Output

    user = flow._provenance.heights.user
    twin = Dataflow()
    twin.symbols = flow.symbols      # the same symbol ids: rows encode the same
    twin.graph.root, twin.graph.scopes = flow.graph.root, list(flow.graph.scopes)
    for original in user:
        twin.graph.nodes.append(copy.copy(original))
    by_name = {}
    for handle in flow._inputs:
        if handle.node.id < len(user):
            copied = InputCollection(twin, twin.graph.nodes[handle.node.id], handle.name)
            twin._inputs.append(copied)
            by_name[handle.name] = copied
    for name, rows in inputs.items():
        if rows:
            by_name[name].update(list(rows), np.array(list(rows.values()), np.int64))
    out = Output(twin, twin.graph.nodes[node.id], None)
    seen = {}
    from diffflow.api.collection import Collection
    from diffflow.explain.correct import final

    for nid in observe:   # inside a loop: its value once the loop settles
        settled = final(twin, Collection(twin, twin.graph.nodes[nid]))
        seen[nid] = Output(twin, twin.graph.add("output", [settled.node.id],
                                                settled.schema), None)
    try:
        twin.advance()
        return out.snapshot(), {nid: o.snapshot() for nid, o in seen.items()}
    finally:
        twin.close()
