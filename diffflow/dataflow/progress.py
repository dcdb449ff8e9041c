"""Progress tracking: which times may still appear at each operator's output.

Following Naiad, every location holds *pointstamps*: the times of messages
queued for it and the capabilities its operator holds (times it may still
emit at).  The frontier of a node's output is the set of minimal times that
could still appear there: its inputs' frontiers and its queued messages,
carried through the node by its *path summary*
(:mod:`diffflow.lattice.frontiers`: identity, or enter / leave / advance a
loop's round), plus its capabilities::

    out(n) = minimal( summary_n( in(n) + queued(n) ) + capabilities(n) )
    in(n)  = union of out(s) over the inputs s of n

Around a loop the equations are recursive; their least fixpoint, found by
iterating from "nothing can arrive" (:func:`global_frontiers`), is exact,
and it exists because the feedback edge's summary strictly advances the
round.  A time that a port's frontier does not admit is complete there:
operators that must see all input at a time (reduce, arrange, output) wait
for it.  Frontiers here are tuple frontiers (see the lattice module).
"""
from __future__ import annotations

import heapq

from diffflow.lattice.times import minimal_tuples


def node_out_frontier(summary, port_frontiers, queued=(), held=()) -> tuple:
    """A node's output frontier from its inputs' frontiers and its pointstamps (tuples).

    ``queued`` are times of messages waiting at the node's inputs (they pass
    the node's path summary), ``held`` the times of its capabilities.

    >>> from diffflow.lattice.frontiers import ADVANCE
    >>> node_out_frontier(ADVANCE, [((0, 1),)], queued=[(0, 0)], held=[(1, 0)])
    ((0, 1), (1, 0))
    """
    if len(port_frontiers) == 1 and not queued and not held:  # the common case
        return summary.apply(port_frontiers[0])
    points = [t for f in port_frontiers for t in f]
    points.extend(queued)
    if len(port_frontiers) > 1 or queued:
        points = minimal_tuples(points)
    points = list(summary.apply(tuple(points)))
    points.extend(held)
    return minimal_tuples(points)


def global_frontiers(nodes, consumers, summaries, queued: dict, held: dict) -> dict:
    """Every node's output frontier from all pointstamps (a least fixpoint around loops).

    ``summaries[id]`` is each node's path summary; ``queued[id]`` /
    ``held[id]`` are the times (tuples) of messages queued at a node and of
    its capabilities, over every partition.  Starting from "nothing can
    arrive" everywhere, each node is recomputed from its inputs and
    pointstamps and its consumers are revisited when it changes; nodes are
    taken in construction order, so an acyclic graph settles in one visit per
    node.  This is the progress coordinator's computation (Naiad).

    >>> from types import SimpleNamespace as N
    >>> from diffflow.lattice.frontiers import IDENTITY
    >>> nodes = [N(id=0, inputs=[]), N(id=1, inputs=[0])]
    >>> global_frontiers(nodes, [[(1, 0)], []], [IDENTITY] * 2, {1: [(0,)]}, {0: [(1,)]})
    {0: ((1,),), 1: ((0,),)}
    """
    out = {n.id: () for n in nodes}
    todo = [n.id for n in nodes]
    pending = set(todo)
    while todo:
        nid = heapq.heappop(todo)
        pending.discard(nid)
        node = nodes[nid]
        new = node_out_frontier(summaries[nid], [out[src] for src in node.inputs],
                                queued.get(nid, ()), held.get(nid, ()))
        if new != out[nid]:
            out[nid] = new
            for consumer, _ in consumers[nid]:
                if consumer not in pending:
                    pending.add(consumer)
                    heapq.heappush(todo, consumer)
    return out
