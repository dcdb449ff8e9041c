"""Reduce over partially ordered (two-coordinate) times, driven at the operator level.

Times are hand-built ``(a, b)`` pairs such as ``(1, 0)``, ``(0, 1)`` and their
join ``(1, 1)``.  Updates arrive in an order consistent with an advancing
frontier (an up-set of the grid); after every step, the driver's accumulated
output at every *complete* time must equal the reducer applied to the input
accumulated at that time, and the plain reference implementation must agree.
"""
import random
from collections import Counter, defaultdict

import numpy as np
import pytest

from diffflow.arrangements.columnar import partition_of
from diffflow.arrangements.updates import Updates
from diffflow.common.schema import Schema, SymbolTable
from diffflow.dataflow.graph import Node
from diffflow.lattice import Antichain
from diffflow.operators.arrange import ArrangeOp
from diffflow.operators.base import OperatorContext
from diffflow.operators.reduce import ReduceOp, join_closure
from diffflow.operators.reduce_reference import reduce_reference
from diffflow.operators.reducers import AggregateReducer, DistinctReducer

AGG = [("count", None, "int"), ("sum", 0, "int"), ("min", 0, "int"), ("max", 0, "int")]


def agg_python(group):
    """The AGG reducer on a {val: mult} dict, as {out_val: mult}."""
    positive = [v[0] for v, m in group.items() if m > 0]
    if not positive:
        return {}
    return {(sum(group.values()), sum(v[0] * m for v, m in group.items()),
             min(positive), max(positive)): 1}


def distinct_python(group):
    return {(): 1} if sum(group.values()) > 0 else {}


class Harness:
    """An arrange operator feeding a reduce operator, with hand-driven frontiers.

    ``compact`` also compacts both traces to the reduce's input frontier
    after every step, as the engine does.
    """

    def __init__(self, reducer, width, dim=2, key_width=1, compact=False):
        self.dim, self.compact = dim, compact
        schema = Schema(tuple(f"c{i}" for i in range(width)), ("int",) * width)
        arrange = Node(0, "arrange", [], schema, {"column_order": list(range(width)),
                                                   "key_width": key_width},
                       input_widths=[width], dim=dim)
        out_width = key_width + reducer.out_width
        out_schema = Schema(tuple(f"o{i}" for i in range(out_width)), ("int",) * out_width)
        reduce = Node(1, "reduce", [0], out_schema, {"key_width": key_width, "reducer": reducer},
                      input_widths=[width], dim=dim)
        ops = {}
        ctx = OperatorContext(0, 1, dim, SymbolTable(), peer=ops.__getitem__)
        ops[0] = ArrangeOp(arrange, ctx)
        ops[1] = ReduceOp(reduce, ctx)
        self.arrange, self.reduce = ops[0], ops[1]
        self.width = width
        self.output = []

    def step(self, updates, frontier):
        frontier = Antichain(frontier, d=self.dim) if frontier else Antichain(d=self.dim)
        chunk = [Updates.from_lists([u[0] for u in updates], [u[1] for u in updates],
                                    [u[2] for u in updates], self.width, self.dim)] if updates else []
        batches = self.arrange.step([chunk], [frontier])
        caps = self.arrange.capabilities()  # the reduce's input frontier: arrange's input + held
        held = frontier.elements if caps is None else np.concatenate([frontier.elements, caps])
        reduce_frontier = Antichain(held, d=self.dim)
        outs = self.reduce.step([batches], [reduce_frontier])
        for o in outs:
            self.output.extend(o.to_list())
        if self.compact:  # arrange compacts to its readers' input frontier, reduce to its input's
            self.arrange.compact(reduce_frontier)
            self.reduce.compact(reduce_frontier)
        self.reduce.out_spine._check()
        self.arrange.spine._check()
        return reduce_frontier

    def output_at(self, t):
        acc = Counter()
        for row, time, diff in self.output:
            if all(a <= b for a, b in zip(time, t)):
                acc[row] += diff
        return {k: v for k, v in acc.items() if v}


class PartitionedHarness:
    """``parts`` harnesses, each fed the keys whose hash lands in its partition."""

    def __init__(self, reducer, width, parts, dim=2):
        self.parts = [Harness(reducer, width, dim) for _ in range(parts)]

    def step(self, updates, frontier):
        owner = partition_of(np.array([[u[0][0]] for u in updates], dtype=np.int64).reshape(-1, 1),
                             len(self.parts)) if updates else []
        for p, h in enumerate(self.parts):
            h.step([u for u, o in zip(updates, owner) if o == p], frontier)

    def output_at(self, t):
        out = {}
        for h in self.parts:
            out.update(h.output_at(t))  # keys never span partitions
        return out


def expected_at(inputs, t, fn):
    groups = defaultdict(Counter)
    for row, time, diff in inputs:
        if all(a <= b for a, b in zip(time, t)):
            groups[row[0]][row[1:]] += diff
    out = {}
    for key, g in groups.items():
        g = {v: m for v, m in g.items() if m}
        for val, m in fn(g).items():
            out[(key,) + val] = m
    return out


def test_join_closure():
    got = join_closure(np.array([[1, 0]]), np.array([[0, 1], [0, 0]]))
    assert got.tolist() == [[1, 0], [1, 1]]


@pytest.mark.parametrize("seed", range(20))
def test_closure_kernel_matches_plain_closure(seed):
    from diffflow.operators.reduce import _kernels

    rng = np.random.default_rng(seed)
    groups, d = 4, int(rng.integers(2, 4))
    new = [np.unique(rng.integers(0, 4, (int(rng.integers(1, 4)), d)), axis=0) for _ in range(groups)]
    hist = [rng.integers(0, 4, (int(rng.integers(0, 6)), d)) for _ in range(groups)]
    new_starts = np.concatenate([[0], np.cumsum([len(x) for x in new])]).astype(np.int64)
    hist_starts = np.concatenate([[0], np.cumsum([len(x) for x in hist])]).astype(np.int64)
    group, times = _kernels().join_closure_groups(
        np.concatenate(new).astype(np.int64), new_starts,
        np.concatenate(hist).astype(np.int64).reshape(-1, d), hist_starts)
    for g in range(groups):
        got = sorted(map(tuple, times[group == g].tolist()))
        assert got == sorted(map(tuple, join_closure(new[g], hist[g]).tolist()))


def test_hand_built_times_hold_back_the_join_until_complete():
    h = Harness(AggregateReducer(AGG), width=2)
    # (0,1) and (1,0) arrive; their join (1,1) is still admitted by the frontier
    f = h.step([((7, 5), (0, 1), 1), ((7, 3), (1, 0), 1)], [(1, 1), (0, 2), (2, 0)])
    assert h.output_at((0, 1)) == {(7, 1, 5, 5, 5): 1}
    assert h.output_at((1, 0)) == {(7, 1, 3, 3, 3): 1}
    caps = h.reduce.capabilities()
    assert caps is not None and [1, 1] in caps.tolist(), "the join (1,1) must be held back"
    assert not f.admits(np.array([[0, 1]]))[0]
    # the frontier passes (1,1): the correction there appears
    h.step([], [(2, 2)])
    assert h.output_at((1, 1)) == {(7, 2, 8, 3, 5): 1}
    assert h.reduce.capabilities() is None
    # a removal at (0,2) changes (0,2) and, through the join, (1,2)
    h.step([((7, 5), (0, 2), -1)], [])
    assert h.output_at((0, 2)) == {}
    assert h.output_at((1, 2)) == {(7, 1, 3, 3, 3): 1}
    assert h.output_at((1, 1)) == {(7, 2, 8, 3, 5): 1}


def random_schedule(rng, grid, n_updates, keys, vals):
    """Updates at random grid times, delivered while the frontier still admits them."""
    remaining = set(grid)
    order = []  # times in the order they are completed: a random linear extension
    while remaining:
        minimal = [t for t in remaining
                   if not any(s != t and all(a <= b for a, b in zip(s, t)) for s in remaining)]
        t = rng.choice(sorted(minimal))
        order.append(t)
        remaining.remove(t)
    updates = [((rng.randrange(keys), rng.randrange(vals)), rng.choice(grid),
                rng.choice([1, 1, 1, -1, 2])) for _ in range(n_updates)]
    steps = []
    done = set()
    pending = list(range(len(updates)))
    for t in order + [None]:
        chosen = [i for i in pending
                  if updates[i][1] not in done and (rng.random() < 0.5 or t == updates[i][1])]
        pending = [i for i in pending if i not in chosen]
        now = [updates[i] for i in chosen]
        if t is not None:
            done.add(t)
        left = [s for s in grid if s not in done]
        frontier = [s for s in left
                    if not any(x != s and all(a <= b for a, b in zip(x, s)) for x in left)]
        if left:
            # times beyond the grid stay open too
            frontier = frontier if frontier else []
        steps.append((now, frontier, set(done)))
    return updates, steps


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("which", ["aggregate", "distinct"])
def test_random_partial_order_schedules(seed, which, parts):
    rng = random.Random(seed)
    grid = [(a, b) for a in range(3) for b in range(3)]
    reducer, fn, width = ((AggregateReducer(AGG), agg_python, 2) if which == "aggregate"
                          else (DistinctReducer(), distinct_python, 1))
    updates, steps = random_schedule(rng, grid, rng.randrange(1, 14), keys=4, vals=3)
    if width == 1:
        updates = [((u[0][0],), u[1], u[2]) for u in updates]
        steps = [([((u[0][0],), u[1], u[2]) for u in now], f, d) for now, f, d in steps]
    h = PartitionedHarness(reducer, width, parts)
    delivered = []
    for now, frontier, done in steps:
        delivered.extend(now)
        h.step(now, [t for t in frontier] if done != set(grid) else [])
        for t in done:  # every complete time is exact
            assert h.output_at(t) == expected_at(delivered, t, fn), f"time {t}"
    reference = reduce_reference([(u[0][0], u[0][1:], u[1], u[2]) for u in updates], fn)
    for t in grid:
        ref = Counter()
        for key, val, time, diff in reference:
            if all(a <= b for a, b in zip(time, t)):
                ref[(key,) + val] += diff
        assert {k: v for k, v in ref.items() if v} == expected_at(updates, t, fn)
        assert h.output_at(t) == expected_at(updates, t, fn)


def test_reference_matches_definition_on_three_dimensions():
    rng = random.Random(5)
    updates = [((rng.randrange(2),), tuple(rng.randrange(2) for _ in range(3)), 1)
               for _ in range(6)]
    ref = reduce_reference([(u[0][0], (), u[1], u[2]) for u in updates], distinct_python)
    for t in [(a, b, c) for a in range(2) for b in range(2) for c in range(2)]:
        acc = Counter()
        for key, val, time, diff in ref:
            if all(x <= y for x, y in zip(time, t)):
                acc[(key,)] += diff
        assert {k: v for k, v in acc.items() if v} == expected_at(updates, t, distinct_python)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 64, 1000])
def test_stable_order_kernel_matches_numpy(n):
    # the chain closure sorts by coordinate sums with its own merge sort (numpy's argsort in a
    # kernel would load numba's whole array library): ties keep their order, as "stable" does
    from diffflow.operators import _reduce_kernels

    rng = np.random.default_rng(n)
    keys = rng.integers(0, max(1, n // 4), n).astype(np.int64)
    order = np.empty(n, np.int64)
    _reduce_kernels._stable_order(keys, order, np.empty(n, np.int64))
    assert order.tolist() == np.argsort(keys, kind="stable").tolist()
