"""Explanations on worker processes and on Spark: the same explanations as the local runtime.

The search is deterministic (lowest height, then smallest row), so a dataflow on another
runtime must give *exactly* the local runtime's explanation of every row, every epoch --
and each must reproduce its rows when replayed (``check``).  Covered on ``processes`` and on
the suite's Spark session, at P=2: collection explanations through a loop, an aggregate and a
difference; live explanations kept current epoch by epoch, through a rescale 2 -> 3 -> 1 and
through a worker killed between epochs; Datalog ``explain``, ``watch`` and
``explain_absent``.
"""
from __future__ import annotations

import itertools
import os
import random
import signal
import time

import pytest

import diffflow as dd
from diffflow import graphs
from diffflow.runtime.routing import BINS

pytestmark = pytest.mark.local_runtime   # (each test chooses its runtimes)


def remote_options(runtime: str, request) -> dict:
    if runtime == "spark":
        return {"runtime": "spark", "spark": request.getfixturevalue("spark")}
    return {"runtime": runtime}


def build(flow):
    """Reachability (a loop), a count per source (an aggregate) and the nodes reached but
    not roots (a difference)."""
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    reach = graphs.reachable(edges, roots)
    fanout = edges.aggregate(by=["src"], n=dd.count()).output()
    not_roots = reach.antijoin(roots, on="node").output()
    return edges, roots, reach.output(), fanout, not_roots


def pairs(options: dict, partitions: int = 2):
    """A local dataflow and one on ``options``' runtime, built alike, roots 0 and 1 staged."""
    flows = [dd.Dataflow(partitions=partitions, explain=True),
             dd.Dataflow(partitions=partitions, explain=True, **options)]
    built = [build(flow) for flow in flows]
    for _, roots, *_ in built:
        roots.insert([(0,), (1,)])
    return flows, built


def change_edges(rng, built, current: set, nodes: int, changes: int) -> set:
    """The same random edge insertions and removals on every dataflow; the edges now."""
    inserted = {(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(changes)} - current
    removed = set(rng.sample(sorted(current), min(len(current), changes // 2)))
    for edges, *_ in built:
        edges.insert(sorted(inserted))
        edges.remove(sorted(removed))
    return (current | inserted) - removed


def listed(changes) -> list:
    return sorted(changes, key=repr)


def assert_same_explanations(rng, here, there, count: int = 4) -> int:
    """Explain up to ``count`` random rows of each output on both: equal, and reproducing."""
    explained = 0
    for out_here, out_there in zip(here[2:], there[2:]):
        rows = sorted(out_here.snapshot())
        assert rows == sorted(out_there.snapshot())
        for row in rng.sample(rows, min(count, len(rows))):
            mine, theirs = out_here.explain([row]), out_there.explain([row])
            assert theirs.inputs == mine.inputs, row
            theirs.check()
            explained += 1
    return explained


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["processes", "spark"])
def test_explanations_equal_the_local_runtime_through_a_rescale(runtime, request):
    """Random updates every epoch; on the remote dataflow only, a batched plan 2 -> 3 (the
    epochs while its worker starts, then its steps) and then 3 -> 1 all at once: every
    explanation equals the local one and replays."""
    rng = random.Random(f"runtimes {runtime}")
    flows, built = pairs(remote_options(runtime, request))
    try:
        current: set = set()
        explained, epoch = 0, 0
        for stage in ("steady", "to 3", "on 3", "to 1"):
            if stage == "to 3":   # (Spark's worker starts slowly: its plan is all at once)
                flows[1].rescale(partitions=3, bins_per_step=BINS // 6, strategy=(
                    "all_at_once" if runtime == "spark" else "batched"))
            if stage == "to 1":
                flows[1].rescale(partitions=1, strategy="all_at_once")
            # A plan's worker starts first, taking as many epochs as it takes on a loaded
            # machine: the plan is waited for by time, not by a count of epochs.
            deadline = time.monotonic() + 300
            for step in itertools.count():
                if stage == "to 3":
                    if flows[1].migration is None:
                        break
                    assert time.monotonic() < deadline, f"the plan never finished ({step} epochs)"
                elif step == 2:
                    break
                current = change_edges(rng, built, current, nodes=12, changes=6)
                for flow in flows:
                    flow.advance()
                epoch += 1
                explained += assert_same_explanations(rng, *built, count=2 if epoch > 10 else 4)
        assert flows[1].partitions == 1 and explained > 40
    finally:
        for flow in flows:
            flow.close()


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["processes", "spark"])
def test_live_explanations_stay_current_through_a_rescale_and_a_lost_worker(runtime, request):
    """Live explanations of reachability on the remote runtime list the same changes as
    the local runtime's, epoch by epoch, while the remote dataflow is rescaled 2 -> 3 and
    (processes) one of its workers is killed between epochs (all of its proofs are read
    again)."""
    rng = random.Random(f"live {runtime}")
    flows, built = pairs(remote_options(runtime, request))
    try:
        current: set = set()
        lives = None
        for epoch in range(8):
            current = change_edges(rng, built, current, nodes=10, changes=6)
            if epoch == 3:
                flows[1].rescale(partitions=3, strategy="all_at_once")
            if epoch == 5 and runtime == "processes":   # (Spark's recovery: test_spark.py)
                os.kill(flows[1]._runtime.worker_pids()[1], signal.SIGKILL)
            for flow in flows:
                flow.advance()
            if epoch == 1:
                reached = sorted(built[0][2].snapshot())
                asked = rng.sample(reached, min(5, len(reached)))
                assert len(asked) >= 3
                lives = [flow.explanations(b[2]) for flow, b in zip(flows, built)]
                for live in lives:
                    live.ask(asked)
            if lives is not None:
                mine, theirs = (listed(live.changes()) for live in lives)
                assert theirs == mine
                for row in lives[1]:
                    ex = lives[1][row]
                    assert (ex is None) == (lives[0][row] is None)
                    if ex is not None:
                        assert ex.inputs == lives[0][row].inputs
                        ex.check()
        assert flows[1]._runtime.recoveries == (runtime == "processes")
    finally:
        for flow in flows:
            flow.close()


PATHS = """.decl edge(x: number, y: number)
.decl path(x: number, y: number)
.decl far(x: number, y: number)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
far(x, y) :- path(x, y), !edge(x, y).
"""


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["processes", "spark"])
def test_datalog_explain_watch_and_absent_equal_the_local_runtime(runtime, request):
    options = remote_options(runtime, request)
    programs = [dd.Program(PATHS, partitions=2, provenance=True),
                dd.Program(PATHS, partitions=2, provenance=True, **options)]
    rng = random.Random(f"datalog {runtime}")
    try:
        edges: set = set()
        watches = None
        for commit in range(5):
            added = {(rng.randrange(8), rng.randrange(8)) for _ in range(5)} - edges
            dropped = set(rng.sample(sorted(edges), min(2, len(edges))))
            for program in programs:
                program.insert("edge", sorted(added))
                program.remove("edge", sorted(dropped))
                program.commit()
            edges = (edges | added) - dropped
            here, there = programs
            for relation in ("path", "far"):
                facts = sorted(here.relation(relation))
                assert sorted(there.relation(relation)) == facts
                for fact in rng.sample(facts, min(3, len(facts))):
                    mine, theirs = here.explain(relation, fact), there.explain(relation, fact)
                    assert str(theirs.tree) == str(mine.tree) and theirs.commits == 0
                    theirs.check()
            absent = (7, 0) if (7, 0) not in here.relation("path") else (0, 99)
            assert str(there.explain_absent("path", absent)) == \
                str(here.explain_absent("path", absent))
            if commit == 1:
                picked = sorted(here.relation("path"))[:3]
                watches = [program.watch("path", picked) for program in programs]
            if watches is not None:
                assert listed(watches[1].changes()) == listed(watches[0].changes())
    finally:
        for program in programs:
            program.close()
