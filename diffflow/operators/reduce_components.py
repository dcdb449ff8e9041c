"""Connected components as a ``reduce`` tactic, kept current in O(change) between epochs.

Each group's rows are directed edges ``(src, dst)`` taken as undirected; the output is
``(node, label)`` for every node some edge with a positive multiplicity touches, the label
being the smallest node id of its component.

Two paths:

* :class:`ComponentsReducer` -- the pure tactic the driver applies to whole groups at any
  time, partially ordered ones inside loops included: one search per component (in numpy,
  :func:`smallest_ids`, before the kernels load);
* :class:`Connectivity` -- one group's state between epochs (adjacency lists, labels,
  a ring of members per component; kept by :mod:`.reduce_kept`), which the driver's
  *simple* keys (a key whose one new time lies above its whole history: every epoch
  outside a loop) update from the change alone.  A new edge merges two components (the
  one with the larger label is relabelled); a lost edge starts two searches, one from each
  end, that alternate one adjacency entry at a time and stop when they meet (still
  connected) or when one is exhausted (that side is a component of its own).  So a cut
  that splits a component costs its smaller side, and one that does not costs the searches
  until they meet: a few steps in a dense graph or a grid, up to the whole component on a
  long cycle cut far from where its ends meet.

Why not label propagation: a loop of min-label rounds (``algorithms.graphs._propagate``)
keeps each node's label at every round, so a change on a long path rewrites the history of
every round after it, whatever a round costs -- a 10+10-edge update of a 2,000-node chain
took over a second.  The loop still serves inside other loops, under explanations and at
several partitions (``algorithms.graphs._by_search``).

>>> import numpy as np
>>> r = ComponentsReducer()
>>> g, vals, m = r.reduce(np.zeros(3, np.int64), np.array([[5, 2], [2, 9], [7, 8]]),
...                       np.ones(3, np.int64))
>>> sorted(map(tuple, vals.tolist()))
[(2, 2), (5, 2), (7, 7), (8, 7), (9, 2)]
"""
from __future__ import annotations

import numpy as np

from diffflow.operators.reduce_kept import SearchReducer, SearchTables, kernels


def _k():
    """The numba kernels, imported (and loaded) on first use."""
    return kernels("_components_kernels")


class ComponentsReducer(SearchReducer):
    """Per group of ``(src, dst)`` rows: ``(node, label)``, label = the component's
    smallest node id (edges undirected; a row counts while its multiplicity is positive)."""

    out_width = 2

    @property
    def kept(self):
        """The state the reduce driver keeps per key between epochs."""
        return Connectivity

    def in_numpy(self, vals, mults, rounds):
        found = smallest_ids(vals[:, 0], vals[:, 1], mults, rounds)
        return None if found is None else np.column_stack(found)


def smallest_ids(src, dst, mults, rounds: int | None = None):
    """``(nodes, labels)`` in numpy (no kernels): roots hooked under the smaller root of each
    edge, then pointer jumping, until every edge's ends share a root -- the smallest index of
    their component, as nodes are numbered in sorted order.  None when that takes more than
    ``rounds`` rounds of hooking or jumping.

    >>> nodes, labels = smallest_ids(np.array([3, 4, 9]), np.array([4, 1, 9]), np.ones(3, int))
    >>> nodes.tolist(), labels.tolist()
    ([1, 3, 4, 9], [1, 1, 1, 9])
    """
    keep = mults > 0
    src, dst = src[keep], dst[keep]
    nodes, index = np.unique(np.concatenate([src, dst]), return_inverse=True)
    u, v = index[:len(src)], index[len(src):]
    parent = np.arange(len(nodes))
    left = np.inf if rounds is None else rounds
    while True:
        pu, pv = parent[u], parent[v]
        apart = pu != pv
        if not apart.any():
            return nodes, nodes[parent]
        np.minimum.at(parent, np.maximum(pu, pv)[apart], np.minimum(pu, pv)[apart])
        while True:
            left -= 1
            if left < 0:
                return None
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped


class Connectivity(SearchTables):
    """One group's components, updated from its edge changes (see the module docstring).

    >>> c = Connectivity.built(np.array([[1, 2], [2, 3]]), np.array([1, 1]))
    >>> rows, diffs = c.apply(np.array([[2, 3]]), np.array([-1]))  # cut 2-3: 3 leaves
    >>> rows.tolist(), diffs.tolist()
    ([[3, 1]], [-1])
    """

    def __init__(self):
        super().__init__(_k())

    @classmethod
    def built(cls, vals, mults) -> "Connectivity":
        """The state of the edges ``vals`` (rows ``src, dst``) with multiplicities ``mults``."""
        state = cls()
        src, dst, mults = (np.ascontiguousarray(x, np.int64) for x in (vals[:, 0], vals[:, 1],
                                                                        mults))
        k = _k()
        changed, n = state.count(k, src, dst, mults)
        k.link_all(state.nodes, state.edges, state.adj, state.meta, changed, n)
        k.label_all(state.nodes, state.adj, state.meta,
                    np.empty(int(state.meta[k.USED_NODES]) + 1, np.int64))
        return state

    def outputs(self) -> np.ndarray:
        """``(node, label)`` rows of every present node."""
        k = _k()
        used = self.nodes[:self.meta[k.USED_NODES]]
        return np.ascontiguousarray(used[used[:, k.DEGREE] > 0][:, [k.ID, k.LABEL]])

    def apply(self, vals, diffs):
        """Apply edge changes (rows ``src, dst``); returns the output's changes as
        ``(rows (node, label), diffs)``."""
        k = _k()
        src, dst, diffs = (np.ascontiguousarray(x, np.int64) for x in (vals[:, 0], vals[:, 1],
                                                                        diffs))
        changed, n = self.count(k, src, dst, diffs)
        used = int(self.meta[k.USED_NODES])
        queues = np.empty((2, used + 3), np.int64)
        touched = np.empty(used + 1, np.int64)
        k.apply_changes(self.nodes, self.edges, self.adj, self.meta, changed, n, queues[0],
                        queues[1], touched)
        t = touched[1:1 + touched[0]]
        rows = self.nodes[t]
        was, old = rows[:, k.WAS] == 1, rows[:, k.OLD]
        now, new = rows[:, k.DEGREE] > 0, rows[:, k.LABEL]
        moved = old != new
        drop = was & (~now | moved)
        add = now & (~was | moved)
        ids = rows[:, k.ID]
        out = np.column_stack([np.concatenate([ids[drop], ids[add]]),
                               np.concatenate([old[drop], new[add]])])
        return out, np.concatenate([np.full(int(drop.sum()), -1, np.int64),
                                    np.ones(int(add.sum()), np.int64)])
