"""The partition engine: one partition's operators and the code that steps them.

Every runtime computes through this module.  A :class:`PartitionEngine`
owns partition ``p`` of ``P``: one operator instance per graph node (built
from the operator registry; arrangements keep the keys whose bin the routing
table gives ``p``, :mod:`diffflow.runtime.routing`), the queues of chunks waiting at each node's inputs, the
routing of emitted chunks to partitions, compaction of its traces to their
readers' frontiers, loop-overflow accounting per loop, and checkpoints.  It
knows nothing about sockets or Spark.

A :class:`Sweeper` steps a set of engines node by node in construction order
(a *sweep*), refreshing each node's output frontier right after stepping it:

* the local runtime sweeps all ``P`` engines together, handing chunks for
  another partition straight to that engine (an in-memory exchange), so
  data crosses partitions within one sweep;
* a partition worker (cluster, processes, Spark) sweeps its one engine and
  sends chunks for other partitions when the sweep ends; it refreshes
  frontiers with the other partitions' pointstamps from the sweep's start,
  which stay valid lower bounds: what another worker emits during the sweep
  derives from those pointstamps, and its chunks only arrive at the end, when
  the coordinator recomputes every frontier from scratch
  (:func:`~diffflow.dataflow.progress.global_frontiers`).

Frontiers are tuple frontiers (:mod:`diffflow.lattice.frontiers`), turned
into :class:`~diffflow.lattice.Antichain` s only for the operators.

>>> import diffflow as dd
>>> flow = dd.Dataflow(partitions=2); nums = flow.input("nums", ["x"])
>>> out = nums.distinct().output()
>>> engines = {p: PartitionEngine(flow.graph, p, 2, flow.symbols) for p in range(2)}
>>> rows, diffs = np.array([[1], [1], [2]]), np.array([1, 1, 1])
>>> for p, (r, d) in enumerate(partition_rows(rows, diffs, 2)): engines[p].stage(nums.node.id, r, d)
>>> for e in engines.values(): e.close_epoch([nums.node.id])
>>> sweeper = Sweeper(engines[0].topology, engines, 2)
>>> frontiers = engines[0].topology.initial_frontiers()
>>> while sweeper.sweep(frontiers): pass
>>> sorted(r for e in engines.values() for r in e.contents(out.node.id)[0].ravel().tolist())
[1, 2]
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.updates import Updates
from diffflow.common import memory
from diffflow.common.errors import (DiffflowError, MemoryLimitError, OperatorError,
                                    caused_by_interrupt)
from diffflow.dataflow.progress import global_frontiers, node_out_frontier
from diffflow.lattice.frontiers import antichain_of, times_frontier
from diffflow.lattice.times import minimal_tuples
from diffflow.operators.base import Operator, OperatorContext
from diffflow.operators.registry import operator_class
from diffflow.runtime.routing import Routing

#: what starts the message of an operator compiled from a program failing on its own
INTERNAL = "internal error (a bug in diffflow; please report it): "

# attributes rebuilt from the graph when an engine is restored (never checkpointed): the
# graph node, context and user reducer, and a reduce's kept search states (caches rebuilt
# from its input trace on demand; they name their tactic's class, code not data)
# from its input trace on demand; they name their tactic's class, code not data); an
# output's choice of a change feed is the resumed dataflow's, not the checkpoint's
_REBUILT = frozenset({"node", "ctx", "reducer", "kept", "keeps_changes"})


class Topology:
    """What every engine and coordinator derives from the graph once: classes, edges, loops.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); _ = a.distinct().output()
    >>> t = Topology(flow.graph); [c.__name__ for c in t.classes], t.has_loops
    (['InputOp', 'ArrangeOp', 'ReduceOp', 'OutputOp'], False)
    """

    def __init__(self, graph):
        self.nodes = list(graph.nodes)
        self.consumers = graph.consumers()
        self.classes = [operator_class(n.kind) for n in self.nodes]
        self.summaries = [cls.summary for cls in self.classes]
        self.input_dims = [cls.summary.input_dim(n.dim) for n, cls in zip(self.nodes, self.classes)]
        self.has_loops = any(cls.round_limit for cls in self.classes)
        self.traced = [n.id for n, cls in zip(self.nodes, self.classes) if cls.compaction]
        self.limited = [n.id for n, cls in zip(self.nodes, self.classes) if cls.round_limit]
        self._holders()
        self.fused = fused_projections(self.nodes, self.consumers)

    def _holders(self) -> None:
        # per node, whether its operator can hold capabilities (the others never report any)
        self.can_hold = [cls.capabilities is not Operator.capabilities for cls in self.classes]

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "can_hold" not in state:  # pickled before it was kept
            self._holders()

    def frontiers(self, queued: dict, held: dict) -> dict:
        """Every node's exact output frontier from all partitions' pointstamps."""
        return global_frontiers(self.nodes, self.consumers, self.summaries, queued, held)

    def initial_frontiers(self) -> dict:
        return {n.id: ((0,) * n.dim,) for n in self.nodes}

    def compaction_frontier(self, nid: int, frontiers: dict) -> tuple:
        """What a trace may compact to: its readers' input frontiers, or its own input's."""
        node = self.nodes[nid]
        if self.classes[nid].compaction == "input":
            return frontiers[node.inputs[0]]
        ports = [t for c, _ in self.consumers[nid] for src in self.nodes[c].inputs
                 for t in frontiers[src]]
        return minimal_tuples(ports) if ports else frontiers[nid]


def fused_projections(nodes, consumers) -> dict:
    """``{join: select}`` for joins read only by a pure column projection.

    Such a join writes the projected columns itself (one pass over its
    output instead of two, and narrower rows); the select passes them on.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k", "y"])
    >>> _ = a.join(b, on="k").select("x", "y").output()
    >>> t = Topology(flow.graph); {t.nodes[j].kind: t.nodes[s].kind for j, s in t.fused.items()}
    {'join': 'select'}
    """
    fused = {}
    for node in nodes:
        readers = consumers[node.id]
        if node.kind != "join" or len(readers) != 1:
            continue
        (reader, port), = readers
        select = nodes[reader]
        if select.kind == "select" and select.params.get("plan") is not None \
                and select.exchange[port] is None:
            fused[node.id] = reader
    return fused


def overflowed(cuts, fetch_dropped, nodes) -> dict:
    """``{loop scope id: epochs}`` of the loops a run cut at their round limit whose cut data
    still matters, from every partition's :meth:`PartitionEngine.finish` (``cuts``).  What a
    feedback has cut is summed over every partition (``fetch_dropped(node ids)``: each
    partition's :meth:`PartitionEngine.dropped`): a row waits on the partition that made
    it, so a cut and the later retraction that undoes it may meet only in the sum.

    >>> overflowed([{}, {}], None, [])
    {}
    """
    cut: dict = {}
    for found in cuts:
        for nid, epochs in found.items():
            cut.setdefault(nid, set()).update(epochs)
    if not cut:
        return {}
    parts = fetch_dropped(sorted(cut))
    out: dict = {}
    for nid, epochs in cut.items():
        rows = np.concatenate([p[nid][0] for p in parts])
        diffs = np.concatenate([p[nid][1] for p in parts])
        if len(diffs):
            _, _, diffs = columnar.consolidate(rows, np.zeros((len(rows), 1), np.int64), diffs)
        if len(diffs):  # (else this run's cuts only retracted earlier ones)
            out.setdefault(nodes[nid].scope.id, set()).update(epochs)
    return out


def over_limit(exc: MemoryLimitError, node) -> MemoryLimitError:
    """``exc`` (raised by :func:`~diffflow.common.memory_budget.reserve`) naming the
    operator that asked, with what to do.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); a = flow.input("a", ["x"])
    >>> raw = MemoryLimitError("join output needs 2.0 GiB, ...", 2 << 30, 0, 1 << 30, "join")
    >>> print(over_limit(raw, a.node))  # doctest: +ELLIPSIS
    operator input 'a' (node 0, built at ...) stopped before allocating: join output needs ...
    """
    subject = "the rule" if node.origin is not None else "its inputs"
    return MemoryLimitError(
        f"operator {node.describe()} stopped before allocating: {exc}. Raise the limit "
        f"(memory_limit= of Dataflow or Program, diffflow run --memory-limit), use more "
        f"partitions on a multi-process runtime (the limit holds per worker process), or "
        f"restrict {subject} so that it makes fewer rows.",
        exc.needed, exc.held, exc.limit, exc.what, node.describe())


def partition_rows(rows: np.ndarray, diffs: np.ndarray, routing) -> list:
    """User rows split by row hash: ``(rows, diffs)`` for each partition, which owns them.

    ``routing`` is a :class:`~diffflow.runtime.routing.Routing` (or a partition count,
    for the default table).

    >>> [r.ravel().tolist() for r, _ in partition_rows(np.arange(6)[:, None], np.ones(6, int), 2)]
    [[1, 2, 4, 5], [0, 3]]
    """
    if not isinstance(routing, Routing):
        routing = Routing(routing)
    if routing.parts == 1:
        return [(rows, diffs)]
    chunk = Updates(rows, np.zeros((len(rows), 1), np.int64), diffs)
    return [(piece.rows, piece.diffs) for piece in routing.split(chunk, range(rows.shape[1]))]


def merge_pointstamps(reports) -> tuple[dict, dict]:
    """Every partition's ``(queued, held)`` pointstamps merged per node.

    >>> merge_pointstamps([({1: ((0,),)}, {}), ({1: ((2,),)}, {0: ((1,),)})])
    ({1: [(0,), (2,)]}, {0: [(1,)]})
    """
    queued: dict = {}
    held: dict = {}
    for q_part, h_part in reports:
        for nid, pts in q_part.items():
            queued.setdefault(nid, []).extend(pts)
        for nid, pts in h_part.items():
            held.setdefault(nid, []).extend(pts)
    return queued, held


class PartitionEngine:
    """The operators, queues and traces of partition ``partition`` out of ``parts``."""

    def __init__(self, graph, partition: int, parts: int, symbols, topology=None,
                 routing: Routing | None = None):
        self.partition, self.parts, self.symbols = partition, parts, symbols
        self.routing = routing if routing is not None else Routing(parts)
        self.topology = topology or Topology(graph)
        self.nodes = self.topology.nodes
        self.ops: dict = {}
        for node, cls in zip(self.nodes, self.topology.classes):
            ctx = OperatorContext(partition, parts, node.dim, symbols, peer=self.ops.__getitem__)
            self.ops[node.id] = cls(node, ctx)
        for join, select in self.topology.fused.items():
            self.ops[join].project(self.nodes[select].params["plan"])
            self.ops[select].passthrough = True
        self.queues = {n.id: [[] for _ in n.inputs] for n in self.nodes}
        self._held: dict = {}  # node -> (capability array, its frontier): held data rarely moves
        self.log = None  # a tracing.WorkerLog when the dataflow is traced
        self.emitted = False  # whether the last step emitted anything (Sweeper's marks)
        self.rescale_plan = None  # (key, step of each bin) while a plan runs that it sends in
        self.rescale_running = False  # whether a rescaling plan runs (sending in it or not)

    # -- inputs --------------------------------------------------------------------------
    def stage(self, node_id: int, rows: np.ndarray, diffs: np.ndarray) -> None:
        """Stage user rows this partition owns (see :func:`partition_rows`) at the open epoch."""
        if len(rows):
            self.ops[node_id].stage(rows, diffs)

    def close_epoch(self, node_ids) -> None:
        for node_id in node_ids:
            self.ops[node_id].close_epoch()

    def receive(self, consumer: int, port: int, chunk) -> None:
        """A chunk routed to one of this partition's node inputs."""
        self.queues[consumer][port].append(chunk)

    def has_input(self, nid: int) -> bool:
        return any(self.queues[nid])

    def set_routing(self, routing: Routing) -> None:
        """Route by ``routing`` from now on (between runs: a rescaling step's cut-over)."""
        self.routing, self.parts = routing, routing.parts
        for op in self.ops.values():
            op.ctx.parts = routing.parts

    def catch_up(self, epoch: int, frontiers: dict) -> None:
        """A partition added to a running dataflow starts where the others are: inputs at the
        open ``epoch``, traces compacted to the frontiers the others compacted to."""
        for op in self.ops.values():
            op.start_at(epoch)
        self.finish(frontiers)

    # -- stepping ----------------------------------------------------------------------------
    def step(self, nid: int, antichains: list, outgoing: list) -> bool:
        """Step one node on its queued input; route what it emits.

        Chunks for this partition are queued here at once, chunks for
        partition ``q`` are appended to ``outgoing[q]`` as
        ``(consumer, port, chunk)``.  Returns whether anything went to an
        earlier node (a loop's feedback edge), which needs another sweep.
        """
        node = self.nodes[nid]
        inputs, self.queues[nid] = self.queues[nid], [[] for _ in node.inputs]
        log = self.log
        try:
            if log is None:
                outs = self.ops[nid].step(inputs, antichains)
            else:  # (the operator may empty its input lists: an arrange takes its chunks)
                t0 = log.now()
                outs = self.ops[nid].step([list(port) for port in inputs], antichains)
                if outs or any(inputs):  # a step that did nothing is not logged
                    log.step(nid, t0, inputs, outs)
        except MemoryLimitError as exc:
            if exc.operator:
                raise
            raise over_limit(exc, node) from exc
        except OperatorError:
            raise
        except Exception as exc:
            if caused_by_interrupt(exc):  # Ctrl-C inside a numba kernel surfaces as a SystemError
                raise KeyboardInterrupt from exc
            # a node a front end compiled runs only diffflow's code (a user's functor fails
            # with an ExpressionError, data with an ArithmeticError such as a division by
            # zero): anything else failing there is diffflow's bug
            internal = node.origin is not None and not isinstance(
                exc, (DiffflowError, ArithmeticError, MemoryError))
            raise OperatorError(f"{INTERNAL if internal else ''}operator {node.describe()} "
                                f"failed: {type(exc).__name__}: {exc}") from exc
        self.emitted = bool(outs)
        if not outs:
            return False
        backward = False
        for consumer, port in self.topology.consumers[nid]:
            backward |= consumer <= nid
            key = self.nodes[consumer].exchange[port]
            if key is None or self.parts == 1:
                self.queues[consumer][port].extend(outs)
                continue
            for chunk in outs:
                for q, piece in enumerate(self.routing.split(chunk, key)):
                    if not len(piece):
                        continue
                    if q == self.partition:
                        self.queues[consumer][port].append(piece)
                    else:
                        outgoing[q].append((consumer, port, piece))
        return backward

    # -- progress ----------------------------------------------------------------------------
    def held(self, nid: int) -> tuple:
        """The tuple frontier of a node's capabilities."""
        caps = self.ops[nid].capabilities()
        if caps is None or not len(caps):
            return ()
        if len(caps) <= 16:
            return times_frontier(caps)
        cached = self._held.get(nid)
        if cached is not None and cached[0] is caps:
            return cached[1]
        frontier = times_frontier(caps)
        self._held[nid] = (caps, frontier)
        return frontier

    def pointstamps(self) -> tuple[dict, dict]:
        """``(queued, held)``: per node, the minimal times of queued chunks and capabilities."""
        queued, held = {}, {}
        for nid, ports in self.queues.items():
            if any(ports):
                chunks = [c.times for port in ports for c in port if len(c)]
                if chunks:
                    queued[nid] = minimal_tuples(t for arr in chunks for t in times_frontier(arr))
        for nid, can_hold in enumerate(self.topology.can_hold):
            caps = self.held(nid) if can_hold else ()
            if caps:
                held[nid] = caps
        return queued, held

    def finish(self, frontiers: dict) -> dict:
        """After a run: compact traces to what readers can still see; ``{feedback node:
        epochs}`` cut at their round limit in this run (:func:`overflowed` decides which
        count)."""
        topo = self.topology
        for nid in topo.traced:
            frontier = topo.compaction_frontier(nid, frontiers)
            try:
                self.ops[nid].compact(antichain_of(frontier, self.nodes[nid].dim))
                for spine in self.ops[nid].traces():
                    spine.idle()  # merges the run started move on while nothing else runs
            except MemoryLimitError as exc:  # (a merge's buffer: name the trace's operator)
                raise over_limit(exc, self.nodes[nid]) from exc
        # a big run left freed heap pages behind: give them back
        memory.trim_if_busy(memory.TRIM_AFTER_ROWS // 4)
        cut: dict = {}
        for nid in topo.limited:
            epochs = self.ops[nid].take_overflow()
            if epochs:
                cut[nid] = epochs
        return cut

    def dropped(self, node_ids) -> dict:
        """``{feedback node: (rows, diffs)}``: all each has ever cut at its round limit here,
        summed (for :func:`overflowed`)."""
        return {nid: self.ops[nid].dropped.contents() for nid in node_ids}

    # -- reading -------------------------------------------------------------------------------
    def contents(self, nid: int):
        """``(rows, diffs)`` of this partition's part of an output."""
        return self.ops[nid].accumulated.contents()

    def take_changes(self, nid: int) -> list:
        return self.ops[nid].take_changes()

    def traces(self) -> list:
        return [spine for nid in self.topology.traced for spine in self.ops[nid].traces()]

    def check_traces(self) -> int:
        """Assert every trace's invariants (sorted, consolidated, times inside descriptions)."""
        found = self.traces()
        for spine in found:
            spine._check()
        return len(found)

    def trace_sizes(self) -> list:
        """Updates held by each trace after merging its batches."""
        sizes = []
        for spine in self.traces():
            spine.compact()
            sizes.append(len(spine))
        return sizes

    # -- checkpoints -----------------------------------------------------------------------------
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
            op = self.ops[nid]
            op.__dict__.update({k: v for k, v in attrs.items() if k not in _REBUILT})
            if hasattr(op, "restored"):
                op.restored()
        self._held = {}


class Sweeper:
    """Steps a set of engines node by node: a sweep (see the module docstring).

    ``engines`` maps partition numbers to the engines stepped here (all of
    them for the local runtime, one for a partition worker).
    """

    def __init__(self, topology: Topology, engines: dict, parts: int):
        self.topology, self.engines, self.parts = topology, engines, parts
        self.seen: dict = {n.id: None for n in topology.nodes}  # input frontiers last stepped at
        self.outgoing: list = [[] for _ in range(parts)]
        self.logs: dict | None = None  # partition -> tracing.WorkerLog (local runtime, traced)
        # nodes the next sweep looks at: those that got input or whose inputs' frontiers moved
        # since they were last looked at (see sweep's ``marked``)
        self.marks = [True] * len(topology.nodes)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("marks", [True] * len(self.topology.nodes))  # (older pickles)

    def mark(self, nids) -> None:
        """Have the next sweep look at the consumers of ``nids``: for a caller that moved
        their frontiers between sweeps (a recomputation)."""
        for nid in nids:
            for consumer, _ in self.topology.consumers[nid]:
                self.marks[consumer] = True

    def sweep(self, frontiers: dict, remote=({}, {}), marked: bool = False) -> bool:
        """Step every node with input, new input frontiers (unless ``frontier_blind``) or
        ``always_steps``; True if
        something reached an earlier node (a loop's feedback edge) and needs another sweep.

        ``frontiers`` (updated in place) are every node's output frontier at
        the start; ``remote`` the ``(queued, held)`` pointstamps of partitions
        not stepped here.  Chunks for those wait in :attr:`outgoing`.

        With ``marked``, only nodes marked since they were last looked at are: a sweep marks
        the consumers of a node that emitted or whose frontier moved, :meth:`mark` those of
        frontiers moved between sweeps.  A caller whose frontiers, queues or capabilities may
        have changed otherwise (a new run, a coordinator's frontiers, chunks from other
        workers) sweeps unmarked: every node is looked at, as a node with nothing new is
        skipped either way -- marks only spare the looking.
        """
        topo, engines = self.topology, list(self.engines.values())
        remote_queued, remote_held = remote
        backward = False
        marks, consumers = self.marks, topo.consumers
        if not marked:
            marks[:] = [True] * len(marks)
        for node, cls in zip(topo.nodes, topo.classes):
            nid = node.id
            if not marks[nid]:
                continue
            marks[nid] = False
            ports = [frontiers[src] for src in node.inputs]
            idle = not cls.always_steps and not any(e.has_input(nid) for e in engines)
            if idle and ports == self.seen[nid]:
                continue
            self.seen[nid] = ports
            can_hold = topo.can_hold[nid]
            if not (idle and cls.frontier_blind  # an idle step would change nothing
                    and not (can_hold and any(e.held(nid) for e in engines))):
                in_dim = topo.input_dims[nid]
                antichains = [antichain_of(f, in_dim) for f in ports]
                emitted = False
                for engine in engines:
                    backward |= engine.step(nid, antichains, self.outgoing)
                    emitted |= engine.emitted
                    self._deliver(engine.partition)
                if emitted:
                    for c, _ in consumers[nid]:
                        marks[c] = True
            if cls.always_steps:
                marks[nid] = True
            held = [t for e in engines for t in e.held(nid)] if can_hold else []
            held.extend(remote_held.get(nid, ()))
            new = node_out_frontier(topo.summaries[nid], ports, remote_queued.get(nid, ()), held)
            if new != frontiers[nid]:
                frontiers[nid] = new
                for c, _ in consumers[nid]:
                    marks[c] = True
                    backward |= c <= nid
        memory.trim_if_busy()
        return backward

    def _deliver(self, sender: int) -> None:
        """Hand chunks for partitions stepped here to their engines (the in-memory exchange)."""
        for q, pieces in enumerate(self.outgoing):
            engine = self.engines.get(q)
            if engine is not None and pieces:
                if self.logs is not None:  # (tracing is imported only by a traced run)
                    from diffflow.runtime.tracing import log_handover
                    log_handover(self.logs[sender], self.logs[q], pieces)
                for consumer, port, chunk in pieces:
                    engine.receive(consumer, port, chunk)
                self.outgoing[q] = []

    def resize(self, parts: int) -> None:
        """Exchange with ``parts`` partitions from now on (between runs)."""
        self.parts = parts
        self.outgoing = [[] for _ in range(parts)]

    def take_outgoing(self) -> list:
        """Chunks for other partitions, per partition, since the last call."""
        out, self.outgoing = self.outgoing, [[] for _ in range(self.parts)]
        return out
