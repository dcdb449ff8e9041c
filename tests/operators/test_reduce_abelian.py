"""Counts, integer sums and distinct from the change alone (``reduce_abelian``).

Random inserts and removes through count / sum aggregates, compared at every
epoch with a from-scratch oracle (a group is present while one of its rows has
positive multiplicity), with and without a count among the aggregates, with
negative multiplicities (after which the operator reads groups), at P=1 and
P>1, and inside a loop's first epoch.  The shortcut must have handled most
keys; and a one-row change into a group of 10^5 rows must read as many rows
as one into a group of 10 rows.
"""
from __future__ import annotations

import os
from collections import Counter

import numpy as np
import pytest

import diffflow as dd
from diffflow.arrangements.spine import Spine
from diffflow.operators import reduce as reduce_module
from tests.support.helpers import drive


@pytest.fixture
def abelian_counts(monkeypatch):
    """Keys the count/sum shortcut handled, left to the general path, or saw go negative."""
    counts = Counter()
    original = reduce_module.abelian_corrections

    def counting(abelian, in_spine, out_spine, key_width, keys, key_times, candidate, delta,
                 **options):
        made, handled, negative = original(abelian, in_spine, out_spine, key_width, keys,
                                           key_times, candidate, delta, **options)
        counts["handled"] += int(handled.sum())
        counts["fallback"] += int((candidate & ~handled).sum())
        counts["negative"] += int(negative)
        return made, handled, negative

    monkeypatch.setattr(reduce_module, "abelian_corrections", counting)
    return counts


def _counted_here() -> bool:
    # workers of another runtime (DIFFFLOW_TEST_RUNTIME) may not see the test's monkeypatch
    return os.environ.get("DIFFFLOW_TEST_RUNTIME", "local") == "local"


def _oracle(with_count: bool):
    def oracle(s):
        totals, sums, present = Counter(), Counter(), set()
        for (k, v), m in s["a"].items():
            totals[k] += m
            sums[k] += v * m
            if m > 0:
                present.add(k)
        if with_count:
            return Counter({(k, totals[k], sums[k], sums[k]): 1 for k in present})
        return Counter({(k, sums[k]): 1 for k in present})
    return oracle


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("with_count", [True, False])
def test_counts_and_sums_under_random_updates(with_count, parts, abelian_counts):
    def build(flow, i):
        if with_count:
            return i["a"].aggregate(by=["k"], n=dd.count(), s=dd.sum("v"), t=dd.sum("v"))
        return i["a"].aggregate(by=["k"], s=dd.sum("v"))

    for seed in range(8):
        # few keys: groups empty and come back; odd seeds remove rows never inserted
        drive({"a": ["k", "v"]}, build, _oracle(with_count), seed=seed, parts=parts, epochs=10,
              domain=5, batch=12, allow_negative=seed % 2 == 1)
    if _counted_here():
        assert abelian_counts["handled"] > 50, abelian_counts
        assert abelian_counts["negative"] > 0, abelian_counts
        if not with_count:  # a present group losing rows reads its group: it may be empty
            assert abelian_counts["fallback"] > 0, abelian_counts


@pytest.mark.parametrize("parts", [1, 3])
def test_distinct_under_random_updates(parts, abelian_counts):
    # distinct is the shortcut with no aggregates: a key's presence from the change alone
    def build(flow, i):
        return i["a"].select("k").distinct()

    def oracle(s):
        totals = Counter()
        for (k, _), m in s["a"].items():
            totals[k] += m
        return Counter({(k,): 1 for k, m in totals.items() if m > 0})

    for seed in range(8):
        drive({"a": ["k", "v"]}, build, oracle, seed=seed, parts=parts, epochs=10, domain=5,
              batch=12, allow_negative=seed % 2 == 1)
    if _counted_here():
        assert abelian_counts["handled"] > 50 and abelian_counts["fallback"] > 0, abelian_counts
        assert abelian_counts["negative"] > 0, abelian_counts


def _supported_reach(edges, roots):
    """Roots and every node with >= 2 in-edges from reached nodes, to a fixpoint."""
    reached = set(roots)
    while True:
        support = Counter(b for (a, b) in edges if a in reached)
        grown = reached | {b for b, n in support.items() if n >= 2}
        if grown == reached:
            return reached
        reached = grown


def test_counts_inside_a_loop(abelian_counts):
    # reached = roots + nodes with two reached in-neighbours: a count (and a sum) per node in
    # every round; the first epoch's rounds are simple keys (the shortcut), later epochs'
    # rounds have partially ordered times (the general path)
    flow = dd.Dataflow()
    edges, roots = flow.input("edges", ["src", "dst"]), flow.input("roots", ["node"])
    start = roots.distinct()

    def step(reached):
        support = reached.join(edges, left_on="node", right_on="src") \
            .aggregate(by=["dst"], n=dd.count(), s=dd.sum("node"))
        grown = support.filter(dd.col("n") >= 2).select(node="dst")
        return start.concat(grown).distinct()

    out = start.iterate(step).output()
    rng = np.random.default_rng(3)
    state: set = set()
    roots.insert([(0,), (1,)])
    for epoch in range(8):
        removed = [e for e in sorted(state) if rng.random() < 0.2]
        fresh = sorted({tuple(map(int, p)) for p in rng.integers(0, 30, (30, 2))} - state)
        state = (state - set(removed)) | set(fresh)
        if removed:
            edges.remove(removed)
        edges.insert(fresh)
        flow.advance()
        want = _supported_reach(state, {0, 1})
        assert sorted(out.snapshot()) == sorted((n,) for n in want), f"epoch {epoch}"
    if _counted_here():
        assert abelian_counts["handled"] > 0, abelian_counts


def _rows_read_by_one_row_change(group_size: int) -> int:
    """Rows every spine returned while a one-row insert into a ``group_size``-row group
    (of a count + sum aggregate) flowed through the dataflow."""
    flow = dd.Dataflow()
    a = flow.input("a", ["k", "v"])
    out = a.aggregate(by=["k"], n=dd.count(), s=dd.sum("v")).output()
    a.insert(np.stack([np.zeros(group_size, np.int64), np.arange(group_size)], axis=1))
    flow.advance()
    read = Counter()
    original = Spine.gather

    def counting(self, query_keys, width=None):
        got = original(self, query_keys, width)
        read["rows"] += len(got[0])
        return got

    Spine.gather = counting
    try:
        a.insert([(0, group_size)])
        flow.advance()
    finally:
        Spine.gather = original
    assert sorted(out.snapshot()) == [(0, group_size + 1, group_size * (group_size + 1) // 2)]
    return read["rows"]


@pytest.mark.skipif(not _counted_here(),
                    reason="counts Spine.gather calls in this process: local runtime only")
def test_one_row_change_reads_rows_independent_of_group_size():
    small, big = _rows_read_by_one_row_change(10), _rows_read_by_one_row_change(100_000)
    assert big == small, (small, big)
    assert big <= 4, big  # the key's output row (and no input rows: an insert)
