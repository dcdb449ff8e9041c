"""States a graph tactic keeps per key between epochs: the reduce driver's O(change) path for
tactics whose whole-group answer is a search (components, reachability).

A tactic names its state class as ``reducer.kept``; the class offers ``built(vals, mults)``
(the state of a whole group), ``apply(vals, diffs)`` (apply a group's change; returns the
output's change as ``(rows, diffs)``), ``outputs()`` (every output row), ``size`` (rows it
holds, past ones included: to tell a small change from a large one) and ``live`` (rows of the
present graph, at most).  For the driver's *simple* keys (one new time above the key's whole
history: every epoch outside a loop) the change goes to the key's state; a key without one
builds it from its input trace, and its output's change is the state's rows minus the output
trace's.

The states are a cache: a key whose change another path handled (a time inside a loop, an
incomplete time) loses its state, and pickling keeps none (a restored or migrated operator
builds them again on the next simple change).  Before numba's kernels load, no state is kept
at all: the whole-group tactic serves a fresh process in numpy.
"""
from __future__ import annotations

import importlib

import numpy as np

from diffflow.arrangements import columnar, small
from diffflow.arrangements.updates import Updates
from diffflow.operators.reducers import Reducer, segment_starts

_KERNELS: dict = {}


def kernels(name: str):
    """A tactic's numba kernel module ``diffflow.operators.<name>``, imported on first use.
    Numba is paid for from then on, so the columnar kernels serve every size too.

    >>> kernels("_search_kernels").USED_NODES
    0
    """
    if not small.loaded():
        columnar.load_kernels()
    module = _KERNELS.get(name)
    if module is None:
        module = _KERNELS[name] = importlib.import_module(f"diffflow.operators.{name}")
    return module


class SearchReducer(Reducer):
    """A tactic answering each whole group by a search: the state class ``kept`` built from
    the group's rows, or (a fresh process, before numba's kernels load) ``in_numpy(vals,
    mults, rounds)``, an ``(n, out_width)`` array of the group's output rows, or None when
    that takes more than ``rounds`` numpy rounds (a search level by level pays one per
    level: a long path would cost seconds, and the kernels then answer)."""

    kept = None
    NUMPY_ROUNDS = 64

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def in_numpy(self, vals, mults, rounds: int) -> np.ndarray | None:
        raise NotImplementedError

    def reduce(self, group, vals, mults):
        starts = segment_starts(group)
        out_g, out_v = [], []
        for s, e in zip(starts, np.append(starts[1:], len(group))):
            rows = None
            if small.prefer(e - s, small.SMALL, rows=e - s):
                rows = self.in_numpy(vals[s:e], mults[s:e], self.NUMPY_ROUNDS)
            if rows is None:
                rows = self.kept.built(vals[s:e], mults[s:e]).outputs()
            out_g.append(np.full(len(rows), group[s], np.int64))
            out_v.append(rows)
        if not out_g:
            return group[:0], np.zeros((0, self.out_width), np.int64), mults[:0]
        g = np.concatenate(out_g)
        return g, np.concatenate(out_v), np.ones(len(g), np.int64)


class KeptStates:
    """The reduce driver's states of one tactic, per key (never pickled).

    >>> from diffflow.operators.reduce_components import ComponentsReducer
    >>> KeptStates(ComponentsReducer().kept).states
    {}
    """

    # a change of more than (size + SMALL) / LARGE rows rebuilds the state (one search of the
    # whole group beats applying that many changes one by one), and so does a state whose
    # rows of past nodes and edges outnumber the present ones (a rebuild drops them: the
    # state's memory follows the graph, not its history, at O(1) amortised per change)
    LARGE, SMALL = 8, 1024

    def __init__(self, kind):
        self.kind = kind
        self.states: dict = {}
        self.updated: set = set()

    def __getstate__(self):
        return {"kind": self.kind}

    def __setstate__(self, state):
        self.kind, self.states, self.updated = state["kind"], {}, set()

    def forget(self) -> None:
        self.states.clear()

    def settle(self, delta_keys: np.ndarray) -> None:
        """After a step: a key whose change another path handled has a stale state."""
        for key in [k for k in self.states if k not in self.updated]:
            if (delta_keys == np.array(key)).all(axis=1).any():
                del self.states[key]
        self.updated.clear()

    def corrections(self, in_spine, out_spine, key_width, keys, times, simple, delta):
        """``(corrections or None, handled)`` for the ``simple`` keys."""
        handled = np.zeros(len(keys), dtype=bool)
        if not small.loaded():
            return None, handled
        # (the delta need not be consolidated: the states add each row's diff to its count)
        at = columnar.key_ranges(keys, np.ascontiguousarray(delta.rows[:, :key_width]))[0]
        sizes = np.bincount(at, minlength=len(keys))
        parts = []
        for i in np.flatnonzero(simple):
            key = tuple(keys[i].tolist())
            state = self.states.get(key)
            if state is not None and (int(sizes[i]) * self.LARGE > state.size + self.SMALL
                                      or state.size > 2 * state.live + self.SMALL):
                state = None  # a large change, or rows of the past outnumber the present
            if state is None:
                out, out_diffs = self._rebuilt(key, in_spine, out_spine, keys[i:i + 1],
                                               key_width)
            elif sizes[i] == len(delta):
                out, out_diffs = state.apply(delta.rows[:, key_width:], delta.diffs)
            else:
                mine = at == i
                out, out_diffs = state.apply(delta.rows[mine, key_width:], delta.diffs[mine])
            self.updated.add(key)
            handled[i] = True
            if len(out):
                full = np.empty((len(out), key_width + out.shape[1]), np.int64)
                full[:, :key_width] = keys[i]
                full[:, key_width:] = out
                parts.append(Updates(full, np.repeat(times[i:i + 1], len(out), axis=0),
                                     out_diffs))
        if not parts:
            return None, handled
        return Updates(np.concatenate([p.rows for p in parts]),
                       np.concatenate([p.times for p in parts]),
                       np.concatenate([p.diffs for p in parts])), handled

    def _rebuilt(self, key, in_spine, out_spine, query, key_width):
        """Build the key's state from its whole input; its output's change is the state's
        rows minus the output trace's."""
        _, rows, _, diffs = in_spine.gather(query)  # (unconsolidated: states count diffs)
        state = self.kind.built(rows[:, key_width:], diffs)
        self.states[key] = state
        now = state.outputs()
        _, out_rows, _, out_diffs = out_spine.gather(query)
        both = np.concatenate([now, out_rows[:, key_width:]])
        change, _, d = columnar.consolidate(
            np.ascontiguousarray(both), np.zeros((len(both), 1), np.int64),
            np.concatenate([np.ones(len(now), np.int64), -out_diffs]))
        return change, d


def _capacity(n: int) -> int:
    return max(16, 1 << int(n - 1).bit_length())


def _grown(table: np.ndarray, need: int, used: int) -> np.ndarray:
    # (np.empty, and only the ``used`` rows copied: rows past them are written before they
    # are read, and pages never written cost no memory)
    bigger = np.empty((_capacity(max(need, 2 * len(table))), table.shape[1]), np.int64)
    bigger[:used] = table[:used]
    return bigger


class SearchTables:
    """The tables a search state keeps (node rows, edge rows, adjacency entries, two hash
    tables of indices, ``meta``), sized by the caller before each kernel call, so that no
    kernel allocates; ``kernels`` is the tactic's kernel module (its field counts)."""

    def __init__(self, kernels):
        self.nodes = np.zeros((16, kernels.NODE_FIELDS), np.int64)
        self.edges = np.zeros((16, kernels.EDGE_FIELDS), np.int64)
        self.adj = np.zeros((32, 3), np.int64)
        self.node_table = np.full(32, -1, np.int64)
        self.edge_table = np.full(32, -1, np.int64)
        # nodes used, edges used, call and search stamps, edges linked (present)
        self.meta = np.zeros(5, np.int64)

    @property
    def size(self) -> int:
        """Node and edge rows held: those of the graph now, and of its past (a pair or node
        once seen keeps its row until the state is rebuilt)."""
        return int(self.meta[0] + self.meta[1])

    @property
    def live(self) -> int:
        """Rows of the graph now, at most: its edges, and twice as many nodes."""
        return 3 * int(self.meta[4])

    def count(self, kernels, *columns):
        """Count rows (``columns``: the row's values, then their diffs) into the tables with
        ``kernels.count_changes``, growing the tables whenever they fill; returns ``(changed,
        n)``: the ``n`` pairs (and roots) the rows changed, for the kernel applying them."""
        total = len(columns[0])
        changed = np.empty(total, np.int64)
        self.reserve(kernels, total)
        start = n = 0
        while True:
            start, n = kernels.count_changes(self.nodes, self.node_table, self.edges,
                                             self.edge_table, self.meta, *columns,
                                             *self.kept_arrays(), changed, start, n)
            if start == total:
                return changed, n
            self.reserve(kernels, 0, nodes=2 * len(self.nodes))  # full: twice the room

    def kept_arrays(self) -> tuple:
        """More of the state's arrays ``count_changes`` reads after the row's columns (read
        again after every growth: growing replaces them)."""
        return ()

    def reserve(self, kernels, changes: int, nodes: int | None = None) -> None:
        """Room for ``changes`` more rows: a new pair each, and new nodes for a quarter of
        them (:meth:`count` grows the tables further when they fill), or ``nodes`` nodes.
        Hash tables stay at most half full, so that a search ends after a few probes."""
        nodes = nodes or int(self.meta[0]) + max(16, changes // 4)
        pairs = int(self.meta[1]) + changes
        used_nodes, used_pairs = int(self.meta[0]), int(self.meta[1])
        if nodes > len(self.nodes):
            self.nodes = _grown(self.nodes, nodes, used_nodes)
        if pairs > len(self.edges):
            self.edges = _grown(self.edges, pairs, used_pairs)
            self.adj = _grown(self.adj, 2 * len(self.edges), 2 * used_pairs)
        if 2 * len(self.nodes) > len(self.node_table) or 2 * len(self.edges) > len(
                self.edge_table):
            self.node_table = np.full(_capacity(2 * len(self.nodes)), -1, np.int64)
            self.edge_table = np.full(_capacity(2 * len(self.edges)), -1, np.int64)
            kernels.rehash(self.node_table, self.nodes, self.edge_table, self.edges, self.meta)
