"""Progress tracking: which times may still appear at each operator input.

Following Naiad, every location holds *pointstamps*: the times of messages
queued for it and the capabilities its operator holds (times it may still
emit at).  The frontier at an input port is the set of minimal times that
could still arrive there: pointstamps upstream, carried along the edges by
each edge's *path summary*.  In the acyclic graphs built so far every summary
is the identity, so frontiers follow from one pass in topological order:

    out(n) = minimal( in(n) + capabilities(n) + queued(n) )
    in(n)  = union of out(s) over the inputs s of n

A time that a port's frontier does not admit is complete there: operators
that must see all input at a time (reduce, arrange, output) wait for it.
"""
from __future__ import annotations

import numpy as np

from ..arrangements import columnar
from ..lattice import Antichain


def frontier_of(parts, dim: int) -> Antichain:
    """The antichain of minimal times among several ``(k, d)`` arrays and antichains.

    >>> frontier_of([np.array([[3], [1]]), Antichain([(2,)])], 1)
    Antichain([(1,)])
    """
    arrays = []
    for part in parts:
        if part is None:
            continue
        if isinstance(part, Antichain):
            if len(part):
                arrays.append(part.elements)
        elif len(part):
            arrays.append(part)
    if not arrays:
        return Antichain._from_minimal(np.zeros((0, dim), np.int64))
    times = arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
    if dim == 1:  # the common case: a total order, the minimum is the frontier
        return Antichain._from_minimal(times[np.argmin(times[:, 0])][None, :])
    if len(times) <= 16:  # frontiers are tiny: plain Python beats numpy's call overhead
        return Antichain._from_minimal(_minimal_small(times, dim))
    if dim == 2:  # sort lexicographically; keep times whose round beats every earlier one
        order = np.lexsort((times[:, 1], times[:, 0]))
        t = times[order]
        best = np.minimum.accumulate(t[:, 1])
        keep = np.ones(len(t), dtype=bool)
        keep[1:] = t[1:, 1] < best[:-1]
        return Antichain._from_minimal(t[keep])
    return Antichain(times, d=dim)


def _minimal_small(times: np.ndarray, dim: int) -> np.ndarray:
    """Minimal elements of a few times, lexicographically sorted (pure Python)."""
    kept = minimal_tuples(map(tuple, times.tolist()))
    return np.array(kept, dtype=np.int64).reshape(len(kept), dim)


# -- frontiers as tuples --------------------------------------------------------------------
# The scheduler recomputes frontiers many times per round; they hold a handful of
# times, so it keeps them as sorted tuples of tuples (cheap to build, compare and
# hash) and hands operators an Antichain only when it steps them.

def minimal_tuples(points) -> tuple:
    """The minimal elements of some times (tuples), lexicographically sorted.

    >>> minimal_tuples([(1, 2), (0, 3), (2, 0), (1, 3)])
    ((0, 3), (1, 2), (2, 0))
    """
    kept: list = []
    for p in sorted(set(points)):  # lexicographic: only an earlier point can dominate p
        if not any(all(a <= b for a, b in zip(k, p)) for k in kept):
            kept.append(p)
    return tuple(kept)


def array_frontier(times) -> tuple:
    """The frontier (minimal times) of a ``(n, d)`` array, as tuples."""
    if times is None or len(times) == 0:
        return ()
    if times.shape[1] == 1:
        return ((int(times[:, 0].min()),),)
    if len(times) > 16:
        # chunks usually carry a few distinct times: dedupe (sorted) before the quadratic part
        n = len(times)
        times, _, _ = columnar.consolidate(times, np.zeros((n, 1), np.int64),
                                           np.ones(n, np.int64))
        if times.shape[1] == 2 and len(times) > 1:  # sorted: keep rounds beating all earlier
            best = np.minimum.accumulate(times[:, 1])
            keep = np.ones(len(times), dtype=bool)
            keep[1:] = times[1:, 1] < best[:-1]
            return tuple(map(tuple, times[keep].tolist()))
        if len(times) > 64:
            times = frontier_of([times], times.shape[1]).elements
    return minimal_tuples(map(tuple, times.tolist()))


def summarize_tuples(kind: str, frontier: tuple) -> tuple:
    """Carry a frontier across a node from its inputs to its output (its path summary).

    ``enter`` appends a zero round, ``leave`` drops the round, ``feedback``
    adds one to it; every other operator leaves times as they are.

    >>> summarize_tuples("enter", ((3,),)), summarize_tuples("feedback", ((3, 1),))
    (((3, 0),), ((3, 2),))
    """
    if kind == "enter":
        return tuple(t + (0,) for t in frontier)
    if kind == "leave":
        return minimal_tuples(t[:-1] for t in frontier)
    if kind == "feedback":
        return tuple(t[:-1] + (t[-1] + 1,) for t in frontier)
    return frontier


def node_out_frontier(kind: str, port_frontiers, queued=(), held=()) -> tuple:
    """A node's output frontier from its inputs' frontiers and its pointstamps (tuples).

    ``queued`` are times of messages waiting at the node's inputs (they pass
    the node's path summary), ``held`` the times of its capabilities.

    >>> node_out_frontier("feedback", [((0, 1),)], queued=[(0, 0)], held=[(1, 0)])
    ((0, 1), (1, 0))
    """
    points = [t for f in port_frontiers for t in f]
    points.extend(queued)
    if len(port_frontiers) > 1 or queued:
        points = minimal_tuples(points)
    points = list(summarize_tuples(kind, tuple(points)))
    points.extend(held)
    return minimal_tuples(points)


def global_frontiers(nodes, consumers, queued: dict, held: dict) -> dict:
    """Every node's output frontier from all pointstamps (a least fixpoint around loops).

    ``queued[id]`` / ``held[id]`` are the times (tuples) of messages queued at
    a node and of its capabilities, over every partition.  Starting from
    "nothing can arrive" everywhere, each node is recomputed from its inputs
    and pointstamps and its consumers are revisited when it changes; nodes are
    taken in construction order, so an acyclic graph settles in one visit per
    node.  This is the progress coordinator's computation (Naiad).

    >>> from types import SimpleNamespace as N
    >>> nodes = [N(id=0, kind="input", inputs=[]), N(id=1, kind="select", inputs=[0])]
    >>> global_frontiers(nodes, {0: [(1, 0)], 1: []}, {1: [(0,)]}, {0: [(1,)]})
    {0: ((1,),), 1: ((0,),)}
    """
    import heapq

    out = {n.id: () for n in nodes}
    todo = [n.id for n in nodes]
    pending = set(todo)
    while todo:
        nid = heapq.heappop(todo)
        pending.discard(nid)
        node = nodes[nid]
        new = node_out_frontier(node.kind, [out[src] for src in node.inputs],
                                queued.get(nid, ()), held.get(nid, ()))
        if new != out[nid]:
            out[nid] = new
            for consumer, _ in consumers[nid]:
                if consumer not in pending:
                    pending.add(consumer)
                    heapq.heappush(todo, consumer)
    return out
