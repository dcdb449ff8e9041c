"""PAGs of diffflow's own traced runs: two worker chains per epoch, messages between them, the sum rule."""
from __future__ import annotations

import collections
import math
import time

import numpy as np
import pytest

import diffflow as dd
from diffflow import graphs
from diffflow.pag.api import PAG, cp_json, load
from diffflow.pag.checks import violations
from diffflow.pag.epochs import build_epochs
from diffflow.runtime.routing import BINS


@pytest.fixture(autouse=True)
def _components_as_a_loop(monkeypatch):
    """Components by label propagation, whose joins send rows both ways between the two
    partitions (on the local runtime the library would otherwise keep them in one group)."""
    monkeypatch.setenv("DIFFFLOW_GRAPH_LOOPS", "1")


def _traced_components(path, runtime):
    rng = np.random.default_rng(3)
    edges = rng.integers(0, 300, size=(900, 2))
    with dd.Dataflow(partitions=2, runtime=runtime, trace=str(path)) as flow:
        links = flow.input("links", ["src", "dst"])
        out = graphs.connected_components(links).output()
        links.insert(edges)
        flow.advance()
        links.remove(edges[:5])
        flow.advance()
        assert len(out.snapshot()) > 0


@pytest.mark.parametrize("runtime", ["local", "processes"])
def test_a_traced_p2_run_has_two_worker_chains_per_epoch_messages_and_the_sum_rule(tmp_path, runtime):
    path = tmp_path / "cc.trace"
    _traced_components(path, runtime)
    pag = load(path)
    assert pag.epochs and sorted(set(pag.edges.snap.tolist())) == [0, 1]   # the API's epochs
    workers = {0, 1} if runtime == "local" else {0, 1, 2}  # worker 2: the processes runtime's coordinator
    for _, e in pag.edges.snapshots():
        local = e.is_local
        # one chain per worker: every vertex has at most one local edge in and one out, and
        # exactly one first vertex per worker
        starts = set(zip(e.src_w[local].tolist(), e.src_t[local].tolist(), e.src_k[local].tolist()))
        ends = set(zip(e.dst_w[local].tolist(), e.dst_t[local].tolist(), e.dst_k[local].tolist()))
        assert len(starts) == int(local.sum()) == len(ends)
        firsts = starts - ends
        assert sorted(w for w, _, _ in firsts) == sorted(workers)
        names = e.type_names()
        data = [(int(a), int(b)) for a, b, n in zip(e.src_w.tolist(), e.dst_w.tolist(), names) if n == "DataMessage"]
        assert (0, 1) in data and (1, 0) in data  # rows cross partitions both ways
        if runtime == "processes":
            control = {(a, b) for a, b, n in zip(e.src_w.tolist(), e.dst_w.tolist(), names) if n == "ControlMessage"}
            assert {(0, 2), (1, 2), (2, 0), (2, 1)} <= control  # progress to and from the coordinator
    for summary in cp_json(pag):
        assert summary["paths"] >= 1
        assert math.isclose(sum(summary["by_activity"].values()), 1.0, rel_tol=1e-9)
        # the operators the components dataflow is made of show up by name
        assert any("join" in name for name in summary["by_operator"])
    if runtime == "processes":
        assert violations(pag.edges).empty  # both partitions report progress every epoch
    from diffflow.pag.checks import well_formedness

    assert well_formedness(pag.edges) == []  # every wait ends when a message arrives, chains unbroken


def test_the_pag_of_a_trace_equals_the_one_built_from_its_callback_events(tmp_path):
    batches = []
    rng = np.random.default_rng(4)
    edges = rng.integers(0, 100, size=(200, 2))
    with dd.Dataflow(partitions=2, trace=batches.append) as flow:
        links = flow.input("links", ["src", "dst"])
        graphs.connected_components(links).output()
        links.insert(edges)
        flow.advance()
    from diffflow.runtime.events import Events

    pag = build_epochs(Events.concat(batches))
    assert len(pag) > 0 and cp_json(PAG(pag, epochs=True))[0]["paths"] >= 1


def _traced_rescaled_run(path, options: dict) -> list:
    """Components over random edges at P=2, rescaled 2 -> 3 (batched, from epoch 3 until its
    last step) and then 3 -> 1 (all at once) while traced; returns the partition count of
    each epoch."""
    rng = np.random.default_rng(5)
    edges = rng.integers(0, 200, size=(600, 2))
    counts = []
    # every epoch removes the 7 oldest edges still present and adds 7 new ones: a removal
    # of an edge that is not there (as cycling through `edges` did after 80 epochs) makes
    # its count negative, and label propagation (no round limit: labels only fall, when no
    # count is negative) then never settles -- the Spark case hung so once a slow start
    # ahead of the 2 -> 3 rescale stretched the run past epoch 80
    live = collections.deque(edges.tolist())
    with dd.Dataflow(partitions=2, trace=str(path), **options) as flow:
        links = flow.input("links", ["src", "dst"])
        out = graphs.connected_components(links).output()
        links.insert(edges)

        def epoch():
            if counts:
                links.remove([live.popleft() for _ in range(7)])
                fresh = rng.integers(0, 200, size=(7, 2))
                links.insert(fresh)
                live.extend(fresh.tolist())
            flow.advance()
            counts.append(flow.partitions)

        for _ in range(2):
            epoch()
        flow.rescale(partitions=3, strategy="batched", bins_per_step=BINS // 6)
        # its steps wait for the worker it adds, started at the lowest priority: on a busy
        # machine hundreds of epochs, so bounded by time (a step starts its own worker
        # after start_ahead.PATIENCE, 60 s), not by epochs
        deadline = time.monotonic() + 300
        while flow.migration is not None:
            assert time.monotonic() < deadline, f"the plan never finished ({len(counts)} epochs)"
            epoch()
        epoch()
        flow.rescale(partitions=1, strategy="all_at_once")
        for _ in range(2):
            epoch()
        assert len(out.snapshot()) > 0
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["processes", "spark"])
def test_a_trace_spans_a_rescale_2_3_1_with_workers_named_as_they_come_and_go(
        tmp_path, runtime, request):
    """Every snapshot of the trace -- before, during and after the plans -- is a well-formed
    PAG whose critical participation sums to 1; the partition a rescale adds logs as a new
    worker (3: 0 and 1 are the first partitions, 2 the coordinator); the metrics and the
    dashboard's timeline read it."""
    options = {"runtime": runtime}
    if runtime == "spark":
        options["spark"] = request.getfixturevalue("spark")
    path = tmp_path / "rescaled.trace"
    counts = _traced_rescaled_run(path, options)
    assert counts[:2] == [2, 2] and counts[-4:-2] == [3, 3] and counts[-1] == 1
    pag = load(path)
    from diffflow.pag.checks import well_formedness
    from diffflow.pag.dashboard.views import timeline

    assert well_formedness(pag.edges) == []
    summaries = cp_json(pag)
    assert [s["epoch"] for s in summaries] == list(range(len(counts)))   # the API's epochs, from 0
    for summary in summaries:
        assert summary["paths"] >= 1
        assert math.isclose(sum(summary["by_activity"].values()), 1.0, rel_tol=1e-9)
    expected = {2: {0, 1, 2}, 3: {0, 1, 2, 3}, 1: {0, 2}}
    for epoch, parts in enumerate(counts):
        assert set(timeline(pag, epoch)["workers"]) == expected[parts], epoch
    from diffflow.pag.api import metrics

    frame = metrics(pag)
    assert {0, 1, 2, 3} <= set(frame["from_worker"].tolist())
