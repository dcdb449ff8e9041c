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
  placed before the trace's own batches, described ``[minimum, minimum)``:
  its times are advanced by the trace's ``since`` (the same on every
  partition, a compaction frontier is global), so no reader can tell them from
  the rows that never moved, and the trace's own batches keep tiling its
  history after it.  Imports merge with each other geometrically, like the
  spine's tail, so a receiver's lookups search ``O(log moves)`` extra batches.

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

from ..arrangements.batch import Batch, merge
from ..arrangements.updates import concat
from ..lattice import Antichain
from .routing import BINS, Routing


def _spines(engine) -> list:
    """``((node, index), spine)`` for every trace the engine keeps (shared ones once)."""
    return [((nid, i), spine) for nid in engine.topology.traced
            for i, spine in enumerate(engine.ops[nid].traces())]


def _require_quiescent(engine) -> None:
    if any(port for ports in engine.queues.values() for port in ports):
        raise RuntimeError("a rescaling step needs a quiescent partition (queued data remains)")
    for nid, op in engine.ops.items():
        caps = op.capabilities()
        if caps is not None and len(caps) and op.kind != "input":
            raise RuntimeError(f"a rescaling step needs every closed epoch computed; "
                               f"{engine.nodes[nid].describe()} still holds updates")


def extract(engine, routing: Routing) -> dict:
    """Remove from ``engine`` the rows ``routing`` gives to other partitions.

    Returns ``{partition: parcel}``, a parcel being ``{"rows": {(node, index):
    (rows, times, diffs)}, "handover": {node: state}}`` for :func:`install`.
    When ``routing`` has no place for this partition (``partition >=
    routing.parts``) every row leaves, and the state not kept by key goes to
    partition ``partition % routing.parts``.
    """
    _require_quiescent(engine)
    me = engine.partition
    table = routing.table() if routing.parts > 1 else None
    parcels: dict = {}
    for where, spine in _spines(engine):
        leaving: dict = {}
        kept = []
        for batch in spine.batches:
            if not len(batch):
                kept.append(batch)
                continue
            owner = table[batch.bins(BINS)] if table is not None else \
                np.zeros(len(batch), np.int32)
            moving = owner != me
            if not moving.any():
                kept.append(batch)
                continue
            owner = owner[moving]
            for q in np.unique(owner).tolist():
                pick = np.flatnonzero(moving)[owner == q]
                leaving.setdefault(q, []).append(
                    (batch.rows[pick], batch.times[pick], batch.diffs[pick], batch.since))
            stay = ~moving
            rest = Batch(batch.rows[stay], batch.times[stay], batch.diffs[stay],
                         batch.key_width, batch.lower, batch.upper, batch.since)
            kept.append(rest)
        spine.batches = kept
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


def install(engine, parcel: dict | None) -> int:
    """Add a parcel from :func:`extract` to ``engine``; returns the rows installed."""
    if not parcel:
        return 0
    spines = dict(_spines(engine))
    installed = 0
    for where, pieces in parcel["rows"].items():
        spine = spines[where]
        batch = _imported_batch(spine, pieces)
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
    """The pieces as one consolidated batch ``[minimum, minimum)`` at the spine's ``since``."""
    minimum = Antichain.minimum(spine.dim)
    chunks = []
    for rows, times, diffs, since in pieces:
        batch = Batch(rows, times, diffs, spine.key_width, minimum, minimum, since)
        if since != spine.since:
            batch = batch.advanced(spine.since)
        chunks.append(batch.updates())
    merged = concat(chunks, spine.width, spine.dim)
    return Batch.from_updates(merged, spine.key_width, minimum, minimum, spine.since)


def _place_import(spine, batch: Batch) -> None:
    """Put an imported batch after earlier imports (the batches described ``[min, min)``),
    merging imports geometrically so they stay ``O(log)`` many."""
    minimum = Antichain.minimum(spine.dim)
    batches = spine.batches
    n = 0
    while n < len(batches) and batches[n].upper == minimum and batches[n].lower == minimum:
        n += 1
    batches.insert(n, batch)
    while n > 0 and len(batches[n - 1]) <= 2 * len(batches[n]):
        batches[n - 1:n + 1] = [merge(batches[n - 1], batches[n], spine.since)]
        n -= 1


def bin_sizes(engine) -> np.ndarray:
    """Rows per bin over every trace of ``engine`` (int64, :data:`BINS` entries)."""
    sizes = np.zeros(BINS, np.int64)
    for _, spine in _spines(engine):
        for batch in spine.batches:
            if len(batch):
                sizes += np.bincount(batch.bins(BINS), minlength=BINS)
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
            wrong = np.flatnonzero(owner != me)
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
    engine state and that partition's number, count and routing.

    This is rescaling by restart (all at once): each partition reads every file.
    """
    from .engine import PartitionEngine

    me, routing = engine.partition, engine.routing
    by_partition = {s["partition"]: s for s in saved}
    base = me if me in by_partition else min(by_partition)
    engine.restore(by_partition[base]["ops"])
    extract(engine, routing)  # rows of bins owned elsewhere now: another partition takes them
    if base != me:  # only the rows came from there: the rest belongs to ``base``'s heir
        for op in engine.ops.values():
            op.handover()
    for p, state in sorted(by_partition.items()):
        if p == base:
            continue
        scratch = PartitionEngine(None, p, state["parts"], engine.symbols,
                                  engine.topology, state["routing"])
        scratch.restore(state["ops"])
        install(engine, extract(scratch, routing).get(me))
