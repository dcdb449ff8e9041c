"""Scope boundaries and the loop feedback edge: ``enter``, ``leave``, ``feedback``.

A loop's times carry one more coordinate than its parent's: the round.

* ``enter`` brings a collection from the parent scope into the loop: time
  ``t`` becomes ``(t, 0)`` -- present from round 0 on, so visible at every
  round.
* ``leave`` brings a loop collection back out: ``(t, r)`` becomes ``t``.
  Summing over every round gives the collection at the limit (the fixpoint).
* ``feedback`` carries a loop variable's change to the next round: ``(t, r)``
  becomes ``(t, r + 1)``.  It is the only edge that closes a cycle, and its
  ``+1`` is why progress tracking terminates: going around the loop always
  makes times larger.  It also enforces the loop's round limit: updates that
  would enter a round past ``max_rounds`` are dropped and the overflow is
  reported (the run still finishes, computing the loop cut at that round, so
  the dataflow stays consistent and usable).  Dropped updates are tallied: a
  later epoch's retraction of what was dropped before cancels it instead of
  being reported again, so once the inputs are fixed the loop runs clean.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements.updates import Updates
from diffflow.lattice.frontiers import ADVANCE, ENTER, LEAVE
from diffflow.operators.base import Operator
from diffflow.operators.output import Accumulator


class EnterOp(Operator):
    """Append a zero round coordinate to every time."""

    kind = "enter"
    frontier_blind = True
    summary = ENTER

    def step(self, inputs, frontiers):
        out = []
        for c in inputs[0]:
            if len(c):
                times = np.zeros((len(c), c.times.shape[1] + 1), np.int64)
                times[:, :-1] = c.times
                out.append(Updates(c.rows, times, c.diffs))
        return out


class LeaveOp(Operator):
    """Drop the round coordinate of every time (and consolidate what passes)."""

    kind = "leave"
    frontier_blind = True
    summary = LEAVE

    def step(self, inputs, frontiers):
        chunks = [c for c in inputs[0] if len(c)]
        if not chunks:
            return []
        rows = np.concatenate([c.rows for c in chunks])
        times = np.ascontiguousarray(np.concatenate([c.times for c in chunks])[:, :-1])
        diffs = np.concatenate([c.diffs for c in chunks])
        merged = Updates(rows, times, diffs).consolidated()
        return [merged] if len(merged) else []


class FeedbackOp(Operator):
    """Advance the round coordinate by one; drop updates beyond the round limit."""

    kind = "feedback"
    frontier_blind = True
    summary = ADVANCE
    round_limit = True

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.max_rounds = node.scope.max_rounds
        self.overflow_epochs: set = set()  # epochs cut at the round limit since last asked
        self.dropped = Accumulator(node.schema.width)  # everything ever cut, summed

    def step(self, inputs, frontiers):
        out = []
        # consolidated: a definition that concatenates the variable itself (x ∪ f(x)) sends
        # an update and its retraction in separate chunks; unconsolidated they went round
        # the loop together until max_rounds
        chunk = self.port_chunks(inputs, 0)
        for c in [chunk.consolidated()] if len(chunk) else []:
            if not len(c):
                continue
            times = c.times.copy()
            times[:, -1] += 1
            if self.max_rounds is None:  # no limit
                out.append(Updates(c.rows, times, c.diffs))
                continue
            beyond = times[:, -1] > self.max_rounds
            if beyond.any():
                self.overflow_epochs.update(np.unique(times[beyond, 0]).tolist())
                self.dropped.add(c.rows[beyond], c.diffs[beyond])
                keep = ~beyond
                c, times = c.take(keep), times[keep]
                if not len(c):
                    continue
            out.append(Updates(c.rows, times, c.diffs))
        return out

    def handover(self):
        rows, diffs = self.dropped.contents()
        self.dropped = Accumulator(self.node.schema.width)
        return (rows, diffs) if len(diffs) else None

    def absorb(self, state) -> None:
        self.dropped.add(*state)

    def take_overflow(self) -> set:
        """Epochs cut at the round limit since the last call.  Whether the cut data still
        matters is the runtime's to decide (:func:`~diffflow.runtime.engine.overflowed`): a
        cut and its later retraction may be cut on different partitions."""
        out, self.overflow_epochs = self.overflow_epochs, set()
        return out
