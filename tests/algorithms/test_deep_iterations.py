"""Deep iterations: long chains and grids, where a loop runs many rounds per epoch.

Random cuts and repairs of a chain or a grid, with the graph algorithms
compared against networkx at every epoch, at P=1 and P=3; and the reduce's
interesting-time closure (with its fast path for totally ordered times)
against the plain reference closure.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from diffflow import graphs
from diffflow.operators.reduce import join_closure
from tests.algorithms.test_graphs import reach_oracle, scc_oracle, sssp_oracle, wcc_oracle
from tests.support.helpers import Case
from tests.support.loops import label_propagation, reach_loop

# every loop test here runs with compiled rounds forced on and off (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("compiled_rounds_both_ways")


def chain_edges(n: int) -> list:
    return [(i, i + 1) for i in range(n - 1)]


def grid_edges(w: int) -> list:
    at = lambda r, c: r * w + c  # noqa: E731
    return [(at(r, c), at(r, c + 1)) for r in range(w) for c in range(w - 1)] + \
           [(at(r, c), at(r + 1, c)) for r in range(w - 1) for c in range(w)]


def cut_and_repair(case: Case, edges: list, seed: int, epochs: int, extra=()) -> None:
    """Epoch 0 loads the graph; each later epoch removes a few edges and restores others."""
    rng = random.Random(seed)
    case.apply("edges", [e + extra for e in edges], [1] * len(edges))
    if "roots" in case.handles:
        case.apply("roots", [(0,)], [1])
    case.advance_and_check(0)
    for epoch in range(1, epochs):
        present = [r for r, m in case.state["edges"].items() if m > 0]
        absent = [e + extra for e in edges if case.state["edges"][e + extra] == 0]
        drop = rng.sample(present, min(len(present), rng.randint(1, 2)))
        back = rng.sample(absent, min(len(absent), rng.randint(0, 2)))
        case.apply("edges", drop + back, [-1] * len(drop) + [1] * len(back))
        case.advance_and_check(epoch)
    case.close()


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("shape", ["chain", "grid"])
def test_components_on_deep_graphs_under_cuts(shape, parts):
    edges = chain_edges(40) if shape == "chain" else grid_edges(6)
    case = Case({"edges": ["src", "dst"]}, lambda f, i: label_propagation(i["edges"]),
                wcc_oracle, parts)
    cut_and_repair(case, edges, seed=parts, epochs=6)


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
def test_components_on_a_long_chain_with_shuffled_ids(parts):
    # pointer jumping follows labels, not edges: ids in random order along the path
    # make the labels jump back and forth, and cuts split and rejoin long stretches
    ids = list(range(200))
    random.Random(parts).shuffle(ids)
    edges = [(ids[a], ids[b]) for a, b in chain_edges(200)]
    case = Case({"edges": ["src", "dst"]}, lambda f, i: label_propagation(i["edges"]),
                wcc_oracle, parts)
    cut_and_repair(case, edges, seed=11 + parts, epochs=4)


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
def test_strong_components_of_a_long_cycle_under_cuts(parts):
    cycle = chain_edges(80) + [(79, 0)]
    case = Case({"edges": ["src", "dst"]},
                lambda f, i: graphs.strongly_connected_components(i["edges"]), scc_oracle, parts)
    cut_and_repair(case, cycle, seed=5 + parts, epochs=4)


@pytest.mark.parametrize("parts", [1, 3])
def test_reachability_on_a_chain_under_cuts(parts):
    case = Case({"edges": ["src", "dst"], "roots": ["node"]},
                lambda f, i: reach_loop(i["edges"], i["roots"]), reach_oracle, parts)
    cut_and_repair(case, chain_edges(40), seed=7 + parts, epochs=6)


@pytest.mark.parametrize("parts", [1, 3])
def test_shortest_paths_on_a_long_weighted_chain(parts):
    case = Case({"edges": ["src", "dst", "w"], "roots": ["node"]},
                lambda f, i: graphs.sssp(i["edges"], i["roots"]), sssp_oracle, parts)
    cut_and_repair(case, chain_edges(30), seed=3 + parts, epochs=5, extra=(2,))


def _closure_by_kernel(new_groups, hist_groups):
    from diffflow.operators import _reduce_kernels

    d = len((new_groups[0] or hist_groups[0])[0])
    def flat(groups):
        times = [t for g in groups for t in g]
        starts = np.cumsum([0] + [len(g) for g in groups]).astype(np.int64)
        return np.array(times, np.int64).reshape(len(times), d), starts
    new_t, new_starts = flat(new_groups)
    hist_t, hist_starts = flat(hist_groups)
    group, times = _reduce_kernels.join_closure_groups(new_t, new_starts, hist_t, hist_starts)
    found = [set() for _ in new_groups]
    for g, t in zip(group.tolist(), times.tolist()):
        found[g].add(tuple(t))
    return found


@pytest.mark.parametrize("seed", range(30))
def test_interesting_time_closure_matches_the_reference(seed):
    rng = random.Random(seed)
    d = rng.choice([2, 3])
    new_groups, hist_groups = [], []
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.5:  # a chain: the kernel's fast path
            base = [rng.randint(0, 2) for _ in range(d)]
            chain, t = [], list(base)
            for _ in range(rng.randint(2, 12)):
                t[rng.randrange(d)] += rng.randint(0, 2)
                chain.append(tuple(t))
            rng.shuffle(chain)
            cut = rng.randint(1, len(chain))
            new_groups.append(sorted(set(chain[:cut])))
            hist_groups.append(chain[cut:])
        else:  # any times
            new_groups.append(sorted({tuple(rng.randint(0, 4) for _ in range(d))
                                      for _ in range(rng.randint(1, 4))}))
            hist_groups.append([tuple(rng.randint(0, 4) for _ in range(d))
                                for _ in range(rng.randint(0, 8))])
    got = _closure_by_kernel(new_groups, hist_groups)
    for g, (new, hist) in enumerate(zip(new_groups, hist_groups)):
        expected = join_closure(np.array(new, np.int64),
                                np.array(hist, np.int64).reshape(len(hist), d))
        assert got[g] == {tuple(t) for t in expected.tolist()}, (new, hist)
