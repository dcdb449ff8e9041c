"""Live rescaling: outputs identical with and without migrations, on every runtime.

Each seeded case builds one of several programs (joins and aggregates, shared
arrangements, iterate with reduce over partially ordered times, nested loops),
feeds the same random inserts and removes to two dataflows -- one that never
rescales, one following a random migration plan (random strategies, budgets and
step epochs, the partition count walking e.g. 1 -> 3 -> 2 -> 4) -- sometimes
closing several epochs before computing them, and compares every output's
``changes()`` at every read.  After every epoch of the migrating dataflow:
every trace row lies on the partition its bin maps to, every spine passes
``_check()``, and the routing table names only existing partitions.
"""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

import diffflow as dd
from diffflow import graphs
from diffflow.runtime.routing import BINS

SEEDS = range(10)


# -- programs -----------------------------------------------------------------------------------
def join_aggregate(flow):
    e = flow.input("e", ["a", "b"])
    lab = flow.input("lab", ["a", "l"])
    joined = e.join(lab, on="a")
    by_label = joined.aggregate(by=["l"], n=dd.count(), s=dd.sum("b"))
    return [e, lab], [joined.output(), by_label.output(), e.select("b").distinct().output()]


def shared_arrangement(flow):
    e = flow.input("e", ["a", "b"])
    lab = flow.input("lab", ["a", "l"])
    by_a = e.arrange(by=["a"])  # one index read by a join, an aggregate and a semijoin
    return [e, lab], [lab.join(by_a, on="a").output(),
                      by_a.aggregate(n=dd.count(), top=dd.max("b")).output(),
                      lab.semijoin(by_a, on="a").output()]


def loops(flow):
    e = flow.input("e", ["a", "b"])
    lab = flow.input("lab", ["a", "l"])
    roots = lab.select("a")
    return [e, lab], [graphs.reachable(e, roots).output(),
                                  graphs.bfs_distances(e, roots).output(),
                                  graphs.connected_components(e).output()]


def nested(flow):
    e = flow.input("e", ["a", "b"])
    lab = flow.input("lab", ["a", "l"])
    return [e, lab], [graphs.strongly_connected_components(e).output()]


PROGRAMS = {"join_aggregate": join_aggregate, "shared_arrangement": shared_arrangement,
            "loops": loops, "nested": nested}


# -- driving ------------------------------------------------------------------------------------
def random_plan(rng: random.Random, epochs: int, start_parts: int, max_parts: int = 4) -> dict:
    """``{epoch: rescale kwargs}``: a few migrations at random epochs."""
    plan, parts = {}, start_parts
    for epoch in sorted(rng.sample(range(1, epochs - 1), 3)):
        choices = [p for p in range(1, max_parts + 1) if p != parts]
        kind = rng.random()
        strategy = rng.choice(["all_at_once", "fluid", "batched"])
        kw = {"strategy": strategy}
        if strategy == "fluid":
            kw["bins_per_step"] = rng.choice([BINS // 3, BINS // 7, BINS])
        if strategy == "batched":
            kw["max_rows_per_step"] = rng.choice([1, 5, 40])
        if kind < 0.15:
            kw["rebalance"] = True
        elif kind < 0.3:  # an explicit skewed table over the same partitions
            table = np.arange(BINS, dtype=np.int32) % parts
            table[: BINS // 2] = 0
            kw["table"], kw["partitions"] = table, parts
        else:
            parts = rng.choice(choices)
            kw["partitions"] = parts
        plan[epoch] = kw
    return plan


def updates(rng, state: Counter, count: int, domain: int) -> tuple:
    rows, diffs = [], []
    for _ in range(rng.randrange(count + 1)):
        present = [r for r, m in state.items() if m > 0]
        if present and rng.random() < 0.35:
            row = rng.choice(present)
            rows.append(row)
            diffs.append(-1)
        else:
            row = (rng.randrange(domain), rng.randrange(domain))
            rows.append(row)
            diffs.append(1)
        state[row] += diffs[-1]
    return rows, diffs


def read(outputs, seen: list) -> None:
    for out, acc in zip(outputs, seen):
        for row, epoch, diff in out.changes():
            acc[(row, epoch)] += diff


def clean(counter: Counter) -> dict:
    return {k: v for k, v in counter.items() if v}


def distinct_of(rows, partitions: int = 2, **options) -> tuple:
    """``(flow, input a(x), output of its distinct rows)`` with ``rows`` computed at epoch 0."""
    flow = dd.Dataflow(partitions=partitions, **options)
    a = flow.input("a", ["x"])
    out = a.distinct().output()
    a.insert(rows)
    flow.advance()
    return flow, a, out


def workers_started(flow) -> None:
    """Wait until the workers a plan adds have started (worker processes start them in the
    background, and a batched or fluid step waits for them an epoch at a time), so that
    its steps apply at their epochs on every runtime."""
    ahead = getattr(getattr(flow._runtime, "transport", None), "ahead", None)
    if ahead is not None:
        ahead.thread.join()


def check_invariants(flow) -> None:
    runtime = flow._runtime
    table = flow.routing_table
    assert table.min() >= 0 and table.max() < flow.partitions == runtime.parts
    assert runtime.check_owners() >= 0  # raises if a row lies on the wrong partition
    runtime.check_traces()


def run_case(program, seed: int, options: dict, start_parts: int, epochs: int = 12,
             max_parts: int = 4, in_flight: bool = True) -> list:
    """Drive the reference and the migrating dataflow; returns the applied plans."""
    rng = random.Random(seed)
    plan_at = random_plan(rng, epochs, start_parts, max_parts)
    flows = [dd.Dataflow(partitions=start_parts, **options) for _ in range(2)]
    built = [program(f) for f in flows]
    seen = [[Counter() for _ in built[0][1]] for _ in flows]
    states = [Counter(), Counter()]
    plans = []
    try:
        for epoch in range(epochs):
            batch = [updates(rng, states[i], 6, 6) for i in range(2)]
            if epoch in plan_at:
                kw = dict(plan_at[epoch])
                if kw.pop("rebalance", False):
                    plans.append(flows[1].rebalance(**kw, replace=True))
                else:
                    plans.append(flows[1].rescale(**kw, replace=True))
            run = not in_flight or rng.random() < 0.6 or epoch == epochs - 1
            for flow, (inputs, outputs), acc in zip(flows, built, seen):
                for handle, (rows, diffs) in zip(inputs, batch):
                    handle.update(rows, diffs)
                flow.advance(run=run)
                if run:
                    read(outputs, acc)
            if run:
                for i, (a, b) in enumerate(zip(*seen)):
                    assert clean(a) == clean(b), (
                        f"seed {seed} epoch {epoch} output {i}: changes differ after "
                        f"{[p.report() for p in plans]}")
                check_invariants(flows[1])
        while flows[1].migration is not None:  # finish the plan; outputs stay the same
            for flow, (inputs, outputs), acc in zip(flows, built, seen):
                flow.advance()
                read(outputs, acc)
            check_invariants(flows[1])
            for a, b in zip(*seen):
                assert clean(a) == clean(b)
        return plans
    finally:
        for flow in flows:
            flow.close()


@pytest.fixture(params=["scanned", "marked", "indexed", "fuelled"])
def batches(request, monkeypatch):
    """Small batches are scanned and copied at each step; mid-sized ones are scanned and keep
    departed rows as dead rows (``marked`` makes every batch mid-sized); big ones are read
    through their step index and keep dead rows too: ``indexed`` makes every batch big;
    ``fuelled`` also makes merges of 24 rows or more fuelled (a slice at a time, so steps
    mark bins dead in batches that merges are reading)."""
    from diffflow.arrangements import merging, spine
    from diffflow.runtime.rescale import migrate

    monkeypatch.setattr(migrate, "DEAD_MARKED", 1 if request.param == "marked" else 1 << 40)
    if request.param in ("indexed", "fuelled"):
        monkeypatch.setattr(migrate, "INDEXED", 1)
    if request.param == "fuelled":
        monkeypatch.setattr(spine, "EAGER_MERGE", 24)
        monkeypatch.setattr(merging, "MIN_SLICE", 1)
    return request.param


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("seed", SEEDS)
def test_local_outputs_match_a_run_that_never_rescaled(program, seed, batches):
    plans = run_case(PROGRAMS[program], seed, {}, start_parts=1 + seed % 3)
    assert len(plans) == 3 and plans[-1].done
    assert sum(p.rows_moved for p in plans) > 0


@pytest.mark.slow
@pytest.mark.parametrize("program", ["join_aggregate", "loops"])
@pytest.mark.parametrize("seed", range(4))
def test_cluster_outputs_match_a_run_that_never_rescaled(program, seed, batches):
    run_case(PROGRAMS[program], seed, {"runtime": "cluster"}, start_parts=1 + seed % 2)


@pytest.mark.slow
def test_the_partition_count_walks_1_3_2_4_and_state_follows():
    flow = dd.Dataflow(partitions=1)
    e = flow.input("e", ["a", "b"])
    out = graphs.connected_components(e).output()
    count = e.aggregate(by=["a"], n=dd.count()).output()
    reference = dd.Dataflow(partitions=1)
    re_ = reference.input("e", ["a", "b"])
    ref_out = graphs.connected_components(re_).output()
    edges = [(i, (i * 7 + 3) % 40) for i in range(40)]
    for handle in (e, re_):
        handle.insert(edges)
    flow.advance()
    reference.advance()
    sizes, extra = [], []
    for target, strategy in ((3, "batched"), (2, "fluid"), (4, "all_at_once")):
        plan = flow.rescale(partitions=target, strategy=strategy, max_rows_per_step=20,
                            bins_per_step=BINS // 5)
        epochs = 0
        while flow.migration is not None:
            assert flow.migration.bins_left > 0
            extra.append((100 + len(extra), 200 + target))
            e.insert([extra[-1]])
            re_.insert([extra[-1]])
            flow.advance()
            reference.advance()
            epochs += 1
            check_invariants(flow)
        assert plan.done and flow.partitions == target and epochs == len(plan.steps)
        assert out.snapshot() == ref_out.snapshot()
        per_partition = [sum(len(s) for s in eng.traces()) for eng in flow._runtime.engines.values()]
        assert len(per_partition) == target and min(per_partition) > 0
        sizes.append(plan.rows_moved)
    assert all(n > 0 for n in sizes)
    sources = [a for a, _ in edges] + [a for a, _ in extra]
    assert count.snapshot() == {(a, n): 1 for a, n in Counter(sources).items()}


def test_errors_are_clear_and_change_nothing():
    flow, a, out = distinct_of(range(10))
    with pytest.raises(ValueError, match="unknown rescaling strategy 'slow'; choose one of "
                                         "all_at_once, fluid, batched, restart$"):
        flow.rescale(partitions=3, strategy="slow")
    with pytest.raises(ValueError, match="'restart' cannot rebalance"):
        flow.rebalance(strategy="restart")
    with pytest.raises(ValueError, match="partitions must be a positive int"):
        flow.rescale(partitions=0)
    with pytest.raises(ValueError, match="720720 entries"):
        flow.rescale(table=np.zeros(10, np.int32))
    with pytest.raises(ValueError, match=r"names partition 5; there are 2 \(0\.\.1\)"):
        flow.rescale(table=np.full(BINS, 5, np.int32), partitions=2)
    with pytest.raises(ValueError, match="max_rows_per_step must be a positive int"):
        flow.rescale(partitions=3, max_rows_per_step=0)
    with pytest.raises(ValueError, match="start_epoch"):
        flow.rescale(partitions=3, start_epoch=0)
    assert flow.migration is None and flow.partitions == 2
    plan = flow.rescale(partitions=3, strategy="fluid", bins_per_step=BINS // 10)
    with pytest.raises(dd.GraphError, match="a rescaling plan is running"):
        flow.rescale(partitions=4)
    assert flow.migration is plan
    with pytest.raises(dd.GraphError, match="needs worker processes"):
        flow.rescale(partitions=4, strategy="restart", replace=True)
    assert flow.migration is plan
    a.insert([99])
    flow.advance()
    assert sorted(out.snapshot()) == [(i,) for i in list(range(10)) + [99]]


def test_a_plan_prepared_ahead_waits_for_its_epoch():
    flow, a, out = distinct_of(range(30))
    plan = flow.rescale(partitions=3, strategy="all_at_once", start_epoch=flow.epoch + 2)
    assert plan.steps[0].epoch == 3
    flow.advance()
    assert flow.partitions == 2 and not plan.done
    flow.advance()
    assert flow.partitions == 2
    flow.advance()
    assert flow.partitions == 3 and plan.done and flow.migration is None
    assert len(out.snapshot()) == 30
    report = plan.report()
    assert report[0]["applied"] and report[0]["rows_moved"] > 0


def test_default_table_keeps_todays_layout():
    """Bins with the default table ``bin % P`` route exactly as ``hash % P`` for P <= 16."""
    from diffflow.arrangements import columnar
    from diffflow.runtime.routing import Routing

    keys = np.random.default_rng(1).integers(-2**62, 2**62, size=(5000, 2))
    for parts in range(1, 17):
        table = np.arange(BINS, dtype=np.int32) % parts
        assert (columnar.owner_by_table(keys, table) == columnar.partition_of(keys, parts)).all()
        assert Routing(parts, table).is_default
    assert not Routing(17).is_default  # 17 does not divide the bin count: routed by table


# -- worker processes: growing, shrinking, restarting across P, a worker lost mid-migration ------
def _words(flow):
    words = flow.input("words", [("w", str), ("n", int)])
    edges = flow.input("edges", ["a", "b"])
    totals = words.aggregate(by=["w"], total=dd.sum("n"), k=dd.count()).output()
    comps = graphs.connected_components(edges).output()
    return words, edges, [totals, comps]


def _batch(epoch: int):
    words = [(f"w{(epoch * 7 + i) % 23}", i + epoch) for i in range(6)]
    edges = [((epoch * 5 + i) % 30, (epoch * 11 + 3 * i) % 30) for i in range(4)]
    return words, edges


def _lockstep(local, remote, epochs, on_epoch) -> None:
    """Feed both flows the same batches; ``on_epoch(epoch)`` acts on ``remote`` before each
    advance; outputs compared after every epoch (snapshots and changes)."""
    (lw, le, louts), (rw, re_, routs) = local, remote
    for epoch in epochs:
        words, edges = _batch(epoch)
        for w, e in ((lw, le), (rw, re_)):
            w.insert(words)
            e.insert(edges)
            if epoch % 3 == 2:
                w.remove(words[:2])
        on_epoch(epoch)
        lw.flow.advance()
        rw.flow.advance()
        for a, b in zip(louts, routs):
            assert b.snapshot() == a.snapshot(), epoch
            assert b.changes() == a.changes(), epoch
        rw.flow._runtime.check_owners()
        rw.flow._runtime.check_traces()


def _epochs(finished, at_least: int, cap: float = 300.0):
    """Epoch numbers: ``at_least`` of them, then more until ``finished()`` (a plan that adds
    partitions waits, an epoch at a time, until its workers have started: bounded by time,
    ``cap`` seconds, not by epochs, since a loaded machine starts processes slowly)."""
    import time

    epoch, deadline = 0, time.monotonic() + cap
    while epoch < at_least or not finished():
        assert time.monotonic() < deadline, f"the plan never finished ({epoch} epochs)"
        yield epoch
        epoch += 1


@pytest.mark.slow
def test_worker_processes_grow_and_shrink_live():
    local = dd.Dataflow(partitions=2)
    remote = dd.Dataflow(partitions=2, runtime="processes")
    built = [_words(local), _words(remote)]
    workers, plans = [], []

    def act(epoch):
        if epoch == 2:
            plans.append(remote.rescale(partitions=4, strategy="batched", max_rows_per_step=15))
        elif len(plans) == 1 and remote.migration is None:
            assert remote.partitions == 4
            plans.append(remote.rescale(partitions=3, strategy="fluid", bins_per_step=BINS // 4))
        if remote._runtime is not None:
            workers.append(len(remote._runtime.worker_pids()))

    try:
        _lockstep(built[0], built[1],
                  _epochs(lambda: len(plans) == 2 and remote.migration is None, 14), act)
        assert remote.partitions == 3 and len(remote._runtime.worker_pids()) == 3
        assert workers[:2] == [2, 2] and 4 in workers
        assert remote._runtime.transport.taken_ahead == 2  # started before the first step
    finally:
        remote.close()


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint_every", [None, 2])
def test_a_worker_killed_mid_migration_recovers_exactly(checkpoint_every):
    import os
    import signal

    local = dd.Dataflow(partitions=2)
    remote = dd.Dataflow(partitions=2, runtime="processes", checkpoint_every=checkpoint_every)
    built = [_words(local), _words(remote)]

    killed = []

    def act(epoch):
        if epoch == 2:
            remote.rescale(partitions=3, strategy="fluid", bins_per_step=BINS // 20)
        plan = remote.migration
        if not killed and plan is not None and plan.progress[0] == 2:
            killed.append(epoch)  # two of seven steps done; the new worker dies
            os.kill(remote._runtime.worker_pids()[2], signal.SIGKILL)

    try:
        _lockstep(built[0], built[1], _epochs(lambda: killed and remote.migration is None, 10),
                  act)
        assert remote._runtime.recoveries == 1
        assert remote.migration is None and remote.partitions == 3
    finally:
        remote.close()


@pytest.mark.slow
def test_restart_rescales_through_a_checkpoint_written_at_another_p():
    local = dd.Dataflow(partitions=2)
    remote = dd.Dataflow(partitions=2, runtime="processes", checkpoint_every=3)
    built = [_words(local), _words(remote)]
    plans = []

    def act(epoch):
        if epoch == 3:
            plans.append(remote.rescale(partitions=4, strategy="restart"))
            assert remote.partitions == 4 and len(remote._runtime.worker_pids()) == 4
        if epoch == 7:
            plans.append(remote.rescale(partitions=1, strategy="restart"))

    try:
        _lockstep(built[0], built[1], range(10), act)
        assert [p.done for p in plans] == [True, True] and remote.partitions == 1
        assert remote._runtime.recoveries == 0
    finally:
        remote.close()


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["all_at_once", "batched"])
def test_bins_that_leave_and_come_back_do_not_revive_dead_rows(monkeypatch, strategy):
    """Big batches keep a departed bin's rows as dead rows; when the bin returns (with its
    rows, from the other partition) joins, aggregates and lookups must read the returned
    rows once, never the dead copies."""
    from diffflow.runtime.rescale import migrate

    monkeypatch.setattr(migrate, "INDEXED", 64)
    monkeypatch.setattr(migrate, "DEAD_MARKED", 64)
    flows = [dd.Dataflow(partitions=2) for _ in range(2)]
    built = []
    for flow in flows:
        e = flow.input("e", ["a", "b"])
        f = flow.input("f", ["a", "c"])
        built.append((e, f, [e.join(f, on="a").output(),
                             e.aggregate(by=["a"], n=dd.count(), s=dd.sum("b")).output()]))
    start = [(a, a % 11) for a in range(3000)]
    for e, f, _ in built:
        e.insert(start)
        f.insert([(a, 7) for a in range(0, 3000, 3)])
    for flow in flows:
        flow.advance()
    away = np.arange(BINS, dtype=np.int32) % 2
    away[: BINS // 4] = 1 - away[: BINS // 4]  # a quarter of the bins change partition
    home = np.arange(BINS, dtype=np.int32) % 2
    tables = [away, home, away, home]
    seen_dead = False
    for epoch in range(40):
        if flows[1].migration is None and tables:  # (batched steps may wait for indexing)
            flows[1].rescale(table=tables.pop(0), partitions=2, strategy=strategy,
                             max_rows_per_step=500)
        for e, f, _ in built:
            e.insert([(a, epoch) for a in range(epoch, 3000, 97)])
            f.insert([(a, epoch) for a in range(epoch, 3000, 89)])
            e.remove([(a, a % 11) for a in range(epoch * 3, 3000, 211)])
        for flow in flows:
            flow.advance()
        dead = sum(b.dead_rows for eng in flows[1]._runtime.engines.values()
                   for s in eng.traces() for b in s.batches)
        for ours, theirs in zip(built[1][2], built[0][2]):
            assert ours.snapshot() == theirs.snapshot(), epoch
        check_invariants(flows[1])
        seen_dead |= dead > 0 and len(tables) == 2  # when the bins come back, next plan
    assert not tables and seen_dead
    while flows[1].migration is not None:
        for flow in flows:
            flow.advance()
    for ours, theirs in zip(built[1][2], built[0][2]):
        assert ours.snapshot() == theirs.snapshot()


@pytest.mark.slow
def test_half_dead_batches_are_copied_live_a_slice_at_a_time(monkeypatch):
    """Growing 1 -> 4 leaves three quarters of each old batch dead; epochs after the steps
    copy those batches without their dead rows, a budget of rows at a time, outputs exact
    throughout."""
    from diffflow.runtime.rescale import migrate, pacing

    monkeypatch.setattr(migrate, "INDEXED", 64)
    monkeypatch.setattr(migrate, "DEAD_MARKED", 64)
    monkeypatch.setattr(pacing, "PREPARE_SLICE", 500)  # copies span several epochs
    monkeypatch.setattr(pacing, "BACKGROUND_SHARE", 0)
    monkeypatch.setattr(pacing, "PREPARE_WAIT", 0)  # (steps scan what is not indexed)
    flows = [dd.Dataflow(partitions=1) for _ in range(2)]
    built = []
    for flow in flows:
        e = flow.input("e", ["a", "b"])
        built.append((e, [e.join(e.select(a="b", c="a"), on="a").output(),
                          e.aggregate(by=["a"], n=dd.count()).output()]))
    for e, _ in built:
        e.insert([(a, (a * 7) % 3000) for a in range(3000)])
    for flow in flows:
        flow.advance()
    flows[1].rescale(partitions=4, strategy="batched", max_rows_per_step=800)
    seen_dead, copying, epoch = 0, 0, 0
    while flows[1].migration is not None or flows[1]._rescaling.work:
        for e, _ in built:  # existing keys too: their counts and matches read the traces
            e.insert([((epoch * 37 + j * 101) % 3000, epoch) for j in range(30)])
        for flow in flows:
            flow.advance()
        batches = [b for eng in flows[1]._runtime.engines.values() for s in eng.traces()
                   for b in s.batches]
        seen_dead = max(seen_dead, sum(b.dead_rows for b in batches))
        copying += sum(b._live_copy is not None for b in batches)
        for ours, theirs in zip(built[1][1], built[0][1]):
            assert ours.snapshot() == theirs.snapshot(), epoch
        check_invariants(flows[1])
        epoch += 1
        assert epoch < 200
    batches = [b for eng in flows[1]._runtime.engines.values() for s in eng.traces()
               for b in s.batches]
    assert seen_dead > 0 and copying > 0  # dead rows were there, copies spanned epochs
    assert all(2 * b.dead_rows < len(b) for b in batches if b.dead is not None)


def test_several_steps_at_one_boundary_and_plans_from_the_past_are_refused():
    flow, a, out = distinct_of(range(100))
    plan = flow.rescale(partitions=4, strategy="fluid", bins_per_step=100_000,
                        steps_per_epoch=2)
    assert [s.epoch for s in plan.steps] == [1, 1, 2, 2]
    workers_started(flow)
    a.insert([1000])
    flow.advance()  # two steps at this boundary
    assert plan.progress == (2, 4) and flow.partitions == 4
    flow.advance()
    assert plan.done and len(out.snapshot()) == 101
    with pytest.raises(ValueError, match="start_epoch must be an int >= the open epoch 3"):
        flow.rebalance(start_epoch=-5)
    with pytest.raises(TypeError, match="partitions"):
        flow.rebalance(partitions=5)  # rebalance keeps the count: rescale changes it
    for table, match in ((-np.ones(BINS, np.int32), "names partition -1; partitions are "
                          "numbered from 0"),
                         (np.zeros(BINS, np.int32), r"partitions must be a positive int")):
        with pytest.raises(ValueError, match=match):
            flow.rescale(table=table, partitions=0 if match.startswith("partitions") else None)
    with pytest.raises(ValueError, match="at most 720720"):
        flow.rescale(partitions=10**6)
    assert flow.migration is None and flow.partitions == 4


@pytest.mark.slow
def test_restart_checks_its_arguments_and_replaces_a_running_plan():
    flow, a, out = distinct_of(range(100), runtime="processes")
    try:
        for bad, match in ((0, "positive int"), ("3", "positive int"), (None, "positive int")):
            with pytest.raises(ValueError, match=match):
                flow.rescale(partitions=bad, strategy="restart")
        with pytest.raises(ValueError, match="partition numbers"):
            flow.rescale(table=np.full(BINS, 1.7), partitions=2, strategy="restart")
        assert flow.partitions == 2 and len(flow._runtime.worker_pids()) == 2
        old = flow.rescale(partitions=4, strategy="fluid", bins_per_step=100_000)
        a.insert([1000])
        flow.advance()
        assert not old.done
        flow.rescale(partitions=3, strategy="restart", replace=True)
        assert flow.migration is None and flow.partitions == 3
        for i in range(4):
            a.insert([2000 + i])
            flow.advance()
        assert flow.partitions == 3 and len(out.snapshot()) == 105
        flow._runtime.check_owners()
    finally:
        flow.close()


@pytest.mark.slow
def test_every_plan_indexes_batches_under_its_own_key(monkeypatch):
    """Batches keep a plan's step index under the plan's key, so keys must never repeat.
    Keys once came from ``id(plan)``, which a later plan reused after the first was freed;
    that plan read rows through a stale index and left them on the wrong partition.  Here
    every object has the same address: keys must still differ."""
    from diffflow.api import flow as flow_module

    monkeypatch.setattr(flow_module, "id", lambda obj: 7, raising=False)
    flow = dd.Dataflow(partitions=2)
    e = flow.input("e", ["a", "b"])
    counts = e.aggregate(by=["a"], n=dd.count()).output()
    e.insert([(a, a) for a in range(200)])
    flow.advance()
    keys = []
    for parts in [3, 2, 3, 2]:
        flow.rescale(partitions=parts, strategy="batched", max_rows_per_step=50)
        keys.append(flow._runtime._plan[0])
        while flow.migration is not None:
            flow.advance()
        check_invariants(flow)
    assert len(set(keys)) == len(keys)
    assert counts.snapshot() == Counter({(a, 1): 1 for a in range(200)})


def test_bins_leaving_while_a_live_copy_is_half_done_stay_dead_in_the_copy():
    """prepare() copies a half-dead batch a slice at a time; a step in between kills more
    bins: rows of those bins already copied must be dead in the finished copy (they were
    read back as live rows before)."""
    from diffflow.arrangements.batch import Batch
    from diffflow.arrangements.updates import Updates
    from diffflow.lattice import Antichain
    from diffflow.runtime.rescale import migrate

    rows = np.arange(100, dtype=np.int64).reshape(-1, 1)
    batch = Batch.from_updates(Updates(rows, np.zeros((100, 1), np.int64),
                                       np.ones(100, np.int64)), 1,
                               Antichain([(0,)]), Antichain([(1,)]))
    bins = batch.bins(BINS)

    def kill(positions):
        dead = np.zeros(BINS, bool) if batch.dead is None else batch.dead.copy()
        fresh = np.isin(bins, bins[positions]) & ~dead[bins]
        dead[bins[positions]] = True
        batch.dead, batch.dead_rows = dead, batch.dead_rows + int(fresh.sum())

    kill(np.arange(50, 100))  # half dead: prepare copies the live half
    copy, _ = migrate._copy_live(batch, 10)
    assert copy is None  # rows 0..9 copied so far
    kill(np.arange(0, 5))  # a step: the bins of rows 0..4 leave
    copy, _ = migrate._copy_live(batch, 10 ** 6)
    copy._check()
    assert np.array_equal(copy.live().rows, batch.live().rows)
    assert copy.dead_rows == len(copy) - len(batch.live()) == 5
    assert copy.bins_ready(BINS)  # (carried over from the batch's, slice by slice)
    np.testing.assert_array_equal(copy._bins[1], bins[np.isin(rows[:, 0], copy.rows[:, 0])])


def test_batched_steps_move_the_rows_their_plan_says_and_keep_the_budget():
    # 40 keys, 2 trace rows each (the input's and distinct's): the plan counts each bin's
    # rows, so every step moves what it planned, within max_rows_per_step
    flow, a, out = distinct_of(range(40))
    plan = flow.rescale(partitions=3, max_rows_per_step=2)
    while not plan.done:
        flow.advance()
    report = plan.report()
    assert [r["rows_moved"] for r in report] == [r["rows_planned"] for r in report]
    assert max(r["rows_moved"] for r in report) == 2
    assert sum(r["rows_moved"] for r in report) > 2 and sorted(out.snapshot()) == \
        [(i,) for i in range(40)]
    # a bin holds 2 rows: with a budget of 1, steps are over it, and say so
    plan = flow.rescale(partitions=2, max_rows_per_step=1)
    over = [s for s in plan.steps if s.rows_planned > 1]
    assert over and all(s.over_budget == 1 for s in over)
    assert "(a single bin over max_rows_per_step=1: bins move whole)" in repr(over[0])
    assert all(s.over_budget is None for s in plan.steps if s.rows_planned <= 1)
