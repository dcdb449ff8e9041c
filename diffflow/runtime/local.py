"""The local runtime: one process, ``P`` partitions, in-memory exchange.

Each partition is a *worker*: one operator instance per graph node, with its
own state.  Exchanges split columnar chunks by the key hash and append the
pieces to the destination worker's queues -- the same partitioned code paths
the Spark runtime drives, so results are identical for every ``P``.

Scheduling sweeps the graph in topological order, stepping every node whose
queues hold data or whose input frontiers moved, until nothing is left to do.
Progress (frontiers) is computed as in :mod:`diffflow.dataflow.progress`.
"""
from __future__ import annotations

import numpy as np

from ..arrangements.arrangement import split_by_partition
from ..dataflow.progress import frontier_of
from ..lattice import Antichain
from ..operators.arrange import ArrangeOp
from ..operators.base import OperatorContext
from ..operators.join import JoinOp
from ..operators.linear import (ConcatOp, ConsolidateOp, FilterOp, FlatMapOp, InputOp,
                                NegateOp, SelectOp)
from ..operators.output import InspectOp, OutputOp
from ..operators.reduce import ReduceOp

OPERATORS = {
    "input": InputOp, "select": SelectOp, "filter": FilterOp, "negate": NegateOp,
    "concat": ConcatOp, "consolidate": ConsolidateOp, "flat_map": FlatMapOp,
    "arrange": ArrangeOp, "join": JoinOp, "reduce": ReduceOp, "output": OutputOp,
    "inspect": InspectOp,
}


class OperatorError(RuntimeError):
    """An operator failed while processing data; names the operator and the user's line."""


class LocalRuntime:
    """Runs a graph in this process with ``parts`` partitions."""

    def __init__(self, graph, parts: int, symbols):
        self.graph, self.parts, self.symbols = graph, parts, symbols
        self.nodes = list(graph.nodes)
        self.consumers = graph.consumers()
        self.workers = []
        for p in range(parts):
            ops = {}
            for node in self.nodes:
                ctx = OperatorContext(p, parts, node.dim, symbols, peer=ops.__getitem__)
                ops[node.id] = OPERATORS[node.kind](node, ctx)
            self.workers.append(ops)
        self.queues = [{n.id: [[] for _ in n.inputs] for n in self.nodes} for _ in range(parts)]
        self.out_frontier = {n.id: Antichain.minimum(n.dim) for n in self.nodes}
        self.seen_frontiers = {n.id: None for n in self.nodes}
        self.readers = {n.id: [c for c, _ in self.consumers[n.id]] for n in self.nodes}

    # -- inputs ----------------------------------------------------------------
    def stage(self, node_id: int, rows: np.ndarray, diffs: np.ndarray) -> None:
        """Stage user updates at the input's open epoch (partitioned by row hash)."""
        node = self.nodes[node_id]
        from ..arrangements.updates import Updates
        chunk = Updates(rows, np.zeros((len(rows), node.dim), np.int64), diffs)
        pieces = split_by_partition(chunk, range(rows.shape[1]), self.parts)
        for p, piece in enumerate(pieces):
            if len(piece):
                self.workers[p][node_id].stage(piece.rows, piece.diffs)

    def close_epoch(self, node_ids) -> None:
        for ops in self.workers:
            for node_id in node_ids:
                ops[node_id].close_epoch()

    # -- scheduling --------------------------------------------------------------
    def run(self) -> None:
        """Step operators until no queue holds data and no frontier moves."""
        while self._sweep():
            pass
        self._compact()

    def _sweep(self) -> bool:
        """One pass in topological order; True if work is left for another pass.

        In an acyclic graph data and frontiers only move to later nodes, which
        this same pass visits, so one pass suffices unless something reached
        an earlier node (a loop's feedback edge).
        """
        self._backward = False
        for node in self.nodes:
            nid = node.id
            frontiers = [self.out_frontier[src] for src in node.inputs]
            has_data = any(q for ops_q in self.queues for q in ops_q[nid])
            if (not has_data and node.kind != "input"
                    and frontiers == self.seen_frontiers[nid]):
                continue
            self.seen_frontiers[nid] = frontiers
            caps = []
            for p, ops in enumerate(self.workers):
                inputs = self.queues[p][nid]
                self.queues[p][nid] = [[] for _ in node.inputs]
                op = ops[nid]
                try:
                    outs = op.step(inputs, frontiers)
                except OperatorError:
                    raise
                except Exception as exc:
                    raise OperatorError(f"operator {node.describe()} failed: "
                                        f"{type(exc).__name__}: {exc}") from exc
                if outs:
                    self._route(node, p, outs)
                caps.append(op.capabilities())
            new = frontier_of(frontiers + caps, node.dim) if node.kind != "input" \
                else frontier_of(caps, node.dim)
            if new != self.out_frontier[nid]:
                self.out_frontier[nid] = new
                if any(c <= nid for c, _ in self.consumers[nid]):
                    self._backward = True
        return self._backward

    def _route(self, node, p: int, outs) -> None:
        for consumer, port in self.consumers[node.id]:
            if consumer <= node.id:
                self._backward = True
            key = self.nodes[consumer].exchange[port]
            if key is None or self.parts == 1:
                self.queues[p][consumer][port].extend(outs)
                continue
            for chunk in outs:
                for q, piece in enumerate(split_by_partition(chunk, key, self.parts)):
                    if len(piece):
                        self.queues[q][consumer][port].append(piece)

    def _compact(self) -> None:
        """Let traces forget distinctions no reader can observe any more."""
        for node in self.nodes:
            if node.kind == "arrange":
                ports = [self.out_frontier[src] for c in self.readers[node.id]
                         for src in self.nodes[c].inputs]
                frontier = frontier_of(ports, node.dim) if ports else self.out_frontier[node.id]
                for ops in self.workers:
                    ops[node.id].spine.set_compaction(frontier)
            elif node.kind == "reduce":
                frontier = self.out_frontier[node.inputs[0]]
                for ops in self.workers:
                    ops[node.id].set_compaction(frontier)

    # -- reading -------------------------------------------------------------------
    def operators(self, node_id: int) -> list:
        """The instances of one node, one per partition."""
        return [ops[node_id] for ops in self.workers]
