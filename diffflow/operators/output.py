"""Sinks and probes: ``output`` (snapshot + changelog), ``inspect`` (callback) and
``changed_keys`` (what changed in an arrangement, for live explanations).

Both apply only complete updates -- those whose time the input frontier no
longer admits -- so what a user reads is exact for every closed epoch.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements.spine import Spine
from diffflow.arrangements.updates import Updates, concat
from diffflow.common.schema import decode_rows
from diffflow.lattice import Antichain, minimal
from diffflow.operators.base import Operator


class Accumulator:
    """A multiset of rows (times dropped), kept in a :class:`Spine` whose every addition is
    one time further and whose compaction frontier follows: merges sum the additions, and
    big ones are fuelled, so adding ``n`` rows costs about ``n`` however large the
    multiset (an output of millions of rows does not stall the epoch whose change
    cascades into its oldest run).

    >>> acc = Accumulator(1)
    >>> acc.add(np.array([[1], [2]]), np.array([1, 1])); acc.add(np.array([[1]]), np.array([-1]))
    >>> rows, diffs = acc.contents(); rows.tolist(), diffs.tolist()
    ([[2]], [1])
    """

    def __init__(self, width: int):
        self.width = width
        self.spine = Spine(width, width, 1)

    def add(self, rows: np.ndarray, diffs: np.ndarray) -> None:
        added = int(self.spine.upper.elements[0, 0])
        self.spine.set_compaction(Antichain([(added,)]))  # every earlier addition is alike
        times = np.full((len(rows), 1), added, np.int64)
        self.spine.insert_updates(Updates(np.ascontiguousarray(rows, dtype=np.int64), times,
                                          np.asarray(diffs, dtype=np.int64)),
                                  Antichain([(added + 1,)]))

    def __setstate__(self, state):
        runs = state.pop("runs", None)  # a checkpoint from before accumulators were spines
        self.__dict__.update(state)
        if runs is not None:
            self.spine = Spine(self.width, self.width, 1)
            for rows, _, diffs in runs:
                self.add(rows, diffs)

    def contents(self):
        """``(rows, multiplicities)``: consolidated and sorted."""
        self.spine.compact()
        if not self.spine.batches:
            return np.zeros((0, self.width), np.int64), np.zeros(0, np.int64)
        batch = self.spine.batches[0]
        return batch.rows, batch.diffs


class _CompleteFilter(Operator):
    """Holds updates until their times are complete, then hands them to ``apply``.

    Each arriving chunk is split once; held pieces are re-examined only when
    the input frontier moves, so a loop feeding many rounds into an epoch
    that is not yet closed costs linear, not quadratic, time.
    """

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.pending: list[Updates] = []
        self._pending_minimal = None  # minimal times of ``pending`` (the capabilities)
        self._frontier = None

    def step(self, inputs, frontiers):
        frontier = frontiers[0]
        fresh = [c for c in inputs[0] if len(c)]
        if self.pending and frontier != self._frontier:
            fresh = self.pending + fresh
            self.pending, self._pending_minimal = [], None
        self._frontier = frontier
        if not fresh:
            return []
        chunk = concat(fresh, self.node.input_widths[0], self.ctx.dim)
        if not frontier.is_empty():
            incomplete = frontier.admits(chunk.times)
            if incomplete.any():
                held = chunk.take(incomplete)
                self.pending.append(held)
                known = held.times if self._pending_minimal is None else \
                    np.concatenate([self._pending_minimal, held.times])
                self._pending_minimal = minimal(known, self.ctx.dim)
                chunk = chunk.take(~incomplete)
        if len(chunk):
            return self.apply(chunk)
        return []

    def capabilities(self):
        return self._pending_minimal


class OutputOp(_CompleteFilter):
    """Keeps this partition's part of the current collection and its changelog."""

    kind = "output"
    frontier_blind = True
    keeps_changes = True  # (output(changes=False) sets it False; also what older pickles get)

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.accumulated = Accumulator(node.schema.width)
        self.changes: list[Updates] = []
        if not node.params.get("changes", True):
            self.keeps_changes = False

    def apply(self, chunk):
        self.accumulated.add(chunk.rows, chunk.diffs)
        if self.keeps_changes:
            self.changes.append(chunk)
        return []

    def restored(self) -> None:
        """After a checkpoint's state is put back: a dataflow without a change feed drops
        the unread changes the checkpoint held (it was written with one)."""
        if not self.keeps_changes:
            self.changes = []

    def take_changes(self) -> list[Updates]:
        out, self.changes = self.changes, []
        return out

    def handover(self):
        rows, diffs = self.accumulated.contents()
        state = (rows, diffs, self.changes)
        self.accumulated, self.changes = Accumulator(self.node.schema.width), []
        return state if len(diffs) or state[2] else None

    def absorb(self, state) -> None:
        rows, diffs, changes = state
        if len(diffs):
            self.accumulated.add(rows, diffs)
        self.changes.extend(changes)


class InspectOp(_CompleteFilter):
    """Calls ``callback(updates)`` with the complete updates, then passes them on.

    The callback receives a list of ``(row, time, diff)`` with decoded rows
    (per-row Python: a debugging and monitoring slow path).
    """

    kind = "inspect"
    frontier_blind = True

    def apply(self, chunk):
        chunk = chunk.consolidated()
        rows = decode_rows(chunk.rows, self.node.schema, self.ctx.symbols)
        times = [tuple(t) for t in chunk.times.tolist()]
        if rows:
            self.node.params["callback"](list(zip(rows, times, chunk.diffs.tolist())))
        return [chunk]


class ChangedKeysOp(Operator):
    """Records, while ``active``, the keys (the first ``key_width`` columns) of the updates
    reaching it, until :meth:`take`: what changed in an arrangement since it was last asked
    (live explanations re-read only the proofs whose reads it touches).  Emits nothing and
    holds no capabilities: its work follows the change."""

    kind = "changed_keys"
    frontier_blind = True

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.key_width = node.params["key_width"]
        self.keys: list = []
        self.active = False   # recording only while someone will ask

    def step(self, inputs, frontiers):
        if self.active:
            self.keys.extend(c.rows[:, :self.key_width] for c in inputs[0] if len(c))
        return []

    def handover(self):
        keys, self.keys = self.keys, []
        return keys or None

    def absorb(self, state) -> None:
        self.keys.extend(state)

    def take(self) -> np.ndarray:
        """The distinct keys recorded since the last call (and forget them)."""
        keys, self.keys = self.keys, []
        if not keys:
            return np.zeros((0, self.key_width), np.int64)
        return np.unique(np.concatenate(keys), axis=0)
