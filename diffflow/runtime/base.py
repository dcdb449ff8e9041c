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
from diffflow.runtime import lookups


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

    # -- reading by key, between runs (explanations: diffflow.runtime.lookups) -------------
    recording: frozenset = frozenset()  # the changed_keys nodes noting keys now
    _keys_lost = False  # partitions were rebuilt since keys were last taken (recovery)

    def _lookup(self, name: str, *args) -> list:
        """Every partition's answer to :mod:`lookups` function ``name`` (in partition order)."""
        return self._lookup_each(name, [args] * self.parts)

    def _lookup_each(self, name: str, args_per_partition: list) -> list:
        """Each partition's answer to :mod:`lookups` function ``name`` with its own args
        (``None``: that partition is not asked, its answer is ``None``)."""
        raise NotImplementedError

    def gather(self, requests: list) -> list:
        """For each ``(node_id, keys, width)`` request, ``(key index, rows, times, diffs)`` of
        arrangement ``node_id``'s updates whose first ``width`` columns equal a row of
        ``keys``, over every partition.  A key is asked only of the partition owning it (an
        arrangement's rows lie where the routing sends its key; a step moves whole bins,
        between runs), and a cluster runtime asks every partition once for all requests."""
        asked: list = [[] for _ in range(self.parts)]   # per partition: (request, rows asked)
        for i, (node_id, keys, width) in enumerate(requests):
            key_width = self.graph.nodes[node_id].params["key_width"]
            owners = self.routing.owners(keys[:, :key_width]) if len(keys) else keys[:, 0]
            for p in np.unique(owners).tolist():
                mine = np.flatnonzero(owners == p)
                asked[p].append((i, mine, (node_id, keys[mine], width)))
        answers = self._lookup_each("gather_many", [
            ([request for _, _, request in part],) if part else None for part in asked])
        found: list = [[] for _ in requests]
        for part, answer in zip(asked, answers):
            for (i, mine, _), block in zip(part, answer or ()):
                if len(block):
                    if not block.flags.writeable:   # (unpickled from a worker's reply)
                        block = block.copy()
                    block[:, 0] = mine[block[:, 0]]   # the key's index in the whole request
                    found[i].append(block)
        merged = []
        for (node_id, _, _), blocks in zip(requests, found):
            node = self.graph.nodes[node_id]
            merged.append(lookups.merged_gathers(blocks, node.schema.width, node.dim))
        return merged

    def output_rows(self, node_id: int, rows: np.ndarray) -> tuple:
        """``(rows, multiplicities)`` of an output, only those of ``rows`` (consolidated)."""
        width = self.graph.nodes[node_id].schema.width
        return merge_contents(self._lookup("output_rows", node_id, rows), width)

    def record_keys(self, node_ids) -> None:
        """From now on exactly the ``changed_keys`` nodes ``node_ids`` note the keys that
        reach them (partitions added later too)."""
        wanted = frozenset(node_ids)
        if wanted != self.recording:   # (asked after every epoch: a message only on a change)
            self.recording = wanted
            self._lookup("record", sorted(wanted))

    def take_keys(self, node_ids) -> dict | None:
        """``{node: set of keys}`` each ``changed_keys`` node noted since the last call, or
        ``None`` when partitions were rebuilt since (a recovery: every key may have changed)."""
        node_ids = list(node_ids)
        found: dict = {nid: set() for nid in node_ids}
        for answer in self._lookup("take_keys", node_ids):
            for nid, keys in zip(node_ids, answer):
                found[nid].update(map(tuple, keys.tolist()))
        lost, self._keys_lost = self._keys_lost, False
        return None if lost else found

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
