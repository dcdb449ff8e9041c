"""Custom reducers inside loops (partially ordered times end to end), on every runtime.

Components and shortest paths with a custom min (numpy and numba) against the built-in
min and plain-Python fixpoints; two shortest distinct distances (a reducer emitting one or
two rows) against a Python fixpoint; one loop on every runtime, and an error raised the
same way on each; a worker process killed mid-run recovers the loop exactly.
"""
import os
import random
import signal
import sys
from collections import Counter, defaultdict

import pytest

import diffflow as dd
from diffflow.common.errors import OperatorError
from tests.api.test_custom_reducers import apply_oracle, grouped
from tests.support import custom_reducer_fns as fns

NUMBA = fns.numba_kernels()
HERE = __file__
PARTS = [1, 3]


# -- loops --------------------------------------------------------------------------------------
def _random_edges(rng, state, nodes, count, weighted=False):
    rows = [(rng.randrange(nodes), rng.randrange(nodes)) + ((rng.randrange(1, 4),) if weighted
                                                            else ()) for _ in range(count)]
    gone = [r for r in state if state[r] > 0 and rng.random() < 0.25]
    return rows, gone


def _components_with(reducer, e):
    both = e.concat(e.select(a="b", b="a")).distinct()
    start = both.select(node="a").distinct().select("node", label="node")

    def round_(labels):
        step = labels.join(both, left_on="node", right_on="a").select(node="b", label="label")
        return start.concat(step).reduce(reducer, by="node", columns=["label"], out=["label"])

    return start.iterate(round_, name="custom_components")


@pytest.mark.slow
@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_components_with_a_custom_min_match_the_built_in(seed, parts, kernel):
    reducer = fns.seg_first if kernel == "numpy" else NUMBA[0]
    rng = random.Random(seed)
    flow = dd.Dataflow(partitions=parts)
    e = flow.input("e", ["a", "b"])
    custom = _components_with(reducer, e).output()
    built_in = dd.graphs.connected_components(e).output()
    state = Counter()
    for epoch in range(6):
        rows, gone = _random_edges(rng, state, 14, 5)
        e.insert(rows)
        e.remove(gone)
        state.update(rows)
        state.subtract(gone)
        flow.advance()
        assert custom.snapshot() == built_in.snapshot(), epoch
        assert set(custom.snapshot()) == _components_oracle(state)
    flow.close()


def _components_oracle(state):
    edges = [r for r, m in state.items() if m > 0]
    label = {n: n for r in edges for n in r}
    changed = True
    while changed:
        changed = False
        for a, b in edges:
            low = min(label[a], label[b])
            if label[a] != low or label[b] != low:
                label[a] = label[b] = low
                changed = True
    return set(label.items())


@pytest.mark.slow
@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(6))
def test_two_shortest_distances_in_a_loop(seed, parts):
    """Two smallest distinct walk lengths from the roots; custom min vs built-in min too."""
    rng = random.Random(seed)
    flow = dd.Dataflow(partitions=parts)
    e = flow.input("e", ["a", "b", "w"])
    roots = flow.input("roots", ["node"])
    start = roots.distinct().select("node", dist=0)

    def round_(d, reducer):
        step = d.join(e, left_on="node", right_on="a").select(node="b", dist=dd.col("dist") +
                                                              dd.col("w"))
        return start.concat(step).reduce(reducer, by="node", out=["dist"])

    two = start.iterate(lambda d: round_(d, fns.seg_two_smallest), name="two").output()
    one = start.iterate(lambda d: round_(d, fns.seg_first), name="one").output()
    built_in = dd.graphs.sssp(e, roots).output()
    state, root_state = Counter(), Counter()
    for epoch in range(6):
        rows, gone = _random_edges(rng, state, 10, 4, weighted=True)
        e.insert(rows)
        e.remove(gone)
        state.update(rows)
        state.subtract(gone)
        if epoch % 3 == 0:
            r = rng.randrange(10)
            roots.insert([r])
            root_state[r] += 1
        flow.advance()
        expected = _two_shortest_oracle(state, root_state)
        assert set(two.snapshot()) == expected, epoch
        assert set(one.snapshot()) == set(built_in.snapshot()), epoch
        assert set(one.snapshot()) == {(n, min(d for m, d in expected if m == n))
                                       for n, _ in expected}
    flow.close()


def _two_shortest_oracle(edges, roots):
    """The loop's fixpoint by plain iteration: dist(n) = two smallest of roots and steps."""
    edges = [r for r, m in edges.items() if m > 0]
    start = {r: {0} for r, m in roots.items() if m > 0}
    dist = {n: set(s) for n, s in start.items()}
    while True:
        candidates = defaultdict(set, {n: set(s) for n, s in start.items()})
        for a, b, w in edges:
            for d in dist.get(a, ()):
                candidates[b].add(d + w)
        new = {n: set(sorted(c)[:2]) for n, c in candidates.items() if c}
        if new == dist:
            return {(n, d) for n, s in dist.items() for d in s}
        dist = new


# -- runtimes -------------------------------------------------------------------------------------
RUNTIMES = [("local", 1), ("local", 3), ("cluster", 3), ("processes", 2)]


def _custom_loop_case(flow):
    e = flow.input("e", ["a", "b"])
    return e, _components_with(NUMBA[0], e).output(), \
        e.reduce(dd.per_group(fns.one_median), by="a", out=["b"]).output()


def _run_custom_loop(flow, seed, epochs):
    """A numba custom-min loop and a per-group median, checked at every epoch."""
    rng = random.Random(seed)
    e, custom, median = _custom_loop_case(flow)
    state = Counter()
    try:
        for epoch in range(epochs):
            rows, gone = _random_edges(rng, state, 12, 6)
            e.insert(rows)
            e.remove(gone)
            state.update(rows)
            state.subtract(gone)
            flow.advance()
            assert set(custom.snapshot()) == _components_oracle(state), epoch
            assert median.snapshot() == dict(apply_oracle(grouped(state, 1), fns.py_median))
    finally:
        flow.close()


@pytest.mark.slow
@pytest.mark.parametrize("runtime,parts", RUNTIMES)
def test_every_runtime_computes_the_same_loop(runtime, parts):
    _run_custom_loop(dd.Dataflow(partitions=parts, runtime=runtime), 7, 4)


@pytest.mark.slow
def test_spark_computes_the_same_loop(spark):
    _run_custom_loop(dd.Dataflow(partitions=2, runtime="spark", spark=spark), 3, 3)


@pytest.mark.slow
@pytest.mark.local_runtime  # the reference is the local runtime
def test_a_killed_worker_recovers_the_custom_loop_exactly():
    rng = random.Random(11)
    local = dd.Dataflow(partitions=2)
    remote = dd.Dataflow(partitions=2, runtime="processes", checkpoint_every=1)
    cases = [_custom_loop_case(flow) for flow in (local, remote)]
    state = Counter()
    for epoch in range(4):
        rows, gone = _random_edges(rng, state, 12, 6)
        state.update(rows)
        state.subtract(gone)
        for e, _, _ in cases:
            e.insert(rows)
            e.remove(gone)
        if epoch == 2:
            os.kill(remote._runtime.worker_pids()[0], signal.SIGKILL)
        local.advance()
        remote.advance()
        for mine, theirs in zip(cases[1][1:], cases[0][1:]):
            assert mine.snapshot() == theirs.snapshot(), epoch
            assert mine.changes() == theirs.changes(), epoch
    assert remote._runtime.recoveries == 1
    remote.close()
    local.close()


@pytest.mark.slow
@pytest.mark.parametrize("runtime,parts", [("local", 3), ("cluster", 2), ("processes", 2)])
def test_errors_are_raised_the_same_on_every_runtime(runtime, parts):
    flow = dd.Dataflow(partitions=parts, runtime=runtime)
    a = flow.input("a", ["k", "v"])
    a.reduce(fns.bad_group_index, by="k", out=["v"]).output()
    line = sys._getframe().f_lineno - 1
    a.insert([(1, 2), (2, 3)])
    try:
        with pytest.raises(OperatorError, match=rf"reduce bad_group_index\(v\) by \['k'\] "
                                                rf"\(node \d+, built at {HERE}:{line}\)"):
            flow.advance()
    finally:
        flow.close()


