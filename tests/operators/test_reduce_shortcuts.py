"""The reduce driver's shortcuts, against from-scratch oracles.

``reduce`` handles a key whose one new time lies above its whole history
without the interesting-time closure, and a lone ``min``/``max`` aggregate
from the changed values alone (``reduce_extremum``), falling back to reading
the group when the current extremum vanishes with nothing better arriving.
These tests run random inserts and removes (negative multiplicities too)
through such aggregates, outside and inside loops, compare every epoch with
a from-scratch oracle, and check that both the shortcut and its fallback
were taken.
"""
from __future__ import annotations

import os
import random
from collections import Counter, defaultdict

import pytest

import diffflow as dd
from diffflow import graphs
from diffflow.operators import reduce as reduce_module
from tests.algorithms.test_graphs import sssp_oracle, wcc_oracle
from tests.support.helpers import Case, drive
from tests.support.loops import label_propagation


@pytest.fixture(autouse=True)
def _general_rounds(monkeypatch):
    """The shortcuts of the reduce operator's general path: no loop's rounds compiled
    (``runtime.compiled_rounds``, which evaluates keys itself)."""
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "0")


@pytest.fixture
def shortcut_counts(monkeypatch):
    """Counts of keys the extremum shortcut handled and left to the general path."""
    counts = Counter()
    original = reduce_module.extremum_corrections

    def counting(extremum, in_spine, out_spine, key_width, keys, key_times, candidate, delta,
                 **options):
        made, handled = original(extremum, in_spine, out_spine, key_width, keys, key_times,
                                 candidate, delta, **options)
        counts["handled"] += int(handled.sum())
        counts["fallback"] += int((candidate & ~handled).sum())
        return made, handled

    monkeypatch.setattr(reduce_module, "extremum_corrections", counting)
    return counts


def _counted_here() -> bool:
    # workers of another runtime (DIFFFLOW_TEST_RUNTIME) may not see the test's monkeypatch
    return os.environ.get("DIFFFLOW_TEST_RUNTIME", "local") == "local"


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("kind", ["min", "max"])
def test_lone_extremum_under_random_updates(kind, parts, shortcut_counts):
    aggregate = dd.min if kind == "min" else dd.max
    pick = min if kind == "min" else max

    def build(flow, i):
        return i["a"].aggregate(by=["k"], best=aggregate("v"))

    def oracle(s):
        groups = defaultdict(list)
        for (k, v), m in s["a"].items():
            if m > 0:
                groups[k].append(v)
        return Counter({(k, pick(vs)): 1 for k, vs in groups.items()})

    for seed in range(8):
        # few keys, many values: current extrema get removed often
        drive({"a": ["k", "v"]}, build, oracle, seed=seed, parts=parts, epochs=10, domain=6,
              batch=12, allow_negative=seed % 2 == 1)
    if _counted_here():
        assert shortcut_counts["handled"] > 50 and shortcut_counts["fallback"] > 5, shortcut_counts


@pytest.fixture
def rule_counts(monkeypatch):
    """New (key, time) pairs the extremum rule settled at partially ordered times, and
    those it left to the general path."""
    from diffflow.operators import reduce_extremum_times

    monkeypatch.setattr(reduce_extremum_times, "RULE_GROUP_ROWS", 0)  # small groups here
    counts = Counter()
    original = reduce_module.ReduceOp._by_rule

    def counting(self, new_k, new_t, delta, frontier):
        rest_k, rest_t, rest_delta = original(self, new_k, new_t, delta, frontier)
        counts["settled"] += len(new_k) - len(rest_k)
        counts["general"] += len(rest_k)
        return rest_k, rest_t, rest_delta

    monkeypatch.setattr(reduce_module.ReduceOp, "_by_rule", counting)
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
def test_extremum_shortcut_inside_loops(parts, shortcut_counts, rule_counts):
    # components and shortest paths on random graphs: min aggregates in a loop, under cuts
    rng = random.Random(parts)
    for algorithm, oracle, weighted in [("cc", wcc_oracle, False), ("sssp", sssp_oracle, True)]:
        if weighted:
            case = Case({"edges": ["src", "dst", "w"], "roots": ["node"]},
                        lambda f, i: graphs.sssp(i["edges"], i["roots"]), oracle, parts)
        else:
            case = Case({"edges": ["src", "dst"]},
                        lambda f, i: label_propagation(i["edges"]), oracle, parts)
        edges = {(rng.randrange(30), rng.randrange(30)) + ((rng.randint(1, 5),) if weighted else ())
                 for _ in range(45)}
        edges = sorted(edges)
        case.apply("edges", edges, [1] * len(edges))
        if weighted:
            case.apply("roots", [(0,), (7,)], [1, 1])
        case.advance_and_check(0)
        for epoch in range(1, 8):
            present = [r for r, m in case.state["edges"].items() if m > 0]
            drop = rng.sample(present, min(len(present), 4))
            add = [(rng.randrange(30), rng.randrange(30)) + ((rng.randint(1, 5),) if weighted
                                                             else ()) for _ in range(3)]
            add = [e for e in add if case.state["edges"][e] == 0 and e not in drop]
            case.apply("edges", drop + add, [-1] * len(drop) + [1] * len(add))
            case.advance_and_check(epoch)
        case.close()
    if _counted_here():  # later epochs: the rule at partially ordered times, and its fallback
        assert rule_counts["settled"] > 20 and rule_counts["general"] > 0, rule_counts
    if _counted_here():
        assert shortcut_counts["handled"] > 100, shortcut_counts


@pytest.fixture
def previous_from_input(monkeypatch):
    """Counts of simple keys whose previous output came from their previous input."""
    counts = Counter()
    original = reduce_module.ReduceOp._without_delta

    def counting(self, q, rows, diffs, delta, keys, simple):
        counts["derived"] += int(simple.sum())
        return original(self, q, rows, diffs, delta, keys, simple)

    monkeypatch.setattr(reduce_module.ReduceOp, "_without_delta", counting)
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("kind", ["count_sum", "distinct", "threshold"])
def test_previous_output_from_previous_input(kind, parts, previous_from_input):
    # built-in tactics learn a simple key's previous output by applying themselves to its
    # input without this step's delta, instead of reading the output trace: groups that
    # vanish and come back, and negative multiplicities, must still give exact outputs.
    # Counts and sums take this path once a negative multiplicity was met (before, the
    # count/sum shortcut handles them: test_reduce_abelian)
    def build(flow, i):
        if kind == "count_sum":
            return i["a"].aggregate(by=["k"], n=dd.count(), s=dd.sum("v"))
        if kind == "distinct":
            return i["a"].select("k").distinct()
        return i["a"].select("k").threshold(lambda m: m // 2)

    def oracle(s):
        totals, sums = Counter(), Counter()
        for (k, v), m in s["a"].items():
            totals[k] += m
            sums[k] += v * m
        if kind == "count_sum":
            present = {k for (k, _), m in s["a"].items() if m > 0}
            return Counter({(k, totals[k], sums[k]): 1 for k in present})
        if kind == "distinct":
            return Counter({(k,): 1 for k, m in totals.items() if m > 0})
        return Counter({(k,): m // 2 for k, m in totals.items() if m // 2})

    for seed in range(6):
        drive({"a": ["k", "v"]}, build, oracle, seed=seed, parts=parts, epochs=10, domain=5,
              batch=12, allow_negative=seed % 2 == 1)
    if _counted_here():
        assert previous_from_input["derived"] > 50, previous_from_input


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
def test_extremum_rule_stands_down_where_it_keeps_failing(parts, monkeypatch):
    # cutting a chain raises half its labels: the current minimum vanishes with nothing
    # better at nearly every key, so the rule stops being tried for a while (its early
    # corrections, if any, go back to the general path) -- and answers stay exact
    from diffflow.operators import reduce_extremum_times as rule

    monkeypatch.setattr(rule, "RULE_GROUP_ROWS", 0)  # a chain's groups are small
    skipped = Counter()
    original = rule.ExtremumAtTimes._by_rule

    def counting(self, *args):
        skipped["steps"] += int(self.rule_odds < rule.RULE_WORTH)
        return original(self, *args)

    monkeypatch.setattr(rule.ExtremumAtTimes, "_by_rule", counting)
    case = Case({"edges": ["src", "dst"]},
                lambda f, i: label_propagation(i["edges"]), wcc_oracle, parts)
    chain = [(i, i + 1) for i in range(120)]
    case.apply("edges", chain, [1] * len(chain))
    case.advance_and_check(0)
    for epoch, cut in enumerate([60, 30, 90], start=1):
        case.apply("edges", [(cut, cut + 1)], [-1])
        case.advance_and_check(epoch)
    case.apply("edges", [(60, 61), (30, 31)], [1, 1])
    case.advance_and_check(4)
    case.close()
    if _counted_here():
        assert skipped["steps"] > 0, skipped


def test_extremum_rule_tried_on_big_groups_only(monkeypatch):
    # the rule's own reads (the output, the changed rows' histories) beat reading groups only
    # when groups are big: a hub's in-neighbourhood yes, a grid node's four neighbours no
    from diffflow.operators import reduce_extremum_times as rule

    tried = Counter()
    original, compiled = rule.extremum_at, rule.chain_rule

    def counting(*args):
        tried["keys"] += args[2]
        return original(*args)

    def counting_compiled(kind, ev, keys, *rest):  # (the rule's compiled form, kernels loaded)
        out = compiled(kind, ev, keys, *rest)
        tried["keys"] += 0 if out is None else len(keys)
        return out

    monkeypatch.setattr(rule, "extremum_at", counting)
    monkeypatch.setattr(rule, "chain_rule", counting_compiled)

    def cut_once(edges, cut):
        flow = dd.Dataflow()
        e = flow.input("e", ["a", "b"])
        out = label_propagation(e).output()
        e.insert(edges)
        flow.advance()
        e.remove([cut])
        flow.advance()
        return sorted(out.snapshot())

    side = 12
    grid = [(r * side + c, r * side + c + 1) for r in range(side) for c in range(side - 1)] + \
           [(r * side + c, (r + 1) * side + c) for r in range(side - 1) for c in range(side)]
    got = cut_once(grid, grid[5])
    assert got == sorted(wcc_oracle({"edges": Counter({e: 1 for e in grid[:5] + grid[6:]})}))
    if _counted_here():
        assert tried["keys"] == 0, tried
    star = [(0, i) for i in range(1, 60)] + [(i, i + 1) for i in range(1, 59)]  # a hub
    got = cut_once(star, (0, 30))
    rest = [e for e in star if e != (0, 30)]
    assert got == sorted(wcc_oracle({"edges": Counter({e: 1 for e in rest})}))
    if _counted_here():
        assert tried["keys"] > 0, tried
