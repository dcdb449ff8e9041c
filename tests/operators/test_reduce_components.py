"""Connected components as a reduce tactic (operators/reduce_components.py): the state
updated from changes against a from-scratch computation at every epoch."""
import pickle
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffflow as dd
from diffflow import graphs
from diffflow.algorithms import graphs as graph_algorithms
from diffflow.api.arranged import reduce_with
from diffflow.common.schema import Schema
from diffflow.dataflow.expr import Lit
from diffflow.operators.reduce_components import ComponentsReducer, Connectivity
from tests.support.graph_tactics import tactic  # noqa: F401 (a fixture)
from tests.support.helpers import drive


def labels_from_scratch(counts: Counter) -> dict:
    """``{node: smallest id of its component}`` of the directed edges with a positive count
    (a plain union-find)."""
    parent = {}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for (a, b), m in counts.items():
        if m > 0:
            for x in (a, b):
                parent.setdefault(x, x)
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    return {x: find(x) for x in parent}


def oracle(state):
    return Counter({(n, lab): 1 for n, lab in labels_from_scratch(state["edges"]).items()})


def components(flow, inputs):
    """The tactic at any partitions (``graphs.connected_components`` takes it at one)."""
    return graph_algorithms._components_by_search(graph_algorithms._edges(inputs["edges"]))


@pytest.mark.local_runtime  # it builds its own dataflows on each runtime
def test_the_library_takes_the_tactic_on_the_local_runtime_only():
    # (the processes runtime is not started: explain_plan reads the graph)
    for parts, runtime in ((1, "local"), (3, "local"), (2, "processes")):
        flow = dd.Dataflow(partitions=parts, runtime=runtime)
        graphs.connected_components(flow.input("e", ["a", "b"])).output()
        plan = flow.explain_plan()
        assert ("loop 'connected_components'" in plan) == (runtime != "local"), plan


@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_random_updates_match_a_from_scratch_computation(seed, parts, tactic):
    drive({"edges": ["src", "dst"]}, components, oracle, seed=seed, parts=parts, domain=12,
          batch=14, epochs=10)


@pytest.mark.parametrize("seed", range(4))
def test_negative_multiplicities_count_as_absent(seed, tactic):
    drive({"edges": ["src", "dst"]}, components, oracle, seed=seed, parts=1, domain=8,
          batch=10, epochs=8, allow_negative=True)


def _labels(out) -> dict:
    snap = out.snapshot()
    assert all(m == 1 for m in snap.values()), snap
    return {n: lab for n, lab in snap}


def _run_epochs(flow, edges, out, epochs, check_every=1):
    """Apply ``epochs`` (lists of (row, diff)) and compare the output at each epoch."""
    counts = Counter()
    for i, changes in enumerate(epochs):
        for (a, b), d in changes:
            counts[(a, b)] += d
        edges.update([r for r, _ in changes], [d for _, d in changes])
        flow.advance()
        if i % check_every == 0 or i == len(epochs) - 1:
            want = labels_from_scratch(counts)
            assert _labels(out) == want, f"epoch {i}"


def _chain_epochs(n, rng, epochs, per_epoch, reverse=False):
    order = list(range(n))
    if reverse:
        order.reverse()
    present = {(order[i], order[i + 1]) for i in range(n - 1)}
    out = [[(e, 1) for e in sorted(present)]]
    for _ in range(epochs):
        cut = rng.sample(sorted(present), per_epoch)
        new = set()
        while len(new) < per_epoch:
            a, b = rng.randrange(n), rng.randrange(n)
            if (a, b) not in present:
                new.add((a, b))
        present = (present - set(cut)) | new
        out.append([(e, -1) for e in cut] + [(e, 1) for e in sorted(new)])
    return out


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("parts", [1, 3])
def test_a_long_chain_cut_and_relinked(reverse, parts, tactic):
    flow = dd.Dataflow(partitions=parts)
    edges = flow.input("edges", ["src", "dst"])
    out = components(flow, {"edges": edges}).output()
    _run_epochs(flow, edges, out, _chain_epochs(400, random.Random(7), 25, 10, reverse))


def test_a_grid_under_updates():
    side, rng = 20, random.Random(3)
    grid = {(r * side + c, r * side + c + 1) for r in range(side) for c in range(side - 1)}
    grid |= {(r * side + c, (r + 1) * side + c) for r in range(side - 1) for c in range(side)}
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    out = graphs.connected_components(edges).output()
    epochs, present = [[(e, 1) for e in sorted(grid)]], set(grid)
    for _ in range(30):
        # more cuts than links, until cells and corners fall off and pieces split
        cut = rng.sample(sorted(present), min(30, len(present)))
        back = rng.sample(sorted(grid - present), min(12, len(grid - present)))
        present = (present - set(cut)) | set(back)
        epochs.append([(e, -1) for e in cut] + [(e, 1) for e in back])
    _run_epochs(flow, edges, out, epochs)


def test_duplicates_both_directions_and_self_loops(tactic):
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    out = graphs.connected_components(edges).output()
    _run_epochs(flow, edges, out, [
        [((1, 2), 1), ((1, 2), 1), ((2, 1), 1), ((3, 3), 1), ((-5, 3), 1)],
        [((1, 2), -1)],                       # one copy left, and the reverse edge
        [((1, 2), -1), ((2, 1), -1)],         # 1 and 2 leave
        [((3, 3), -1)],                       # 3 stays through -5
        [((-5, 3), -1), ((3, 3), 1)],         # -5 leaves, 3 stays by its loop
        [((3, 3), -1), ((7, 8), 1), ((8, 9), 1), ((9, 7), 1)],
        [((8, 9), -1)],                       # a cycle cut once stays one component
        [((9, 7), -1)],
    ])


@pytest.mark.local_runtime  # it pickles the operator it reads in this process
def test_state_is_rebuilt_after_pickling():
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    out = graphs.connected_components(edges).output()
    epochs = _chain_epochs(120, random.Random(11), 12, 5)
    _run_epochs(flow, edges, out, epochs[:6])
    flow2 = pickle.loads(pickle.dumps(flow))
    edges2 = next(h for h in flow2._inputs if h.name == "edges")
    out2 = dd.Output(flow2, out.node, "copy")
    counts = Counter()
    for changes in epochs[:6]:
        for row, d in changes:
            counts[row] += d
    for changes in epochs[6:]:
        for row, d in changes:
            counts[row] += d
        edges2.update([r for r, _ in changes], [d for _, d in changes])
        flow2.advance()
        assert _labels(out2) == labels_from_scratch(counts)


def test_the_whole_group_path_inside_a_loop():
    """Inside a loop a round's times are partially ordered: the driver applies the tactic
    to whole groups (no state); labels become edges until nothing changes."""
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    schema = Schema.of([("g", "int"), ("node", "int"), ("label", "int")])

    def body(known):
        keyed = known.select(g=Lit(0), src="src", dst="dst")
        labels = reduce_with(keyed.arrange(["g"]), ComponentsReducer(), schema, "components")
        return edges.enter(known).concat(labels.select(src="node", dst="label")).distinct()

    grown = edges.iterate(body).output()
    rng, counts = random.Random(5), Counter()
    for epoch in range(6):
        rows = [(rng.randrange(10), rng.randrange(10)) for _ in range(6)]
        present = [r for r, m in counts.items() if m > 0]
        gone = rng.sample(present, min(len(present), 3))
        edges.update(rows + gone, [1] * len(rows) + [-1] * len(gone))
        for r in rows:
            counts[r] += 1
        for r in gone:
            counts[r] -= 1
        flow.advance()
        want = {r for r, m in counts.items() if m > 0}
        want |= {(n, lab) for n, lab in labels_from_scratch(counts).items()}
        assert set(grown.snapshot()) == want, f"epoch {epoch}"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(-3, 6), st.integers(-3, 6),
                                   st.sampled_from([-1, 1, 1, 2])), max_size=12),
                min_size=1, max_size=8))
def test_state_changes_add_up_to_labels(batches):
    state, counts, have = None, Counter(), Counter()
    for batch in batches:
        src = np.array([b[0] for b in batch], np.int64)
        dst = np.array([b[1] for b in batch], np.int64)
        diffs = np.array([b[2] for b in batch], np.int64)
        vals = np.column_stack([src, dst])
        if state is None:
            state = Connectivity.built(vals, diffs)
            rows = state.outputs()
            change = zip(rows[:, 0].tolist(), rows[:, 1].tolist(), [1] * len(rows))
        else:
            rows, d = state.apply(vals, diffs)
            change = zip(rows[:, 0].tolist(), rows[:, 1].tolist(), d.tolist())
        for n, lab, d in change:
            have[(n, lab)] += d
        for a, b, d in batch:
            counts[(a, b)] += d
        assert {k for k, m in have.items() if m} == set(labels_from_scratch(counts).items())
        assert all(m in (0, 1) for m in have.values())


def test_a_cut_near_the_end_of_a_long_chain_changes_one_row():
    n = 20_000
    chain = np.arange(n - 1, dtype=np.int64)
    state = Connectivity.built(np.column_stack([chain, chain + 1]), np.ones(n - 1, np.int64))
    rows, diffs = state.apply(np.array([[n - 2, n - 1]]), np.array([-1]))
    assert (rows.tolist(), diffs.tolist()) == ([[n - 1, 0]], [-1])
    # the cut near the smallest id relabels the long side: its rows are the output's change
    rows, diffs = state.apply(np.array([[0, 1]]), np.array([-1]))
    assert len(rows) == 2 * (n - 2) + 1 and set(rows[diffs > 0, 1].tolist()) == {1}
