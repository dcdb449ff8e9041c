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
from both_tactics import tactic  # noqa: F401  (autouse: small tactics and kernels)

from diffflow.arrangements.updates import Updates
from diffflow.dataflow.graph import Node
from diffflow.lattice import Antichain
from diffflow.operators.arrange import ArrangeOp
from diffflow.operators.base import OperatorContext
from diffflow.operators.reduce import ReduceOp
from diffflow.operators.reducers import AggregateReducer, DistinctReducer, ThresholdReducer
from diffflow.schema import Schema, SymbolTable


class Harness:
    def __init__(self, reducer, width, key_width, dim, compact):
        self.dim, self.width, self.kk = dim, width, key_width
        schema = Schema(tuple(f"c{i}" for i in range(width)), ("int",) * width)
        arrange = Node(0, "arrange", [], schema, {"column_order": list(range(width)),
                                                   "key_width": key_width},
                       input_widths=[width], dim=dim)
        ow = key_width + reducer.out_width
        out_schema = Schema(tuple(f"o{i}" for i in range(ow)), ("int",) * ow)
        reduce = Node(1, "reduce", [0], out_schema, {"key_width": key_width, "reducer": reducer},
                      input_widths=[width], dim=dim)
        ops = {}
        ctx = OperatorContext(0, 1, dim, SymbolTable(), peer=ops.__getitem__)
        ops[0] = ArrangeOp(arrange, ctx)
        ops[1] = ReduceOp(reduce, ctx)
        self.arrange, self.reduce = ops[0], ops[1]
        self.output = []
        self.compact = compact

    def step(self, updates, frontier):
        frontier = Antichain(frontier, d=self.dim) if frontier else Antichain(d=self.dim)
        chunk = [Updates.from_lists([u[0] for u in updates], [u[1] for u in updates],
                                    [u[2] for u in updates], self.width, self.dim)] if updates else []
        batches = self.arrange.step([chunk], [frontier])
        caps = self.arrange.capabilities()
        held = frontier.elements if caps is None else np.concatenate([frontier.elements, caps])
        rf = Antichain(held, d=self.dim)
        outs = self.reduce.step([batches], [rf])
        for o in outs:
            self.output.extend(o.to_list())
        if self.compact:
            # what the engine does: arrange compacts to its readers' input frontier,
            # reduce to its input's frontier
            self.arrange.compact(rf)
            self.reduce.compact(rf)
        self.reduce.out_spine._check()
        self.arrange.spine._check()

    def output_at(self, t):
        acc = Counter()
        for row, time, diff in self.output:
            if all(a <= b for a, b in zip(time, t)):
                acc[row] += diff
        return {k: v for k, v in acc.items() if v}


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
        kk = 1
        width = 1 + 1 + extra_cols if which.endswith("col1") else 2 + extra_cols
        if which.endswith("col1"):
            width = max(width, 3)
    keys = rng.choice([1, 2, 4])
    vals = rng.choice([2, 3, 5])

    def make_row():
        return (rng.randrange(keys),) + tuple(rng.randrange(vals) for _ in range(width - 1))

    diffs = [1, 1, 1, -1] if rng.random() < 0.5 else [1, -1, 2, -2, 1]
    updates, steps = schedule(rng, grid, rng.randrange(1, 40), make_row, diffs)
    # retract some updates at a later time too: keys whose output vanishes and returns
    h = Harness(reducer, width, kk, dim, compact)
    delivered = []
    for now, frontier, done in steps:
        delivered.extend(now)
        h.step(now, frontier if done != set(grid) else [])
        # emitted corrections stay exact at every complete time, compaction or not
        for t in done:
            assert h.output_at(t) == expected_at(delivered, t, fn, kk), (seed, t)
    top = tuple(side - 1 for _ in range(dim))
    assert h.output_at(top) == expected_at(updates, top, fn, kk), seed
    if True:
        for t in grid:
            assert h.output_at(t) == expected_at(updates, t, fn, kk), (seed, t)


@pytest.mark.parametrize("which", list(REDUCERS))
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("compact", [False, True])
def test_reduce_fast_paths_partial_order(which, dim, compact):
    for seed in range(20):
        run_case(seed, which, dim, compact, extra_cols=seed % 2)
