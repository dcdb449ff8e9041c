"""The reduce fast paths at the operator level over hand-built partially ordered times.

Lone min / max (the extremum shortcut), threshold and distinct (from_totals),
2- and 3-coordinate grids, value columns beyond the aggregated one,
negative multiplicities, compaction of both traces to the frontier, and many
epochs whose later rounds lie below earlier ones.
"""
import itertools
import random
from collections import Counter, defaultdict

import numpy as np
import pytest

from diffflow.operators.reducers import AggregateReducer, DistinctReducer, ThresholdReducer
from tests.operators.test_reduce_partial_order import Harness
from tests.support.both_tactics import tactic  # noqa: F401  (autouse: small tactics and kernels)


@pytest.fixture(autouse=True)
def rule_on_small_groups(monkeypatch):
    """The min/max rule at partial orders on every group size (its driver tries it only on
    big groups, a cost heuristic): these schedules test its answers."""
    from diffflow.operators import reduce_extremum_times

    monkeypatch.setattr(reduce_extremum_times, "RULE_GROUP_ROWS", 0)


def expected_at(inputs, t, fn, kk):
    groups = defaultdict(Counter)
    for row, time, diff in inputs:
        if all(a <= b for a, b in zip(time, t)):
            groups[row[:kk]][row[kk:]] += diff
    out = {}
    for key, g in groups.items():
        g = {v: m for v, m in g.items() if m}
        if not g:
            continue
        for val, m in fn(g).items():
            out[key + val] = m
    return out


def linear_extension(rng, grid):
    remaining = set(grid)
    order = []
    while remaining:
        minimal = [t for t in remaining
                   if not any(s != t and all(a <= b for a, b in zip(s, t)) for s in remaining)]
        t = rng.choice(sorted(minimal))
        order.append(t)
        remaining.remove(t)
    return order


def schedule(rng, grid, n_updates, make_row, diffs):
    order = linear_extension(rng, grid)
    updates = [(make_row(), rng.choice(grid), rng.choice(diffs)) for _ in range(n_updates)]
    steps, done, pending = [], set(), list(range(len(updates)))
    for t in order + [None]:
        # deliver some not-yet-complete updates early; each one at the latest when its time completes
        chosen = [i for i in pending
                  if updates[i][1] not in done and (rng.random() < 0.4 or t == updates[i][1])]
        pending = [i for i in pending if i not in chosen]
        if t is not None:
            # complete several times at once sometimes
            done.add(t)
        left = [s for s in grid if s not in done]
        frontier = [s for s in left
                    if not any(x != s and all(a <= b for a, b in zip(x, s)) for x in left)]
        steps.append(([updates[i] for i in chosen], frontier, set(done)))
    return updates, steps


def lone(kind, column):
    pick = min if kind == "min" else max

    def fn(g):
        pos = [v[column] for v, m in g.items() if m > 0]
        return {(pick(pos),): 1} if pos else {}
    return AggregateReducer([(kind, column, "int")]), fn


def threshold(f):
    def fn(g):
        total = sum(g.values())
        out = int(f(np.array([total]))[0])
        return {(): out} if out else {}
    return ThresholdReducer(f), fn


def distinct():
    return DistinctReducer(), (lambda g: {(): 1} if sum(g.values()) > 0 else {})


REDUCERS = {
    "min": lambda: lone("min", 0),
    "max": lambda: lone("max", 0),
    "min_col1": lambda: lone("min", 1),
    "max_col1": lambda: lone("max", 1),
    "distinct": distinct,
    "thr_mod3": lambda: threshold(lambda m: m % 3),
    "thr_half": lambda: threshold(lambda m: m // 2),
    "thr_neg": lambda: threshold(lambda m: -m),
    "thr_sq": lambda: threshold(lambda m: m * m - 1),
}


def run_case(seed, which, dim, compact, extra_cols):
    rng = random.Random(seed)
    side = {2: 4, 3: 3}[dim]
    grid = list(itertools.product(range(side), repeat=dim))
    reducer, fn = REDUCERS[which]()
    is_set = which == "distinct" or which.startswith("thr")
    if is_set:
        kk = width = 1 + extra_cols
    else:
        kk, width = 1, 3 if which.endswith("col1") else 2 + extra_cols
    keys = rng.choice([1, 2, 4])
    vals = rng.choice([2, 3, 5])

    def make_row():
        return (rng.randrange(keys),) + tuple(rng.randrange(vals) for _ in range(width - 1))

    diffs = [1, 1, 1, -1] if rng.random() < 0.5 else [1, -1, 2, -2, 1]
    updates, steps = schedule(rng, grid, rng.randrange(1, 40), make_row, diffs)
    h = Harness(reducer, width, dim, key_width=kk, compact=compact)
    delivered = []
    for now, frontier, done in steps:
        delivered.extend(now)
        h.step(now, frontier if done != set(grid) else [])
        # emitted corrections stay exact at every complete time, compaction or not
        for t in done:
            assert h.output_at(t) == expected_at(delivered, t, fn, kk), (seed, t)
    for t in grid:
        assert h.output_at(t) == expected_at(updates, t, fn, kk), (seed, t)


@pytest.mark.slow
@pytest.mark.parametrize("which", list(REDUCERS))
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("compact", [False, True])
def test_reduce_fast_paths_partial_order(which, dim, compact):
    for seed in range(20):
        run_case(seed, which, dim, compact, extra_cols=seed % 2)


@pytest.mark.slow
def test_extremum_rule_early_corrections_and_giving_up(monkeypatch):
    # a lone min/max at partially ordered times makes corrections at times the frontier
    # still admits (held until complete), and gives them back as pending times when a
    # key's rule fails: both must happen in these schedules, exactly
    from diffflow.operators.reduce_extremum_times import ExtremumAtTimes

    counts = Counter()
    due, to_pending = ExtremumAtTimes._early_due, ExtremumAtTimes._early_to_pending

    def counting_due(self, frontier):
        out = due(self, frontier)
        counts["early"] += 0 if out is None else len(out)
        return out

    def counting_to_pending(self, keys):
        before = len(self.early)
        to_pending(self, keys)
        counts["given up"] += before - len(self.early)

    monkeypatch.setattr(ExtremumAtTimes, "_early_due", counting_due)
    monkeypatch.setattr(ExtremumAtTimes, "_early_to_pending", counting_to_pending)
    for which in ("min", "max_col1"):
        for dim in (2, 3):
            for seed in range(20):
                run_case(seed, which, dim, compact=seed % 2 == 1, extra_cols=seed % 2)
    assert counts["early"] > 200 and counts["given up"] > 5, counts


def _tally_compiled(monkeypatch, module, name, tally, reducers) -> Counter:
    """Run the 2-coordinate schedules of ``reducers`` with ``module.name`` counted: ``tally(seen,
    result)`` per call."""
    seen = Counter()
    original = getattr(module, name)

    def counting(*args, **kwargs):
        out = original(*args, **kwargs)
        tally(seen, out)
        return out

    monkeypatch.setattr(module, name, counting)
    for which in reducers:
        for seed in range(20):
            run_case(seed, which, 2, compact=seed % 2 == 1, extra_cols=seed % 2)
    return seen


@pytest.mark.slow
def test_extremum_rule_compiled_over_chains_of_rounds(monkeypatch, tactic):
    # with the kernels loaded, keys whose times are rounds of one outer time take the compiled
    # rule (chain_rule); the numpy rule is its reference (the small tactic, which never calls
    # it). These schedules must reach it with corrections and with failures.
    from diffflow.operators import reduce_extremum_times as rule

    def tally(seen, out):
        if out is not None:
            seen["calls"] += 1
            seen["failed keys"] += int(out[0].sum())
            seen["corrections"] += 0 if out[1] is None else len(out[1])

    seen = _tally_compiled(monkeypatch, rule, "chain_rule", tally, ("min", "max_col1"))
    if tactic == "small":
        assert seen["calls"] == 0, seen
    else:
        assert seen["calls"] > 20 and seen["failed keys"] > 0 and seen["corrections"] > 20, seen


@pytest.mark.slow
def test_distinct_and_threshold_compiled_over_chains_of_rounds(monkeypatch, tactic):
    # with the kernels loaded, keys whose times are rounds of one outer time take the compiled
    # totals (totals_corrections); the driver's general path is its reference (the small
    # tactic, which never calls it). These schedules must reach it with corrections made.
    from diffflow.operators import reduce_totals_times as totals

    def tally(seen, out):
        seen["calls" if out is not False else "not a chain"] += 1
        seen["corrections"] += len(out) if out is not None and out is not False else 0

    seen = _tally_compiled(monkeypatch, totals, "totals_corrections", tally,
                           ("distinct", "thr_mod3"))
    if tactic == "small":
        assert seen["calls"] == 0, seen
    else:
        assert seen["calls"] > 20 and seen["corrections"] > 20 and seen["not a chain"] > 0, seen
