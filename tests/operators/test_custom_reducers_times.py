"""Custom reducers over hand-built partially ordered times, at the operator level.

An arrange + reduce Harness (test_reduce_partial_order) with a CustomReducer, 2- and
3-coordinate grids, with and without compaction, negative multiplicities (which the
default negative="drop" leaves out), once with the numpy small tactics and once with the
kernels: at every complete time the output must equal the reducer applied to the input
accumulated there, and the plain reference implementation must agree.
"""
import itertools
import random
from collections import Counter

import pytest

import diffflow as dd
from diffflow.operators.reduce_custom import CustomReducer
from diffflow.operators.reduce_reference import reduce_reference, tactic_as_dict
from tests.operators.test_reduce_fast_paths import expected_at, schedule
from tests.operators.test_reduce_partial_order import Harness, PartitionedHarness, random_schedule
from tests.operators.test_reduce_partial_order import expected_at as expected_2d
from tests.support import custom_reducer_fns as fns
from tests.support.both_tactics import tactic  # noqa: F401  (autouse: small tactics and kernels)

# -- the operator over partially ordered times ------------------------------------------------
TACTICS = {  # name: (reducer over (k, v...) rows, oracle of one group, value columns)
    "median": (fns.seg_median, fns.py_median, 1),
    "top2": (fns.seg_top2, fns.py_top2, 2),
    "above_mean": (fns.seg_above_mean, fns.py_above_mean, 1),
    "capped": (fns.seg_capped, fns.py_capped, 1),
    "per_group": (dd.per_group(fns.one_median), fns.py_median, 1),
}


def tactic_of(which, negative="drop"):
    fn, one_group, width = TACTICS[which]
    out = width if which == "top2" else 1
    reducer = CustomReducer(fn, [f"v{i}" for i in range(width)], ["int"] * width,
                            [f"o{i}" for i in range(out)], ["int"] * out, negative)
    return reducer, (lambda g: one_group({v: m for v, m in g.items() if m > 0})
                     if any(m > 0 for m in g.values()) else {}), width


@pytest.mark.slow
@pytest.mark.parametrize("which", list(TACTICS))
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("compact", [False, True])
def test_partially_ordered_times(which, dim, compact):
    reducer, one_group, width = tactic_of(which)
    for seed in range(12):
        rng = random.Random(seed)
        grid = list(itertools.product(range({2: 4, 3: 3}[dim]), repeat=dim))
        keys, vals = rng.choice([1, 2, 4]), rng.choice([2, 3, 5])
        diffs = [1, 1, 1, -1] if seed % 2 else [1, -1, 2, -2, 1]  # negatives: dropped

        def make_row():
            return (rng.randrange(keys),) + tuple(rng.randrange(vals) for _ in range(width))

        updates, steps = schedule(rng, grid, rng.randrange(1, 40), make_row, diffs)
        h = Harness(reducer, 1 + width, dim, key_width=1, compact=compact)
        delivered = []
        for now, frontier, done in steps:
            delivered.extend(now)
            h.step(now, frontier if done != set(grid) else [])
            for t in done:  # every complete time is exact
                assert h.output_at(t) == expected_at(delivered, t, one_group, 1), (seed, t)
        for t in grid:
            assert h.output_at(t) == expected_at(updates, t, one_group, 1), (seed, t)


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("which", ["median", "top2", "capped"])
def test_partitioned_driver_and_reference_agree_with_the_definition(which, parts):
    reducer, one_group, width = tactic_of(which)
    for seed in range(15):
        rng = random.Random(seed)
        grid = [(a, b) for a in range(3) for b in range(3)]
        updates, steps = random_schedule(rng, grid, rng.randrange(1, 14), keys=4, vals=3)
        if width == 2:  # a second value column, a function of the first two
            def widen(u):
                return (u[0] + ((u[0][1] * 7 + u[0][0]) % 3,), u[1], u[2])
            updates = [widen(u) for u in updates]
            steps = [([widen(u) for u in now], f, d) for now, f, d in steps]
        h = PartitionedHarness(reducer, 1 + width, parts)
        delivered = []
        for now, frontier, done in steps:
            delivered.extend(now)
            h.step(now, list(frontier) if done != set(grid) else [])
            for t in done:
                assert h.output_at(t) == expected_2d(delivered, t, one_group), (seed, t)
        reference = reduce_reference([(u[0][0], u[0][1:], u[1], u[2]) for u in updates],
                                     tactic_as_dict(reducer))
        for t in grid:
            ref = Counter()
            for key, val, time, diff in reference:
                if all(a <= b for a, b in zip(time, t)):
                    ref[(key,) + val] += diff
            assert {k: v for k, v in ref.items() if v} == expected_2d(updates, t, one_group)


