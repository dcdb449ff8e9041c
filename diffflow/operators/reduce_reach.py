"""Reachability as a ``reduce`` tactic, kept current in O(change) between epochs.

Each group's rows are ``(kind, a, b)``: an edge ``a -> b`` (kind 0) or a root ``a`` (kind 1,
``b`` ignored); the output is ``(node,)`` for every node a path of edges with positive
multiplicities leads to from a root with a positive count (the roots included).

:class:`ReachReducer` answers a whole group (a search from the roots); :class:`Reachability`
is a group's state between epochs (:mod:`.reduce_kept`): the pairs it was built with as a
sorted *base* (each source's targets a run, found by binary search; each target's sources by
a counting sort), pairs first seen later in hashed rows with linked lists both ways, and the
forest of the search -- each reached node remembers the node it was reached from.  The base
is built in sequential passes: linking a million pairs one by one costs a few cache misses
each (R-MAT s17's first run took 0.9 s that way, ~0.45 s with the base).  A new edge
or root spreads from reached nodes; a lost edge matters only when it is a forest edge, and
then only the subtree under it loses its reach, to be searched again from its reached
in-neighbours (so such a cut costs the subtree, even when another edge keeps all of it
reached).  Why not the semi-naive loop (``algorithms.graphs.reachable`` inside other
loops): it keeps each node at the round of its shortest path, so a shortcut edge in a grid
moves thousands of nodes to earlier rounds although none changes reachability (~100 ms per
10+10-edge update of a 100 x 100 grid).

>>> import numpy as np
>>> rows = np.array([[0, 1, 2], [0, 2, 3], [0, 5, 6], [1, 1, 0]])
>>> g, vals, m = ReachReducer().reduce(np.zeros(4, np.int64), rows, np.ones(4, np.int64))
>>> vals[:, 0].tolist()
[1, 2, 3]
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.small import expand_ranges
from diffflow.operators.reduce_kept import SearchReducer, SearchTables, kernels


def _k():
    """The numba kernels, imported (and loaded) on first use."""
    return kernels("_reach_kernels")


class ReachReducer(SearchReducer):
    """Per group of ``(kind, a, b)`` rows: ``(node,)`` of every node reached from a root."""

    out_width = 1

    @property
    def kept(self):
        """The state the reduce driver keeps per key between epochs."""
        return Reachability

    def in_numpy(self, vals, mults, rounds):
        found = reached_nodes(vals, mults, rounds)
        return None if found is None else found[:, None]


def reached_nodes(vals, mults, levels: int | None = None) -> np.ndarray | None:
    """The sorted nodes reached from the roots, in numpy (no kernels): a search level by
    level; None when it needs more than ``levels`` levels (a long path: a numpy round each).

    >>> reached_nodes(np.array([[0, 1, 2], [0, 2, 1], [1, 1, 0], [0, 4, 5]]), np.ones(4, int))
    array([1, 2])
    >>> reached_nodes(np.array([[0, 1, 2], [0, 2, 3], [1, 1, 0]]), np.ones(3, int), levels=1)
    """
    live = mults > 0
    edges = vals[live & (vals[:, 0] == 0)]
    src, dst = edges[:, 1], edges[:, 2]
    if len(src) and not np.all(src[1:] >= src[:-1]):  # (a group arrives sorted: no sort)
        order = np.argsort(src, kind="stable")
        src, dst = src[order], dst[order]
    # ids as they are, no renumbering: each level looks its sources up in the sorted edges
    reached = level = np.unique(vals[live & (vals[:, 0] == 1), 1])
    while len(level):
        if levels is not None:
            if levels == 0:
                return None
            levels -= 1
        _, at = expand_ranges(np.searchsorted(src, level, "left"),
                              np.searchsorted(src, level, "right"))
        targets = np.unique(dst[at])
        where = np.minimum(np.searchsorted(reached, targets), max(len(reached) - 1, 0))
        level = targets[reached[where] != targets] if len(reached) else targets
        reached = np.union1d(reached, level)
    return reached


class Reachability(SearchTables):
    """One group's reached set, updated from its changes (see the module docstring).

    >>> r = Reachability.built(np.array([[0, 1, 2], [0, 2, 3], [1, 1, 0]]), np.ones(3, int))
    >>> rows, diffs = r.apply(np.array([[0, 1, 2]]), np.array([-1]))  # 2 and 3 fall away
    >>> sorted(rows[:, 0].tolist()), diffs.tolist()
    ([2, 3], [-1, -1])
    """

    def __init__(self):
        k = _k()
        super().__init__(k)
        self.base = np.zeros((0, k.BASE_FIELDS), np.int64)  # (see _reach_kernels)
        self.base_in = np.zeros((0, 2), np.int64)
        self.reached = np.zeros(len(self.nodes), np.uint8)

    def kept_arrays(self) -> tuple:
        return self.base, self.reached

    def reserve(self, kernels, changes: int, nodes: int | None = None) -> None:
        super().reserve(kernels, changes, nodes)
        if len(self.reached) < len(self.nodes):  # (a flag per node row)
            grown = np.zeros(len(self.nodes), np.uint8)
            grown[:len(self.reached)] = self.reached
            self.reached = grown

    @property
    def size(self) -> int:
        return super().size + len(self.base)

    @classmethod
    def built(cls, vals, mults) -> "Reachability":
        """The state of the rows ``vals`` (``kind, a, b``) with multiplicities ``mults``:
        its pairs become the sorted base, found by binary search and read in runs."""
        k = _k()
        state = cls()
        kind, a, b = (np.ascontiguousarray(vals[:, i], np.int64) for i in range(3))
        counts = np.ascontiguousarray(mults, np.int64)
        if not k.sorted_distinct(kind, a, b, counts):  # (one batch's group is)
            rows, _, counts = columnar.consolidate(np.ascontiguousarray(vals, np.int64),
                                                   np.zeros((len(vals), 1), np.int64), counts)
            kind, a, b = (np.ascontiguousarray(rows[:, i]) for i in range(3))
        pairs = int(np.searchsorted(kind, 1))  # (sorted by kind, a, b: the pairs first)
        sources = a[:pairs]
        ia = state._indexed(sources, distinct=1 + int(np.count_nonzero(sources[1:] !=
                                                                        sources[:-1])))
        ib = state._indexed(b[:pairs])
        ir = state._indexed(a[pairs:])
        state.base = np.empty((pairs, k.BASE_FIELDS), np.int64)
        state.base_in = np.empty((pairs, 2), np.int64)
        k.build_base(state.nodes, state.meta, state.base, state.base_in, ia, ib, b[:pairs],
                     counts[:pairs], np.zeros(int(state.meta[k.USED_NODES]), np.int64))
        if len(ir):
            np.add.at(state.nodes[:, k.ROOTS], ir, counts[pairs:])
            changed = np.unique(ir)
            state._applied(-1 - changed, len(changed))
        return state

    def _indexed(self, ids, distinct: int | None = None):
        """The node index of each of ``ids`` (new nodes added), with room for ``distinct``
        new ones first (default: as many as there are; the tables grow as they fill)."""
        k = _k()
        idx = np.empty(len(ids), np.int64)
        used = int(self.meta[k.USED_NODES])
        self.reserve(k, 0, nodes=used + max(16, min(len(ids), used) if distinct is None
                                            else distinct))
        start = 0
        while True:
            known = np.ascontiguousarray(self.nodes[:, k.ID])  # (the ids, packed)
            start = k.index_nodes(self.node_table, self.nodes, self.reached, self.meta, ids,
                                  idx, start, known)
            if start == len(ids):
                return idx
            self.reserve(k, 0, nodes=2 * len(self.nodes))

    def outputs(self) -> np.ndarray:
        """``(node,)`` rows of every reached node."""
        k = _k()
        used = int(self.meta[k.USED_NODES])
        return np.ascontiguousarray(self.nodes[:used][self.reached[:used] == 1][:, [k.ID]])

    def apply(self, vals, diffs):
        """Apply edge and root changes; returns the output's change as ``(rows, diffs)``."""
        k = _k()
        kind, a, b, diffs = (np.ascontiguousarray(x, np.int64)
                             for x in (vals[:, 0], vals[:, 1], vals[:, 2], diffs))
        changed, n = self.count(k, kind, a, b, diffs)
        return self._applied(changed, n)

    def _applied(self, changed, n):
        """Apply the ``n`` counted pairs and roots of ``changed``; the output's change."""
        k = _k()
        used = int(self.meta[k.USED_NODES])
        queue = np.empty(used + n + 1, np.int64)
        touched = np.empty(used + 1, np.int64)
        k.apply_changes(self.nodes, self.reached, self.adj, self.edges, self.base,
                        self.base_in, self.meta, np.ascontiguousarray(changed, np.int64), n,
                        queue, touched)
        at = touched[1:1 + touched[0]]
        rows = self.nodes[at]
        was, now = rows[:, k.WAS] == 1, self.reached[at] == 1
        gone, came = was & ~now, now & ~was
        out = np.concatenate([rows[gone, k.ID], rows[came, k.ID]])[:, None]
        return out, np.concatenate([np.full(int(gone.sum()), -1, np.int64),
                                    np.ones(int(came.sum()), np.int64)])
