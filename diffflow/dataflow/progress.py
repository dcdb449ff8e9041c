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
    return Antichain(times, d=dim)


def summarize(kind: str, frontier: Antichain) -> Antichain:
    """Carry a frontier across a node from its inputs to its output (its path summary).

    ``enter`` appends a zero round, ``leave`` drops the round, ``feedback``
    adds one to it; every other operator leaves times as they are.

    >>> summarize("feedback", Antichain([(2, 3)]))
    Antichain([(2, 4)])
    >>> summarize("leave", Antichain([(2, 3), (3, 0)]))
    Antichain([(2,)])
    """
    if kind == "enter":
        e = frontier.elements
        return Antichain._from_minimal(np.concatenate([e, np.zeros((len(e), 1), np.int64)], 1))
    if kind == "leave":
        e = frontier.elements
        return frontier_of([np.ascontiguousarray(e[:, :-1])], e.shape[1] - 1)
    if kind == "feedback":
        e = frontier.elements.copy()
        e[:, -1] += 1
        return Antichain._from_minimal(e)
    return frontier
