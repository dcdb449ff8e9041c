"""Consolidating a list of chunks equals consolidating their concatenation.

``chunked.consolidate_chunks`` packs each chunk into its slice of one words
array instead of concatenating first; arrange feeds it the chunks that
arrived.  Seeded random inputs (several chunks, empty ones, widths 0..3,
dims 1..2, sorted inputs, duplicates across chunks, wide keys and diffs)
are compared field by field with ``columnar.consolidate``; and an arrange
operator fed random chunk lists under partially ordered frontiers must emit
exactly the batches, and hold exactly the pending updates, of the
concatenate-first rule.
"""
from __future__ import annotations

import numpy as np
import pytest

from diffflow.arrangements import columnar, small
from diffflow.arrangements.chunked import consolidate_chunks
from diffflow.arrangements.updates import Updates
from diffflow.common.schema import Schema, SymbolTable
from diffflow.dataflow.graph import Node
from diffflow.lattice import Antichain
from diffflow.operators.arrange import ArrangeOp
from diffflow.operators.base import OperatorContext


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype == np.int64 and x.shape == y.shape
        assert np.array_equal(x, y)
        assert x.flags.c_contiguous and x.flags.owndata


def random_chunks(rng, width, dim, sizes, spread=6, dspread=3):
    chunks = []
    for n in sizes:
        rows = rng.integers(-spread, spread, (n, width)).astype(np.int64)
        times = rng.integers(0, 4, (n, dim)).astype(np.int64)
        diffs = rng.integers(-dspread, dspread + 1, n).astype(np.int64)
        chunks.append(Updates(rows, times, diffs))
    return chunks


def concat_consolidate(chunks, width, dim):
    if not chunks:
        return columnar.consolidate(np.zeros((0, width), np.int64), np.zeros((0, dim), np.int64),
                                    np.zeros(0, np.int64))
    return columnar.consolidate(np.concatenate([c.rows for c in chunks]),
                                np.concatenate([c.times for c in chunks]),
                                np.concatenate([c.diffs for c in chunks]))


def check(chunks, width, dim):
    before = [tuple(a.copy() for a in c) for c in chunks]
    got = consolidate_chunks(chunks, width, dim)
    same(got, concat_consolidate(chunks, width, dim))
    for c, b in zip(chunks, before):  # inputs untouched, outputs alias none of them
        assert all(np.array_equal(x, y) for x, y in zip(c, b))
        assert not any(np.shares_memory(g, x) for g in got for x in c)
    return got


@pytest.mark.parametrize("width", [0, 1, 2, 3])
@pytest.mark.parametrize("dim", [1, 2])
def test_random_chunk_lists_match_the_concatenation(width, dim):
    rng = np.random.default_rng(100 * width + dim)
    for _ in range(25):
        k = int(rng.integers(0, 6))
        sizes = [int(rng.choice([0, 1, 7, 300, 2000])) for _ in range(k)]
        check(random_chunks(rng, width, dim, sizes), width, dim)


@pytest.mark.parametrize("width", [0, 1, 3])
def test_duplicates_across_chunks_cancel_and_sum(width):
    rng = np.random.default_rng(width)
    base = random_chunks(rng, width, 2, [1500])[0]
    neg = Updates(base.rows.copy(), base.times.copy(), -base.diffs)
    assert len(check([base, neg], width, 2)[2]) == 0  # everything cancels
    got = check([base, base, Updates.empty(width, 2), base], width, 2)
    assert len(got[2]) and not (got[2] % 3).any()  # three copies of each sum


def test_sorted_inputs_and_sorted_concatenations():
    rng = np.random.default_rng(7)
    r, t, d = (np.array(x) for x in concat_consolidate(random_chunks(rng, 2, 1, [3000]), 2, 1))
    halves = [Updates(r[:1000], t[:1000], d[:1000]), Updates(r[1000:], t[1000:], d[1000:])]
    check(halves, 2, 1)  # concatenation sorted: the O(n) path
    check(halves[::-1], 2, 1)  # each chunk sorted, concatenation not
    same_rows = Updates(np.ones((400, 2), np.int64), np.zeros((400, 1), np.int64),
                        np.ones(400, np.int64))
    check([same_rows, same_rows], 2, 1)  # every column constant


def test_wide_keys_and_wide_diffs():
    rng = np.random.default_rng(3)
    big = np.iinfo(np.int64)
    wide = random_chunks(rng, 2, 1, [500, 700])
    for c in wide:  # full int64 columns: keys wider than a word (permutation sort)
        c.rows[:, 0] = rng.integers(big.min, big.max, len(c), dtype=np.int64)
        c.rows[:, 1] = rng.integers(big.min, big.max, len(c), dtype=np.int64)
    check(wide, 2, 1)
    fat = random_chunks(rng, 2, 1, [600, 600], spread=1 << 20)
    fat[1].diffs[:] = rng.integers(-(1 << 40), 1 << 40, 600)  # diffs too wide to be the payload
    check(fat, 2, 1)


def test_small_inputs_take_the_numpy_tactic(monkeypatch):
    monkeypatch.setattr(small, "_state", {"kernels_loaded": False, "small_calls": 0,
                                          "cold_rows": 0})
    rng = np.random.default_rng(11)
    for width in range(4):
        chunks = random_chunks(rng, width, 2, [5, 0, 30, 9])
        got = consolidate_chunks(chunks, width, 2)
        same(got, small.consolidate(*(np.concatenate([c[i] for c in chunks]) for i in range(3))))
    assert small._state["small_calls"] == 4


def test_chunk_shapes_are_checked():
    with pytest.raises(ValueError):
        consolidate_chunks([Updates.empty(2, 1)], 3, 1)
    with pytest.raises(TypeError):
        consolidate_chunks([(np.zeros((1, 1)), np.zeros((1, 1), np.int64), np.ones(1, np.int64))],
                           1, 1)


# ---------------------------------------------------------------------------
# arrange: the pending/ready split of chunk lists
# ---------------------------------------------------------------------------
def arrange_op(width, dim, order):
    schema = Schema(tuple(f"c{i}" for i in range(width)), ("int",) * width)
    node = Node(0, "arrange", [], schema, {"column_order": order, "key_width": 1},
                input_widths=[width], dim=dim)
    return ArrangeOp(node, OperatorContext(0, 1, dim, SymbolTable(), peer=None))


@pytest.mark.slow
@pytest.mark.parametrize("order", [[0, 1, 2], [2, 0, 1]])
def test_arrange_emits_the_complete_updates_and_keeps_the_rest_pending(order):
    rng = np.random.default_rng(sum(order))
    op = arrange_op(3, 2, order)
    pending = []  # the concatenate-first rule: every update not yet sealed, in arrival order
    previous = np.zeros((1, 2), np.int64)
    for step in range(12):
        chunks = random_chunks(rng, 3, 2, [int(rng.choice([0, 3, 300, 900])) for _ in range(3)])
        for c in chunks:  # at or after the previous frontier; some stay pending a while
            c.times[:] += previous[rng.integers(0, len(previous), len(c))]
        elements = [(step // 3 + 1, step), (step // 3, step + 2)] if step < 11 else []
        frontier = Antichain(elements, d=2) if elements else Antichain(d=2)
        previous = np.array(elements, np.int64)
        for c in chunks:
            pending += list(zip(c.rows[:, order].tolist(), c.times.tolist(), c.diffs.tolist()))
        batches = op.step([chunks], [frontier])
        waits = [frontier.admits(tuple(t)) for _, t, _ in pending]
        ready = [u for u, w in zip(pending, waits) if not w]
        pending = [u for u, w in zip(pending, waits) if w]
        expect = concat_consolidate([Updates.from_lists(*zip(*ready), 3, 2)] if ready else [], 3, 2)
        if len(expect[2]):
            assert len(batches) == 1
            same((batches[0].rows, batches[0].times, batches[0].diffs), expect)
        else:
            assert batches == []
        held = [] if op.pending is None else op.pending.to_list()
        assert held == [(tuple(r), tuple(t), d) for r, t, d in pending]
        op.spine._check()
    assert op.pending is None and op.capabilities() is None


@pytest.mark.parametrize("spread,dspread", [(6, 3), (1 << 20, 1 << 30)])  # mode 2, mode 1
def test_consume_frees_the_chunks_before_the_sort(spread, dspread, monkeypatch):
    """With ``consume`` the list is emptied once packed: by the time the words are sorted (and
    the result is allocated) no chunk is alive, whether the words carry the diffs or not."""
    import weakref

    columnar.load_kernels()
    rng = np.random.default_rng(spread)
    chunks = random_chunks(rng, 2, 2, [3000, 2000, 500], spread=spread, dspread=dspread)
    expect = concat_consolidate(chunks, 2, 2)
    refs = [weakref.ref(a) for c in chunks for a in c]
    alive_at_sort = []
    sort = columnar._sort_u64

    def watching(words, low, high):
        alive_at_sort.append(sum(r() is not None for r in refs))
        return sort(words, low, high)

    monkeypatch.setattr(columnar, "_sort_u64", watching)
    got = consolidate_chunks(chunks, 2, 2, consume=True)
    assert chunks == [] and alive_at_sort == [0]
    same(got, expect)
