"""``arrange``: maintain a shared, indexed trace of a collection.

The input port exchanges updates by the hash of the key columns, so each
partition's spine holds exactly its keys.  Updates wait in ``pending`` until
their times are complete (the input frontier no longer admits them); then
they are sealed into a batch ``[previous upper, frontier)``, appended to the
spine and emitted downstream.  Readers (join, reduce) see the spine and the
stream of batches; the invariant they rely on is *the spine holds exactly the
batches emitted so far*.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements.spine import Spine
from diffflow.arrangements.updates import Updates, concat
from diffflow.operators.base import Operator


class ArrangeOp(Operator):
    """Seal complete updates into a spine keyed by the first ``key_width`` columns."""

    kind = "arrange"
    frontier_blind = True
    compaction = "readers"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.order = node.params["column_order"]  # input column for each arranged column
        self.in_order = list(self.order) == list(range(len(self.order)))  # nothing to reorder
        self.key_width = node.params["key_width"]
        self.spine = Spine(node.schema.width, self.key_width, ctx.dim)
        self.pending: Updates | None = None

    def step(self, inputs, frontiers):
        # The arrived chunks stay a list: the batch consolidates them without
        # concatenating first (one copy of the rows, into the sort words), and takes them:
        # once packed into the words they are freed, before the batch's arrays are written.
        chunks = [c for c in inputs[0] if len(c)]
        inputs[0].clear()
        if not self.in_order:
            chunks = [Updates(np.ascontiguousarray(c.rows[:, self.order]), c.times, c.diffs)
                      for c in chunks]
        frontier = frontiers[0]
        if self.pending is None and not chunks and frontier == self.spine.upper:
            return []
        if self.pending is not None:
            chunks.insert(0, self.pending)
            self.pending = None
        ready = chunks
        if chunks and not frontier.is_empty():
            # updates whose times the frontier still admits wait (in arrival order)
            ready, waiting = [], []
            for c in chunks:
                incomplete = frontier.admits(c.times)
                if not incomplete.any():
                    ready.append(c)
                elif incomplete.all():
                    waiting.append(c)
                else:
                    waiting.append(c.take(incomplete))
                    ready.append(c.take(~incomplete))
            c = None  # (no reference left to a chunk: the batch takes them)
            if waiting:
                self.pending = concat(waiting, self.node.schema.width, self.ctx.dim)
        if not ready:  # only the frontier moved: no batch to build
            self.spine.extend_to(frontier)
            return []
        if ready is not chunks:
            chunks.clear()  # (what waits is in self.pending)
        batch = self.spine.insert_chunks(ready, frontier, consume=True)
        return [batch] if len(batch) else []

    def capabilities(self):
        return None if self.pending is None else self.pending.times

    def traces(self) -> list:
        return [self.spine]

    def compact(self, frontier) -> None:
        self.spine.set_compaction(frontier)
