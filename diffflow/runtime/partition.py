"""One partition of a distributed dataflow: the code a partition worker runs.

A :class:`PartitionWorker` holds one operator instance per graph node for its
partition ``p`` (arrangements keep the keys with ``hash % P == p``, the same
split as the local runtime) and the queues of chunks waiting at its nodes.
It knows nothing about sockets or Spark: the cluster runtime
(:mod:`diffflow.runtime.cluster`) moves the chunks it emits for other
partitions and the progress reports between workers.

Progress protocol (Naiad's, with a central coordinator).  A run is a series
of *sweeps*.  Before a sweep the coordinator has every worker's pointstamps
(the times of queued chunks and of operator capabilities, per node) and
derives the exact global frontier of every node.  During the sweep a worker
steps its nodes in construction order; chunks for its own partition are
delivered at once, chunks for other partitions are sent at the end of the
sweep.  After stepping a node the worker refreshes that node's output
frontier from its inputs' refreshed frontiers, its own fresh capabilities
and the *other* workers' pointstamps from the start of the sweep.  Those stay
valid lower bounds: everything another worker emits during the sweep derives
from its pointstamps at the start, and cross-partition chunks only arrive at
the sweep's end, when the coordinator recomputes everything from scratch.

>>> import diffflow as dd
>>> from diffflow.runtime.cluster import ClusterRuntime
>>> flow = dd.Dataflow(partitions=2)
>>> nums = flow.input("nums", ["x"]); out = nums.distinct().output()
>>> flow._runtime = ClusterRuntime.in_memory(flow.graph, 2, flow.symbols)
>>> nums.insert([1, 1, 2]); flow.advance(); sorted(out.snapshot())
[(1,), (2,)]
"""
from __future__ import annotations

import numpy as np

from ..arrangements.arrangement import split_by_partition
from ..dataflow.progress import array_frontier, minimal_tuples, node_out_frontier
from ..operators.base import OperatorContext
from .local import OPERATORS, AntichainCache, _input_dim, step_operator

# attributes rebuilt from the graph when a worker is restored (never checkpointed)
_REBUILT = frozenset({"node", "ctx", "reducer"})


class PartitionWorker:
    """The operators and queues of partition ``partition`` out of ``parts``."""

    def __init__(self, graph, partition: int, parts: int, symbols):
        self.partition, self.parts, self.symbols = partition, parts, symbols
        self.nodes = list(graph.nodes)
        self.consumers = graph.consumers()
        self.ops: dict = {}
        for node in self.nodes:
            ctx = OperatorContext(partition, parts, node.dim, symbols, peer=self.ops.__getitem__)
            self.ops[node.id] = OPERATORS[node.kind](node, ctx)
        self.queues = {n.id: [[] for _ in n.inputs] for n in self.nodes}
        self.seen: dict = {n.id: None for n in self.nodes}
        self._antichain = AntichainCache()

    # -- inputs ----------------------------------------------------------------------
    def stage(self, node_id: int, rows: np.ndarray, diffs: np.ndarray) -> None:
        """Stage rows that belong to this partition at the input's open epoch."""
        if len(rows):
            self.ops[node_id].stage(rows, diffs)

    def close_epoch(self, node_ids) -> None:
        for node_id in node_ids:
            self.ops[node_id].close_epoch()

    def receive(self, consumer: int, port: int, chunk) -> None:
        """A chunk another partition routed to one of this partition's node inputs."""
        self.queues[consumer][port].append(chunk)

    # -- progress ----------------------------------------------------------------------
    def pointstamps(self) -> tuple[dict, dict]:
        """``(queued, held)``: per node, the minimal times of queued chunks and capabilities."""
        queued, held = {}, {}
        for node in self.nodes:
            nid = node.id
            chunks = [c.times for port in self.queues[nid] for c in port if len(c)]
            if chunks:
                queued[nid] = minimal_tuples(t for arr in chunks for t in array_frontier(arr))
            caps = self.ops[nid].capabilities()
            if caps is not None and len(caps):
                held[nid] = array_frontier(caps)
        return queued, held

    def sweep(self, frontiers: dict, reports: list) -> list:
        """Step every node that has data or new input frontiers; return chunks for others.

        ``frontiers`` are the coordinator's global output frontiers at the
        start of the sweep, ``reports`` every partition's ``pointstamps()``
        from then.  Returns, per destination partition, a list of
        ``(consumer, port, chunk)``.
        """
        others_queued: dict = {}
        others_held: dict = {}
        for q, (queued, held) in enumerate(reports):
            if q == self.partition:
                continue
            for nid, pts in queued.items():
                others_queued.setdefault(nid, []).extend(pts)
            for nid, pts in held.items():
                others_held.setdefault(nid, []).extend(pts)
        out_frontier = dict(frontiers)
        outgoing: list = [[] for _ in range(self.parts)]
        for node in self.nodes:
            nid = node.id
            ports = [out_frontier[src] for src in node.inputs]
            inputs = self.queues[nid]
            has_data = any(port for port in inputs)
            if not has_data and node.kind != "input" and ports == self.seen[nid]:
                continue
            self.seen[nid] = ports
            in_dim = _input_dim(node)
            antichains = [self._antichain(f, in_dim) for f in ports]
            self.queues[nid] = [[] for _ in node.inputs]
            op = self.ops[nid]
            outs = step_operator(op, node, inputs, antichains)
            if outs:
                self._route(node, outs, outgoing)
            caps = op.capabilities()
            held = list(others_held.get(nid, ()))
            if caps is not None and len(caps):
                held.extend(array_frontier(caps))
            out_frontier[nid] = node_out_frontier(node.kind, ports,
                                                  others_queued.get(nid, ()), held)
        return outgoing

    def _route(self, node, outs, outgoing) -> None:
        for consumer, port in self.consumers[node.id]:
            key = self.nodes[consumer].exchange[port]
            if key is None or self.parts == 1:
                self.queues[consumer][port].extend(outs)
                continue
            for chunk in outs:
                for q, piece in enumerate(split_by_partition(chunk, key, self.parts)):
                    if not len(piece):
                        continue
                    if q == self.partition:
                        self.queues[consumer][port].append(piece)
                    else:
                        outgoing[q].append((consumer, port, piece))

    def finish(self, frontiers: dict, readers: dict) -> set:
        """After a run: let traces compact to what readers can still observe; report loop cuts."""
        for node in self.nodes:
            if node.kind == "arrange":
                ports = [t for c in readers[node.id] for src in self.nodes[c].inputs
                         for t in frontiers[src]]
                frontier = minimal_tuples(ports) if ports else frontiers[node.id]
                self.ops[node.id].spine.set_compaction(self._antichain(frontier, node.dim))
            elif node.kind == "reduce":
                frontier = self._antichain(frontiers[node.inputs[0]], node.dim)
                self.ops[node.id].set_compaction(frontier)
        epochs: set = set()
        for node in self.nodes:
            if node.kind == "feedback":
                epochs |= self.ops[node.id].take_overflow()
        return epochs

    # -- checkpoints -----------------------------------------------------------------------
    def state(self) -> dict:
        """Everything that changes as data flows, for a checkpoint (one picklable object).

        Operators share traces (a join reads its inputs' arrangements), so the
        state is pickled as a whole, which keeps those objects shared.
        """
        if any(port for ports in self.queues.values() for port in ports):
            raise RuntimeError("a checkpoint needs a quiescent partition (queued data remains)")
        return {nid: {k: v for k, v in op.__dict__.items() if k not in _REBUILT}
                for nid, op in self.ops.items()}

    def restore(self, state: dict) -> None:
        """Put back what :meth:`state` returned (operators rebuilt from the same graph)."""
        for nid, attrs in state.items():
            self.ops[nid].__dict__.update(attrs)
        self.seen = {n.id: None for n in self.nodes}
