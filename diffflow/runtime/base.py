"""The runtime interface: what a :class:`~diffflow.Dataflow` asks of whatever computes it.

Every runtime -- local (partitions in this process), cluster (partition
workers in this process, for tests), processes, Spark -- implements this
class, so outputs, ``Dataflow.close`` and the trace checks read the same
methods everywhere and never reach into operator objects.

>>> import diffflow as dd
>>> flow = dd.Dataflow(partitions=2); nums = flow.input("nums", ["x"])
>>> out = nums.distinct().output(); nums.insert([3, 3, 4]); flow.advance()
>>> rows, counts = flow._runtime.output_contents(out.node.id)
>>> rows.tolist(), counts.tolist(), flow._runtime.check_traces() > 0
([[3], [4]], [1, 1], True)
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar


class Runtime:
    """Base class of runtimes; subclasses implement every method."""

    graph: object
    parts: int

    # -- inputs ----------------------------------------------------------------------
    def stage(self, node_id: int, rows: np.ndarray, diffs: np.ndarray) -> None:
        """Stage encoded rows and their diffs at an input's open epoch."""
        raise NotImplementedError

    def close_epoch(self, node_ids) -> None:
        """Close the open epoch of these inputs (their staged rows become that epoch)."""
        raise NotImplementedError

    # -- computing ---------------------------------------------------------------------
    def run(self) -> None:
        """Compute every closed epoch; raises NonConvergenceError for loops cut at their limit."""
        raise NotImplementedError

    # -- reading -------------------------------------------------------------------------
    def output_contents(self, node_id: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, multiplicities)`` of an output over every partition, consolidated."""
        width = self.graph.nodes[node_id].schema.width
        return merge_contents(self._partition_contents(node_id), width)

    def _partition_contents(self, node_id: int) -> list:
        raise NotImplementedError

    def take_output_changes(self, node_id: int) -> list:
        """An output's changes (:class:`~diffflow.arrangements.updates.Updates`) not taken yet."""
        raise NotImplementedError

    def check_traces(self) -> int:
        """Check every trace's invariants on every partition; returns how many were checked."""
        raise NotImplementedError

    def trace_sizes(self) -> list:
        """Updates held by each trace of each partition, after merging its batches."""
        raise NotImplementedError

    # -- rescaling (diffflow.runtime.rescale.plans) -----------------------------------------------------
    routing: object  # a routing.Routing: the table in force

    def rescale_step(self, routing, step: int | None = None) -> int:
        """Move every bin to its owner under ``routing`` (adding or retiring partitions)
        now, between runs, and route by it from now on; returns the rows moved.  ``step``:
        its number in the plan :meth:`rescale_plan` announced (reads the step indexes)."""
        raise NotImplementedError

    def rescale_plan(self, key, step_of_bin) -> None:
        """Announce the plan under way (``step_of_bin[b]``: the step moving bin ``b``, -1
        if none), or none (``None``)."""
        raise NotImplementedError

    def bin_sizes(self) -> np.ndarray:
        """Trace rows per bin, summed over partitions (int64, one entry per bin)."""
        raise NotImplementedError

    def partition_rows(self) -> list:
        """Trace rows held by each partition (no scan: batch lengths)."""
        raise NotImplementedError

    def rescale_prepare(self, budget: int) -> int:
        """Rescaling's background work, about ``budget`` rows of it per partition (see
        :func:`diffflow.runtime.rescale.migrate.prepare`); returns how many batches wait for more."""
        raise NotImplementedError

    def rescale_unprepared(self) -> int:
        """Rows of big batches not indexed yet for the plan under way, over every partition."""
        raise NotImplementedError

    def prepare_workers(self, parts: int, restart: bool = False) -> None:
        """Start in the background what a coming step to ``parts`` partitions needs (with
        ``restart``: a restart at ``parts``), cancelling any other such start; runtimes
        whose partitions cost nothing to add (local, in-memory) have nothing to do."""

    def workers_ready(self) -> bool:
        """Whether the start :meth:`prepare_workers` began is done (always, where there is
        none): a batched or fluid step adding partitions waits for it."""
        return True

    def check_owners(self) -> int:
        """Assert every trace row lies on the partition its bin maps to; rows checked."""
        raise NotImplementedError

    def close(self) -> None:
        """Release workers and temporary files (idempotent); local runtimes hold none."""


def merge_contents(parts: list, width: int) -> tuple[np.ndarray, np.ndarray]:
    """One consolidated ``(rows, diffs)`` from per-partition ``(rows, diffs)`` pairs.

    >>> r, d = merge_contents([(np.array([[1], [2]]), np.array([1, 1])),
    ...                        (np.array([[1]]), np.array([-1]))], 1)
    >>> r.tolist(), d.tolist()
    ([[2]], [1])
    """
    parts = [p for p in parts if len(p[1])]
    if not parts:
        return np.zeros((0, width), np.int64), np.zeros(0, np.int64)
    if len(parts) == 1:
        return parts[0]
    # a row may sit in several partitions (its diffs cancel or add)
    rows = np.concatenate([p[0] for p in parts])
    diffs = np.concatenate([p[1] for p in parts])
    rows, _, diffs = columnar.consolidate(rows, np.zeros((len(rows), 1), np.int64), diffs)
    return rows, diffs
