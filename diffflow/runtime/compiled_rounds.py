"""Compiled rounds: the local runtime hands a loop's small deltas to one kernel.

Between two sweeps, when the only work left in an outermost loop is a small delta of one
epoch, :meth:`CompiledRounds.run` takes that work out of the engine (queued chunks, the
updates an arrange holds back, a distinct's pending times and the corrections it made
early, which become pending times again, as on the general path), runs the
loop's rounds in :func:`diffflow.operators.rounds._kernels.run_rounds` until the loop
settles, the waiting work outgrows :data:`LIMIT` rows, a feedback would pass its round
limit, or the run has spent its :data:`BUDGET` (so a Ctrl-C is seen), and puts the result
back where the engine keeps it:

* what the rounds added to each trace becomes one batch of its spine, up to the frontier
  the rounds completed (``[(e, last + 1), (e + 1, 0)]``, or ``[(e + 1, 0)]`` once settled);
* what still waits goes back to the queues, the arranges' held updates and the distincts'
  pending times (each with every later round of its key's history, :func:`_with_later_rounds`);
  what left the loop is queued at its ``leave``.

The engine then recomputes every frontier and sweeps on as if it had run those rounds
itself: the traces hold the same updates at the same times (a trace's updates are its
collection's differences at each time, whatever computes them), so every output's
``changes()`` are identical.  Why the rounds of one epoch form a chain, and what the
kernel reads, is in ``docs/ARCHITECTURE.md``, "Compiled rounds".

The switch ``DIFFFLOW_COMPILED_ROUNDS``: ``0`` keeps every loop on the general path,
``force`` runs compiled rounds whatever the delta's size and before the kernels would
otherwise load (tests), anything else (the default) runs them for deltas of at most
:data:`LIMIT` rows once the kernels are loaded (a run that has swept
:data:`LOAD_AFTER_SWEEPS` times loads them).  The local runtime runs them at every number
of partitions (one kernel reads every partition's traces, :func:`_take_state`), unless a
rescaling is under way or the run is traced (unless its sink asks for compiled rounds: each
run is then logged as one ``Processing`` span, :mod:`diffflow.runtime.tracing`); the cluster runtimes keep the general path (a
round there costs a progress barrier across workers, which compiling cannot remove: see
``docs/ARCHITECTURE.md``).
"""
from __future__ import annotations

import os

import numpy as np

from diffflow.arrangements import columnar, small
from diffflow.arrangements.batch import Batch
from diffflow.arrangements.updates import Updates
from diffflow.dataflow.rounds import loop_paths
from diffflow.lattice import Antichain
from diffflow.operators.reduce_times import unique_pairs
from diffflow.operators.rounds import codes as C
from diffflow.operators.rounds import run_rounds

_ROW = 4  # the work buffer's columns before the row: node, port, round, diff

#: rows of work a run of compiled rounds starts with or leaves waiting at a round's end
#: at most: the kernel takes a row at a time, ~3x the general path's vectorised cost per
#: row, and a round cannot be cut short, so a bigger delta whose round fans out (a hub's
#: edges) would cost more compiled (R-MAT s15 reach: a 1,000-row round became 250,000)
LIMIT = 256

#: rows of work (a round counts one plus the rows it leaves waiting) after which a run
#: hands the loop back, part-way, so Python sees a Ctrl-C: ~0.1-0.5 s of rounds (a loop
#: counting to a million ran 3 s in one kernel call, deaf to Ctrl-C); the general path's
#: one round before the next run costs ~1 ms
BUDGET = 1_000_000


#: sweeps of one run (about one per round) after which a loop on the general path loads the
#: kernels to go on compiled, if nothing loaded them yet: by then its rounds have cost about
#: what loading costs (~0.3-0.5 s); a loop that long usually has many more to go
LOAD_AFTER_SWEEPS = 1000


def mode() -> str:
    """``"off"``, ``"force"`` or ``"on"``, from ``DIFFFLOW_COMPILED_ROUNDS``.

    >>> mode() in ("off", "force", "on")
    True
    """
    value = os.environ.get("DIFFFLOW_COMPILED_ROUNDS", "").strip().lower()
    if value in ("0", "off", "false", "no"):
        return "off"
    return "force" if value == "force" else "on"


class CompiledRounds:
    """The compiled loops of one dataflow and the runs of their rounds (local runtime)."""

    def __init__(self, graph, symbols, fused=None):
        self.programs = [program for _, program, _ in loop_paths(graph, symbols, fused)
                         if program is not None]
        # the node a traced run of each loop's rounds is logged on: its (first) variable
        self.marks = [_variable(graph, program.node_ids) for program in self.programs]
        self.runs = 0     # runs of compiled rounds so far (tests read it)
        self.rounds = 0   # rounds they ran

    def run(self, runtime) -> bool:
        """Run the rounds of every loop that is ready; whether any ran."""
        how = mode()
        if how == "off" or not self.programs:
            return False
        if how != "force" and not small.loaded():
            if runtime.sweeps < LOAD_AFTER_SWEEPS:
                return False  # (a first small query does not load the kernels for this)
            columnar.load_kernels()  # a long loop: loading pays for itself within its rounds
        engines = [runtime.engines[p] for p in range(runtime.parts)]
        if any(e.rescale_running or e.rescale_plan is not None for e in engines):
            return False
        log = engines[0].log
        if log is not None and not getattr(runtime.trace, "compiled_rounds", False):
            return False  # (a trace logs every step unless its sink asks for compiled rounds)
        ran = False
        for program, mark in zip(self.programs, self.marks):
            ran |= self._run_loop(program, engines, runtime.routing, runtime.frontiers,
                                  LIMIT if how == "on" else 1 << 40, log, mark)
        return ran

    def _run_loop(self, program, engines, routing, frontiers, limit, log=None,
                  mark=-1) -> bool:
        t0 = None if log is None else log.now()
        taken = _take_state(program, engines, frontiers, limit)
        if taken is None:
            return False
        epoch, work, n_work, schedule, n_schedule, first_round, traces, keep = taken
        started = n_work + n_schedule  # (rows of work the rounds start from, for a trace)
        addresses = [(b.rows.ctypes.data, b.times.ctypes.data, b.diffs.ctypes.data, len(b))
                     for b in keep]
        batch_rows = np.array([a[0] for a in addresses], np.int64)
        batch_times = np.array([a[1] for a in addresses], np.int64)
        batch_diffs = np.array([a[2] for a in addresses], np.int64)
        batch_len = np.array([a[3] for a in addresses], np.int64)
        ptr = np.zeros(len(traces) + 1, np.int64)
        ptr[1:] = np.cumsum([len(t) for t in traces])
        flat = np.array([b for t in traces for b in t], np.int64)
        result = run_rounds(
            program.nodes, program.consumers_ptr, program.consumers, program.readers_ptr,
            program.readers, program.orders, program.sources, program.code, program.code_ptr,
            program.trace_kk, program.trace_width, ptr, flat, batch_rows, batch_times,
            batch_diffs, batch_len, program.aggs, work, n_work, schedule, n_schedule,
            first_round, limit, 1 << max(6, (4 * (n_work + n_schedule)).bit_length()), BUDGET)
        del keep  # (the kernel read the batches in place: they lived until here)
        reason, last, work, n_work, schedule, n_schedule, over, n_over, exits, n_exits, \
            negative = result
        self.runs += 1
        self.rounds += last - first_round + 1
        _hand_back(program, engines, routing, epoch, reason == C.SETTLED, last, work[:n_work],
                   schedule[:n_schedule], over[:n_over], exits[:n_exits], negative)
        if log is not None:
            log.compiled(mark, t0, first_round, last, started,
                         int((over[:n_over, 2] != 0).sum()))
        return True


def _variable(graph, node_ids) -> int:
    """The loop's first variable among its nodes (else its first node): what names the loop
    in a trace (``relation path [loop variable]`` in a Datalog program)."""
    for nid in node_ids:
        node = graph.nodes[nid]
        if node.kind == "concat" and node.label.startswith("variable of"):
            return int(nid)
    return int(node_ids[0])


def _take_state(program, engines, frontiers, limit):
    """The loop's waiting work as the kernel's buffers, or None when the loop is not ready
    (nothing to do, more than one epoch, input still entering, too much, a trace it cannot
    read in place).  Takes it out of the engines only when it returns buffers.

    With several partitions, a trace is the union of every partition's batches: a key's
    updates live on the one partition that owns it (one routing table serves every
    exchange), so a lookup by key finds exactly that partition's, and the kernel needs no
    routing at all; :func:`_hand_back` routes what it hands back."""
    nodes = engines[0].nodes
    width = program.row_width
    found = []  # (program node, port, chunk)
    held = []   # (engine, program node) of pending times and early corrections
    for engine in engines:
        for i, nid in enumerate(program.node_ids):
            kind = program.kind(i)
            for port, chunks in enumerate(engine.queues[nid]):
                live = [c for c in chunks if len(c)]
                if not live:
                    continue
                if kind in (C.JOIN, C.DISTINCT, C.AGGREGATE, C.ENTER):
                    return None  # (between sweeps nothing waits there: a mid-sweep state)
                if kind == C.EXIT:
                    continue  # (left for the engine's leave)
                for c in live:
                    found.append((i, port, c))
            op = engine.ops[nid]
            if kind == C.ARRANGE and op.pending is not None and len(op.pending):
                found.append((i, 1, op.pending))  # (port 1: rows already in arranged order)
            elif kind in (C.DISTINCT, C.AGGREGATE) and (len(op.pending_keys) or len(op.early)):
                held.append((engine, i))
    times = [c.times for _, _, c in found]
    for engine, i in held:
        op = engine.ops[program.node_ids[i]]
        times.extend([op.pending_times, op.early.times])
    times = [t for t in times if len(t)]
    if not times:
        return None
    every = np.concatenate(times)
    if every.shape[1] != 2:
        return None
    epoch = int(every[:, 0].min())
    if int(every[:, 0].max()) != epoch:
        return None
    size = len(every)
    if size > limit:
        return None
    for nid in program.node_ids:
        if nodes[nid].kind == "enter":
            # what enters is complete at this epoch, and no later epoch has closed: then no
            # trace of the loop holds a later epoch (whose rounds are not this epoch's)
            entering = frontiers[nodes[nid].inputs[0]]
            if not entering or any(t[0] != epoch + 1 for t in entering):
                return None
    # the traces, read in place: batches without rescaling marks, rounds not compacted
    traces, keep = [], []
    for kind, nid in program.traces:
        batches = []
        for engine in engines:
            op = engine.ops[nid]
            spine = op.spine if kind == "arrange" else op.out_spine
            if spine.since.elements.shape[0] and spine.since.elements[:, 1:].any():
                return None
            for b in spine.batches:
                if not len(b):
                    continue
                if b.dead is not None or b.present is not None or b.times.shape[1] != 2:
                    return None
                if b.since is not None and len(b.since.elements) and \
                        b.since.elements[:, 1:].any():
                    return None
                batches.append(len(keep))
                keep.append(b)
        traces.append(batches)
    # ready: take the work out of the engines
    work = np.zeros((max(16, size), _ROW + width), np.int64)
    n = 0
    for i, port, c in found:
        m = len(c)
        work[n:n + m, 0] = i
        work[n:n + m, 1] = port
        work[n:n + m, 2] = c.times[:, 1]
        work[n:n + m, 3] = c.diffs
        work[n:n + m, _ROW:_ROW + c.rows.shape[1]] = c.rows
        n += m
    for engine in engines:
        for i, nid in enumerate(program.node_ids):
            kind = program.kind(i)
            if kind == C.EXIT:
                continue
            queues = engine.queues[nid]
            for port in range(len(queues)):
                queues[port] = []
            if kind == C.ARRANGE:
                engine.ops[nid].pending = None
    sched = []
    for engine, i in held:  # pending times, and early corrections (made, not yet emitted):
        op = engine.ops[program.node_ids[i]]  # looked at again at their rounds, as the
        kk = op.key_width                     # general path does
        if len(op.pending_keys):
            sched.append((i, op.pending_keys, op.pending_times[:, 1]))
        if len(op.early):
            sched.append((i, np.ascontiguousarray(op.early.rows[:, :kk]), op.early.times[:, 1]))
        op.pending_keys = op.pending_keys[:0]
        op.pending_times = op.pending_times[:0]
        op.early = op.early.take(np.zeros(len(op.early), bool))
    schedule = np.zeros((max(16, sum(len(k) for _, k, _ in sched)), 2 + width), np.int64)
    s = 0
    for i, keys, rounds in sched:
        m = len(keys)
        schedule[s:s + m, 0] = i
        schedule[s:s + m, 1] = rounds
        schedule[s:s + m, 2:2 + keys.shape[1]] = keys
        s += m
    n_schedule = s
    rounds = [work[:n, 2]] if n else []
    if n_schedule:
        rounds.append(schedule[:n_schedule, 1])
    first_round = int(np.concatenate(rounds).min()) if rounds else 0
    return epoch, work, n, schedule, n_schedule, first_round, traces, keep


def _below_all(frontier, times) -> bool:
    """Whether every time of ``times`` is at or above some element of ``frontier``."""
    elements = frontier.elements
    if not len(elements):
        return False
    above = np.zeros(len(times), bool)
    for element in elements:
        above |= np.all(times >= element, axis=1)
    return bool(above.all())


def _by_owner(routing, rows, keys):
    """``[(partition, rows of it)]``: ``rows`` split by the owners of their ``keys`` columns
    (everything to partition 0 when there is one, or no keys: any partition may hold rows
    that wait where no exchange follows)."""
    if routing.parts == 1 or keys is None:
        return [(0, rows)] if len(rows) else []
    owners = routing.owners(rows[:, keys])
    return [(p, rows[owners == p]) for p in np.unique(owners).tolist()]


def _epoch_times(epoch, rounds):
    times = np.empty((len(rounds), 2), np.int64)
    times[:, 0] = epoch
    times[:, 1] = rounds
    return times


def _with_later_rounds(op, keys, rounds):
    """``(keys, rounds)`` with every later round of each key's history added: the kernel
    schedules a key only at its next round with history (it looks again there), while the
    general path looks only at the pending times it holds, so it needs them all (a key's
    interesting times in this epoch are its rounds and every later round of its input or
    output updates, of any epoch)."""
    if not len(keys):
        return keys, rounds
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    first = np.full(len(unique), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, inverse.reshape(-1), rounds)
    more_keys, more_rounds = [keys], [rounds]
    for spine in (op.in_spine, op.out_spine):
        query, _, times, _ = spine.gather(unique)
        later = times[:, 1] > first[query]
        more_keys.append(unique[query[later]])
        more_rounds.append(times[later, 1])
    return np.concatenate(more_keys), np.concatenate(more_rounds)


def _hand_back(program, engines, routing, epoch, settled, last, work, schedule, over, exits,
               negative):
    """Put the rounds' results where the engines keep them (see the module docstring): what
    a trace gained and what waits with a key go to the partition owning the key."""
    upper = Antichain([(epoch + 1, 0)]) if settled else \
        Antichain([(epoch, last + 1), (epoch + 1, 0)])
    nodes = program.nodes
    for t, (kind, nid) in enumerate(program.traces):
        width, kk = int(program.trace_width[t]), int(program.trace_kk[t])
        mine = over[(over[:, 0] == t) & (over[:, 2] != 0)]
        for p, part in _by_owner(routing, mine, np.arange(4, 4 + kk)):
            op = engines[p].ops[nid]
            gained = Updates(np.ascontiguousarray(part[:, 4:4 + width]),
                             _epoch_times(epoch, part[:, 1]), np.ascontiguousarray(part[:, 2]))
            spine = op.spine if kind == "arrange" else op.out_spine
            # (described as compacted already when the compaction frontier has an element
            # at or below every time: advancing by it would leave them as they are, and a
            # merge then need not advance them)
            since = spine.since if _below_all(spine.since, gained.times) else None
            spine.insert(Batch.from_updates(gained, spine.key_width, spine.upper, upper,
                                            since))
    # what waits: queued chunks, held updates, pending times
    for i in np.unique(work[:, 0]).tolist() if len(work) else []:
        nid = program.node_ids[i]
        mine = work[work[:, 0] == i]
        arrange = nodes[i, 0] == C.ARRANGE
        for port in np.unique(mine[:, 1]).tolist():
            in_width = int(nodes[i, 2] if port == 1 and arrange else nodes[i, 1])
            keys = None
            if arrange:  # (the exchange's key columns; port 1 holds rows arranged already)
                kk, first = int(nodes[i, 4]), int(nodes[i, 5])
                keys = _ROW + (np.arange(kk) if port == 1 else program.orders[first:first + kk])
            for p, part in _by_owner(routing, mine[mine[:, 1] == port], keys):
                chunk = Updates(np.ascontiguousarray(part[:, _ROW:_ROW + in_width]),
                                _epoch_times(epoch, part[:, 2]),
                                np.ascontiguousarray(part[:, 3]))
                if arrange and port == 1:
                    engines[p].ops[nid].pending = chunk
                else:
                    engines[p].queues[nid][port].append(chunk)
    for i in np.unique(schedule[:, 0]).tolist() if len(schedule) else []:
        kk = int(nodes[i, 5])
        for p, part in _by_owner(routing, schedule[schedule[:, 0] == i], np.arange(2, 2 + kk)):
            op = engines[p].ops[program.node_ids[i]]
            keys, rounds = _with_later_rounds(op, np.ascontiguousarray(part[:, 2:2 + kk]),
                                              part[:, 1])
            op.pending_keys, op.pending_times = unique_pairs(keys, _epoch_times(epoch, rounds))
    for i in np.unique(exits[:, 0]).tolist() if len(exits) else []:
        mine = exits[exits[:, 0] == i]
        width = int(nodes[i, 1])
        engines[0].queues[program.node_ids[i]][0].append(Updates(
            np.ascontiguousarray(mine[:, 3:3 + width]), _epoch_times(epoch, mine[:, 1]),
            np.ascontiguousarray(mine[:, 2])))
    for i in np.flatnonzero(negative).tolist():
        for engine in engines:
            engine.ops[program.node_ids[i]].negatives_seen = True
    # every reduction of the loop has been fed: its input trace may have gained updates on
    # a partition where its output did not change, and a reduction not fed yet takes its
    # input trace for its first delta
    for kind, nid in program.traces:
        if kind == "reduce":
            for engine in engines:
                engine.ops[nid].fed = True
