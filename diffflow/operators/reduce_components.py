"""Connected components as a ``reduce`` tactic, kept current in O(change) between epochs.

Each group's rows are directed edges ``(src, dst)`` taken as undirected; the output is
``(node, label)`` for every node some edge with a positive multiplicity touches, the label
being the smallest node id of its component.

Two paths, like the other tactics with a shortcut (:mod:`.reduce_abelian`):

* :class:`ComponentsReducer` -- the pure tactic the driver applies to whole groups at any
  time, partially ordered ones inside loops included: one search per component;
* :class:`Connectivity` -- one group's state between epochs (adjacency lists, labels,
  a ring of members per component), which the driver's *simple* keys (a key whose one new
  time lies above its whole history: every epoch outside a loop) update from the change
  alone.  A new edge merges two components (the one with the larger label is relabelled);
  a lost edge starts two searches, one from each end, that alternate one adjacency entry at
  a time and stop when they meet (still connected: the usual case in a dense graph costs a
  few steps) or when one is exhausted (that side is a component of its own).  So a cut of a
  chain costs its shorter side, and an update costs what it changes.

Why not label propagation: a loop of min-label rounds (``algorithms.graphs._propagate``)
keeps each node's label at every round, so a change on a long path rewrites the history of
every round after it, whatever a round costs -- a 10+10-edge update of a 2,000-node chain
took over a second.  The loop still serves inside other loops and under explanations.

The state is a cache: the reduce driver drops it when a key's change took another path, and
it is not pickled (a restored or migrated operator rebuilds it from its input trace on the
next simple change).

>>> import numpy as np
>>> r = ComponentsReducer()
>>> g, vals, m = r.reduce(np.zeros(3, np.int64), np.array([[5, 2], [2, 9], [7, 8]]),
...                       np.ones(3, np.int64))
>>> sorted(map(tuple, vals.tolist()))
[(2, 2), (5, 2), (7, 7), (8, 7), (9, 2)]
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar, small
from diffflow.arrangements.updates import Updates
from diffflow.operators.reducers import Reducer, segment_starts

_KERNELS = None


def _k():
    """The numba kernels, imported (and loaded) on first use."""
    global _KERNELS
    if _KERNELS is None:
        columnar.load_kernels()  # (numba is paid for now: every size takes the kernels)
        from diffflow.operators import _components_kernels
        _KERNELS = _components_kernels
    return _KERNELS


class ComponentsReducer(Reducer):
    """Per group of ``(src, dst)`` rows: ``(node, label)``, label = the component's
    smallest node id (edges undirected; a row counts while its multiplicity is positive)."""

    out_width = 2

    def __repr__(self) -> str:
        return "ComponentsReducer()"

    def reduce(self, group, vals, mults):
        starts = segment_starts(group)
        out_g, out_v = [], []
        for s, e in zip(starts, np.append(starts[1:], len(group))):
            if small.prefer(e - s, small.SMALL, rows=e - s):  # a fresh process: no numba yet
                nodes, labels = smallest_ids(vals[s:e, 0], vals[s:e, 1], mults[s:e])
            else:
                nodes, labels = Connectivity.built(vals[s:e, 0], vals[s:e, 1],
                                                   mults[s:e]).labels()
            out_g.append(np.full(len(nodes), group[s], np.int64))
            out_v.append(np.column_stack([nodes, labels]))
        if not out_g:
            return group[:0], np.zeros((0, 2), np.int64), mults[:0]
        g = np.concatenate(out_g)
        return g, np.concatenate(out_v), np.ones(len(g), np.int64)


def smallest_ids(src, dst, mults):
    """``(nodes, labels)`` in numpy (no kernels): roots hooked under the smaller root of each
    edge, then pointer jumping, until every edge's ends share a root -- the smallest index of
    their component, as nodes are numbered in sorted order.

    >>> nodes, labels = smallest_ids(np.array([3, 4, 9]), np.array([4, 1, 9]), np.ones(3, int))
    >>> nodes.tolist(), labels.tolist()
    ([1, 3, 4, 9], [1, 1, 1, 9])
    """
    keep = mults > 0
    src, dst = src[keep], dst[keep]
    nodes, index = np.unique(np.concatenate([src, dst]), return_inverse=True)
    u, v = index[:len(src)], index[len(src):]
    parent = np.arange(len(nodes))
    while True:
        pu, pv = parent[u], parent[v]
        apart = pu != pv
        if not apart.any():
            return nodes, nodes[parent]
        np.minimum.at(parent, np.maximum(pu, pv)[apart], np.minimum(pu, pv)[apart])
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped


def _capacity(n: int) -> int:
    return max(16, 1 << int(n - 1).bit_length())


class Connectivity:
    """One group's components, updated from its edge changes (see the module docstring).

    >>> c = Connectivity.built(np.array([1, 2]), np.array([2, 3]), np.array([1, 1]))
    >>> c.apply(np.array([2]), np.array([3]), np.array([-1]))  # cut 2-3: 3 leaves
    (array([3]), array([1]), array([-1]))
    """

    def __init__(self):
        k = _k()
        self.nodes = np.zeros((16, k.NODE_FIELDS), np.int64)
        self.edges = np.zeros((16, k.EDGE_FIELDS), np.int64)
        self.adj = np.zeros((32, 3), np.int64)
        self.node_table = np.full(32, -1, np.int64)
        self.edge_table = np.full(32, -1, np.int64)
        self.meta = np.zeros(4, np.int64)

    @classmethod
    def built(cls, src, dst, mults) -> "Connectivity":
        """The state of the edges ``src -> dst`` with multiplicities ``mults``."""
        state = cls()
        src, dst, mults = (np.ascontiguousarray(x, np.int64) for x in (src, dst, mults))
        state._reserve(len(src))
        k = _k()
        k.link_all(state.nodes, state.node_table, state.edges, state.edge_table, state.adj,
                   state.meta, src, dst, mults, np.empty(len(src), np.int64))
        k.label_all(state.nodes, state.adj, state.meta,
                    np.empty(int(state.meta[k.USED_NODES]) + 1, np.int64))
        return state

    @property
    def edge_pairs(self) -> int:
        """Node pairs ever seen (an upper bound of the edges present)."""
        return int(self.meta[_k().USED_EDGES])

    def labels(self):
        """``(nodes, labels)`` of every present node."""
        k = _k()
        used = self.nodes[:self.meta[k.USED_NODES]]
        present = used[:, k.DEGREE] > 0
        return used[present, k.ID].copy(), used[present, k.LABEL].copy()

    def apply(self, src, dst, diffs):
        """Apply edge changes; returns the output's changes ``(nodes, labels, diffs)``."""
        k = _k()
        src, dst, diffs = (np.ascontiguousarray(x, np.int64) for x in (src, dst, diffs))
        self._reserve(len(src))
        used = int(self.meta[k.USED_NODES]) + 2 * len(src)
        queues = np.empty((2, used + 3), np.int64)
        touched = np.empty(used + 1, np.int64)
        k.apply_changes(self.nodes, self.node_table, self.edges, self.edge_table, self.adj,
                        self.meta, src, dst, diffs, np.empty(len(src), np.int64),
                        queues[0], queues[1], touched)
        t = touched[1:1 + touched[0]]
        rows = self.nodes[t]
        was, old = rows[:, k.WAS] == 1, rows[:, k.OLD]
        now, new = rows[:, k.DEGREE] > 0, rows[:, k.LABEL]
        moved = old != new
        drop = was & (~now | moved)
        add = now & (~was | moved)
        ids = rows[:, k.ID]
        return (np.concatenate([ids[drop], ids[add]]), np.concatenate([old[drop], new[add]]),
                np.concatenate([np.full(int(drop.sum()), -1, np.int64),
                                np.ones(int(add.sum()), np.int64)]))

    def _reserve(self, changes: int) -> None:
        """Room for ``changes`` more edge rows (two new nodes and a new pair each)."""
        k = _k()
        nodes = int(self.meta[k.USED_NODES]) + 2 * changes
        pairs = int(self.meta[k.USED_EDGES]) + changes
        if nodes > len(self.nodes):
            self.nodes = _grown(self.nodes, nodes)
        if pairs > len(self.edges):
            self.edges = _grown(self.edges, pairs)
            self.adj = _grown(self.adj, 2 * len(self.edges))
        if 2 * nodes > len(self.node_table) or 2 * pairs > len(self.edge_table):
            self.node_table = np.full(_capacity(2 * len(self.nodes)), -1, np.int64)
            self.edge_table = np.full(_capacity(2 * len(self.edges)), -1, np.int64)
            k.rehash(self.node_table, self.nodes, self.edge_table, self.edges, self.meta)


def _grown(table: np.ndarray, need: int) -> np.ndarray:
    bigger = np.zeros((_capacity(max(need, 2 * len(table))), table.shape[1]), np.int64)
    bigger[:len(table)] = table
    return bigger


class ComponentStates:
    """The reduce driver's :class:`Connectivity` per key (a cache, never pickled)."""

    # a change of more than (pairs seen + SMALL) / LARGE rows rebuilds the state: one
    # search per component beats merging components one edge at a time
    LARGE, SMALL = 8, 1024

    def __init__(self):
        self.states: dict = {}
        self.updated: set = set()

    def __getstate__(self):
        return {}

    def __setstate__(self, state):
        self.states, self.updated = {}, set()

    def forget(self) -> None:
        self.states.clear()

    def settle(self, delta_keys: np.ndarray) -> None:
        """After a step: a key whose change another path handled has a stale state."""
        for key in map(tuple, np.unique(delta_keys, axis=0).tolist()):
            if key not in self.updated:
                self.states.pop(key, None)
        self.updated.clear()

    def corrections(self, in_spine, out_spine, key_width, keys, times, simple, delta):
        """``(corrections or None, handled)`` for the ``simple`` keys: each key's change
        applied to its state (built from the input trace when it has none).  Before the
        kernels load, none: the whole-group path serves a fresh process in numpy."""
        handled = np.zeros(len(keys), dtype=bool)
        if not small.loaded():
            return None, handled
        rows, _, diffs = columnar.consolidate(delta.rows, np.zeros((len(delta), 1), np.int64),
                                              delta.diffs)
        at = columnar.key_ranges(keys, np.ascontiguousarray(rows[:, :key_width]))[0]
        parts = []
        for i in np.flatnonzero(simple):
            key = tuple(keys[i].tolist())
            mine = at == i
            src, dst, d = rows[mine, key_width], rows[mine, key_width + 1], diffs[mine]
            state = self.states.get(key)
            if state is not None and len(d) * self.LARGE > state.edge_pairs + self.SMALL:
                state = None
            if state is None:
                nodes, labels, out_diffs = self._rebuilt(key, in_spine, out_spine, keys[i:i + 1],
                                                         key_width)
            else:
                nodes, labels, out_diffs = state.apply(src, dst, d)
            self.updated.add(key)
            handled[i] = True
            if len(nodes):
                out = np.empty((len(nodes), key_width + 2), np.int64)
                out[:, :key_width] = keys[i]
                out[:, key_width], out[:, key_width + 1] = nodes, labels
                parts.append(Updates(out, np.repeat(times[i:i + 1], len(nodes), axis=0),
                                     out_diffs))
        if not parts:
            return None, handled
        if len(parts) == 1:
            return parts[0], handled
        return Updates(np.concatenate([p.rows for p in parts]),
                       np.concatenate([p.times for p in parts]),
                       np.concatenate([p.diffs for p in parts])), handled

    def _rebuilt(self, key, in_spine, out_spine, query, key_width):
        """Build the key's state from its whole input; its output's change is the new labels
        minus the output trace's rows."""
        _, rows, _, diffs = in_spine.gather(query)
        rows, _, mults = columnar.consolidate(np.ascontiguousarray(rows),
                                              np.zeros((len(rows), 1), np.int64), diffs)
        state = Connectivity.built(rows[:, key_width], rows[:, key_width + 1], mults)
        self.states[key] = state
        nodes, labels = state.labels()
        _, out_rows, _, out_diffs = out_spine.gather(query)
        both = np.concatenate([np.column_stack([nodes, labels]),
                               out_rows[:, key_width:key_width + 2]])
        change, _, d = columnar.consolidate(
            np.ascontiguousarray(both), np.zeros((len(both), 1), np.int64),
            np.concatenate([np.ones(len(nodes), np.int64), -out_diffs]))
        return change[:, 0], change[:, 1], d
