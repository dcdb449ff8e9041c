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
from diffflow.arrangements.batch import Batch, merge
from diffflow.arrangements.merging import FuelledMerge
from diffflow.arrangements.updates import Updates
from diffflow.lattice import Antichain, advance_by
from diffflow.runtime.rescale import migrate, pacing, step_index
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
    budgets, done = [], 0
    while True:
        budget = int(rng.integers(1, 90))
        index = step_index.build(batch, plan, budget)
        # every call does some of the work and no more than its budget (so no call of
        # prepare runs long: e.g. the pages of the index's arrays are touched in slices)
        delta = step_index.work_done(batch, plan) - done
        assert delta <= budget and (delta > 0 or index is not None)
        done += delta
        if index is not None:
            break
        budgets.append(done)
        assert len(budgets) < 10_000
    moving = int((step_of_bin[batch.bins(BINS)] >= 0).sum())
    assert step_index.work_done(batch, plan) == 3 * len(batch) + moving
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


def _with_dead_bins(rng, batch: Batch) -> Batch:
    """``batch`` with a random few of its bins dead (rows that left in an earlier step)."""
    if rng.random() < 0.5:
        dead = np.zeros(BINS, bool)
        dead[rng.choice(batch.bins(BINS), size=3)] = True
        batch.dead, batch.dead_rows = dead, int(dead[batch.bins(BINS)].sum())
    return batch


def _moving(index, step: int, since) -> tuple:
    """What a step sends from a (merged) index, installed as a receiver at ``since`` does:
    pieces said to be at another ``since`` advanced, then consolidated."""
    chunks = []
    for r, t, x, b, d, at in index.pieces(step):
        keep = np.ones(len(x), bool) if d is None else ~d[b]
        t = t[keep] if at == since or not keep.any() else advance_by(t[keep], since)
        chunks.append((r[keep], t, x[keep]))
    rows, times, diffs = (np.concatenate(c) for c in zip(*chunks)) if chunks else \
        (np.zeros((0, 2), np.int64), np.zeros((0, 1), np.int64), np.zeros(0, np.int64))
    u = Updates(rows, times, diffs).consolidated()
    return u.rows.tolist(), u.times.tolist(), u.diffs.tolist()


@pytest.mark.parametrize("seed", range(10))
def test_a_merged_batch_keeps_its_inputs_indexes_and_sends_what_it_holds(monkeypatch, seed):
    """Merging two indexed batches (dead bins dropped, times advanced) keeps their indexes as
    parts: every step sends exactly the merged batch's rows of its bins, at every depth of
    merging and when the smallest parts are joined (MAX_PARTS); a small input with no index
    is indexed at the merge, a big one leaves the result unindexed, and a plan that is over
    keeps nothing."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(step_index, "MAX_PARTS", int(rng.integers(2, 5)))
    monkeypatch.setattr(step_index, "INDEX_AT_MERGE", 60)
    steps = int(rng.integers(1, 5))
    step_of_bin = rng.integers(-1, steps, size=BINS).astype(np.int32)
    plan = (1000 + seed, step_of_bin)
    engine = type("Engine", (), {})()  # (a plan runs while an engine runs it)
    step_index.activate(plan[0], engine)
    try:
        batch = _with_dead_bins(rng, random_batch(rng, int(rng.integers(1, 200))))
        step_index.build(batch, plan)
        for depth in range(6):
            newer = _with_dead_bins(rng, random_batch(rng, int(rng.integers(1, 200))))
            if rng.random() < 0.7 or len(newer) <= 60:
                step_index.build(newer, plan)
            since = int(batch.since.elements[0, 0]) if len(batch.since.elements) else 0
            frontier = Antichain([(since + int(rng.integers(0, 2)),)])  # (only advances)
            if rng.random() < 0.5:
                merged = merge(batch, newer, frontier)
            else:
                fuelled = FuelledMerge(batch, newer, frontier)
                while not fuelled.work(int(rng.integers(1, 64))):
                    pass
                merged = fuelled.result(batch.lower, newer.upper)
            index = merged._step_index
            if not step_index.is_built(newer, plan) and len(newer) > 60:
                assert index is None  # (indexed later as any batch)
                break
            assert index is not None and index.phase == "done"
            assert len(index.parts) <= step_index.MAX_PARTS
            for step in range(steps):
                pick = np.flatnonzero(step_of_bin[merged.bins(BINS)] == step)
                want = Updates(merged.rows[pick], merged.times[pick],
                               merged.diffs[pick]).consolidated()
                assert _moving(index, step, merged.since) == (
                    want.rows.tolist(), want.times.tolist(), want.diffs.tolist()), (depth, step)
            batch = merged
    finally:
        step_index.activate(plan[0], engine, running=False)
    later = random_batch(rng, 50)
    step_index.build(later, plan)
    step_index.build(batch, plan)
    assert merge(batch, later, batch.since)._step_index is None  # the plan is over


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
    monkeypatch.setattr(pacing, "BACKGROUND_SHARE", 0)  # one slice per epoch boundary
    monkeypatch.setattr(pacing, "PREPARE_SLICE", slice_rows)
    monkeypatch.setattr(pacing, "PREPARE_WAIT", wait)
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


@pytest.mark.slow
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
    pace = pacing.Background()
    first = _Runtime(0.0, 5)
    assert pace.work(first) and first.calls == 1  # no steady epoch seen yet: one slice
    for _ in range(20):
        pace.record(0.2)
    assert pace.typical() == pytest.approx(0.2)
    busy = _Runtime(0.01, 10_000)
    assert pace.work(busy)
    assert 2 <= busy.calls <= pacing.BACKGROUND_SHARE * 0.2 / 0.01 + 1
    done = _Runtime(0.0, 2)
    assert not pace.work(done) and done.calls == 2  # stops as soon as nothing is left


def test_a_paced_caller_that_is_behind_gets_one_slice_of_background_work():
    """Behind (no idle time before this epoch), the share would ride on a queue: one slice
    only, so the next epochs drain it; with idle time, the whole share."""
    pace = pacing.Background()
    _paced(pace, typical=0.2, idle=0.1)
    pace._ended = time.perf_counter()
    pace.begin()  # (back at once: behind)
    assert pace.behind()
    busy = _Runtime(0.01, 10_000)
    assert pace.work(busy) and busy.calls == 1
    pace._ended = time.perf_counter() - 0.1
    pace.begin()  # (idle for 0.1 s first)
    assert not pace.behind()
    idle = _Runtime(0.01, 10_000)
    assert pace.work(idle) and idle.calls >= 3


def test_a_paced_caller_s_background_work_takes_at_most_half_of_its_idle_time():
    """Near saturation (a little idle time, not behind) the share would fill the slack and
    queue the epochs after: the work takes at most SLACK_SHARE of the idle time."""
    pace = pacing.Background()
    _paced(pace, typical=0.2, idle=0.1)
    pace._ended = time.perf_counter() - 0.03  # (0.03 s idle: not behind, 0.015 s of work)
    pace.begin()
    assert not pace.behind()
    tight = _Runtime(0.01, 10_000)
    assert pace.work(tight) and 1 <= tight.calls <= 2
    pace._ended = time.perf_counter() - 1.0  # (idle for a second: the whole share, 0.1 s)
    pace.begin()
    roomy = _Runtime(0.01, 10_000)
    assert pace.work(roomy) and roomy.calls >= 3


def _paced(pace, typical: float = 10.0, idle: float = 5.0):
    """Make ``pace`` look like a caller with a period: steady epochs of ``typical`` seconds
    with ``idle`` seconds between them."""
    for _ in range(8):
        pace.record(typical)
        pace.idles.append(idle)


def test_a_caller_that_calls_back_to_back_is_not_paced():
    pace = pacing.Background()
    for _ in range(20):
        pace.begin()
        pace.end(0.01)
    assert pace.idle is not None and not pace.paced()  # (idle: microseconds, not 2.5 ms)
    _paced(pace)
    assert pace.paced()
    pace.idles.extend([0.0] * 16)  # the last 16 epochs came back at once
    assert not pace.paced()


@pytest.mark.parametrize("strategy", ["batched", "fluid", "all_at_once"])
def test_steps_of_a_paced_caller_wait_while_it_is_behind_at_most_pace_wait_epochs(
        monkeypatch, strategy):
    """A caller with idle time between epochs that comes back late (no idle time) is behind:
    a step then waits (it would make the next epochs later still), never more than
    PACE_WAIT epochs in a row; with idle time it goes at its epoch.  Outputs stay exact."""
    monkeypatch.setattr(pacing, "PACE_WAIT", 5)
    flows = [dd.Dataflow(partitions=2) for _ in range(2)]
    outs = []
    for flow in flows:
        a = flow.input("a", ["x"])
        outs.append((a, a.aggregate(by=["x"], n=dd.count()).output()))
        a.insert([(x % 97,) for x in range(3000)])
        flow.advance()
    pace = flows[1]._rescaler().pace
    _paced(pace)  # (steady epochs of 10 s: advance() back to back is far behind)
    plan = flows[1].rescale(partitions=3, strategy=strategy, bins_per_step=BINS // 7,
                            max_rows_per_step=300)
    applied, epoch = [], 0
    while flows[1].migration is not None:
        ahead = epoch % 9 == 8  # now and then the caller comes back with time to spare
        if ahead:
            pace._ended = time.perf_counter() - 100.0  # (as if it had idled 100 s)
        before = plan.progress[0]
        for a, _ in outs:
            a.insert([(epoch % 97,)])
        for flow in flows:
            flow.advance()
        applied.append((ahead, plan.progress[0] > before, plan.waiting))
        assert outs[0][1].snapshot() == outs[1][1].snapshot()
        epoch += 1
        assert epoch < 400
    assert flows[1].partitions == 3 and plan.done
    assert all(waiting <= 5 for *_, waiting in applied)
    if strategy == "all_at_once":
        assert plan.waited == 0 and applied[0][1]  # (never waits: it is the spike by design)
    else:
        assert plan.waited > 0
        stepped_behind = [i for i, (ahead, stepped, _) in enumerate(applied)
                          if stepped and not ahead]
        # behind, a step goes only once it has waited PACE_WAIT epochs
        assert all(i > 0 and applied[i - 1][2] == 5 for i in stepped_behind)
        assert any(stepped for ahead, stepped, _ in applied if ahead)


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


@pytest.mark.parametrize("seed", range(6))
def test_imports_join_the_spine_smallest_pair_first_and_the_contents_stay_the_same(seed):
    """Once no plan runs, every import is merged into the spine's own batches, whatever its
    size (the geometric rule alone leaves a big import in front for good): imports with
    each other first, cheapest adjacent pair first, then the last one with the oldest own
    batch; big merges fuelled.  The spine's contents never change."""
    from diffflow.arrangements import spine as spine_module
    from diffflow.arrangements.spine import Spine, is_import

    rng = np.random.default_rng(seed)
    spine = Spine(2, 1, 1)
    for t in range(int(rng.integers(1, 4))):  # the spine's own batches, one time each
        n = int(rng.integers(1, 200))
        spine.insert_updates(Updates(rng.integers(0, 50, size=(n, 2)), np.full((n, 1), t),
                                     rng.choice([-1, 1, 2], size=n)), Antichain([(t + 1,)]))
    since = Antichain([(3,)])  # imports' times are advanced by the trace's since
    spine.set_compaction(since)
    nowhere = Antichain.minimum(1)
    for _ in range(int(rng.integers(1, 6))):
        imported = random_batch(rng, int(rng.integers(1, 200)))
        spine.batches.insert(0, Batch.from_updates(
            Updates(imported.rows, advance_by(imported.times, since), imported.diffs), 1,
            nowhere, nowhere, since))
    def contents(spine):  # (times told apart only up to since)
        u = spine.to_updates()
        u = Updates(u.rows, advance_by(u.times, since), u.diffs).consolidated()
        return u.rows.tolist(), u.times.tolist(), u.diffs.tolist()

    want = contents(spine)
    eager = int(rng.integers(2, 400))
    calls = 0
    while True:
        imports = [b for b in spine.batches if is_import(b)]
        free = [len(a) + len(b) for a, b in zip(imports, imports[1:])
                if not (spine.in_merge(a) or spine.in_merge(b))]
        before = list(spine.merges)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(spine_module, "EAGER_MERGE", eager)
            left = spine.absorb_imports()
            started = [m for m in spine.merges if m not in before]
            if started and is_import(started[0].newer):  # the cheapest free pair of imports
                assert len(started[0].older) + len(started[0].newer) == min(free)
            spine.work(int(rng.integers(1, 300)), background=True)
        spine._check()
        assert contents(spine) == want
        calls += 1
        assert calls < 1000
        if not left and not spine.merges:
            break
    assert not any(is_import(b) for b in spine.batches)


def test_after_a_plan_background_work_absorbs_the_imports(monkeypatch):
    """The epochs after a plan keep doing background work until no import is left in any
    trace, and then stop; outputs stay exact meanwhile.  Not while the plan runs, not even
    on a partition that only receives (more imports are coming: each would rewrite its
    biggest batch again)."""
    from diffflow.arrangements.spine import Spine, is_import

    absorbing = Spine.absorb_imports
    while_planned = []

    def spy(spine):
        while_planned.append(flow.migration is not None)
        return absorbing(spine)

    monkeypatch.setattr(Spine, "absorb_imports", spy)
    # every step waits two epochs: background work runs between steps, with imports there
    monkeypatch.setattr(pacing.Background, "must_wait",
                        staticmethod(lambda plan, due, runtime: plan.waiting < 2))
    flow = dd.Dataflow(partitions=2)
    a = flow.input("a", ["k"])
    counts = a.aggregate(by=["k"], n=dd.count()).output()
    a.insert(np.arange(20_000)[:, None] % 5_000)
    flow.advance()
    table = flow.routing_table.copy()
    table[np.flatnonzero(table == 1)[::10]] = 0  # a tenth of partition 1's bins: an import
    flow.rescale(table=table, strategy="batched", max_rows_per_step=500)  # much smaller
    # than partition 0's own rows, which the geometric rule alone would never merge it into
    epochs = 0
    while flow.migration is not None or flow._rescaling.work:
        a.insert([(7,)])
        flow.advance()
        epochs += 1
        assert epochs < 500
    spines = [s for e in flow._runtime.engines.values() for _, s in migrate._spines(e)]
    assert not any(is_import(b) for s in spines for b in s.batches)
    assert not any(is_import(m.older) for s in spines for m in s.merges)
    assert while_planned and not any(while_planned)
    assert flow._runtime.check_traces() > 0
    got = counts.snapshot()  # {row: multiplicity}
    assert len(got) == 5_000 and got[(7, 4 + epochs)] == 1 and got[(8, 4)] == 1
