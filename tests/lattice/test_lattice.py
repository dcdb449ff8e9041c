"""Property tests for diffflow.lattice against brute-force pure-Python oracles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diffflow.lattice import (Antichain, advance_by, as_times, join, less_equal, less_than,
                              lex_order, meet, minimal)
from diffflow.lattice import times as times_mod

# database=None: no .hypothesis/ directory is written into the tree.
FAST = settings(max_examples=25, deadline=None, database=None)
MEDIUM = settings(max_examples=45, deadline=None, database=None)

MAXC = 5
coord = st.integers(0, MAXC)


def time_st(d):
    return st.tuples(*([coord] * d))


@st.composite
def dim_and_times(draw, min_size=0, max_size=10, count=1):
    d = draw(st.integers(1, 3))
    lists = [
        draw(st.lists(time_st(d), min_size=min_size, max_size=max_size))
        for _ in range(count)
    ]
    return (d, *lists)


@st.composite
def aligned_triples(draw):
    """d and three equally long arrays of times (for row-wise law checks)."""
    d = draw(st.integers(1, 3))
    n = draw(st.integers(1, 8))
    arrs = [
        np.array(draw(st.lists(time_st(d), min_size=n, max_size=n)), dtype=np.int64)
        for _ in range(3)
    ]
    return (d, *arrs)


# ---------------------------------------------------------------- oracles


def le_bf(s, t):
    return all(a <= b for a, b in zip(s, t))


def minimal_bf(ts):
    ts = {tuple(t) for t in ts}
    return sorted(t for t in ts if not any(s != t and le_bf(s, t) for s in ts))


def admits_bf(frontier, t):
    return any(le_bf(f, t) for f in frontier)


def advance_bf(t, frontier):
    if not frontier:
        return tuple(t)
    joins = [tuple(max(a, b) for a, b in zip(t, f)) for f in frontier]
    return tuple(min(col) for col in zip(*joins))


def grid(d, hi=MAXC + 1):
    return np.array(list(itertools.product(range(hi + 1), repeat=d)), dtype=np.int64)


def rows(arr):
    return [tuple(r) for r in np.asarray(arr).tolist()]


# ------------------------------------------------------------ lattice laws


@MEDIUM
@given(aligned_triples())
def test_join_meet_lattice_laws(data):
    _, a, b, c = data
    eq = np.array_equal
    assert eq(join(a, join(b, c)), join(join(a, b), c))
    assert eq(meet(a, meet(b, c)), meet(meet(a, b), c))
    assert eq(join(a, b), join(b, a))
    assert eq(meet(a, b), meet(b, a))
    assert eq(join(a, a), a) and eq(meet(a, a), a)
    assert eq(join(a, meet(a, b)), a)
    assert eq(meet(a, join(a, b)), a)
    # join is the least upper bound, meet the greatest lower bound
    assert less_equal(a, join(a, b)).all() and less_equal(b, join(a, b)).all()
    assert less_equal(meet(a, b), a).all() and less_equal(meet(a, b), b).all()
    both_below = less_equal(a, c) & less_equal(b, c)
    assert (~both_below | less_equal(join(a, b), c)).all()


@MEDIUM
@given(aligned_triples())
def test_less_equal_is_partial_order_consistent_with_join(data):
    _, a, b, c = data
    le_ab = less_equal(a, b)
    assert less_equal(a, a).all()
    # antisymmetry
    assert (~(le_ab & less_equal(b, a)) | np.all(a == b, axis=1)).all()
    # transitivity
    assert (~(le_ab & less_equal(b, c)) | less_equal(a, c)).all()
    assert np.array_equal(le_ab, np.all(join(a, b) == b, axis=1))
    assert np.array_equal(le_ab, np.all(meet(a, b) == a, axis=1))
    assert np.array_equal(less_than(a, b), le_ab & np.any(a != b, axis=1))
    assert not less_than(a, a).any()
    # agreement with the pure-Python definition, row by row
    assert le_ab.tolist() == [le_bf(x, y) for x, y in zip(rows(a), rows(b))]


@MEDIUM
@given(dim_and_times(min_size=1, max_size=12))
def test_lex_order_extends_product_order(data):
    d, ts = data
    arr = np.array(ts, dtype=np.int64)
    perm = lex_order(arr)
    assert [ts[i] for i in perm] == sorted(ts)
    for s, t in itertools.product(ts, repeat=2):
        if le_bf(s, t):
            assert s <= t  # Python tuple comparison is lexicographic


def test_broadcasting_and_scalar_results():
    a = np.array([[0, 0], [2, 0], [0, 9]])
    assert less_equal(a, (1, 1)).tolist() == [True, False, False]
    assert less_equal((1, 1), a).tolist() == [False, False, False]
    assert less_equal((0, 0), (0, 0)) is True
    assert less_than((0, 0), (0, 0)) is False
    assert join(a, (1, 1)).tolist() == [[1, 1], [2, 1], [1, 9]]
    assert meet(a, (1, 1)).tolist() == [[0, 0], [1, 0], [0, 1]]
    # pairwise by explicit broadcasting
    assert less_equal(a[:, None, :], a[None, :, :]).shape == (3, 3)
    with pytest.raises(ValueError):
        less_equal((1, 2), (1, 2, 3))
    with pytest.raises(ValueError):
        join(a, (1, 2, 3))


# --------------------------------------------------------------- advance_by


@MEDIUM
@given(dim_and_times(min_size=0, max_size=8, count=2))
def test_advance_by_properties(data):
    d, ts, fs = data
    t = np.array(ts, dtype=np.int64).reshape(-1, d)
    f_raw = np.array(fs, dtype=np.int64).reshape(-1, d)
    adv = advance_by(t, f_raw)
    assert adv.shape == t.shape and adv.dtype == np.int64

    # vectorised result equals the per-time pure-Python definition
    assert rows(adv) == [advance_bf(x, fs) for x in ts]
    # non-minimal frontier elements and the Antichain form give the same answer
    F = Antichain(f_raw, d=d)
    assert np.array_equal(advance_by(t, F), adv)
    assert np.array_equal(advance_by(t, F.elements), adv)

    assert less_equal(t, adv).all()
    assert np.array_equal(advance_by(adv, F), adv)  # idempotent

    if not fs:
        assert np.array_equal(adv, t)
        return
    # key property, checked against every admitted time of a grid
    g = grid(d)
    admitted = g[F.admits(g)]
    assert len(admitted) > 0
    before = less_equal(t[:, None, :], admitted[None, :, :])
    after = less_equal(adv[:, None, :], admitted[None, :, :])
    assert np.array_equal(before, after)


@FAST
@given(dim_and_times(min_size=1, max_size=1, count=2))
def test_advance_by_single_time(data):
    d, (t,), fs = data
    out = advance_by(t, fs)
    assert out.shape == (d,)
    assert tuple(out.tolist()) == advance_bf(t, fs)
    assert advance_by(np.array(t), Antichain(d=d)).tolist() == list(t)


def test_advance_by_chunked_matches_unchunked(monkeypatch):
    rng = np.random.default_rng(0)
    t = rng.integers(0, 20, size=(300, 3))
    f = rng.integers(0, 20, size=(17, 3))
    full = advance_by(t, f)
    monkeypatch.setattr(times_mod, "_PAIRWISE_LIMIT", 50)
    assert np.array_equal(advance_by(t, f), full)
    assert np.array_equal(Antichain(f).admits(t), times_mod._dominated(f, t))


# ------------------------------------------------------------------ minimal


@MEDIUM
@given(st.integers(1, 4).flatmap(lambda d: st.lists(time_st(d), max_size=15)))
def test_minimal_matches_brute_force(ts):
    if not ts:
        assert minimal(ts, d=2).shape == (0, 2)
        return
    out = minimal(ts)
    assert out.dtype == np.int64 and out.flags.c_contiguous
    assert rows(out) == minimal_bf(ts)


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_minimal_blocked_large(monkeypatch, d):
    rng = np.random.default_rng(d)
    ts = rng.integers(0, 12, size=(400, d))
    expected = minimal_bf(rows(ts))
    assert rows(minimal(ts)) == expected
    monkeypatch.setattr(times_mod, "_MINIMAL_BLOCK", 7)
    monkeypatch.setattr(times_mod, "_PAIRWISE_LIMIT", 64)
    assert rows(minimal(ts)) == expected


# ---------------------------------------------------------------- as_times


def test_as_times_conversions():
    assert as_times([(0, 1), (2, 3)]).tolist() == [[0, 1], [2, 3]]
    assert as_times((4, 5)).shape == (1, 2)
    assert as_times([4, 5]).shape == (2, 1)  # 1-D list without d: column
    assert as_times([4, 5], d=2).shape == (1, 2)
    assert as_times(np.array([4, 5]), d=1).shape == (2, 1)
    assert as_times([], d=3).shape == (0, 3)
    assert as_times(np.empty((0, 2)), d=2).dtype == np.int64
    assert as_times(np.array([[1.0, 2.0]])).tolist() == [[1, 2]]
    assert as_times(np.array([[1, 2]], dtype=np.uint8)).dtype == np.int64
    out = as_times(np.arange(6).reshape(3, 2)[:, ::-1])
    assert out.flags.c_contiguous and out.tolist() == [[1, 0], [3, 2], [5, 4]]
    assert as_times(Antichain([(1, 2)])).tolist() == [[1, 2]]


@pytest.mark.parametrize(
    "x, d",
    [
        ([(0, -1)], None),  # negative coordinate
        ((-3,), None),
        ([(1, 2), (3,)], None),  # ragged
        ([(1, 2), (3, 4, 5)], None),
        ([(1, 2)], 3),  # wrong dimension
        ((1, 2), 3),
        ([1, 2, 3], 2),
        ([], None),  # empty without d
        (5, None),  # scalar
        (np.zeros((2, 2, 2)), None),  # 3-D
        ([(0.5, 1)], None),  # non-integer
        ([("a", "b")], None),
        (np.array([[np.nan, 1.0]]), None),
        ([(1, None)], None),
        (np.zeros((3, 0)), None),
        ([(1, 2)], 0),
    ],
)
def test_as_times_errors(x, d):
    with pytest.raises(ValueError):
        as_times(x, d)


# ---------------------------------------------------------------- Antichain


@MEDIUM
@given(dim_and_times(max_size=12))
def test_antichain_insert_keeps_minimal(data):
    d, ts = data
    a = Antichain(d=d)
    seen = []
    for t in ts:
        before = minimal_bf(seen)
        seen.append(t)
        changed = a.insert(t)
        assert changed == (not admits_bf(before, t))
        assert a.to_list() == minimal_bf(seen)
    assert a == Antichain(ts, d=d)
    e = a.elements
    assert e.dtype == np.int64 and e.shape == (len(a), d) and not e.flags.writeable
    assert rows(e) == sorted(rows(e))


@MEDIUM
@given(dim_and_times(max_size=8, count=2))
def test_antichain_admits_matches_brute_force(data):
    d, fs, ts = data
    a = Antichain(fs, d=d)
    t = np.array(ts, dtype=np.int64).reshape(-1, d)
    got = a.admits(t)
    assert got.dtype == bool and got.shape == (len(ts),)
    assert got.tolist() == [admits_bf(fs, x) for x in ts]
    for x in ts:
        assert a.admits(x) is admits_bf(fs, x)
        assert a.admits(np.array(x)) is admits_bf(fs, x)


@MEDIUM
@given(dim_and_times(max_size=10), st.randoms(use_true_random=False))
def test_antichain_equality_ignores_insertion_order(data, rnd):
    d, ts = data
    shuffled = list(ts)
    rnd.shuffle(shuffled)
    a, b = Antichain(ts, d=d), Antichain(d=d)
    for t in shuffled:
        b.insert(t)
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    assert list(a) == a.to_list() == minimal_bf(ts)
    assert all(type(c) is int for t in a for c in t)
    assert eval(repr(a), {"Antichain": Antichain}) == a
    assert a != Antichain(d=d + 1)
    assert (a == "x") is False
    c = a.copy()
    c.insert((0,) * d)
    assert c == Antichain.minimum(d)
    assert a == b  # the copy is independent


@MEDIUM
@given(dim_and_times(max_size=8, count=2))
def test_antichain_union_and_less_equal(data):
    d, fs, gs = data
    F, G = Antichain(fs, d=d), Antichain(gs, d=d)
    U = F.union(G)
    assert U.to_list() == minimal_bf(fs + gs)
    assert U == G.union(F) == F.union(gs)

    expected = all(admits_bf(fs, g) for g in minimal_bf(gs))
    assert F.less_equal(G) is expected
    # frontier order == reverse inclusion of the admitted sets
    g = grid(d)
    assert expected == bool(np.all(F.admits(g) | ~G.admits(g)))
    assert U.less_equal(F) and U.less_equal(G)
    assert F.less_equal(F)
    assert F.less_equal(Antichain(d=d))  # everything precedes the empty frontier
    assert Antichain.minimum(d).less_equal(F)


def test_antichain_basics():
    a = Antichain([(1, 0), (0, 2), (1, 1)])
    assert repr(a) == "Antichain([(0, 2), (1, 0)])"
    assert a.dim == 2 and len(a) == 2 and not a.is_empty()
    assert repr(Antichain(d=3)) == "Antichain([], d=3)"
    assert Antichain(d=3).is_empty()
    assert Antichain.minimum(2).admits(grid(2)).all()
    assert not Antichain(d=2).admits(grid(2)).any()
    assert Antichain.from_array(np.array([[3, 1], [2, 2], [3, 3]])).to_list() == [
        (2, 2),
        (3, 1),
    ]
    assert Antichain.from_array(np.empty((0, 4), dtype=np.int64)).dim == 4
    assert Antichain((2, 3)).to_list() == [(2, 3)]  # a tuple is one time
    one = Antichain([(2,)])
    assert one.admits([3]) is True and one.admits(np.array([1])) is False
    assert one.admits([[1], [3]]).tolist() == [False, True]
    with pytest.raises(ValueError):
        one.admits([1, 3])  # 1-D means a single time, whose length must be d
    with pytest.raises(ValueError):
        Antichain()  # empty without d
    with pytest.raises(ValueError):
        Antichain.from_array([1, 2])
    with pytest.raises(ValueError):
        a.elements[0, 0] = 7
    with pytest.raises(ValueError):
        a.insert((1, 2, 3))
    with pytest.raises(ValueError):
        a.insert([(0, 0), (1, 1)])
    with pytest.raises(ValueError):
        a.union(Antichain(d=3))
    snapshot = a.elements
    assert a.insert((0, 0))
    assert rows(snapshot) == [(0, 2), (1, 0)]  # old arrays are not mutated
