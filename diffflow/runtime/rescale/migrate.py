"""Moving bins between partition engines: one rescaling step's cut-over.

A step runs between runs, when every closed epoch is computed: nothing is
queued, no operator holds pending updates, and every "interesting time" a
reduce could still need is a join of times already complete.  A bin's whole
state is then exactly its rows in the engine's traces, already compacted to
their ``since`` (RESCALE.md §6.3), and moving it means

* :func:`extract` on the sender: the rows of every trace whose key's bin the
  new table gives to another partition, grouped by their new owner, and
  removed from the sender's batches (which keep their descriptions);
* :func:`install` on the receiver: each trace's rows as one consolidated batch
  whose times are advanced by the trace's ``since`` (the same on every
  partition, a compaction frontier is global), so no reader can tell them from
  the rows that never moved; imports sit in front of the trace's own batches,
  described ``[minimum, minimum)`` so the batches keep tiling the history, and
  merge by the spine's geometric rule, big merges fuelled (paid for by the
  imports and inserts after, and by :func:`prepare` in the epochs between
  steps).

A partition that is being retired also hands over what is not kept by key
(an output's rows, a loop's dropped updates) to a surviving partition.

>>> import diffflow as dd
>>> from diffflow.runtime.routing import Routing
>>> flow = dd.Dataflow(partitions=2); a = flow.input("a", ["x"])
>>> out = a.distinct().output(); a.insert(list(range(40))); flow.advance()
>>> e0, e1 = flow._runtime.engines[0], flow._runtime.engines[1]
>>> to_one = Routing(2, np.ones(BINS, np.int32))
>>> parcels = extract(e0, to_one); install(e1, parcels[1]) > 0
True
>>> e0.set_routing(to_one); e1.set_routing(to_one)
>>> sum(len(s) for s in e0.traces()), check_owners(e1) > 0
(0, True)
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.batch import Batch, died_since
from diffflow.arrangements.spine import is_import
from diffflow.arrangements.updates import Updates, concat
from diffflow.lattice import Antichain, advance_by
from diffflow.runtime.engine import PartitionEngine
from diffflow.runtime.rescale import step_index
from diffflow.runtime.routing import BINS, Routing


def _spines(engine) -> list:
    """``((node, index), spine)`` for every trace the engine keeps (shared ones once)."""
    return [((nid, i), spine) for nid in engine.topology.traced
            for i, spine in enumerate(engine.ops[nid].traces())]


def _require_quiescent(engine) -> None:
    if any(port for ports in engine.queues.values() for port in ports):
        raise RuntimeError("a rescaling step needs a quiescent partition (queued data remains)")
    for nid, op in engine.ops.items():
        caps = op.capabilities()
        if caps is not None and len(caps) and not op.always_steps:  # inputs hold the open epoch
            raise RuntimeError(f"a rescaling step needs every closed epoch computed; "
                               f"{engine.nodes[nid].describe()} still holds updates")


# batches at least this big are indexed by plan step ahead of the steps (prepare), so a step
# sends slices of them instead of scanning them
INDEXED = 1 << 12
# while a plan runs, batches at least this big keep the rows of departed bins as dead rows
# (skipped by every reader) instead of being copied without them at every step
DEAD_MARKED = 1 << 12


def set_plan(engine, key, step_of_bin: np.ndarray | None) -> None:
    """Tell ``engine`` the plan under way: ``step_of_bin[b]`` is the step moving bin ``b``
    (-1: it stays); :func:`prepare` indexes big batches by it, :func:`extract` reads them.
    An engine that owns none of the moving bins now sends nothing in the plan (a plan
    moves each bin once) and indexes nothing.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(partitions=2); a = flow.input("a", ["x"]); flow.advance()
    >>> e0, e1 = flow._runtime.engines[0], flow._runtime.engines[1]
    >>> steps = np.full(BINS, -1, np.int32); steps[e1.routing.lookup() == 1] = 0
    >>> set_plan(e0, 1, steps); set_plan(e1, 1, steps)
    >>> e0.rescale_plan is None, e1.rescale_plan[0], e0.rescale_running  # (e0 only receives)
    (True, 1, True)
    >>> set_plan(e1, None, None)
    """
    if engine.rescale_plan is not None:
        step_index.activate(engine.rescale_plan[0], engine, running=False)
    engine.rescale_plan = None
    engine.rescale_running = step_of_bin is not None  # (imports keep coming meanwhile)
    if step_of_bin is None:
        return
    mine = engine.routing.lookup() == engine.partition if engine.parts > 1 else \
        np.ones(BINS, bool)
    if (step_of_bin[mine] >= 0).any():
        engine.rescale_plan = (key, step_of_bin)
        step_index.activate(key, engine)


def extract(engine, routing: Routing, step: int | None = None) -> dict:
    """Remove from ``engine`` the rows ``routing`` gives to other partitions.

    Returns ``{partition: parcel}``, a parcel being ``{"rows": {(node, index):
    [(rows, times, diffs, since)]}, "handover": {node: state}}`` for
    :func:`install`.  When ``routing`` has no place for this partition
    (``partition >= routing.parts``) every row leaves, and the state not kept by
    key goes to partition ``partition % routing.parts``.

    Cost: with ``step`` (of the plan :func:`set_plan` gave), the moved rows for
    batches :func:`prepare` indexed (:mod:`~diffflow.runtime.rescale.step_index`), sent as
    slices of their index; other batches are scanned.  While a plan runs, batches of
    :data:`DEAD_MARKED` rows or more keep the leaving rows as dead rows, copied
    without them when the batch next merges or, once half of it is dead and the plan
    is done, by :func:`prepare` at a later epoch boundary; smaller batches, and every
    batch without a plan, are copied without them.
    """
    _require_quiescent(engine)
    me = engine.partition
    new = routing.lookup() if routing.parts > 1 else np.zeros(BINS, np.int32)
    mine = engine.routing.lookup() == me if engine.parts > 1 else np.ones(BINS, bool)
    leaving_mask = mine & (new != me)
    plan = engine.rescale_plan if step is not None else None
    parcels: dict = {}
    if leaving_mask.any():
        for where, spine in _spines(engine):
            leaving: dict = {}
            spine.batches = [_take_leaving(batch, leaving_mask, new, plan, step, leaving)
                             for batch in spine.batches]
            for q, pieces in leaving.items():
                parcels.setdefault(q, {"rows": {}, "handover": {}})["rows"][where] = pieces
    for nid, op in engine.ops.items():  # rows staged at the open epoch go by the whole row
        staged = op.take_staged()
        if not staged:
            continue
        chunk = concat(staged, staged[0].width, staged[0].times.shape[1])
        for q, piece in enumerate(routing.split(chunk, range(chunk.width))):
            if not len(piece):
                continue
            if q == me:
                op.stage(piece.rows, piece.diffs)
            else:
                parcel = parcels.setdefault(q, {"rows": {}, "handover": {}})
                parcel.setdefault("staged", {}).setdefault(nid, []).append(
                    (piece.rows, piece.diffs))
    if me >= routing.parts:
        heir = me % routing.parts
        for nid, op in engine.ops.items():
            state = op.handover()
            if state is not None:
                parcels.setdefault(heir, {"rows": {}, "handover": {}})["handover"][nid] = state
    return parcels


def _take_leaving(batch: Batch, leaving_mask, new_table, plan, step, leaving: dict) -> Batch:
    """Add ``batch``'s rows of leaving bins to ``leaving[dest]``; returns what stays."""
    if not len(batch):
        return batch
    if plan is not None and len(batch) >= INDEXED and step_index.is_built(batch, plan):
        return _take_indexed(batch, leaving_mask, new_table, plan, step, leaving)
    bins = batch.bins(BINS)  # (not indexed yet: a scan costs a third of indexing)
    moving = leaving_mask[bins]
    if batch.dead is not None:
        moving &= ~batch.dead[bins]
    pos = np.flatnonzero(moving)
    if not len(pos):
        return batch
    _send(leaving, new_table[bins[pos]], batch.since,
          batch.rows[pos], batch.times[pos], batch.diffs[pos])
    if plan is not None and len(batch) >= DEAD_MARKED:  # keep them as dead rows: no copy
        # (every row of a leaving bin was either sent now or dead already)
        batch.dead = leaving_mask if batch.dead is None else batch.dead | leaving_mask
        batch.dead_rows += len(pos)
        return batch
    stay = ~moving
    rest = Batch(batch.rows[stay], batch.times[stay], batch.diffs[stay], batch.key_width,
                 batch.lower, batch.upper, batch.since)
    rest.dead, rest.dead_rows, rest.present = batch.dead, batch.dead_rows, batch.present
    return rest


def _take_indexed(batch: Batch, leaving_mask, new_table, plan, step, leaving: dict) -> Batch:
    """A big batch's leaving rows, read as a slice of its step index (built by
    :func:`prepare`); the batch keeps them as dead rows (every reader skips them), copied
    without them when it next merges or, once half of it is dead, by :func:`prepare` at a
    later epoch boundary."""
    sent = []
    for rows, times, diffs, bins, gone, since in step_index.build(batch, plan).pieces(step):
        live = leaving_mask[bins]  # (live rows of the step's bins all leave)
        if batch.dead is not None:
            live &= ~batch.dead[bins]
        if gone is not None:  # (a merged batch's part: its batch's dead rows were dropped)
            live &= ~gone[bins]
        if not live.all():
            rows, times, diffs, bins = rows[live], times[live], diffs[live], bins[live]
        if len(bins):
            _send(leaving, new_table[bins], since, rows, times, diffs)
            sent.append(bins)
    if not sent:
        return batch
    dead = np.zeros(BINS, bool) if batch.dead is None else batch.dead.copy()
    for bins in sent:  # (the bins of rows that left: a row a plan forgot stays visible)
        dead[bins] = True
        batch.dead_rows += len(bins)
    # (a merged batch's parts may hold rows its merge consolidated away: an estimate)
    batch.dead, batch.dead_rows = dead, min(batch.dead_rows, len(batch))
    return batch


def _send(leaving: dict, dests, since, rows, times, diffs) -> None:
    """Add rows (in key order) to ``leaving[dest]`` by their ``dests``, key order kept."""
    if (dests == dests[0]).all():
        leaving.setdefault(int(dests[0]), []).append((rows, times, diffs, since))
        return
    order, offsets = columnar.group_by_partition(dests.astype(np.int64), int(dests.max()) + 1)
    for q in np.flatnonzero(np.diff(offsets)).tolist():
        pick = order[offsets[q]:offsets[q + 1]]
        leaving.setdefault(q, []).append((rows[pick], times[pick], diffs[pick], since))


def install(engine, parcel: dict | None) -> int:
    """Add a parcel from :func:`extract` to ``engine``; returns the rows installed."""
    if not parcel:
        return 0
    spines = dict(_spines(engine))
    installed = 0
    for where, pieces in parcel["rows"].items():
        spine = spines[where]
        batch = _imported_batch(spine, pieces)
        if engine.rescale_plan is not None:  # (its rows move no more in this plan)
            batch._step_index = step_index.moved_already(engine.rescale_plan)
        if len(batch):
            _place_import(spine, batch)
            installed += len(batch)
    for nid, state in parcel["handover"].items():
        engine.ops[nid].absorb(state)
    for nid, pieces in parcel.get("staged", {}).items():
        for rows, diffs in pieces:
            engine.ops[nid].stage(rows, diffs)
    if installed:
        for op in engine.ops.values():
            op.imported()
    return installed


def _imported_batch(spine, pieces) -> Batch:
    """The pieces as one consolidated batch at the spine's ``since`` (described later):
    their times advanced together (a piece's ``since`` is never ahead of the spine's, and
    advancing a time already at it changes nothing), then one consolidation."""
    minimum = Antichain.minimum(spine.dim)
    merged = concat([Updates(rows, times, diffs) for rows, times, diffs, _ in pieces],
                    spine.width, spine.dim)  # (pieces may be index views: from_updates
    # consolidates into fresh arrays, so the batch never keeps a sender's index alive)
    if any(since != spine.since for *_, since in pieces):
        merged = Updates(merged.rows, advance_by(merged.times, spine.since), merged.diffs)
    batch = Batch.from_updates(merged, spine.key_width, minimum, minimum, spine.since)
    if len(batch):  # the few bins it holds: readers skip it for keys of others
        batch.present = np.zeros(BINS, bool)
        batch.present[batch.bins(BINS)] = True
    return batch


def _place_import(spine, batch: Batch) -> None:
    """Put an imported batch after the earlier imports, in front of the trace's own batches,
    described ``[minimum, minimum)`` (its times are advanced by ``since``, like every other
    batch's, and the batches still tile the history: readers look at a spine's upper and at
    times, never at a batch's lower); then start the merges the geometric rule asks for
    (small ones at once, big ones fuelled by the epochs after: not in the step's epoch).
    Merging at once here keeps a run of steps, one per epoch, from leaving a pile of small
    imports for a later boundary to merge in one go."""
    minimum = Antichain.minimum(spine.dim)
    batches = spine.batches
    n = spine.imports_in_front()
    if 0 < n < len(batches) and any(m.holds(batches[n - 1]) and m.holds(batches[n])
                                    for m in spine.merges):
        n -= 1  # not between the inputs of a merge under way (imports are in any order)
    placed = Batch(batch.rows, batch.times, batch.diffs, batch.key_width, minimum, minimum,
                   batch.since)
    placed._step_index, placed.present = batch._step_index, batch.present
    batches.insert(n, placed)
    spine.settle()


def prepare(engine, budget: int) -> int:
    """Background work of rescaling, about ``budget`` rows of it, at an epoch boundary with
    no step due: once no plan runs, merge every import into the trace's own batches
    (:meth:`~diffflow.arrangements.spine.Spine.absorb_imports`); fuel the merges under
    way with half of it (not while the plan's indexing is behind); copy batches at least a
    quarter dead without their dead rows (not while a plan runs: the copy would need
    indexing again), then index big batches by the coming plan's steps
    (:func:`set_plan`; hashing, counting and copying a row cost one each; the inputs of
    a merge under way too: its result keeps their indexes), so steps send slices instead
    of gathering rows.  Returns how many batches still wait for such work (0: none)."""
    left = 0
    # while a plan's indexing is behind, it has the whole budget: steps wait for it, and
    # merges go on at the inserts' pace meanwhile
    indexing = engine.rescale_plan is not None and unprepared(engine) > 0
    for _, spine in _spines(engine):
        spine.settle()
        if not engine.rescale_running:  # no import follows: each one joins the spine
            left += spine.absorb_imports()
        if spine.merges:  # fuelled merges (of imports, among others) go on
            if not indexing:
                spine.work(budget // 2, background=True)
            # (the imports' only: other merges always go on somewhere, and background
            # work that never stops would slow every epoch for good)
            left += sum(is_import(m.older) for m in spine.merges)
        for i, batch in enumerate(spine.batches):  # a quarter dead: copy the live rows
            if batch.dead is None or 4 * batch.dead_rows < len(batch) or spine.in_merge(batch):
                continue  # (a merge under way drops the dead rows itself)
            if engine.rescale_plan is not None and len(batch) >= INDEXED:
                continue  # not while a plan runs: the copy would need indexing again
            if budget <= 0:
                left += 1
                continue
            done, budget = _copy_live(batch, budget)
            if done is None:
                left += 1
            else:
                spine.batches[i] = done
    plan = engine.rescale_plan
    for _, spine in _spines(engine):
        for batch in spine.batches:
            if plan is None or len(batch) < INDEXED or step_index.is_built(batch, plan):
                continue
            if budget <= 0:  # (a merge under way: its result keeps the inputs' indexes)
                left += 1
                continue
            before = step_index.work_done(batch, plan)
            if step_index.build(batch, plan, budget) is None:
                left += 1
            budget -= step_index.work_done(batch, plan) - before
    return left


def unprepared(engine) -> int:
    """Rows of the big batches :func:`prepare` has still to index for the plan under way."""
    plan = engine.rescale_plan
    if plan is None:
        return 0
    return sum(len(batch) for _, spine in _spines(engine) for batch in spine.batches
               if len(batch) >= INDEXED and not step_index.is_built(batch, plan))


def _copy_live(batch: Batch, budget: int):
    """Copy up to ``budget`` rows of ``batch`` without its dead rows (readers keep the batch
    until the copy is whole); returns ``(the copy or None, budget left)``."""
    rows_state = batch._live_copy
    if rows_state is None:  # room for every row, trimmed at the end (counting the live
        n = len(batch)       # rows first would read the whole batch in one call)
        rows_state = batch._live_copy = [  # (dead bins at the start: more may die meanwhile)
            batch.dead, 0, 0, np.empty((n, batch.rows.shape[1]), np.int64),
            np.empty((n, batch.times.shape[1]), np.int64), np.empty(n, np.int64),
            np.empty(n, np.int32)]
    dead_at_start, at, out, rows, times, diffs, bins = rows_state
    stop = min(len(batch), at + budget)
    keep = batch.live_mask(np.arange(at, stop))  # (hashes the batch's bins up to stop)
    k = int(keep.sum())
    rows[out:out + k] = batch.rows[at:stop][keep]
    times[out:out + k] = batch.times[at:stop][keep]
    diffs[out:out + k] = batch.diffs[at:stop][keep]
    # the copy's bins: marking bins that die meanwhile dead in it needs them
    bins[out:out + k] = batch.bins(len(batch.dead), stop)[at:stop][keep]
    rows_state[1:3] = [stop, out + k]
    budget -= stop - at
    if stop < len(batch):
        return None, budget
    batch._live_copy = None
    n = out + k  # (trimmed in place: the dead rows' room goes back, nothing is copied)
    copy = Batch(columnar.trim(rows, n), columnar.trim(times, n), columnar.trim(diffs, n),
                 batch.key_width, batch.lower, batch.upper, batch.since)
    copy.present, copy._bins = batch.present, (len(dead_at_start), columnar.trim(bins, n), n)
    return copy.mark_died(died_since(dead_at_start, batch.dead)), budget


def live_rows(engine) -> int:
    """Rows of every trace of ``engine``, dead rows not counted."""
    return sum(len(b) - b.dead_rows for _, spine in _spines(engine) for b in spine.batches)


def bin_sizes(engine) -> np.ndarray:
    """Rows per bin over every trace of ``engine`` (int64, :data:`BINS` entries)."""
    sizes = np.zeros(BINS, np.int64)
    for _, spine in _spines(engine):
        for batch in spine.batches:
            if len(batch):
                bins = batch.bins(BINS)
                live = batch.live_mask()
                sizes += np.bincount(bins if live is None else bins[live], minlength=BINS)
    return sizes


def check_owners(engine) -> int:
    """Assert every trace row of ``engine`` lies on the partition its bin maps to; returns
    how many rows were checked."""
    routing, me = engine.routing, engine.partition
    checked = 0
    for (nid, i), spine in _spines(engine):
        for batch in spine.batches:
            if not len(batch):
                continue
            owner = routing.owners(batch.keys)
            live = batch.live_mask()
            wrong = np.flatnonzero((owner != me) if live is None else (owner != me) & live)
            assert not len(wrong), (
                f"partition {me}: {len(wrong)} rows of {engine.nodes[nid].describe()} belong "
                f"to partition {int(owner[wrong[0]])}")
            checked += len(batch)
    return checked


def restore_rebinned(engine, saved: list) -> None:
    """Restore ``engine`` (built for its partition under the routing it should have) from a
    checkpoint written with another partition count or table: every saved partition's
    rows whose bins ``engine`` owns now, and the state not kept by key of the saved
    partitions it inherits (``p % parts``).  ``saved`` lists, per saved partition, the
    engine state, that partition's number, count and routing, and the open epoch.

    This is rescaling by restart (all at once): each partition reads every file.
    """
    me, routing = engine.partition, engine.routing
    saved = sorted(saved, key=lambda s: s["partition"])
    own = [s for s in saved if s["partition"] == me]
    if own:  # this partition's own state, less the bins other partitions own now
        engine.set_routing(own[0]["routing"])
        engine.restore(own[0]["ops"])
        extract(engine, routing)
        engine.set_routing(routing)
    for state in saved:
        if state["partition"] == me:
            continue
        scratch = PartitionEngine(None, state["partition"], state["parts"], engine.symbols,
                                  engine.topology, state["routing"])
        scratch.restore(state["ops"])
        if not own:  # a partition new since the checkpoint starts where the others were
            for op in engine.ops.values():
                op.start_at(state["epoch"])
            for (where, spine), (_, theirs) in zip(_spines(engine), _spines(scratch)):
                spine.set_compaction(theirs.since)
            own = [state]
        install(engine, extract(scratch, routing).get(me))
