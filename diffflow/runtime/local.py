"""The local runtime: one process, ``P`` partitions, in-memory exchange.

Each partition is a *worker*: one operator instance per graph node, with its
own state.  Exchanges split columnar chunks by the key hash and append the
pieces to the destination worker's queues -- the same partitioned code paths
the Spark runtime drives, so results are identical for every ``P``.

Scheduling sweeps the nodes in construction order (topological but for
loop feedback edges), stepping every node whose queues hold data or whose
input frontiers moved, until nothing is left to do.

Progress: before each sweep the frontier of every node is recomputed from
scratch from the pointstamps -- operator capabilities and queued chunks --
carried along the edges by each node's path summary, iterated to a fixpoint
around loops (:mod:`diffflow.dataflow.progress`).  During a sweep a node's
output frontier is refreshed right after it steps, from its inputs' current
frontiers; values taken from later nodes (feedback edges) are the ones of
the sweep's start, which stay valid lower bounds because pointstamps only
ever move to larger times.
"""
from __future__ import annotations

import heapq

import numpy as np

from ..arrangements.arrangement import split_by_partition
from .base import Runtime
from ..errors import NonConvergenceError, OperatorError
from ..dataflow.progress import array_frontier, minimal_tuples, summarize_tuples
from ..lattice import Antichain
from ..operators.arrange import ArrangeOp
from ..operators.base import OperatorContext
from ..operators.iterate import EnterOp, FeedbackOp, LeaveOp
from ..operators.join import JoinOp
from ..operators.linear import (ConcatOp, ConsolidateOp, FilterOp, FlatMapOp, InputOp,
                                NegateOp, SelectOp)
from ..operators.output import InspectOp, OutputOp
from ..operators.reduce import ReduceOp

OPERATORS = {
    "input": InputOp, "select": SelectOp, "filter": FilterOp, "negate": NegateOp,
    "concat": ConcatOp, "consolidate": ConsolidateOp, "flat_map": FlatMapOp,
    "arrange": ArrangeOp, "join": JoinOp, "reduce": ReduceOp, "output": OutputOp,
    "inspect": InspectOp, "enter": EnterOp, "leave": LeaveOp, "feedback": FeedbackOp,
}




def step_operator(op, node, inputs: list, antichains: list) -> list:
    """``op.step`` with any failure re-raised as an :class:`OperatorError` naming the node."""
    try:
        return op.step(inputs, antichains)
    except OperatorError:
        raise
    except Exception as exc:
        raise OperatorError(f"operator {node.describe()} failed: "
                            f"{type(exc).__name__}: {exc}") from exc


class AntichainCache:
    """Antichains for tuple frontiers, cached: the same few frontiers repeat a lot."""

    def __init__(self):
        self._found: dict = {}

    def __call__(self, frontier: tuple, dim: int) -> Antichain:
        found = self._found.get((frontier, dim))
        if found is None:
            arr = np.array(frontier, dtype=np.int64).reshape(len(frontier), dim)
            found = Antichain._from_minimal(arr)
            if len(self._found) > 10_000:
                self._found.clear()
            self._found[(frontier, dim)] = found
        return found




def _input_dim(node) -> int:
    return node.dim - 1 if node.kind == "enter" else node.dim + 1 if node.kind == "leave" \
        else node.dim


class LocalRuntime(Runtime):
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
        self.out_frontier = {n.id: ((0,) * n.dim,) for n in self.nodes}  # tuple frontiers
        self.seen_frontiers = {n.id: None for n in self.nodes}
        self.has_loops = any(n.kind == "feedback" for n in self.nodes)
        self.antichain = AntichainCache()
        self._cap_frontiers: dict = {}  # id(capability array) -> (array, its frontier)
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
        if self.has_loops:
            self._recompute_frontiers()
        while self._sweep():
            self._recompute_frontiers()
        self._compact()
        self._check_loops()

    def _array_frontier(self, arr) -> tuple:
        """:func:`array_frontier`, remembered per array (held data rarely changes)."""
        if arr is None or len(arr) <= 16:
            return array_frontier(arr)
        cached = self._cap_frontiers.get(id(arr))
        if cached is not None and cached[0] is arr:
            return cached[1]
        frontier = array_frontier(arr)
        if len(self._cap_frontiers) > 4096:
            self._cap_frontiers.clear()
        self._cap_frontiers[id(arr)] = (arr, frontier)
        return frontier

    def _out_frontier(self, node, port_frontiers, queued, caps) -> tuple:
        """A node's output frontier from its input frontiers and its own pointstamps."""
        held = [arr for arr in caps if arr is not None and len(arr)]
        if len(port_frontiers) == 1 and not queued and not held:  # the common case
            return summarize_tuples(node.kind, port_frontiers[0])
        points = [t for f in port_frontiers for t in f]
        points += [t for arr in queued for t in self._array_frontier(arr)]
        if len(port_frontiers) > 1 or queued:
            points = list(minimal_tuples(points))
        points = list(summarize_tuples(node.kind, tuple(points)))
        for arr in held:
            points.extend(self._array_frontier(arr))
        return minimal_tuples(points)

    def _recompute_frontiers(self) -> None:
        """Exact frontiers from the current pointstamps (a least fixpoint around loops).

        Starting from "nothing can arrive" everywhere, each node's frontier is
        recomputed from its inputs and pointstamps, and its consumers are
        revisited whenever it changes.  Nodes are taken in construction order,
        so an acyclic graph is settled in one visit per node and only loop
        nodes are revisited once their feedback edge has a value.
        """
        out = {n.id: () for n in self.nodes}
        todo = list(range(len(self.nodes)))
        pending = set(todo)
        while todo:
            nid = heapq.heappop(todo)
            pending.discard(nid)
            node = self.nodes[nid]
            ports = [out[src] for src in node.inputs]
            queued = [c.times for q in self.queues for port in q[nid] for c in port]
            caps = [ops[nid].capabilities() for ops in self.workers]
            new = self._out_frontier(node, ports, queued, caps)
            if new != out[nid]:
                out[nid] = new
                for consumer, _ in self.consumers[nid]:
                    if consumer not in pending:
                        pending.add(consumer)
                        heapq.heappush(todo, consumer)
        self.out_frontier = out

    def _check_loops(self) -> None:
        for node in self.nodes:
            if node.kind != "feedback":
                continue
            epochs = set()
            for ops in self.workers:
                epochs |= ops[node.id].take_overflow()
            if epochs:
                scope = node.scope
                raise NonConvergenceError(
                    f"{scope.describe()} was still changing after {scope.max_rounds} rounds in "
                    f"epoch(s) {sorted(epochs)}; its results for them are cut at that round. "
                    f"Make sure the loop reaches a fixpoint (e.g. distinct() keeps set-valued "
                    f"recursion finite) or raise max_rounds. The dataflow stays usable.",
                    scope, epochs)

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
            in_dim = _input_dim(node)
            antichains = [self.antichain(f, in_dim) for f in frontiers]
            caps = []
            for p, ops in enumerate(self.workers):
                inputs = self.queues[p][nid]
                self.queues[p][nid] = [[] for _ in node.inputs]
                op = ops[nid]
                outs = step_operator(op, node, inputs, antichains)
                if outs:
                    self._route(node, p, outs)
                caps.append(op.capabilities())
            new = self._out_frontier(node, frontiers, (), caps)
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
                ports = [t for c in self.readers[node.id] for src in self.nodes[c].inputs
                         for t in self.out_frontier[src]]
                frontier = minimal_tuples(ports) if ports else self.out_frontier[node.id]
                for ops in self.workers:
                    ops[node.id].spine.set_compaction(self.antichain(frontier, node.dim))
            elif node.kind == "reduce":
                frontier = self.antichain(self.out_frontier[node.inputs[0]], node.dim)
                for ops in self.workers:
                    ops[node.id].set_compaction(frontier)

    # -- reading -------------------------------------------------------------------
    def _partition_contents(self, node_id: int) -> list:
        return [ops[node_id].accumulated.contents() for ops in self.workers]

    def take_output_changes(self, node_id: int) -> list:
        return [c for ops in self.workers for c in ops[node_id].take_changes()]

    def check_traces(self) -> int:
        spines = self.spines()
        for spine in spines:
            spine._check()
        return len(spines)

    def trace_sizes(self) -> list:
        sizes = []
        for spine in self.spines():
            spine.compact()
            sizes.append(len(spine))
        return sizes

    def spines(self) -> list:
        """Every trace the runtime holds: arrangements and reduce outputs, all partitions."""
        found = []
        for ops in self.workers:
            for op in ops.values():
                for attr in ("spine", "out_spine"):
                    spine = getattr(op, attr, None)
                    if spine is not None:
                        found.append(spine)
        return found
