"""Sweeps after a run's first look only at the nodes marked since their last look.

A node is marked when a node it reads emitted or moved its frontier; the local runtime marks
the readers of frontiers its recomputation moved.  Looking at every node instead (what a
first sweep, and a worker's, does) must give the same changes at every epoch, and the marks
must spare looks: fewer nodes are asked whether they have input.
"""
from __future__ import annotations

import numpy as np
import pytest

import diffflow as dd
from diffflow import graphs
from diffflow.runtime import engine
from tests.support.loops import label_propagation, reach_loop


def _run(seed: int, parts: int, every_node: bool, monkeypatch) -> tuple[list, int]:
    # the sweeps of the general path: no loop's rounds compiled (runtime.compiled_rounds)
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "0")
    looks = [0]
    has_input = engine.PartitionEngine.has_input

    def counted(self, nid):
        looks[0] += 1
        return has_input(self, nid)

    monkeypatch.setattr(engine.PartitionEngine, "has_input", counted)
    if every_node:
        sweep = engine.Sweeper.sweep
        monkeypatch.setattr(engine.Sweeper, "sweep",
                            lambda self, frontiers, remote=({}, {}), marked=False:
                            sweep(self, frontiers, remote, marked=False))
    rng = np.random.default_rng(seed)
    flow = dd.Dataflow(partitions=parts)
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    outs = [reach_loop(edges, roots).output(),
            label_propagation(edges).output(),
            graphs.bfs_distances(edges, roots).output()]
    present: set = set()
    roots.insert([0])
    seen = []
    for epoch in range(8):
        add = {tuple(e) for e in rng.integers(0, 30, (12 if epoch == 0 else 3, 2)).tolist()}
        add -= present
        drop = set(list(present)[:2]) if epoch else set()
        present = (present | add) - drop
        if add:
            edges.insert(sorted(add))
        if drop:
            edges.remove(sorted(drop))
        flow.advance()
        seen.append([sorted(o.snapshot()) for o in outs])
    monkeypatch.undo()
    return seen, looks[0]


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_marked_sweeps_match_looking_at_every_node(seed, parts, monkeypatch):
    marked, marked_looks = _run(seed, parts, False, monkeypatch)
    every, every_looks = _run(seed, parts, True, monkeypatch)
    assert marked == every
    assert marked_looks < every_looks
