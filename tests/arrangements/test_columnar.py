"""Tests of diffflow.arrangements.columnar against numpy / pure-Python oracles."""

import bisect
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diffflow.arrangements import columnar as C
from tests.support.kernels import kernel_gather

I64MIN = -(2**63)
I64MAX = 2**63 - 1
MASK64 = 2**64 - 1

SETTINGS = settings(max_examples=30, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------
# oracles
# ---------------------------------------------------------------------------
def lex_perm(rows, times=None):
    """Stable lexicographic permutation via np.lexsort (last key = primary)."""
    cols = [rows[:, c] for c in range(rows.shape[1])]
    if times is not None:
        cols += [times[:, c] for c in range(times.shape[1])]
    if not cols:
        return np.arange(rows.shape[0])
    return np.lexsort(cols[::-1])


def py_consolidate(rows, times, diffs):
    acc = {}
    for r, t, d in zip(rows.tolist(), times.tolist(), diffs.tolist()):
        k = (tuple(r), tuple(t))
        acc[k] = acc.get(k, 0) + d
    wrap = {k: (v + 2**63) % 2**64 - 2**63 for k, v in acc.items()}  # int64 wrap-around
    items = sorted((k, v) for k, v in wrap.items() if v != 0)
    w, d = rows.shape[1], times.shape[1]
    return (np.array([list(k[0]) for k, _ in items], dtype=np.int64).reshape(len(items), w),
            np.array([list(k[1]) for k, _ in items], dtype=np.int64).reshape(len(items), d),
            np.array([v for _, v in items], dtype=np.int64))


def py_hash(row):
    def fmix(z):
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    h = 0x9E3779B97F4A7C15
    for v in row:
        h = fmix(h ^ (v & MASK64))
    return h


def tuples(a):
    return [tuple(r) for r in a.tolist()]


def assert_triple_equal(got, want):
    for g, x in zip(got, want):
        assert g.dtype == np.int64
        assert g.flags.c_contiguous
        assert g.shape == x.shape
        np.testing.assert_array_equal(g, x)


# ---------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------
small = st.integers(-3, 3)
extreme = st.sampled_from([I64MIN, I64MIN + 1, -1, 0, 1, I64MAX - 1, I64MAX])
anyint = st.integers(I64MIN, I64MAX)
values = st.one_of(small, small, extreme, anyint)


@st.composite
def table(draw, min_d=1, max_w=3, max_n=30, vals=values):
    n = draw(st.integers(0, max_n))
    w = draw(st.integers(0, max_w))
    d = draw(st.integers(min_d, 2))
    elems = draw(st.sampled_from([small, vals]))
    flat = draw(st.lists(elems, min_size=n * (w + d), max_size=n * (w + d)))
    a = np.array(flat, dtype=np.int64).reshape(n, w + d)
    diffs = np.array(draw(st.lists(st.one_of(st.integers(-2, 2), anyint), min_size=n, max_size=n)),
                     dtype=np.int64)
    return np.ascontiguousarray(a[:, :w]), np.ascontiguousarray(a[:, w:]), diffs


def random_table(rng, n, w, d, hi=10, lo=0):
    return (rng.integers(lo, hi, (n, w)), rng.integers(lo, hi, (n, d)),
            rng.choice(np.array([-1, 1]), n))


# ---------------------------------------------------------------------------
# import hygiene
# ---------------------------------------------------------------------------
def test_import_is_lazy():
    code = (
        "import sys, diffflow\n"
        "before = 'numba' in sys.modules\n"
        "import diffflow.arrangements.columnar\n"
        "assert 'diffflow.arrangements._kernels' not in sys.modules\n"
        "assert before or 'numba' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------
# sort_permutation
# ---------------------------------------------------------------------------
@SETTINGS
@given(table(min_d=0))
def test_sort_permutation_hypothesis(tbl):
    rows, times, _ = tbl
    t = times if times.shape[1] else None
    perm = C.sort_permutation(rows, t)
    assert perm.dtype == np.int64
    np.testing.assert_array_equal(perm, lex_perm(rows, t))


@pytest.mark.parametrize("n,w,d,lo,hi", [
    (0, 1, 1, 0, 10), (1, 1, 1, 0, 10), (2, 0, 1, 0, 10), (5000, 0, 1, -5, 5),
    (50000, 1, 1, 0, 50000),            # packed + radix
    (50000, 1, 1, -2**40, 2**40),       # packed + np.sort
    (20000, 3, 2, -2**40, 2**40),       # multi-word
    (30000, 2, 1, I64MIN, I64MAX),      # full range, multi-word
    (30000, 4, 1, 0, 3),                # many duplicates
])
def test_sort_permutation_random(n, w, d, lo, hi):
    rng = np.random.default_rng(n + 7 * w + d)
    rows = rng.integers(lo, hi, (n, w), endpoint=True)
    times = rng.integers(lo, hi, (n, d), endpoint=True)
    np.testing.assert_array_equal(C.sort_permutation(rows, times), lex_perm(rows, times))
    np.testing.assert_array_equal(C.sort_permutation(rows), lex_perm(rows))


@pytest.mark.parametrize("max_passes", [0, 100])
def test_sort_both_single_word_backends(monkeypatch, max_passes):
    monkeypatch.setattr(C, "_MAX_RADIX_PASSES", max_passes)
    rng = np.random.default_rng(max_passes)
    for hi in [3, 1000, 2**20, 2**35]:
        rows, times, diffs = random_table(rng, 6000, 1, 1, hi=hi)
        np.testing.assert_array_equal(C.sort_permutation(rows, times), lex_perm(rows, times))
        assert_triple_equal(C.consolidate(rows, times, diffs), py_consolidate(rows, times, diffs))


def test_sort_permutation_trivial_digits():
    # values that share their low bits: several radix digits are skipped
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 50, (20000, 1)) << 30
    times = np.full((20000, 1), 7)
    np.testing.assert_array_equal(C.sort_permutation(rows, times), lex_perm(rows, times))


def test_sort_permutation_accepts_noncontiguous_and_small_dtypes():
    rng = np.random.default_rng(1)
    big = rng.integers(-100, 100, (300, 6))
    rows = big[::2, 1:4]                      # non-contiguous view
    times = np.asfortranarray(rng.integers(0, 5, (150, 2)).astype(np.int32))
    np.testing.assert_array_equal(C.sort_permutation(rows, times), lex_perm(rows, times))
    b = rng.integers(0, 2, (50, 2)).astype(bool)
    np.testing.assert_array_equal(C.sort_permutation(b), lex_perm(b.astype(np.int64)))


# ---------------------------------------------------------------------------
# consolidate / is_consolidated / merge_consolidated
# ---------------------------------------------------------------------------
@SETTINGS
@given(table())
def test_consolidate_hypothesis(tbl):
    rows, times, diffs = tbl
    out = C.consolidate(rows, times, diffs)
    assert_triple_equal(out, py_consolidate(rows, times, diffs))
    assert C.is_consolidated(*out)
    # idempotent, and the already-sorted fast path agrees
    assert_triple_equal(C.consolidate(*out), out)
    perm = lex_perm(rows, times)
    assert_triple_equal(C.consolidate(rows[perm], times[perm], diffs[perm]), out)


@pytest.mark.parametrize("n,w,d,hi,dhi", [
    (0, 1, 1, 10, 1), (0, 0, 1, 10, 1), (1, 0, 1, 10, 1), (7, 0, 1, 3, 1),
    (6000, 1, 1, 100, 1),                 # heavy duplication, diff payload
    (6000, 1, 1, 6000, 2**62),           # index payload (diffs too wide)
    (6000, 2, 1, 2**62, 1),               # multi-word
    (6000, 3, 2, 4, 3),                   # several columns, all small
])
def test_consolidate_random(n, w, d, hi, dhi):
    rng = np.random.default_rng(n + w + d)
    rows = rng.integers(-hi, hi, (n, w))
    times = rng.integers(-hi, hi, (n, d))
    diffs = rng.integers(-dhi, dhi, n, endpoint=True)
    out = C.consolidate(rows, times, diffs)
    assert_triple_equal(out, py_consolidate(rows, times, diffs))
    assert C.is_consolidated(*out)


def test_consolidate_all_zero_and_cancelling():
    rows = np.array([[1], [2], [1], [2]])
    times = np.zeros((4, 1), dtype=np.int64)
    for diffs in (np.zeros(4, dtype=np.int64), np.array([1, 1, -1, -1])):
        r, t, d = C.consolidate(rows, times, diffs)
        assert r.shape == (0, 1) and t.shape == (0, 1) and d.shape == (0,)


def test_consolidate_sorted_inputs():
    rows = np.array([[1], [1], [2], [3], [3]])
    times = np.array([[0], [1], [0], [0], [0]])
    # strictly sorted, with a zero diff
    assert_triple_equal(C.consolidate(rows[:4], times[:4], np.array([1, 0, 2, 3])),
                        (np.array([[1], [2], [3]]), np.array([[0], [0], [0]]), np.array([1, 2, 3])))
    # sorted with equal neighbours (no sort needed, still summed)
    assert_triple_equal(C.consolidate(rows, times, np.array([1, 1, 1, 2, -2])),
                        (np.array([[1], [1], [2]]), np.array([[0], [1], [0]]), np.array([1, 1, 1])))


def test_consolidate_does_not_alias_inputs():
    rows = np.array([[1], [2]])
    times = np.array([[0], [0]])
    diffs = np.array([1, 1])
    r, t, d = C.consolidate(rows, times, diffs)
    r[0, 0] = 99
    t[0, 0] = 99
    d[0] = 99
    assert rows[0, 0] == 1 and times[0, 0] == 0 and diffs[0] == 1


def test_is_consolidated_cases():
    r = np.array([[1], [1], [2]])
    t = np.array([[0], [1], [0]])
    assert C.is_consolidated(r, t, np.array([1, 2, 3]))
    assert not C.is_consolidated(r, t, np.array([1, 0, 3]))
    assert not C.is_consolidated(r[::-1], t[::-1], np.array([1, 2, 3]))
    assert not C.is_consolidated(np.array([[1], [1]]), np.array([[0], [0]]), np.array([1, 1]))
    assert C.is_consolidated(np.zeros((0, 2), np.int64), np.zeros((0, 1), np.int64), np.zeros(0, np.int64))
    assert C.is_consolidated(np.zeros((2, 0), np.int64), np.array([[1], [2]]), np.array([1, 1]))


@pytest.mark.slow
@SETTINGS
@given(table(), table())
def test_merge_consolidated_hypothesis(a, b):
    ra, ta, da = a
    rb, tb, db = b
    if ra.shape[1] != rb.shape[1] or ta.shape[1] != tb.shape[1]:
        return
    A = py_consolidate(ra, ta, da)
    B = py_consolidate(rb, tb, db)
    want = py_consolidate(np.concatenate([A[0], B[0]]), np.concatenate([A[1], B[1]]),
                          np.concatenate([A[2], B[2]]))
    assert_triple_equal(C.merge_consolidated(*A, *B), want)
    assert_triple_equal(C.merge_consolidated(*B, *A), want)


def test_merge_consolidated_random_and_cancel():
    rng = np.random.default_rng(5)
    A = C.consolidate(*random_table(rng, 8000, 2, 1, hi=50))
    B = C.consolidate(*random_table(rng, 8000, 2, 1, hi=50))
    want = py_consolidate(*(np.concatenate(x) for x in zip(A, B)))
    assert_triple_equal(C.merge_consolidated(*A, *B), want)
    neg = (A[0], A[1], -A[2])
    r, t, d = C.merge_consolidated(*A, *neg)
    assert r.shape == (0, 2) and t.shape == (0, 1) and d.shape == (0,)
    empty = (np.zeros((0, 2), np.int64), np.zeros((0, 1), np.int64), np.zeros(0, np.int64))
    assert_triple_equal(C.merge_consolidated(*A, *empty), A)
    assert_triple_equal(C.merge_consolidated(*empty, *empty), empty)


@pytest.mark.parametrize("w, d", [(0, 1), (1, 1), (2, 1), (3, 2), (1, 3)])
def test_merge_kernel_matches_the_reference_at_every_width(w, d):
    """The merge kernel itself (no small-input tactic), ties in every column included."""
    rng = np.random.default_rng(w * 10 + d)
    for n_a, n_b in [(0, 5), (7, 0), (300, 300), (1000, 17)]:
        A = C.consolidate(*random_table(rng, n_a, w, d, hi=4))
        B = C.consolidate(*random_table(rng, n_b, w, d, hi=4))
        cap = len(A[2]) + len(B[2])
        out = (np.empty((cap, w), np.int64), np.empty((cap, d), np.int64),
               np.empty(cap, np.int64))
        m = C._k().merge_consolidated(*A, *B, *out)
        want = py_consolidate(*(np.concatenate(x) for x in zip(A, B)))
        assert_triple_equal(tuple(x[:m] for x in out), want)


# ---------------------------------------------------------------------------
# hashing and partitioning
# ---------------------------------------------------------------------------
@SETTINGS
@given(table(min_d=1, max_w=4))
def test_hash_rows_hypothesis(tbl):
    rows = tbl[0]
    h = C.hash_rows(rows)
    assert h.dtype == np.uint64 and h.shape == (rows.shape[0],)
    np.testing.assert_array_equal(h, C._hash_rows_numpy(rows))
    assert h.tolist() == [py_hash(r) for r in rows.tolist()]


def test_hash_rows_fixed_values():
    # regression values: the hash must never change across versions
    keys = np.array([[0], [1], [-1]])
    assert C.hash_rows(keys).tolist() == [py_hash([0]), py_hash([1]), py_hash([-1])]
    assert C.hash_rows(np.zeros((3, 0), np.int64)).tolist() == [0x9E3779B97F4A7C15] * 3
    assert int(C.hash_rows(np.array([[1, 2]]))[0]) == py_hash([1, 2]) != py_hash([2, 1])
    rng = np.random.default_rng(11)
    k = rng.integers(I64MIN, I64MAX, (1000, 3), endpoint=True)
    np.testing.assert_array_equal(C.hash_rows(k), C._hash_rows_numpy(k))


@pytest.mark.parametrize("parts", [1, 2, 3, 8, 1000])
@pytest.mark.parametrize("w", [0, 1, 3])
def test_partition_of(parts, w):
    rng = np.random.default_rng(parts + w)
    keys = rng.integers(-10**12, 10**12, (5000, w))
    p = C.partition_of(keys, parts)
    assert p.dtype == np.int64
    np.testing.assert_array_equal(p, (C._hash_rows_numpy(keys) % np.uint64(parts)).astype(np.int64))
    assert C.partition_of(keys[:0], parts).shape == (0,)


@pytest.mark.parametrize("parts,n", [(1, 0), (1, 10), (8, 0), (8, 10000), (5, 3)])
def test_group_by_partition(parts, n):
    rng = np.random.default_rng(n)
    part = rng.integers(0, parts, n)
    perm, off = C.group_by_partition(part, parts)
    assert perm.dtype == np.int64 and off.dtype == np.int64 and off.shape == (parts + 1,)
    np.testing.assert_array_equal(perm, np.argsort(part, kind="stable"))
    np.testing.assert_array_equal(off, np.concatenate([[0], np.cumsum(np.bincount(part, minlength=parts))]))
    for p in range(parts):
        assert (part[perm[off[p]:off[p + 1]]] == p).all()


# ---------------------------------------------------------------------------
# searching and joining
# ---------------------------------------------------------------------------
@st.composite
def sorted_and_queries(draw):
    k = draw(st.integers(0, 3))
    elems = st.one_of(small, extreme)
    row = st.lists(elems, min_size=k, max_size=k)
    s = sorted(draw(st.lists(row, max_size=40)))
    q = draw(st.lists(row, max_size=20))
    return (np.array(s, dtype=np.int64).reshape(len(s), k),
            np.array(q, dtype=np.int64).reshape(len(q), k))


@SETTINGS
@given(sorted_and_queries())
def test_key_ranges_and_searchsorted_hypothesis(sq):
    s, q = sq
    st_, qt = tuples(s), tuples(q)
    lo, hi = C.key_ranges(s, q)
    assert lo.dtype == np.int64 and hi.dtype == np.int64
    assert lo.tolist() == [bisect.bisect_left(st_, x) for x in qt]
    assert hi.tolist() == [bisect.bisect_right(st_, x) for x in qt]
    assert C.searchsorted_rows(s, q).tolist() == lo.tolist()
    assert C.searchsorted_rows(s, q, side="right").tolist() == hi.tolist()


def test_key_ranges_width_zero_and_empty():
    lo, hi = C.key_ranges(np.zeros((5, 0), np.int64), np.zeros((3, 0), np.int64))
    assert lo.tolist() == [0, 0, 0] and hi.tolist() == [5, 5, 5]
    lo, hi = C.key_ranges(np.zeros((0, 2), np.int64), np.array([[1, 2]]))
    assert lo.tolist() == [0] and hi.tolist() == [0]
    lo, hi = C.key_ranges(np.array([[1, 2]]), np.zeros((0, 2), np.int64))
    assert lo.shape == (0,) and hi.shape == (0,)


@pytest.mark.parametrize("distinct", [3, 100, 5000])
def test_searchsorted_and_key_ranges_match_numpy_one_column(distinct):
    rng = np.random.default_rng(distinct)
    s = np.sort(rng.integers(-distinct, distinct, 5000))
    q = rng.integers(-distinct - 5, distinct + 5, 500)
    for side in ("left", "right"):
        np.testing.assert_array_equal(C.searchsorted_rows(s[:, None], q[:, None], side=side),
                                      np.searchsorted(s, q, side=side))
    lo, hi = C.key_ranges(s[:, None], q[:, None])
    np.testing.assert_array_equal(lo, np.searchsorted(s, q, side="left"))
    np.testing.assert_array_equal(hi, np.searchsorted(s, q, side="right"))


@st.composite
def two_sorted(draw):
    k = draw(st.integers(0, 2))
    elems = st.one_of(st.integers(-2, 2), extreme)
    row = st.lists(elems, min_size=k, max_size=k)
    a = sorted(draw(st.lists(row, max_size=25)))
    b = sorted(draw(st.lists(row, max_size=25)))
    return (np.array(a, dtype=np.int64).reshape(len(a), k),
            np.array(b, dtype=np.int64).reshape(len(b), k))


@SETTINGS
@given(two_sorted())
def test_match_sorted_hypothesis(ab):
    a, b = ab
    li, ri = C.match_sorted(a, b)
    at, bt = tuples(a), tuples(b)
    want = [(i, j) for i in range(len(at)) for j in range(len(bt)) if at[i] == bt[j]]
    assert li.dtype == np.int64 and ri.dtype == np.int64
    assert list(zip(li.tolist(), ri.tolist())) == want


def test_match_sorted_cross_product_and_random():
    li, ri = C.match_sorted(np.zeros((2, 0), np.int64), np.zeros((3, 0), np.int64))
    assert li.tolist() == [0, 0, 0, 1, 1, 1] and ri.tolist() == [0, 1, 2, 0, 1, 2]
    rng = np.random.default_rng(9)
    a = np.sort(rng.integers(0, 300, 3000))[:, None]
    b = np.sort(rng.integers(0, 300, 2000))[:, None]
    li, ri = C.match_sorted(a, b)
    lo, hi = np.searchsorted(b[:, 0], a[:, 0]), np.searchsorted(b[:, 0], a[:, 0], side="right")
    want_l = np.repeat(np.arange(len(a)), hi - lo)
    want_r = np.concatenate([np.arange(x, y) for x, y in zip(lo, hi)])
    np.testing.assert_array_equal(li, want_l)
    np.testing.assert_array_equal(ri, want_r)


@SETTINGS
@given(sorted_and_queries())
def test_group_starts_hypothesis(sq):
    s = sq[0]
    t = tuples(s)
    want = [i for i in range(len(t)) if i == 0 or t[i] != t[i - 1]] + [len(t)]
    g = C.group_starts(s)
    assert g.dtype == np.int64
    assert g.tolist() == want


def test_group_starts_edges():
    assert C.group_starts(np.zeros((0, 0), np.int64)).tolist() == [0]
    assert C.group_starts(np.zeros((4, 0), np.int64)).tolist() == [0, 4]
    assert C.group_starts(np.array([[1, 1], [1, 2], [1, 2]])).tolist() == [0, 1, 3]


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
def test_validation_errors():
    r = np.zeros((3, 1), np.int64)
    t = np.zeros((3, 1), np.int64)
    d = np.ones(3, np.int64)
    with pytest.raises(TypeError):
        C.sort_permutation(r.astype(float))
    with pytest.raises(TypeError):
        C.hash_rows(r.astype(np.uint64))
    with pytest.raises(ValueError):
        C.sort_permutation(np.zeros(3, np.int64))
    with pytest.raises(ValueError):
        C.sort_permutation(r, np.zeros((2, 1), np.int64))
    with pytest.raises(ValueError):
        C.consolidate(r, np.zeros((3, 0), np.int64), d)
    with pytest.raises(ValueError):
        C.consolidate(r, t, np.ones(2, np.int64))
    with pytest.raises(ValueError):
        C.consolidate(r, t, np.ones((3, 1), np.int64))
    with pytest.raises(ValueError):
        C.merge_consolidated(r, t, d, np.zeros((3, 2), np.int64), t, d)
    with pytest.raises(ValueError):
        C.merge_consolidated(r, t, d, r, np.zeros((3, 2), np.int64), d)
    with pytest.raises(ValueError):
        C.partition_of(r, 0)
    with pytest.raises(TypeError):
        C.partition_of(r, 2.5)
    with pytest.raises(ValueError):
        C.group_by_partition(np.array([0, 3]), 3)
    with pytest.raises(ValueError):
        C.group_by_partition(np.array([-1]), 3)
    with pytest.raises(ValueError):
        C.key_ranges(r, np.zeros((1, 2), np.int64))
    with pytest.raises(ValueError):
        C.match_sorted(r, np.zeros((1, 2), np.int64))
    with pytest.raises(ValueError):
        C.searchsorted_rows(r, r, side="middle")
    with pytest.raises(ValueError):
        C.group_starts(np.zeros(3, np.int64))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), max_size=60),
       st.lists(st.integers(0, 7), max_size=25), st.booleans())
def test_gather_prefix_matches_a_scan_for_sorted_and_unsorted_queries(data, keys, sort):
    # sorted queries take the galloping path, unsorted ones the plain binary search
    rows = np.array(sorted(data), dtype=np.int64).reshape(-1, 2)
    times = np.arange(len(rows), dtype=np.int64).reshape(-1, 1)
    diffs = np.arange(1, len(rows) + 1, dtype=np.int64)
    queries = np.array(sorted(keys) if sort else keys, dtype=np.int64).reshape(-1, 1)
    q, r, t, d = C.gather_prefix(rows, times, diffs, 1, queries)
    expected = [(j, tuple(rows[i]), int(times[i, 0]), int(diffs[i]))
                for j in range(len(queries)) for i in range(len(rows))
                if rows[i, 0] == queries[j, 0]]
    got = list(zip(q.tolist(), map(tuple, r.tolist()), t[:, 0].tolist(), d.tolist()))
    assert got == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 3)), max_size=200),
       st.lists(st.tuples(st.integers(-1, 11), st.integers(-1, 4)), max_size=90),
       st.integers(1, 2), st.sampled_from(["sorted", "unsorted", "swapped"]))
def test_grouped_lower_bounds_and_gather_match_a_scan(data, keys, width, order):
    # the kernel searches sorted queries 16 at a time in lockstep and falls back to the whole
    # batch for a group out of order: many groups, duplicates, queries outside the batch
    import bisect

    from diffflow.arrangements import _kernels as K
    rows = np.array(sorted(data), dtype=np.int64).reshape(-1, 2)
    keys = sorted(keys) if order != "unsorted" else keys
    if order == "swapped" and len(keys) > 20:  # sorted but for one swap in the second group
        keys[17], keys[3] = keys[3], keys[17]
    queries = np.array(keys, dtype=np.int64).reshape(-1, 2)[:, :width].copy()
    prefixes = [tuple(r[:width]) for r in rows.tolist()]
    lower = np.empty(len(queries), np.int64)
    K.prefix_lower_bounds(rows, queries, width, lower, np.empty(K.GROUP, np.int64))
    assert lower.tolist() == [bisect.bisect_left(prefixes, tuple(q)) for q in queries.tolist()]
    times = np.arange(len(rows), dtype=np.int64).reshape(-1, 1)
    diffs = np.arange(1, len(rows) + 1, dtype=np.int64)
    q, r, t, d = kernel_gather(K, rows, times, diffs, width, queries)
    expected = [(j, i) for j in range(len(queries)) for i in range(len(rows))
                if prefixes[i] == tuple(queries[j])]
    assert list(zip(q.tolist(), (t[:, 0]).tolist())) == expected
    assert r.tolist() == [rows[i].tolist() for _, i in expected]
    assert d.tolist() == [int(diffs[i]) for _, i in expected]

