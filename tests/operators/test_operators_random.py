"""Seeded random differential tests: every operator against a from-scratch oracle.

Each case drives random inserts and removes over several epochs and compares
``snapshot()`` after every epoch with the operator applied directly to the
accumulated input (see helpers.drive).  Every case runs with 1 and 3
partitions.
"""
from collections import Counter, defaultdict

import pytest

import diffflow as dd
from tests.support.helpers import drive

SEEDS = range(12)
PARTS = [1, 3]


def _join(a, b, key_a, key_b, keep_b):
    out = Counter()
    for ra, ma in a.items():
        for rb, mb in b.items():
            if tuple(ra[i] for i in key_a) == tuple(rb[i] for i in key_b):
                out[ra + tuple(rb[i] for i in keep_b)] += ma * mb
    return out


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_select_filter_expressions(seed, parts):
    def build(flow, i):
        c = i["c"]
        return (c.filter((dd.col("a") + dd.col("b")) % 3 != 1)
                 .select("b", s=dd.col("a") * 2 - dd.col("b"), f=dd.col("a") / 2))

    def oracle(s):
        out = Counter()
        for (a, b), m in s["c"].items():
            if (a + b) % 3 != 1:
                out[(b, a * 2 - b, a / 2)] += m
        return out

    drive({"c": ["a", "b"]}, build, oracle, seed=seed, parts=parts, allow_negative=True)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_concat_negate_consolidate_map(seed, parts):
    def build(flow, i):
        doubled = i["a"].map(lambda r: (r[0] + r[1],), ["x"])
        other = i["b"].flat_map(lambda r: [(r[0],)] * (r[0] % 3), ["x"])
        return doubled.concat(other.negate()).consolidate()

    def oracle(s):
        out = Counter()
        for (p, q), m in s["a"].items():
            out[(p + q,)] += m
        for (p,), m in s["b"].items():
            out[(p,)] -= m * (p % 3)
        return out

    drive({"a": ["p", "q"], "b": ["p"]}, build, oracle, seed=seed, parts=parts,
          allow_negative=True)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_join(seed, parts):
    def build(flow, i):
        return i["a"].join(i["b"], left_on="k", right_on="k2")

    def oracle(s):
        return _join(s["a"], s["b"], [0], [0], [1])

    drive({"a": ["k", "x"], "b": ["k2", "y"]}, build, oracle, seed=seed, parts=parts,
          allow_negative=True, domain=4)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_self_join_two_keys(seed, parts):
    def build(flow, i):
        e = i["e"]
        return e.join(e.select(x="a", y="b", z="c"), left_on=["a", "b"], right_on=["x", "y"])

    def oracle(s):
        return _join(s["e"], s["e"], [0, 1], [0, 1], [2])

    drive({"e": ["a", "b", "c"]}, build, oracle, seed=seed, parts=parts, domain=3)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_semijoin_antijoin(seed, parts):
    def build(flow, i):
        a, b = i["a"], i["b"]
        return a.semijoin(b, on="k").select("k", "x", side=0).concat(
            a.antijoin(b, on="k").select("k", "x", side=1))

    def oracle(s):
        keys = {r[0] for r, m in s["b"].items() if m > 0}
        out = Counter()
        for (k, x), m in s["a"].items():
            out[(k, x, 0 if k in keys else 1)] += m
        return out

    drive({"a": ["k", "x"], "b": ["k"]}, build, oracle, seed=seed, parts=parts, domain=4)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_distinct_and_threshold(seed, parts):
    def build(flow, i):
        a = i["a"]
        return a.distinct().select("u", "v", kind=0).concat(
            a.threshold(lambda m: m // 2).select("u", "v", kind=1))

    def oracle(s):
        out = Counter()
        for (u, v), m in s["a"].items():
            if m > 0:
                out[(u, v, 0)] += 1
            if m // 2:
                out[(u, v, 1)] += m // 2
        return out

    drive({"a": ["u", "v"]}, build, oracle, seed=seed, parts=parts, domain=3, batch=10)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_aggregate(seed, parts):
    def build(flow, i):
        return i["a"].aggregate(by=["k"], n=dd.count(), s=dd.sum("v"), lo=dd.min("v"),
                                hi=dd.max("v"))

    def oracle(s):
        groups = defaultdict(Counter)
        for (k, v), m in s["a"].items():
            groups[k][v] += m
        out = Counter()
        for k, g in groups.items():
            positive = [v for v, m in g.items() if m > 0]
            if positive:
                out[(k, sum(g.values()), sum(v * m for v, m in g.items()), min(positive),
                     max(positive))] += 1
        return out

    drive({"a": ["k", "v"]}, build, oracle, seed=seed, parts=parts, domain=6, batch=8)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_global_count_and_shared_arrangement(seed, parts):
    def build(flow, i):
        a, b = i["a"], i["b"]
        idx = a.arrange(by=["k"])
        joined = idx.join(b, on="k")                  # reads the shared index
        per_key = idx.aggregate(n=dd.count())         # reads the same index
        total = joined.aggregate(by=[], n=dd.count())
        return per_key.select("k", "n", tag=0).concat(total.select(k=-1, n="n", tag=1))

    def oracle(s):
        out = Counter()
        per = Counter()
        for (k, x), m in s["a"].items():
            per[k] += m
        for k, n in per.items():
            if any(m > 0 for (kk, _), m in s["a"].items() if kk == k):
                out[(k, n, 0)] += 1
        total = sum(_join(s["a"], s["b"], [0], [0], []).values())
        joined = _join(s["a"], s["b"], [0], [0], [])
        if any(m > 0 for m in joined.values()):
            out[(-1, total, 1)] += 1
        return out

    drive({"a": ["k", "x"], "b": ["k"]}, build, oracle, seed=seed, parts=parts, domain=4)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_join_then_aggregate_pipeline(seed, parts):
    def build(flow, i):
        return (i["q"].join(i["big"], on="k")
                .aggregate(by=["v"], n=dd.count()))

    def oracle(s):
        groups = Counter()
        present = Counter()
        for row, m in _join(s["q"], s["big"], [0], [0], [1]).items():
            groups[row[1]] += m
            if m > 0:
                present[row[1]] += 1
        return Counter({(v, n): 1 for v, n in groups.items() if present[v]})

    drive({"q": ["k"], "big": ["k", "v"]}, build, oracle, seed=seed, parts=parts, domain=5)

