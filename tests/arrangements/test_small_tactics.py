"""The numpy tactics return exactly what the numba kernels return.

They serve a fresh process's first queries (no kernel load), small ones and, until the
rows they have processed reach ``small.COLD_ROWS``, large ones, so any difference --
order, consolidation, empty cases -- would make results depend on what ran before.
Seeded random inputs, small and large, keys narrow and wider than a word, compared field
by field; and a first small query in a fresh process must not import numba.
"""
from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest

from diffflow.arrangements import columnar, small
from diffflow.operators import reduce as reduce_mod
from tests.support.kernels import kernel_gather


def kernels():
    return columnar._k()


def random_updates(rng, n, width, dim, spread=4):
    rows = rng.integers(-spread, spread, (n, width)).astype(np.int64)
    times = rng.integers(0, 3, (n, dim)).astype(np.int64)
    diffs = rng.integers(-2, 3, n).astype(np.int64)
    return rows, times, diffs


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype == np.int64 and x.shape == y.shape
        assert np.array_equal(x, y)
        assert x.flags.c_contiguous


def sorted_unique_keys(rng, n, width, spread=5):
    keys = rng.integers(-spread, spread, (n, width)).astype(np.int64)
    return np.ascontiguousarray(keys[np.lexsort(keys.T[::-1])]) if width else keys


@pytest.mark.parametrize("seed", range(40))
def test_consolidate_and_merge_match_the_kernels(seed):
    rng = np.random.default_rng(seed)
    width, dim = int(rng.integers(0, 3)), int(rng.integers(1, 3))
    r, t, d = random_updates(rng, int(rng.integers(0, 40)), width, dim)
    K = kernels()
    expected = (np.empty_like(r), np.empty_like(t), np.empty_like(d))
    if len(d) >= 2:
        m = K.consolidate_perm(columnar.sort_permutation(r, t), r, t, d, *expected)
        expected = tuple(x[:m] for x in expected)
    else:
        keep = d != 0
        expected = (r[keep], t[keep], d[keep])
    same(small.consolidate(r, t, d), expected)
    a = small.consolidate(*random_updates(rng, int(rng.integers(0, 20)), width, dim))
    b = small.consolidate(*random_updates(rng, int(rng.integers(0, 20)), width, dim))
    cap = len(a[2]) + len(b[2])
    out = (np.empty((cap, width), np.int64), np.empty((cap, dim), np.int64), np.empty(cap, np.int64))
    m = K.merge_consolidated(*a, *b, *out)
    same(small.merge_consolidated(*a, *b), tuple(x[:m] for x in out))


@pytest.mark.parametrize("seed", range(40))
def test_searches_joins_and_groups_match_the_kernels(seed):
    rng = np.random.default_rng(100 + seed)
    K = kernels()
    width = int(rng.integers(0, 3))
    keys = sorted_unique_keys(rng, int(rng.integers(0, 30)), width)
    queries = rng.integers(-6, 6, (int(rng.integers(0, 8)), width)).astype(np.int64)
    lo, hi = np.empty(len(queries), np.int64), np.empty(len(queries), np.int64)
    K.key_ranges(keys, queries, lo, hi)
    same(small.key_ranges(keys, queries), (lo, hi))
    other = sorted_unique_keys(rng, int(rng.integers(0, 30)), width)
    total = K.match_count(keys, other)
    li, ri = np.empty(total, np.int64), np.empty(total, np.int64)
    K.match_fill(keys, other, li, ri)
    same(small.match_sorted(keys, other), (li, ri))
    buf = np.empty(len(keys) + 1, np.int64)
    same((small.group_starts(keys),), (buf[:K.group_starts(keys, buf)],))
    # gather: a batch sorted by row, keyed by a prefix of it
    r, t, d = small.consolidate(*random_updates(rng, int(rng.integers(0, 30)), width + 1, 2))
    got = small.gather_prefix(r, t, d, width, queries)
    same(got, kernel_gather(K, r, t, d, width, queries))


@pytest.mark.parametrize("seed", range(20))
def test_partitioning_matches_the_kernels(seed):
    rng = np.random.default_rng(200 + seed)
    K = kernels()
    keys = rng.integers(-2**62, 2**62, (int(rng.integers(0, 30)), int(rng.integers(0, 3))))
    keys = np.ascontiguousarray(keys, dtype=np.int64)
    parts = int(rng.integers(1, 6))
    expected = np.empty(len(keys), np.int64)
    K.partition_of(keys, parts, expected)
    small_state = dict(small._state)
    try:
        small._state.update(kernels_loaded=False, small_calls=0)  # take the numpy tactic
        got = columnar.partition_of(keys, parts)
        perm, offsets = columnar.group_by_partition(got, parts)
    finally:
        small._state.update(small_state)
    assert np.array_equal(got, expected)
    kperm = np.empty(len(keys), np.int64)
    assert np.array_equal(offsets, K.group_by_partition(expected, parts, kperm,
                                                        np.zeros(parts + 1, np.int64)))
    assert np.array_equal(perm, kperm)


@pytest.mark.parametrize("seed", range(30))
def test_reduce_closure_and_readiness_match_the_kernels(seed):
    from diffflow.operators import _reduce_kernels

    rng = random.Random(seed)
    groups = rng.randint(1, 4)
    new, hist, new_starts, hist_starts = [], [], [0], [0]
    for _ in range(groups):
        fresh = sorted({(rng.randint(0, 3), rng.randint(0, 3)) for _ in range(rng.randint(1, 3))})
        new += fresh
        hist += [(rng.randint(0, 3), rng.randint(0, 3)) for _ in range(rng.randint(0, 4))]
        new_starts.append(len(new))
        hist_starts.append(len(hist))
    new_t = np.array(new, np.int64).reshape(-1, 2)
    hist_t = np.array(hist, np.int64).reshape(-1, 2)
    ns, hs = np.array(new_starts, np.int64), np.array(hist_starts, np.int64)
    g1, t1 = reduce_mod._closure_groups_small(new_t, ns, hist_t, hs)
    g2, t2 = _reduce_kernels.join_closure_groups(new_t, ns, hist_t, hs)
    as_set = lambda g, t: sorted(zip(g.tolist(), map(tuple, t.tolist())))  # noqa: E731
    assert as_set(g1, t1) == as_set(g2, t2)
    times = np.ascontiguousarray(new_t)
    assert np.array_equal(reduce_mod._ready_small(times, ns),
                          _reduce_kernels.ready_mask(times, ns))


def large_updates(rng, n, width, dim, wide):
    """Rows past the pairwise limits; ``wide``: full int64 ranges (ranks, not packed words)."""
    if wide:
        rows = rng.integers(-2**63, 2**63 - 1, (n, width), dtype=np.int64, endpoint=True)
        rows[rng.random(n) < 0.3] = rows[0]  # some equal rows to consolidate
    else:
        rows = rng.integers(-50, 50, (n, width)).astype(np.int64)
    times = rng.integers(0, 3, (n, dim)).astype(np.int64)
    diffs = rng.integers(-2, 3, n).astype(np.int64)
    if rng.random() < 0.3:  # diffs too wide to be packed beside the key
        diffs = rng.integers(-2**62, 2**62, n).astype(np.int64)
    return rows, times, diffs


@pytest.mark.parametrize("seed", range(24))
def test_large_inputs_match_the_kernels(seed):
    rng = np.random.default_rng(300 + seed)
    K = kernels()
    wide = seed % 3 == 0
    width, dim = int(rng.integers(0 if not wide else 2, 4)), int(rng.integers(1, 3))
    n = int(rng.integers(small.SMALL + 1, 3000))
    r, t, d = large_updates(rng, n, width, dim, wide)
    expected = (np.empty_like(r), np.empty_like(t), np.empty_like(d))
    m = K.consolidate_perm(columnar.sort_permutation(r, t), r, t, d, *expected)
    expected = tuple(x[:m] for x in expected)
    got = small.consolidate(r, t, d)
    same(got, expected)
    assert small.is_consolidated(*got) and bool(K.is_consolidated(*got))
    assert small.is_consolidated(r, t, d) == bool(K.is_consolidated(r, t, d))
    assert small.consolidate(*got)[0].shape == got[0].shape  # sorted input: the fast path
    # (kernels() loaded the kernels: columnar's sort takes them)
    assert np.array_equal(small.sort_permutation(r, t), columnar.sort_permutation(r, t))
    # merging two consolidated runs
    b = small.consolidate(*large_updates(rng, int(rng.integers(0, 2000)), width, dim, wide))
    cap = len(got[2]) + len(b[2])
    out = (np.empty((cap, width), np.int64), np.empty((cap, dim), np.int64),
           np.empty(cap, np.int64))
    m = K.merge_consolidated(*got, *b, *out)
    same(small.merge_consolidated(*got, *b), tuple(x[:m] for x in out))
    # searches, joins and groups on the sorted rows (duplicates kept: rows of distinct times)
    keys = np.ascontiguousarray(got[0])
    queries = np.concatenate([keys[rng.integers(0, len(keys), 300)] if len(keys) else keys,
                              large_updates(rng, 300, width, 1, wide)[0]])
    lo, hi = np.empty(len(queries), np.int64), np.empty(len(queries), np.int64)
    K.key_ranges(keys, queries, lo, hi)
    same(small.key_ranges(keys, queries), (lo, hi))
    for right in (False, True):
        out1 = np.empty(len(queries), np.int64)
        K.searchsorted_rows(keys, queries, right, out1)
        same((small.searchsorted_rows(keys, queries, right),), (out1,))
    other = np.ascontiguousarray(b[0])
    total = K.match_count(keys, other)
    li, ri = np.empty(total, np.int64), np.empty(total, np.int64)
    K.match_fill(keys, other, li, ri)
    same(small.match_sorted(keys, other), (li, ri))
    buf = np.empty(len(keys) + 1, np.int64)
    same((small.group_starts(keys),), (buf[:K.group_starts(keys, buf)],))
    prefix = int(rng.integers(0, width + 1))
    q = np.ascontiguousarray(queries[:, :prefix])
    same(small.gather_prefix(*got, prefix, q), kernel_gather(K, *got, prefix, q))


def test_large_inputs_take_numpy_until_the_budget_is_spent(monkeypatch):
    monkeypatch.setattr(small, "_state", {"kernels_loaded": False, "small_calls": 0,
                                          "cold_rows": 0})
    monkeypatch.setattr(small, "COLD_ROWS", 1000)
    monkeypatch.setattr(small, "CALL_ROWS", 100)
    assert small.prefer(600, small.SMALL, 600)       # large, within the budget: numpy
    assert not small.prefer(600, small.SMALL)         # no tactic that scales: the kernels
    assert not small.prefer(300, small.SMALL, 300)   # past the budget (700 + 400): the kernels
    assert small.prefer(10, small.SMALL)              # small inputs still take numpy ...
    small.kernels_loaded()
    assert not small.prefer(10, small.SMALL)          # ... until the kernels are loaded


@pytest.mark.parametrize("seed", range(30))
def test_reduce_times_in_numpy_match_the_kernels(seed):
    from diffflow.operators import _reduce_kernels
    from diffflow.operators.reduce_times import closure_groups, ready_pairs

    rng = np.random.default_rng(400 + seed)
    dim = 2 + seed % 2
    chains = seed % 3 == 0  # keys whose times are chains: the shortcut
    groups = int(rng.integers(1, 40))
    new, hist, new_starts, hist_starts = [], [], [0], [0]
    for _ in range(groups):
        if chains:
            base = rng.integers(0, 3, dim)
            steps = np.cumsum(rng.integers(0, 2, (int(rng.integers(2, 9)), dim)), axis=0)
            times = [tuple(base + s) for s in steps]
            fresh = {times[int(rng.integers(0, len(times)))]}
            old = [t for t in times if t not in fresh]
        else:
            fresh = {tuple(rng.integers(0, 4, dim)) for _ in range(int(rng.integers(1, 4)))}
            old = [tuple(rng.integers(0, 4, dim)) for _ in range(int(rng.integers(0, 8)))]
        new += sorted(fresh)
        hist += old
        new_starts.append(len(new))
        hist_starts.append(len(hist))
    new_t = np.array(new, np.int64).reshape(-1, dim)
    hist_t = np.array(hist, np.int64).reshape(-1, dim)
    ns, hs = np.array(new_starts, np.int64), np.array(hist_starts, np.int64)
    g1, t1 = closure_groups(new_t, ns, hist_t, hs)
    g2, t2 = _reduce_kernels.join_closure_groups(new_t, ns, hist_t, hs)
    def as_set(g, t):
        return sorted(set(zip(g.tolist(), map(tuple, t.tolist()))))

    assert as_set(g1, t1) == as_set(g2, t2)
    times = np.ascontiguousarray(new_t)
    assert np.array_equal(ready_pairs(times, ns), _reduce_kernels.ready_mask(times, ns))


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
def test_a_first_small_query_does_not_load_the_kernels(parts):
    script = (
        "import sys, diffflow as dd\n"
        "from diffflow import graphs\n"
        f"flow = dd.Dataflow(partitions={parts}); e = flow.input('e', ['a', 'b'])\n"
        "out = graphs.connected_components(e).output()\n"
        "e.insert([(1, 2), (2, 3), (5, 6)]); flow.advance()\n"
        "p = dd.Program('.decl e(x: number, y: number)\\n.decl t(x: number, y: number)\\n"
        ".output t\\nt(x, y) :- e(x, y).\\nt(x, z) :- t(x, y), e(y, z).\\ne(1, 2). e(2, 3).\\n')\n"
        "p.commit()\n"
        "print(sorted(out.snapshot()), 'numba' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[(1, 1), (2, 1), (3, 1), (5, 5), (6, 5)] False"


@pytest.mark.slow
def test_a_first_large_query_loads_no_numba_and_agrees_with_the_kernels():
    # numpy serves a fresh process's first large query too (the kernels load once its work
    # has cost about what loading costs); the same query on the kernels gives the same answer
    script = (
        "import sys, numpy as np, diffflow as dd\n"
        "from diffflow import graphs\n"
        "from diffflow.arrangements import columnar\n"
        "rng = np.random.default_rng(5)\n"
        "edges = np.concatenate([rng.integers(0, 3000, (20000, 2)),\n"
        "                        rng.integers(5000, 9000, (1000, 2))])  # + small components\n"
        "def query():\n"
        "    flow = dd.Dataflow(); e = flow.input('e', ['a', 'b']); r = flow.input('r', ['n'])\n"
        "    reach = graphs.reachable(e, r).output()\n"
        "    cc = graphs.connected_components(e).aggregate(by=['label'], n=dd.count()).output()\n"
        "    e.insert(edges); r.insert([(0,), (7,)]); flow.advance()\n"
        "    e.remove(edges[:500]); flow.advance()\n"
        "    return sorted(reach.snapshot()), sorted(cc.snapshot())\n"
        "first = query(); loaded = 'numba' in sys.modules\n"
        "columnar.load_kernels()\n"
        "print(loaded, query() == first, len(first[0]), len(first[1]))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    loaded, same_answer, reached, components = done.stdout.split()
    assert (loaded, same_answer) == ("False", "True")
    assert int(reached) > 100 and int(components) > 1
