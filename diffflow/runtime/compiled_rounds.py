"""Compiled rounds: the local runtime hands a loop's small deltas to one kernel.

Between two sweeps, when the only work left in an outermost loop is a small delta of one
epoch, :meth:`CompiledRounds.run` takes that work out of the engine (queued chunks, the
updates an arrange holds back, a distinct's pending times and the corrections it made
early, which become pending times again, as on the general path), runs the
loop's rounds in :func:`diffflow.operators.rounds._kernels.run_rounds` until the loop
settles, the waiting work outgrows :data:`LIMIT` rows, or a feedback would pass its round
limit, and puts the result back where the engine keeps it:

* what the rounds added to each trace becomes one batch of its spine, up to the frontier
  the rounds completed (``[(e, last + 1), (e + 1, 0)]``, or ``[(e + 1, 0)]`` once settled);
* what still waits goes back to the queues, the arranges' held updates and the distincts'
  pending times; what left the loop is queued at its ``leave``.

The engine then recomputes every frontier and sweeps on as if it had run those rounds
itself: the traces hold the same updates at the same times (a trace's updates are its
collection's differences at each time, whatever computes them), so every output's
``changes()`` are identical.  Why the rounds of one epoch form a chain, and what the
kernel reads, is in ``docs/ARCHITECTURE.md``, "Compiled rounds".

The switch ``DIFFFLOW_COMPILED_ROUNDS``: ``0`` keeps every loop on the general path,
``force`` runs compiled rounds whatever the delta's size and before the kernels would
otherwise load (tests), anything else (the default) runs them for deltas of at most
:data:`LIMIT` rows once the kernels are loaded (a run that has swept
:data:`LOAD_AFTER_SWEEPS` times loads them).  Only the local runtime with one partition
and no tracing or rescaling under way runs them so far; everything else keeps the general
path.
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
        self.runs = 0     # runs of compiled rounds so far (tests read it)
        self.rounds = 0   # rounds they ran

    def run(self, runtime) -> bool:
        """Run the rounds of every loop that is ready; whether any ran."""
        how = mode()
        if how == "off" or not self.programs or runtime.parts != 1:
            return False
        if how != "force" and not small.loaded():
            if runtime.sweeps < LOAD_AFTER_SWEEPS:
                return False  # (a first small query does not load the kernels for this)
            columnar.load_kernels()  # a long loop: loading pays for itself within its rounds
        engine = runtime.engines[0]
        if engine.log is not None or engine.rescale_running or engine.rescale_plan is not None:
            return False
        ran = False
        for program in self.programs:
            ran |= self._run_loop(program, engine, runtime.frontiers,
                                  LIMIT if how == "on" else 1 << 40)
        return ran

    def _run_loop(self, program, engine, frontiers, limit) -> bool:
        taken = _take_state(program, engine, frontiers, limit)
        if taken is None:
            return False
        epoch, work, n_work, schedule, n_schedule, first_round, traces, keep = taken
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
            first_round, limit, 1 << max(6, (4 * (n_work + n_schedule)).bit_length()))
        del keep  # (the kernel read the batches in place: they lived until here)
        reason, last, work, n_work, schedule, n_schedule, over, n_over, exits, n_exits, \
            negative = result
        self.runs += 1
        self.rounds += last - first_round + 1
        _hand_back(program, engine, epoch, reason == C.SETTLED, last, work[:n_work],
                   schedule[:n_schedule], over[:n_over], exits[:n_exits], negative)
        return True


def _take_state(program, engine, frontiers, limit):
    """The loop's waiting work as the kernel's buffers, or None when the loop is not ready
    (nothing to do, more than one epoch, input still entering, too much, a trace it cannot
    read in place).  Takes it out of the engine only when it returns buffers."""
    nodes = engine.nodes
    width = program.row_width
    found = []  # (program node, port, rows, times, diffs)
    held = []   # (program node, kind, ...) of state held by operators
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
            held.append(i)
    times = [c.times for _, _, c in found]
    for i in held:
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
        op = engine.ops[nid]
        spine = op.spine if kind == "arrange" else op.out_spine
        if spine.since.elements.shape[0] and spine.since.elements[:, 1:].any():
            return None
        batches = []
        for b in spine.batches:
            if not len(b):
                continue
            if b.dead is not None or b.present is not None or b.times.shape[1] != 2:
                return None
            if b.since is not None and len(b.since.elements) and b.since.elements[:, 1:].any():
                return None
            batches.append(len(keep))
            keep.append(b)
        traces.append(batches)
    # ready: take the work out of the engine
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
    for i, nid in enumerate(program.node_ids):
        kind = program.kind(i)
        if kind in (C.EXIT,):
            continue
        queues = engine.queues[nid]
        for port in range(len(queues)):
            queues[port] = []
        if kind == C.ARRANGE:
            engine.ops[nid].pending = None
    sched = []
    for i in held:  # pending times, and early corrections (made, not yet emitted): looked at
        op = engine.ops[program.node_ids[i]]  # again at their rounds, as the general path does
        kk = op.key_width
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


def _hand_back(program, engine, epoch, settled, last, work, schedule, over, exits, negative):
    """Put the rounds' results where the engine keeps them (see the module docstring)."""
    upper = Antichain([(epoch + 1, 0)]) if settled else \
        Antichain([(epoch, last + 1), (epoch + 1, 0)])
    nodes = program.nodes
    for t, (kind, nid) in enumerate(program.traces):
        op = engine.ops[nid]
        mine = over[(over[:, 0] == t) & (over[:, 2] != 0)]
        width = int(program.trace_width[t])
        parts = []
        if len(mine):
            times = np.empty((len(mine), 2), np.int64)
            times[:, 0] = epoch
            times[:, 1] = mine[:, 1]
            parts.append(Updates(np.ascontiguousarray(mine[:, 4:4 + width]), times,
                                 np.ascontiguousarray(mine[:, 2])))
        if kind == "reduce" and parts:
            op.fed = True
        if parts:
            spine = op.spine if kind == "arrange" else op.out_spine
            # (described as compacted already when the compaction frontier has an element
            # at or below every time: advancing by it would leave them as they are, and a
            # merge then need not advance them)
            since = spine.since if _below_all(spine.since, parts[0].times) else None
            spine.insert(Batch.from_updates(parts[0], spine.key_width, spine.upper, upper,
                                            since))
    # what waits: queued chunks, held updates, pending times
    for i in np.unique(work[:, 0]).tolist() if len(work) else []:
        nid = program.node_ids[i]
        mine = work[work[:, 0] == i]
        for port in np.unique(mine[:, 1]).tolist():
            part = mine[mine[:, 1] == port]
            in_width = int(nodes[i, 2] if port == 1 and nodes[i, 0] == C.ARRANGE
                           else nodes[i, 1])
            times = np.empty((len(part), 2), np.int64)
            times[:, 0] = epoch
            times[:, 1] = part[:, 2]
            chunk = Updates(np.ascontiguousarray(part[:, 4:4 + in_width]), times,
                            np.ascontiguousarray(part[:, 3]))
            if nodes[i, 0] == C.ARRANGE and port == 1:
                engine.ops[nid].pending = chunk
            else:
                engine.queues[nid][port].append(chunk)
    for i in np.unique(schedule[:, 0]).tolist() if len(schedule) else []:
        op = engine.ops[program.node_ids[i]]
        mine = schedule[schedule[:, 0] == i]
        kk = int(nodes[i, 5])
        times = np.empty((len(mine), 2), np.int64)
        times[:, 0] = epoch
        times[:, 1] = mine[:, 1]
        op.pending_keys, op.pending_times = unique_pairs(
            np.ascontiguousarray(mine[:, 2:2 + kk]), times)
    for i in np.unique(exits[:, 0]).tolist() if len(exits) else []:
        nid = program.node_ids[i]
        mine = exits[exits[:, 0] == i]
        width = int(nodes[i, 1])
        times = np.empty((len(mine), 2), np.int64)
        times[:, 0] = epoch
        times[:, 1] = mine[:, 1]
        engine.queues[nid][0].append(Updates(np.ascontiguousarray(mine[:, 3:3 + width]),
                                             times, np.ascontiguousarray(mine[:, 2])))
    for i in np.flatnonzero(negative).tolist():
        engine.ops[program.node_ids[i]].negatives_seen = True
