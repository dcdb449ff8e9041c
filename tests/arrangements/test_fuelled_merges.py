"""Fuelled merges: big spine merges done a slice at a time, paid for by later inserts.

A fuelled merge must produce exactly what the plain ``merge`` (the reference)
produces, whatever the fuel; a spine whose big merges are fuelled must hold the
same updates, answer the same lookups and keep its batch count logarithmic; no
insert may pay for more than its own share of merge work; and dataflows built on
such spines (joins, aggregates, loops, migrations) must match from-scratch
oracles.  Thresholds are shrunk so that small random cases exercise every path.
"""
from __future__ import annotations

import pickle
import random
from collections import Counter

import numpy as np
import pytest

import diffflow as dd
from diffflow import graphs
from diffflow.arrangements import columnar, merging
from diffflow.arrangements import spine as spine_module
from diffflow.arrangements.batch import Batch, merge
from diffflow.arrangements.merging import FuelledMerge
from diffflow.arrangements.spine import Spine
from diffflow.arrangements.updates import Updates
from diffflow.lattice import Antichain
from diffflow.runtime.routing import BINS
from tests.support.helpers import drive

SEEDS = range(12)


@pytest.fixture
def tiny_merges(monkeypatch):
    """Every merge of 24 rows or more is fuelled, a slice can be a single row."""
    monkeypatch.setattr(spine_module, "EAGER_MERGE", 24)
    monkeypatch.setattr(merging, "MIN_SLICE", 1)


def random_batch(rng, n, width, key_width, dim, lower, upper, domain, since=None):
    rows = rng.integers(0, domain, (n, width))
    times = rng.integers(lower, upper, (n, dim))
    diffs = rng.choice([-1, 1, 2], n)
    batch = Batch.from_updates(Updates(rows, times, diffs), key_width,
                               Antichain([(lower,) * dim]), Antichain([(upper,) * dim]))
    if since is not None:
        batch = batch.advanced(since)
    return batch


def same(a: Batch, b: Batch) -> None:
    for name in ("rows", "times", "diffs"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.since == b.since and a.lower == b.lower and a.upper == b.upper


@pytest.mark.parametrize("seed", range(40))
def test_a_fuelled_merge_is_the_reference_merge(seed, tiny_merges):
    rng = np.random.default_rng(seed)
    dim = 1 + seed % 2  # totally and partially ordered times
    width = int(rng.integers(1, 4))
    key_width = int(rng.integers(1, width + 1))
    domain = int(rng.choice([3, 20, 1000]))
    older = random_batch(rng, int(rng.integers(0, 300)), width, key_width, dim, 0, 5, domain)
    newer = random_batch(rng, int(rng.integers(0, 300)), width, key_width, dim, 5, 9, domain)
    frontier = Antichain([tuple(rng.integers(0, 9, dim))]) if seed % 3 else older.since
    m = FuelledMerge(older, newer, frontier)
    steps = 0
    while not m.work(int(rng.integers(1, 40))):
        steps += 1
    if len(older) + len(newer) > 80:
        assert steps > 0  # it took several slices
    got = m.result(older.lower, newer.upper)
    got._check()
    same(got, merge(older, newer, frontier))
    assert got._bins is None  # (no dead bins in either input: no bins hashed)


def kill_bins(batch: Batch, bins) -> None:
    """Mark ``bins`` dead in ``batch`` as rescaling does (a new mask; counts follow)."""
    own = batch.bins(BINS)
    hit = np.isin(own, bins) & (np.ones(len(batch), bool) if batch.dead is None
                                else ~batch.dead[own])
    if not hit.any():
        return
    dead = np.zeros(BINS, bool) if batch.dead is None else batch.dead.copy()
    dead[own[hit]] = True
    batch.dead, batch.dead_rows = dead, batch.dead_rows + int(hit.sum())


@pytest.mark.parametrize("seed", range(20))
def test_bins_dying_mid_merge_are_dead_in_the_result(seed, tiny_merges):
    """Rows of bins that leave while a merge runs: slices written before hold them, so the
    result must mark those bins dead; live rows are exactly the reference's."""
    rng = np.random.default_rng(seed)
    older = random_batch(rng, 400, 2, 1, 1, 0, 5, 500)
    newer = random_batch(rng, 300, 2, 1, 1, 5, 9, 500)
    bins = np.unique(np.concatenate([older.bins(BINS), newer.bins(BINS)]))
    if seed % 2:  # some bins dead before the merge starts
        early = rng.choice(bins, len(bins) // 5, replace=False)
        kill_bins(older, early)
        kill_bins(newer, early)
    frontier = Antichain([(3,)])
    m = FuelledMerge(older, newer, frontier)
    m.work(int(rng.integers(1, 500)))
    late = rng.choice(bins, len(bins) // 4, replace=False)
    kill_bins(older, late)
    kill_bins(newer, late)
    while not m.work(int(rng.integers(1, 100))):
        pass
    got = m.result(older.lower, newer.upper)
    got._check()
    expected = merge(older, newer, frontier)  # reads the final masks: no dead rows
    same(got.live(), expected)
    assert got.dead_rows == len(got) - len(expected)
    # (the inputs' bins were read: the result's were hashed slice by slice as it was written)
    assert got.bins_ready(BINS)
    fresh = np.empty(len(got), np.int32)
    columnar.bin_of_prefix(got.rows, got.key_width, BINS, fresh)
    np.testing.assert_array_equal(got._bins[1], fresh)


@pytest.mark.parametrize("seed", range(6))
def test_live_mask_of_a_slice_hashes_only_the_slice_and_agrees(seed):
    """A merge or a copy asks a long batch for a slice's live rows: with its bins not
    hashed yet, they are hashed up to the slice's end only; the answer is the same."""
    rng = np.random.default_rng(seed)
    batch = random_batch(rng, 500, 2, 1, 1, 0, 5, 400)
    twin = Batch(batch.rows, batch.times, batch.diffs, 1, batch.lower, batch.upper)
    dead = rng.random(BINS) < 0.3
    batch.dead = twin.dead = dead
    lo = int(rng.integers(0, 400))
    positions = np.arange(lo, lo + int(rng.integers(1, 100)))
    sliced = batch.live_mask(positions)
    assert batch._bins[2] == positions[-1] + 1  # (hashed up to the slice's end, no further)
    np.testing.assert_array_equal(sliced, twin.live_mask()[positions])
    np.testing.assert_array_equal(batch.live_mask(positions[:3]), sliced[:3])  # (cached)
    assert len(batch.live_mask(positions[:0])) == 0


def test_a_merge_reading_the_newest_batch_follows_its_extension(tiny_merges):
    """An empty insert re-describes the newest batch; a merge reading it keeps going and
    the result is described up to the spine's upper."""
    rng = np.random.default_rng(0)
    spine = Spine(width=2, key_width=1, dim=1)
    spine.insert(random_batch(rng, 40, 2, 1, 1, 0, 1, 1000))
    spine.insert(random_batch(rng, 40, 2, 1, 1, 1, 2, 1000))
    assert len(spine.merges) == 1
    spine.insert_chunks([], Antichain([(5,)]))
    spine.extend_to(Antichain([(7,)]))
    assert len(spine.merges) == 1
    spine.finish_merges()
    spine._check()
    assert len(spine.batches) == 1 and spine.batches[0].upper == Antichain([(7,)])


def reference_tally(updates):
    out = Counter()
    for rows, diffs in updates:
        for r, d in zip(map(tuple, rows.tolist()), diffs.tolist()):
            out[r] += d
    return {k: v for k, v in out.items() if v}


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_a_spine_with_fuelled_merges_keeps_its_contents_and_stays_logarithmic(
        seed, monkeypatch, tiny_merges):
    """Random inserts with a moving compaction frontier: after every insert the spine's
    invariants hold, its contents and lookups are the reference's, its batch count is
    logarithmic, and no insert does more merge work than its fuel (plus one slice and the
    eager merges below the threshold)."""
    rng = np.random.default_rng(seed)
    dim = 1 + seed % 2
    spine = Spine(width=2, key_width=1, dim=dim)
    work = []
    eager = spine_module.merge

    def counted_merge(older, newer, frontier):
        work[-1] += len(older) + len(newer)
        return eager(older, newer, frontier)

    sliced = FuelledMerge._merge_slice

    def counted_slice(self, inputs, stops):
        work[-1] += stops[0] - self._at[0] + stops[1] - self._at[1]
        return sliced(self, inputs, stops)

    monkeypatch.setattr(spine_module, "merge", counted_merge)
    monkeypatch.setattr(FuelledMerge, "_merge_slice", counted_slice)
    valve = []
    monkeypatch.setattr(Spine, "finish_merges", lambda self: valve.append(1))
    inserted = []
    finished = 0
    for epoch in range(150):
        n = int(rng.integers(0, 60))
        u = Updates(rng.integers(0, 5000, (n, 2)), np.full((n, dim), epoch, np.int64),
                    rng.choice([-1, 1], n))
        merges_before = len(spine.merges)
        work.append(0)
        spine.insert_updates(u, Antichain([(epoch + 1,) * dim]))
        if epoch % 7 == 3:
            spine.set_compaction(Antichain([(epoch - 2,) * dim]))
        inserted.append((u.rows, u.diffs))
        finished += max(0, merges_before - len(spine.merges))
        spine._check()
        # eager merges stay under the threshold; fuelled ones take FUEL rows per inserted
        # row each, one slice ending at a key boundary past that (keys here are unique-ish)
        fuelled_cap = merges_before * (spine_module.FUEL * n + 8)
        assert work[-1] <= fuelled_cap + 4 * spine_module.EAGER_MERGE * 2, (epoch, work[-1])
        total = max(1, len(spine))
        assert len(spine.batches) <= 2 * np.log2(total + 1) + 4, [len(b) for b in spine.batches]
        if epoch % 10 == 9:
            got = spine.to_updates()
            held = Counter()
            for r, d in zip(map(tuple, got.rows.tolist()), got.diffs.tolist()):
                held[r] += d
            assert {k: v for k, v in held.items() if v} == reference_tally(inserted)
            keys = np.unique(rng.integers(0, 5000, (30, 1)), axis=0)
            q, rows, _, diffs = spine.gather(keys)
            seen = Counter()
            for r, d in zip(map(tuple, rows.tolist()), diffs.tolist()):
                seen[r] += d
            want = {r: v for r, v in reference_tally(inserted).items() if (r[0],) in
                    set(map(tuple, keys.tolist()))}
            assert {k: v for k, v in seen.items() if v} == want
    assert finished > 0 and not valve  # merges finished by fuel, never by the valve


def test_a_checkpointed_spine_drops_merges_under_way_and_starts_them_again(tiny_merges):
    rng = np.random.default_rng(3)
    spine = Spine(width=2, key_width=1, dim=1)
    for epoch in range(12):
        spine.insert(random_batch(rng, 30, 2, 1, 1, epoch, epoch + 1, 1000))
    assert spine.merges
    copy = pickle.loads(pickle.dumps(spine))
    assert copy.merges == [] and [len(b) for b in copy.batches] == [len(b) for b in spine.batches]
    copy.insert(random_batch(rng, 30, 2, 1, 1, 12, 13, 1000))
    copy._check()
    assert copy.merges  # the rule started them again
    a, b = copy.to_updates(), spine.to_updates()
    assert len(a) >= len(b)


# -- whole dataflows on fuelled spines, against from-scratch oracles ---------------------------
def _join(a, b):
    out = Counter()
    for (x, y), m in a.items():
        for (x2, z), n in b.items():
            if x == x2:
                out[(x, y, z)] += m * n
    return out


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_joins_and_aggregates_on_fuelled_spines(seed, parts, tiny_merges):
    def build(flow, i):
        j = i["a"].join(i["b"], on="x")
        return j.aggregate(by=["x"], n=dd.count(), s=dd.sum("y"))

    def oracle(s):
        out, groups = Counter(), {}
        for (x, y, z), m in _join(s["a"], s["b"]).items():
            n, t = groups.get(x, (0, 0))
            groups[x] = (n + m, t + m * y)
        for x, (n, t) in groups.items():
            if n:
                out[(x, n, t)] += 1
        return out

    drive({"a": ["x", "y"], "b": ["x", "z"]}, build, oracle, seed=seed, parts=parts,
          epochs=14, batch=25, domain=8)


def reachable_oracle(edges, roots):
    succ = {}
    for (a, b), m in edges.items():
        if m > 0:
            succ.setdefault(a, set()).add(b)
    seen, todo = set(), [r for (r,), m in roots.items() if m > 0]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(succ.get(n, ()))
    return Counter({(n,): 1 for n in seen})


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_loops_on_fuelled_spines(seed, parts, tiny_merges):
    """Reachability over a random graph (an iterate whose spines grow every round)."""
    def build(flow, i):
        return graphs.reachable(i["e"], i["r"])

    drive({"e": ["a", "b"], "r": ["a"]}, build, lambda s: reachable_oracle(s["e"], s["r"]),
          seed=seed, parts=parts, epochs=10, batch=30, domain=25)


@pytest.mark.parametrize("seed", range(4))
def test_a_deep_chain_on_fuelled_spines(seed, tiny_merges):
    """A 300-node chain, cut and mended at random epochs: long loops, many rounds."""
    rng = random.Random(seed)
    flow = dd.Dataflow(partitions=2)
    e = flow.input("e", ["a", "b"])
    r = flow.input("r", ["a"])
    out = graphs.reachable(e, r).output()
    chain = {(i, i + 1): 1 for i in range(300)}
    e.insert(list(chain))
    r.insert([(0,)])
    flow.advance()
    for _ in range(6):
        cut = (k := rng.randrange(300), k + 1)
        if chain.get(cut):
            e.remove([cut])
            chain[cut] = 0
        else:
            e.insert([cut])
            chain[cut] = 1
        flow.advance()
        assert out.snapshot() == reachable_oracle(Counter(chain), Counter({(0,): 1}))


def test_an_output_checkpointed_before_accumulators_were_spines_restores():
    """Checkpoints written by the previous version pickled an accumulator's runs."""
    from diffflow.operators.output import Accumulator

    old = object.__new__(Accumulator)
    old.__dict__.update(width=1, runs=[(np.array([[1], [2]]), np.zeros((2, 1), np.int64),
                                        np.array([1, 2])),
                                       (np.array([[2]]), np.zeros((1, 1), np.int64),
                                        np.array([-2]))])
    restored = pickle.loads(pickle.dumps(old))
    restored.add(np.array([[3]]), np.array([1]))
    rows, diffs = restored.contents()
    assert rows.tolist() == [[1], [3]] and diffs.tolist() == [1, 1]


def spine_tally(spine):
    got = spine.to_updates()
    held = Counter()
    for r, d in zip(map(tuple, got.rows.tolist()), got.diffs.tolist()):
        held[r] += d
    return {k: v for k, v in held.items() if v}


def test_idle_work_follows_the_rows_inserted_since_the_last_run(tiny_merges, monkeypatch):
    """When a run ends the spine works on its merges: IDLE_FUEL rows per row inserted since
    the last idle, so a big epoch's merges end with it, and an idle spine with nothing new
    does no work at all (the cost follows the change, not the trace)."""
    rng = np.random.default_rng(5)
    spine = Spine(width=2, key_width=1, dim=1)
    inserted = []
    for epoch in range(12):
        batch = random_batch(rng, 30, 2, 1, 1, epoch, epoch + 1, 1000)
        spine.insert(batch)
        inserted.append((batch.rows, batch.diffs))
    assert spine.merges and spine.inserted == sum(len(d) for _, d in inserted)
    before = spine_tally(spine)
    work = []
    real_work = FuelledMerge.work
    monkeypatch.setattr(FuelledMerge, "work",
                        lambda self, fuel: work.append(fuel) or real_work(self, fuel))
    spine.idle()
    assert not spine.merges and spine.inserted == 0   # the epoch's merges ended with it
    assert work and max(work) <= spine_module.IDLE_FUEL * 12 * 30
    assert spine_tally(spine) == before == reference_tally(inserted)
    spine._check()
    # a merge under way and no new rows: idle does nothing
    for epoch in range(12, 16):
        spine.insert(random_batch(rng, 30, 2, 1, 1, epoch, epoch + 1, 1000))
    spine.inserted = 0
    pending = [(m.older, m.newer, m.left) for m in spine.merges]
    work.clear()
    spine.idle()
    assert work == [] and [(m.older, m.newer, m.left) for m in spine.merges] == pending


def test_a_run_ends_its_merges_and_trims_the_heap_after_a_big_epoch(tiny_merges, monkeypatch):
    """After a run the engine gives its traces idle work; once traces took in many rows,
    sweeps and runs return free heap pages (memory.trim); small runs do not trim."""
    from diffflow.common import memory
    trims = []
    monkeypatch.setattr(memory, "trim", lambda: trims.append(1))
    monkeypatch.setattr(memory, "TRIM_AFTER_ROWS", 500)
    monkeypatch.setattr(memory, "_stored_since_trim", [0])
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    out = graphs.connected_components(edges).output()
    rng = np.random.default_rng(2)
    edges.insert(rng.integers(0, 300, (600, 2)))
    flow.advance()
    assert trims             # after some sweeps of the first epoch, or at its end
    trimmed = len(trims)
    traces = flow._runtime.engines[0].traces()
    assert all(s.inserted == 0 for s in traces), [s.inserted for s in traces]
    assert all(not s.merges for s in traces), [(len(s.merges), [len(b) for b in s.batches]) for s in traces]
    edges.insert([(1000, 1001)])
    flow.advance()
    assert len(trims) == trimmed    # a one-edge epoch: no trim
    labels = dict(out.snapshot())
    assert labels and all(v == 1 for v in labels.values())


@pytest.mark.parametrize("seed", range(6))
def test_a_merged_batch_bounds_its_times_from_its_inputs_bounds(seed, tiny_merges):
    """A merge of batches that know their ``max_time`` takes their bounds, advanced as the
    times were, instead of a pass over its rows; every time it holds stays below it."""
    rng = np.random.default_rng(seed)
    spine = Spine(width=2, key_width=1, dim=2)
    for epoch in range(14):
        batch = random_batch(rng, 25, 2, 1, 2, epoch, epoch + 1, 50)
        batch.max_time  # known, as readers make it
        spine.insert(batch)
        if epoch % 5 == 4:
            spine.set_compaction(Antichain([(epoch - 1, epoch - 2)]))
        for b in spine.batches:
            if len(b):
                assert (b.times <= b.max_time).all()
    spine.finish_merges()
    assert any(b._max_time is not None for b in spine.batches)
    for b in spine.batches:
        assert (b.times <= b.max_time).all()
