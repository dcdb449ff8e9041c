"""Batches, spines and partitioned arrangements: invariants, lookups, merging, compaction."""
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diffflow.arrangements import columnar
from diffflow.arrangements.arrangement import Arrangement, split_by_partition
from diffflow.arrangements.batch import Batch
from diffflow.arrangements.spine import Spine
from diffflow.arrangements.updates import Updates
from diffflow.lattice import Antichain, advance_by


def random_updates(rng, n, width=2, dim=1, domain=6, t_lo=0, t_hi=3):
    rows = rng.integers(0, domain, (n, width))
    times = rng.integers(t_lo, t_hi, (n, dim))
    diffs = rng.choice([-1, 1, 2], n)
    return Updates(rows, times, diffs)


def tally(rows, times, diffs, at=None):
    """Multiset of rows, optionally accumulated at time ``at``."""
    out = Counter()
    for r, t, d in zip(map(tuple, rows.tolist()), map(tuple, times.tolist()), diffs.tolist()):
        if at is None or all(a <= b for a, b in zip(t, at)):
            out[r] += d
    return {k: v for k, v in out.items() if v}


def test_batch_check_rejects_broken_invariants():
    u = Updates.from_lists([(1, 2), (0, 3)], [(0,), (0,)], [1, 1])
    b = Batch.from_updates(u, 1, Antichain([(0,)]), Antichain([(1,)]))
    b._check()
    unsorted = Batch(b.rows[::-1].copy(), b.times, b.diffs, 1, b.lower, b.upper)
    with pytest.raises(AssertionError, match="sorted and consolidated"):
        unsorted._check()
    beyond = Batch(b.rows, np.array([[0], [1]]), b.diffs, 1, b.lower, b.upper)
    with pytest.raises(AssertionError, match="beyond upper"):
        beyond._check()
    zero = Batch(b.rows, b.times, np.array([1, 0]), 1, b.lower, b.upper)
    with pytest.raises(AssertionError):
        zero._check()


@pytest.mark.parametrize("seed", range(10))
def test_spine_merges_geometrically_and_keeps_contents(seed):
    rng = np.random.default_rng(seed)
    spine = Spine(width=2, key_width=1, dim=1)
    expected = Counter()
    for epoch in range(200):
        u = random_updates(rng, int(rng.integers(0, 20)), t_lo=epoch, t_hi=epoch + 1)
        spine.insert_updates(u, Antichain([(epoch + 1,)]))
        for r, d in zip(map(tuple, u.rows.tolist()), u.diffs.tolist()):
            expected[r] += d
        spine._check()
        n = max(1, len(spine))
        assert len(spine.batches) <= 2 * np.log2(n + 1) + 2, [len(b) for b in spine.batches]
    got = spine.to_updates()
    assert tally(got.rows, got.times, got.diffs) == {k: v for k, v in expected.items() if v}


@pytest.mark.parametrize("seed", range(10))
def test_gather_finds_every_update_of_the_queried_keys(seed):
    rng = np.random.default_rng(seed)
    spine = Spine(width=3, key_width=2, dim=1)
    all_updates = []
    for epoch in range(30):
        u = random_updates(rng, 15, width=3, domain=4, t_lo=epoch, t_hi=epoch + 1)
        spine.insert_updates(u, Antichain([(epoch + 1,)]))
        all_updates.append(u)
    queries = rng.integers(0, 5, (25, 2))
    q, rows, times, diffs = spine.gather(queries)
    assert np.array_equal(rows[:, :2], queries[q])
    for i, key in enumerate(map(tuple, queries.tolist())):
        mine = q == i
        got = tally(rows[mine], times[mine], diffs[mine])
        expected = Counter()
        for u in all_updates:
            for r, d in zip(map(tuple, u.rows.tolist()), u.diffs.tolist()):
                if r[:2] == key:
                    expected[r] += d
        assert got == {k: v for k, v in expected.items() if v}


@pytest.mark.parametrize("seed", range(10))
def test_compaction_preserves_every_time_the_frontier_admits(seed):
    rng = np.random.default_rng(seed)
    spine = Spine(width=1, key_width=1, dim=2)
    history = []
    grid = [(a, b) for a in range(4) for b in range(4)]
    u = random_updates(rng, 40, width=1, dim=2, domain=3, t_hi=4)
    spine.insert_updates(u, Antichain(d=2))  # sealed for ever
    history.append(u)
    frontier = Antichain([(1, 2), (2, 1)])
    spine.set_compaction(frontier)
    spine.compact()
    spine._check()
    compacted = spine.to_updates()
    assert len(compacted) <= len(u)
    assert np.array_equal(advance_by(compacted.times, frontier), compacted.times)
    for t in grid:
        if frontier.admits(t):
            assert tally(compacted.rows, compacted.times, compacted.diffs, at=t) == \
                tally(u.rows, u.times, u.diffs, at=t), t


def test_compaction_bounds_memory_over_many_epochs():
    spine = Spine(width=1, key_width=1, dim=1)
    for epoch in range(2000):
        key = epoch % 10
        u = Updates.from_lists([(key,), (key,)], [(epoch,), (epoch,)], [1, 1])
        if epoch >= 10:  # remove what was added ten epochs ago
            u = Updates.from_lists([(key,), (key,)], [(epoch,), (epoch,)], [1, -1])
        spine.insert_updates(u, Antichain([(epoch + 1,)]))
        spine.set_compaction(Antichain([(epoch + 1,)]))
    spine.compact()
    spine._check()
    assert len(spine) == 10  # one (key, time) per key remains, not 2000 epochs of history


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_arrangement_partitions_by_the_fixed_key_hash(parts):
    rng = np.random.default_rng(parts)
    arr = Arrangement(width=2, key_width=1, dim=1, parts=parts)
    u = random_updates(rng, 300, domain=50)
    arr.insert(u, Antichain([(5,)]))
    arr._check()
    owner = columnar.hash_rows(u.rows[:, :1]) % np.uint64(parts)
    for p, spine in enumerate(arr.spines):
        held = spine.to_updates()
        keys = {r[0] for r in held.rows.tolist()}
        assert keys <= {int(k) for k, o in zip(u.rows[:, 0], owner) if int(o) == p}
    total = arr.to_updates()
    assert tally(total.rows, total.times, total.diffs) == tally(u.rows, u.times, u.diffs)
    q, rows, times, diffs = arr.gather(np.array([[3], [7]]))
    assert set(rows[:, 0].tolist()) <= {3, 7}


def test_split_by_partition_is_a_partition():
    rng = np.random.default_rng(1)
    u = random_updates(rng, 100)
    pieces = split_by_partition(u, [0, 1], 4)
    assert sum(len(p) for p in pieces) == 100
    both = Updates(*(np.concatenate(x) for x in zip(*pieces)))
    assert tally(both.rows, both.times, both.diffs) == tally(u.rows, u.times, u.diffs)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 2),
                          st.sampled_from([-1, 1])), max_size=40),
       st.integers(1, 5))
def test_spine_random_batches_hypothesis(items, cut):
    """Any sequence of batches: contents and invariants hold after every insert."""
    spine = Spine(width=2, key_width=1, dim=1)
    expected = Counter()
    for start in range(0, len(items), cut):
        chunk = items[start:start + cut]
        epoch = start // cut
        u = Updates.from_lists([(a, b) for a, b, _, _ in chunk], [(epoch,)] * len(chunk),
                               [d for *_, d in chunk], width=2, dim=1)
        spine.insert_updates(u, Antichain([(epoch + 1,)]))
        spine._check()
        for a, b, _, d in chunk:
            expected[(a, b)] += d
    got = spine.to_updates()
    assert tally(got.rows, got.times, got.diffs) == {k: v for k, v in expected.items() if v}


def test_small_tail_merges_keep_batch_descriptions_true():
    # a compacted older batch merged with a small newer one must stay advanced by its since
    from diffflow.arrangements.spine import Spine
    from diffflow.arrangements.updates import Updates
    from diffflow.lattice.frontiers import Antichain

    spine = Spine(width=1, key_width=1, dim=1)
    spine.insert_updates(Updates.from_lists([(i,) for i in range(10)], [(0,)] * 10, [1] * 10),
                         Antichain([(1,)]))
    spine.set_compaction(Antichain([(3,)]))
    spine.insert_updates(Updates.from_lists([(i,) for i in range(10, 20)], [(1,)] * 10,
                                            [1] * 10), Antichain([(2,)]))
    spine.insert_updates(Updates.from_lists([(99,)], [(2,)], [1]), Antichain([(3,)]))
    spine._check()
    assert len(spine.batches) == 1 and len(spine) == 21


@pytest.mark.parametrize("numpy_tactic", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_multiplicities_sum_what_gather_finds(seed, numpy_tactic, monkeypatch):
    """``Spine.multiplicities`` sums per query, over every batch and time, the diffs that
    ``gather`` returns -- for whole rows and key prefixes, and under both tactics (numpy
    for a fresh process's first inputs, the kernels after)."""
    from diffflow.arrangements import small

    monkeypatch.setattr(small, "prefer", lambda *args, **kw: numpy_tactic)
    rng = np.random.default_rng(seed)
    spine = Spine(width=3, key_width=1, dim=2)
    for epoch in range(20):
        u = random_updates(rng, 25, width=3, dim=2, domain=4, t_lo=epoch, t_hi=epoch + 1)
        spine.insert_updates(u, Antichain([(epoch + 1, 0)]))
    if seed % 2:  # rows held in some bins only, as after rescaling
        for batch in spine.batches[::2]:
            batch.present = rng.random(spine_bins()) < 0.5
    for width in (1, 2, 3):
        queries = np.unique(rng.integers(-1, 5, (30, width)), axis=0)
        q, _, _, diffs = spine.gather(queries, width=width)
        want = np.zeros(len(queries), np.int64)
        np.add.at(want, q, diffs)
        assert spine.multiplicities(queries, width=width).tolist() == want.tolist()
    assert spine.multiplicities(np.zeros((0, 3), np.int64), width=3).tolist() == []


def spine_bins() -> int:
    from diffflow.runtime.routing import BINS

    return BINS
