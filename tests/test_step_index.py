"""Step indexes (a big batch's moving rows gathered by plan step) and the pacing of
rescaling's background work: indexes against a plain reference, imports never indexed,
steps that wait for their indexing with outputs exact, time budgets."""
from __future__ import annotations

import pickle
import random
import time

import numpy as np
import pytest

import diffflow as dd
from diffflow import rescale
from diffflow.arrangements.batch import Batch, merge
from diffflow.arrangements.merging import FuelledMerge
from diffflow.arrangements.updates import Updates
from diffflow.lattice import Antichain
from diffflow.runtime import migrate, step_index
from diffflow.runtime.routing import BINS


def random_batch(rng: np.random.Generator, n: int, width: int = 2, dim: int = 1) -> Batch:
    rows = rng.integers(0, 50, size=(n, width))
    times = rng.integers(0, 5, size=(n, dim))
    diffs = rng.choice([-2, -1, 1, 3], size=n)
    t = Antichain.minimum(dim)
    return Batch.from_updates(Updates(rows, times, diffs), 1, t, t)


def reference_group(batch: Batch, step_of_bin: np.ndarray, step: int) -> tuple:
    pick = np.flatnonzero(step_of_bin[batch.bins(BINS)] == step)  # batch order: key order
    return batch.rows[pick], batch.times[pick], batch.diffs[pick], batch.bins(BINS)[pick]


@pytest.mark.parametrize("seed", range(8))
def test_an_index_built_a_slice_at_a_time_holds_each_steps_rows_in_key_order(seed):
    rng = np.random.default_rng(seed)
    batch = random_batch(rng, int(rng.integers(1, 400)), dim=int(rng.integers(1, 3)))
    steps = int(rng.integers(1, 6))
    step_of_bin = rng.integers(-1, steps, size=BINS).astype(np.int32)
    plan = (seed + 1, step_of_bin)
    budgets = []
    while (index := step_index.build(batch, plan, int(rng.integers(1, 90)))) is None:
        budgets.append(step_index.work_done(batch, plan))
        assert len(budgets) < 10_000
    assert all(np.diff(budgets) > 0)  # every call did some of the work
    assert step_index.work_done(batch, plan) == 3 * len(batch)
    assert step_index.is_built(batch, plan)
    for step in range(steps):
        for got, want in zip(index.group(step), reference_group(batch, step_of_bin, step)):
            np.testing.assert_array_equal(got, want)
    other = (seed + 100, step_of_bin)  # another plan: built again under its own key
    assert not step_index.is_built(batch, other)


def test_imports_share_an_empty_index_that_merges_of_imports_keep():
    rng = np.random.default_rng(3)
    step_of_bin = np.zeros(BINS, np.int32)
    plan = (7, step_of_bin)
    a, b, own = (random_batch(rng, 50) for _ in range(3))
    a._step_index = b._step_index = step_index.moved_already(plan)
    assert step_index.is_built(a, plan) and len(a._step_index.group(0)[3]) == 0
    assert merge(a, b, a.since)._step_index is a._step_index
    assert merge(a, own, a.since)._step_index is None  # own rows: indexed again
    fuelled = FuelledMerge(a, b, a.since)
    while not fuelled.work(16):
        pass
    assert fuelled.result(a.lower, b.upper)._step_index is a._step_index
    assert step_index.moved_already((8, step_of_bin)) is not a._step_index  # a new plan


def test_batches_pickle_without_their_caches():
    batch = random_batch(np.random.default_rng(4), 100)
    step_of_bin = np.zeros(BINS, np.int32)
    step_index.build(batch, (1, step_of_bin))
    batch.dead, batch.dead_rows = np.zeros(BINS, bool), 0
    copy = pickle.loads(pickle.dumps(batch))
    assert copy._bins is None and copy._step_index is None and copy._keys is None
    np.testing.assert_array_equal(copy.rows, batch.rows)
    assert copy.dead is not None and copy.since == batch.since


def _lockstep_flows(monkeypatch, slice_rows: int, wait: int):
    monkeypatch.setattr(migrate, "INDEXED", 64)
    monkeypatch.setattr(rescale, "BACKGROUND_SHARE", 0)  # one slice per epoch boundary
    monkeypatch.setattr(rescale, "PREPARE_SLICE", slice_rows)
    monkeypatch.setattr(rescale, "PREPARE_WAIT", wait)
    flows = [dd.Dataflow(partitions=2) for _ in range(2)]
    built = []
    for flow in flows:
        e = flow.input("e", ["a", "b"])
        built.append((e, [e.aggregate(by=["a"], n=dd.count()).output(),
                          e.join(e.select(a="b", c="a"), on="a").output()]))
    for e, _ in built:
        e.insert([(a, (a * 13) % 4000) for a in range(4000)])
    for flow in flows:
        flow.advance()
    return flows, built


@pytest.mark.parametrize("slice_rows, wait", [(300, 8), (1, 3), (300, 0)])
def test_steps_wait_for_their_indexing_a_bounded_number_of_epochs(monkeypatch, slice_rows,
                                                                  wait):
    """Steps due while more of the state is unindexed than they move wait (outputs exact
    meanwhile); never more than PREPARE_WAIT epochs in a row, after which they scan what is
    not indexed."""
    flows, built = _lockstep_flows(monkeypatch, slice_rows, wait)
    plan = flows[1].rescale(partitions=3, strategy="batched", max_rows_per_step=1500)
    rng = random.Random(slice_rows)
    row, epoch = 0, 0
    while flows[1].migration is not None:
        rows = [(rng.randrange(4000), epoch) for _ in range(40)]
        for e, _ in built:
            e.insert(rows)
        for flow in flows:
            flow.advance()
        row = max(row, plan.waiting)
        assert plan.waiting <= wait
        for ours, theirs in zip(built[1][1], built[0][1]):
            assert ours.snapshot() == theirs.snapshot(), epoch
        migrate_checked = flows[1]._runtime.check_owners()
        assert migrate_checked > 0
        epoch += 1
        assert epoch < 300
    assert plan.done and flows[1].partitions == 3
    if wait == 0:
        assert plan.waited == 0  # (steps then scan what is not indexed)
    else:
        assert plan.waited > 0 and row <= wait
    if slice_rows == 1:
        assert row == wait  # one row per boundary never catches up: the cap decides


class _Runtime:
    """A runtime's background calls, each taking ``seconds``, with ``left`` of them to do."""

    def __init__(self, seconds: float, left: int):
        self.seconds, self.left, self.calls = seconds, left, 0

    def rescale_prepare(self, budget: int) -> int:
        self.calls += 1
        time.sleep(self.seconds)
        self.left = max(self.left - 1, 0)
        return self.left


def test_background_work_takes_a_share_of_a_steady_epoch():
    pace = rescale.Background()
    first = _Runtime(0.0, 5)
    assert pace.work(first) and first.calls == 1  # no steady epoch seen yet: one slice
    for _ in range(20):
        pace.record(0.2)
    assert pace.typical() == pytest.approx(0.2)
    busy = _Runtime(0.01, 10_000)
    assert pace.work(busy)
    assert 2 <= busy.calls <= rescale.BACKGROUND_SHARE * 0.2 / 0.01 + 1
    done = _Runtime(0.0, 2)
    assert not pace.work(done) and done.calls == 2  # stops as soon as nothing is left


@pytest.mark.parametrize("seed", range(6))
def test_readers_skip_imported_batches_for_keys_of_other_bins_and_read_the_same(seed):
    """A batch a step imported knows its bins (``present``); Spine.gather asks it only
    for keys of those bins, and a merge keeps the union: reads equal reads without it."""
    from diffflow.arrangements.merging import FuelledMerge as Fuelled
    from diffflow.arrangements.spine import Spine

    rng = np.random.default_rng(seed)
    spines = [Spine(2, 1, 1) for _ in range(2)]
    batches = [random_batch(rng, int(rng.integers(1, 300))) for _ in range(4)]
    for i, batch in enumerate(batches):
        for with_bins, spine in zip((True, False), spines):
            copy = Batch(batch.rows, batch.times, batch.diffs, 1, batch.lower, batch.upper)
            if with_bins and i % 2 == 0:  # "imports": exactly their bins
                copy.present = np.zeros(BINS, bool)
                copy.present[copy.bins(BINS)] = True
            spine.batches.append(copy)
    merged = merge(spines[0].batches[0], spines[0].batches[2], spines[0].since)
    assert merged.present is not None and merged.present.sum() >= spines[0].batches[0].present.sum()
    assert merge(spines[0].batches[0], spines[0].batches[1], spines[0].since).present is None
    fuelled = Fuelled(spines[0].batches[0], spines[0].batches[2], spines[0].since)
    while not fuelled.work(32):
        pass
    result = fuelled.result(merged.lower, merged.upper)
    np.testing.assert_array_equal(result.present, merged.present)
    spines[0].batches.append(merged)
    spines[1].batches.append(Batch(merged.rows, merged.times, merged.diffs, 1, merged.lower,
                                   merged.upper))
    queries = np.unique(rng.integers(0, 60, size=(int(rng.integers(1, 40)), 1)), axis=0)
    got, want = (spine.gather(queries) for spine in spines)
    key = lambda found: sorted(zip(found[0].tolist(), map(tuple, found[1].tolist()),
                                   map(tuple, found[2].tolist()), found[3].tolist()))
    assert key(got) == key(want) and len(want[0]) > 0


def test_batches_pickled_before_they_dropped_caches_still_load():
    """Checkpoints of earlier versions pickled a Batch's slots as ``(None, {slot: value})``,
    with the step index of the time (a list); they load, without those caches."""
    batch = random_batch(np.random.default_rng(5), 30)
    old = {name: getattr(batch, name) for name in Batch.__slots__ if name != "present"}
    old["_step_index"] = [1, "done", np.arange(30), np.array([0, 30])]
    restored = Batch.__new__(Batch)
    restored.__setstate__((None, old))
    np.testing.assert_array_equal(restored.rows, batch.rows)
    assert restored._step_index is None and restored.present is None
    assert restored.dead_rows == 0 and restored.since == batch.since
