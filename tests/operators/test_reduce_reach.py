"""Reachability as a reduce tactic (operators/reduce_reach.py): the state updated from
changes against a from-scratch search at every epoch."""
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffflow as dd
from diffflow import graphs
from diffflow.algorithms import graphs as graph_algorithms
from diffflow.operators.reduce_reach import Reachability, reached_nodes
from tests.support.graph_tactics import tactic  # noqa: F401 (a fixture)
from tests.support.helpers import drive


def reached_from_scratch(edges: Counter, roots: Counter) -> set:
    out = {r for r, m in roots.items() if m > 0}
    todo = list(out)
    adjacent = {}
    for (a, b), m in edges.items():
        if m > 0:
            adjacent.setdefault(a, []).append(b)
    while todo:
        for b in adjacent.get(todo.pop(), []):
            if b not in out:
                out.add(b)
                todo.append(b)
    return out


def oracle(state):
    roots = Counter({r[0]: m for r, m in state["roots"].items()})
    return Counter({(n,): 1 for n in reached_from_scratch(state["edges"], roots)})


def reach(flow, inputs):
    """The tactic at any partitions (``graphs.reachable`` takes it at one)."""
    e, r = graph_algorithms._edges(inputs["edges"]), graph_algorithms._roots(inputs["roots"])
    return graph_algorithms._reached_by_search(e, r)


@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_random_updates_match_a_from_scratch_search(seed, parts, tactic):
    drive({"edges": ["src", "dst"], "roots": ["node"]}, reach, oracle, seed=seed, parts=parts,
          domain=12, batch=14, epochs=10)


@pytest.mark.parametrize("seed", range(4))
def test_negative_multiplicities_count_as_absent(seed, tactic):
    drive({"edges": ["src", "dst"], "roots": ["node"]}, reach, oracle, seed=seed, parts=1,
          domain=8, batch=10, epochs=8, allow_negative=True)


def _run(flow, edges, roots, out, epochs):
    ecount, rcount = Counter(), Counter()
    for i, (echanges, rchanges) in enumerate(epochs):
        for row, d in echanges:
            ecount[row] += d
        for row, d in rchanges:
            rcount[row] += d
        if echanges:
            edges.update([r for r, _ in echanges], [d for _, d in echanges])
        if rchanges:
            roots.update([(r,) for r, _ in rchanges], [d for _, d in rchanges])
        flow.advance()
        snap = out.snapshot()
        assert all(m == 1 for m in snap.values())
        assert {r[0] for r in snap} == reached_from_scratch(ecount, rcount), f"epoch {i}"


def _flow(parts=1):
    flow = dd.Dataflow(partitions=parts)
    edges, roots = flow.input("edges", ["src", "dst"]), flow.input("roots", ["node"])
    out = reach(flow, {"edges": edges, "roots": roots}).output()
    return flow, edges, roots, out


@pytest.mark.parametrize("parts", [1, 3])
def test_a_grid_under_shortcuts_and_cuts(parts, tactic):
    side, rng = 15, random.Random(parts)
    grid = {(r * side + c, r * side + c + 1) for r in range(side) for c in range(side - 1)}
    grid |= {(r * side + c, (r + 1) * side + c) for r in range(side - 1) for c in range(side)}
    epochs, present = [([(e, 1) for e in sorted(grid)], [(0, 1)])], set(grid)
    for i in range(25):
        cut = rng.sample(sorted(present), 12)
        new = {(rng.randrange(side * side), rng.randrange(side * side)) for _ in range(8)}
        new -= present
        present = (present - set(cut)) | new
        roots = [(rng.randrange(side * side), rng.choice([1, -1]))] if i % 5 == 4 else []
        epochs.append(([(e, -1) for e in cut] + [(e, 1) for e in sorted(new)], roots))
    flow, edges, roots, out = _flow(parts)
    _run(flow, edges, roots, out, epochs)


def test_cycles_self_loops_roots_on_and_off(tactic):
    flow, edges, roots, out = _flow()
    _run(flow, edges, roots, out, [
        ([((1, 2), 1), ((2, 3), 1), ((3, 1), 1), ((3, 3), 1)], [(1, 1)]),
        ([((1, 2), -1)], []),               # 2 and 3 fall away; the cycle back to 1 stays
        ([((1, 2), 1), ((1, 2), 1)], [(2, 1)]),
        ([((1, 2), -1)], [(1, -1)]),        # one copy of 1 -> 2 left; 1 stays through 3 -> 1
        ([((1, 2), -1)], []),               # 2 is a root: 2 -> 3 -> 1 keep all three
        ([], [(2, -1)]),                    # nothing is a root
        ([((7, 8), 1)], [(8, 1), (8, 1)]),
        ([], [(8, -1)]),
        ([((2, 3), -1), ((5, 5), 1)], [(8, -1), (5, 1)]),
    ])


@pytest.mark.local_runtime  # it builds its own dataflows on each runtime
def test_the_library_takes_the_tactic_on_the_local_runtime_only():
    # (the processes runtime is not started: explain_plan reads the graph)
    for parts, runtime in ((1, "local"), (3, "local"), (2, "processes")):
        flow = dd.Dataflow(partitions=parts, runtime=runtime)
        graphs.reachable(flow.input("e", ["a", "b"]), flow.input("r", ["n"])).output()
        assert ("loop 'reachable'" in flow.explain_plan()) == (runtime != "local")


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([0, 0, 0, 1]), st.integers(-2, 6),
                                   st.integers(-2, 6), st.sampled_from([-1, 1, 1, 2])),
                         max_size=12), min_size=1, max_size=8))
def test_state_changes_add_up_to_the_reached_set(batches):
    state, edges, roots, have = None, Counter(), Counter(), Counter()
    for batch in batches:
        vals = np.array([b[:3] for b in batch], np.int64).reshape(-1, 3)
        diffs = np.array([b[3] for b in batch], np.int64)
        if state is None:
            state = Reachability.built(vals, diffs)
            rows, d = state.outputs(), np.ones(len(state.outputs()), np.int64)
        else:
            rows, d = state.apply(vals, diffs)
        for (n,), m in zip(rows.tolist(), d.tolist()):
            have[n] += m
        for kind, a, b, m in batch:
            if kind == 0:
                edges[(a, b)] += m
            else:
                roots[a] += m
        want = reached_from_scratch(edges, roots)
        assert {n for n, m in have.items() if m} == want
        assert all(m in (0, 1) for m in have.values())
        # the numpy tactic agrees on the totals
        every = [(0, a, b, m) for (a, b), m in edges.items() if m] + \
                [(1, a, 0, m) for a, m in roots.items() if m]
        if every:
            arr = np.array(every, np.int64)
            assert set(reached_nodes(arr[:, :3], arr[:, 3]).tolist()) == want


def test_a_change_of_many_new_nodes_grows_the_tables_and_stays_exact():
    """An update bringing far more new nodes than the tables hold (they grow in the middle of
    counting it), onto a state built with a base: a fan and a chain from a reached node."""
    vals = np.array([[0, 0, 1], [0, 1, 2], [1, 0, 0]])
    state = Reachability.built(vals, np.ones(3, np.int64))
    fan = [[0, 2, 100 + i] for i in range(400)]
    chain = [[0, 1000 + i, 1001 + i] for i in range(400)] + [[0, 1, 1000]]
    rows, diffs = state.apply(np.array(fan + chain), np.ones(len(fan) + len(chain), np.int64))
    assert diffs.tolist() == [1] * len(rows)
    assert sorted(rows[:, 0].tolist()) == sorted([100 + i for i in range(400)] +
                                                 [1000 + i for i in range(401)])
    # a base pair lost and found again, and a pair of the rows above lost
    rows, diffs = state.apply(np.array([[0, 0, 1], [0, 1, 1000]]), np.array([-1, -1]))
    assert len(rows) == 1 + 1 + 400 + 401 and set(diffs.tolist()) == {-1}
    rows, diffs = state.apply(np.array([[0, 0, 1]]), np.array([1]))
    assert sorted(rows[:, 0].tolist()) == [1, 2] + [100 + i for i in range(400)]
    assert sorted(state.outputs()[:, 0].tolist()) == [0, 1, 2] + [100 + i for i in range(400)]


def test_a_lost_edge_costs_its_subtree():
    """Cutting the last edge of a long chain changes one row; a shortcut changes none."""
    n = 20_000
    chain = np.arange(n - 1, dtype=np.int64)
    vals = np.column_stack([np.zeros(n - 1, np.int64), chain, chain + 1])
    state = Reachability.built(np.vstack([vals, [[1, 0, 0]]]), np.ones(n, np.int64))
    rows, diffs = state.apply(np.array([[0, n - 2, n - 1]]), np.array([-1]))
    assert (rows.tolist(), diffs.tolist()) == ([[n - 1]], [-1])
    rows, diffs = state.apply(np.array([[0, 0, n // 2]]), np.array([1]))
    assert len(rows) == 0


def test_both_tactics_on_a_worker_process():
    """The library's tactics at one partition of the processes runtime: the states live in
    the worker, and the answers are those of a from-scratch computation."""
    from tests.operators.test_reduce_components import labels_from_scratch

    rng = random.Random(4)
    with dd.Dataflow(partitions=1, runtime="processes") as flow:
        edges, roots = flow.input("edges", ["src", "dst"]), flow.input("roots", ["node"])
        reached = graphs.reachable(edges, roots).output()
        labels = graphs.connected_components(edges).output()
        present = {(i, i + 1) for i in range(300)}
        edges.insert(sorted(present))
        roots.insert([(0,)])
        counts = Counter(present)
        for epoch in range(8):
            if epoch:
                cut = rng.sample(sorted(present), 6)
                new = {(rng.randrange(300), rng.randrange(300)) for _ in range(6)} - present
                present = (present - set(cut)) | new
                edges.update(cut + sorted(new), [-1] * len(cut) + [1] * len(new))
                counts.update({e: -1 for e in cut})
                counts.update({e: 1 for e in new})
            flow.advance()
            assert {r[0] for r in reached.snapshot()} == reached_from_scratch(counts,
                                                                              Counter({0: 1}))
            assert dict(labels.snapshot()) == {(n, lab): 1 for n, lab in
                                               labels_from_scratch(counts).items()}


def _fresh_process(monkeypatch):
    """numba's kernels as yet unloaded, as in a fresh process (the account of small)."""
    from diffflow.arrangements import small

    monkeypatch.setitem(small._state, "kernels_loaded", False)
    monkeypatch.setitem(small._state, "small_calls", 0)
    monkeypatch.setitem(small._state, "cold_rows", 0)
    return small


@pytest.mark.local_runtime  # it reads the tactic's state in this process
def test_a_fresh_process_searches_a_shallow_graph_in_numpy_and_a_long_path_in_kernels(
        monkeypatch):
    small = _fresh_process(monkeypatch)
    flow, edges, roots, out = _flow()
    star = [(0, i) for i in range(1, 600)]
    edges.insert(star)
    roots.insert([(0,)])
    flow.advance()
    assert len(out.snapshot()) == 600 and not small.loaded()  # numpy: two levels
    flow, edges, roots, out = _flow()
    edges.insert([(i, i + 1) for i in range(3000)])           # 3,000 levels: the kernels
    roots.insert([(0,)])
    flow.advance()
    assert len(out.snapshot()) == 3001 and small.loaded()


@pytest.mark.slow
@pytest.mark.local_runtime  # it measures the operator's state in this process
def test_state_memory_follows_the_graph_not_its_history():
    """Edges between ever new nodes replace old ones: rebuilds drop the past rows."""
    from diffflow.arrangements import columnar
    from diffflow.operators.reduce_kept import KeptStates

    columnar.load_kernels()  # (states are kept once the kernels serve)
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    out = graphs.connected_components(edges).output()
    live = [(2 * i, 2 * i + 1) for i in range(500)]
    edges.insert(live)
    flow.advance()
    fresh = 10_000
    for _ in range(300):
        gone, live = live[:50], live[50:]
        new = [(fresh + 2 * i, fresh + 2 * i + 1) for i in range(50)]
        fresh += 100
        live += new
        edges.update(gone + new, [-1] * 50 + [1] * 50)
        flow.advance()
    assert len(out.snapshot()) == 1000
    ops = flow._runtime.engines[0].ops.values()
    states = [s for op in ops if getattr(op, "kept", None) is not None
              for s in op.kept.states.values()]
    assert states and all(s.size <= 2 * s.live + KeptStates.SMALL + 200 for s in states)
