"""Workers started ahead of the rescaling step that needs them (diffflow.runtime.start_ahead).

On worker processes: a plan 2 -> 3 starts the third worker in the background when it is
planned, and its first step runs only once the worker is ready (the transport counts the
workers steps took ready-made); outputs equal a from-scratch local computation at every
epoch, strings interned meanwhile included.  A plan replaced, or a dataflow closed, before
its step hands the workers back to the pool (every process launched is then idle in the
pool or held: none is stray).  A start that fails is reported by the step, in one message,
and the next attempt starts the worker then.  A restart at a later epoch gets the worker it
lacks started meanwhile.  Runtimes with nothing to start (local, in-memory) never wait.
"""
from __future__ import annotations

import time

import pytest

import diffflow as dd
from diffflow import graphs
from diffflow.runtime import worker_pool
from diffflow.runtime.worker_pool import ProcessLauncher, WorkerPool

pytestmark = pytest.mark.local_runtime  # (each test picks its runtime)


def build(flow):
    words = flow.input("words", [("w", str), ("n", int)])
    edges = flow.input("edges", ["a", "b"])
    outs = [words.aggregate(by=["w"], total=dd.sum("n"), k=dd.count()).output(),
            graphs.connected_components(edges).output()]
    return (words, edges), outs


class Feed:
    """Epoch after epoch: new words (strings interned after any plan), edges in and out;
    checks a dataflow's outputs against a local dataflow built from scratch."""

    def __init__(self):
        self.words: list = []
        self.edges: set = set()

    def epoch(self, inputs, epoch: int) -> None:
        words = [(f"w{epoch}-{i % 3}", i + epoch) for i in range(5)]
        edges = {((epoch * 5 + i) % 23, (epoch * 11 + 3 * i) % 23) for i in range(4)}
        gone = sorted(self.edges)[:2] if epoch % 3 == 2 else []
        inputs[0].insert(words)
        inputs[1].insert(sorted(edges - self.edges))
        inputs[1].remove(gone)
        self.words += words
        self.edges = (self.edges | edges) - set(gone)

    def check(self, outs, epoch) -> None:
        scratch = dd.Dataflow(partitions=1)
        inputs, expected = build(scratch)
        inputs[0].insert(self.words)
        inputs[1].insert(sorted(self.edges))
        scratch.advance()
        for got, want in zip(outs, expected):
            assert got.snapshot() == want.snapshot(), epoch


@pytest.fixture
def own_pool(monkeypatch):
    """A pool of worker processes of the test's own (so what it launched can be counted)."""
    pools = []

    def make(launcher=None, **kw):
        pool = WorkerPool(launcher or ProcessLauncher(), **kw)
        monkeypatch.setattr(worker_pool, "_PROCESS_POOL", pool)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        procs = list(pool.launcher.procs)
        pool.close()
        assert all(proc.poll() is not None for proc in procs)


def live_pids(pool) -> set:
    return {proc.pid for proc in pool.launcher.procs if proc.poll() is None}


def run_until(flow, inputs, outs, feed, finished, first: int = 0, cap: float = 300.0) -> int:
    """Epochs from ``first`` until ``finished()``, outputs checked after each (bounded by
    ``cap`` seconds, not by epochs: a loaded machine starts a plan's worker slowly)."""
    epoch, deadline = first, time.monotonic() + cap
    while not finished():
        assert time.monotonic() < deadline, f"the plan never finished ({epoch - first} epochs)"
        feed.epoch(inputs, epoch)
        flow.advance()
        feed.check(outs, epoch)
        epoch += 1
    return epoch


@pytest.mark.slow
def test_a_plan_adding_partitions_starts_its_worker_before_its_first_step():
    flow = dd.Dataflow(partitions=2, runtime="processes")
    inputs, outs = build(flow)
    feed = Feed()
    try:
        for epoch in range(2):
            feed.epoch(inputs, epoch)
            flow.advance()
        transport = flow._runtime.transport
        plan = flow.rescale(partitions=3, strategy="batched", max_rows_per_step=10)
        ahead = transport.ahead
        assert ahead.what == ("live", 2, 3)  # started in the background, now
        first_step = []

        def finished():
            if plan.progress[0] and not first_step:  # the first step took a ready worker
                first_step.append(transport.taken_ahead)
            return flow.migration is None

        run_until(flow, inputs, outs, feed, lambda: flow.epoch >= 4 or finished(), first=2)
        ahead.thread.join()  # (it runs at the lowest priority: a busy machine makes it slow)
        run_until(flow, inputs, outs, feed, finished, first=flow.epoch)
        assert first_step == [1] and plan.done and len(plan.steps) > 1
        assert flow.partitions == 3 and len(flow._runtime.worker_pids()) == 3
        assert transport.ahead is None and flow._runtime.recoveries == 0
        flow._runtime.check_owners()
    finally:
        flow.close()


def first_epoch_on_processes(own_pool):
    """A dataflow on 2 worker processes of a pool of its own, its first epoch computed."""
    pool = own_pool()
    flow = dd.Dataflow(partitions=2, runtime="processes")
    inputs, outs = build(flow)
    feed = Feed()
    feed.epoch(inputs, 0)
    flow.advance()
    return pool, flow, inputs, outs, feed


@pytest.mark.slow
def test_a_replaced_plan_and_a_closed_dataflow_give_their_workers_back(own_pool):
    pool, flow, inputs, outs, feed = first_epoch_on_processes(own_pool)
    transport = flow._runtime.transport
    later = flow.epoch + 1000  # (never due here)
    flow.rescale(partitions=4, strategy="batched", start_epoch=later)
    first = transport.ahead
    flow.rescale(partitions=3, strategy="fluid", start_epoch=later, replace=True)
    second = transport.ahead
    assert first is not second and second.what == ("live", 2, 3)
    first.thread.join()  # (replaced while it started: its workers went back when it ended)
    second.thread.join()
    assert first.workers == [] and pool.taken == 3  # the dataflow's 2, the plan's 1
    assert live_pids(pool) == {w[2] for w in pool.idle + transport.workers + second.workers}
    flow.rescale(partitions=2, strategy="fluid", replace=True)  # no partition to add
    assert transport.ahead is None and second.workers == [] and pool.taken == 2
    flow.rescale(partitions=4, strategy="batched", start_epoch=later, replace=True)
    third = transport.ahead
    feed.epoch(inputs, 1)
    flow.advance()
    feed.check(outs, 1)
    flow.close()  # (maybe while the start is under way: the workers go back when it ends)
    third.thread.join()
    assert pool.taken == 0 and third.workers == []
    assert live_pids(pool) == {w[2] for w in pool.idle}  # every process idle in the pool


class LaunchFails(ProcessLauncher):
    """Launches worker processes until told to fail, as a cluster without a free slot does."""

    fail = False

    def launch(self, count, address, authkey, bind_host, **options):
        if self.fail:
            raise RuntimeError("no free slot for another partition worker (test)")
        super().launch(count, address, authkey, bind_host, **options)


@pytest.mark.slow
def test_a_failed_start_is_reported_by_the_step_and_the_next_attempt_starts_it(own_pool):
    pool = own_pool(LaunchFails())
    flow = dd.Dataflow(partitions=2, runtime="processes")
    inputs, outs = build(flow)
    feed = Feed()
    feed.epoch(inputs, 0)
    flow.advance()
    pool.launcher.fail = True
    plan = flow.rescale(partitions=3, strategy="batched")
    feed.epoch(inputs, 1)
    with pytest.raises(RuntimeError, match=r"starting the partition worker\(s\) for partitions "
                                           r"2\.\.2 in the background failed: no free slot"):
        for _ in range(2000):  # (the step waits an epoch at a time until the start ended)
            flow.advance()
            feed.check(outs, 1)
            feed.epoch(inputs, 1)
    assert flow.partitions == 2 and not plan.progress[0] and pool.taken == 2
    pool.launcher.fail = False
    flow.advance()  # the step again: the worker starts now
    feed.check(outs, 1)
    run_until(flow, inputs, outs, feed, lambda: flow.migration is None, first=2)
    assert flow.partitions == 3 and flow._runtime.transport.taken_ahead == 0
    flow.close()
    assert live_pids(pool) == {w[2] for w in pool.idle} and len(pool.idle) == 3


@pytest.mark.slow
def test_a_step_that_runs_out_of_patience_starts_its_own_worker(own_pool, monkeypatch):
    """A machine too busy to run the start ahead (it runs at the lowest priority): after
    start_ahead.PATIENCE seconds (here none) the step starts its worker itself, and the
    start ahead, cancelled, leaves its worker idle in the pool."""
    from diffflow.runtime import start_ahead

    monkeypatch.setattr(start_ahead, "PATIENCE", -1.0)
    pool, flow, inputs, outs, feed = first_epoch_on_processes(own_pool)
    transport = flow._runtime.transport
    flow.rescale(partitions=3, strategy="batched")
    ahead = transport.ahead
    end = run_until(flow, inputs, outs, feed, lambda: flow.migration is None, first=1)
    ahead.thread.join()
    assert transport.taken_ahead in (0, 1)  # (0 unless the start was done at the step)
    assert flow.partitions == 3 and pool.taken == 3 and len(pool.idle) == 1 - transport.taken_ahead
    assert live_pids(pool) == {w[2] for w in pool.idle + transport.workers}
    feed.epoch(inputs, end)
    flow.advance()
    feed.check(outs, end)
    flow.close()


@pytest.mark.slow
def test_a_restart_at_a_later_epoch_starts_the_worker_it_lacks_meanwhile(own_pool):
    pool, flow, inputs, outs, feed = first_epoch_on_processes(own_pool)
    transport = flow._runtime.transport
    start = flow.epoch + 3
    plan = flow.rescale(partitions=3, strategy="restart", start_epoch=start)
    assert flow.migration is plan and transport.ahead.what == ("restart", 1)
    transport.ahead.thread.join()
    assert len(pool.idle) == 1 and flow.partitions == 2  # started, idle until the restart
    for epoch in range(1, start + 2):  # (the advance closing epoch ``start`` applies it)
        feed.epoch(inputs, epoch)
        flow.advance()
        feed.check(outs, epoch)
        assert plan.done == (epoch >= start) and flow.partitions == (3 if plan.done else 2)
    assert flow.migration is None and flow._runtime.recoveries == 0
    assert len(pool.launcher.procs) == 3  # the restart reused the two and took the third
    flow.close()


@pytest.mark.parametrize("runtime", ["local", "cluster"])
def test_runtimes_without_processes_never_wait(runtime):
    flow = dd.Dataflow(partitions=2, runtime=runtime)
    inputs, outs = build(flow)
    feed = Feed()
    feed.epoch(inputs, 0)
    flow.advance()
    plan = flow.rescale(partitions=3, strategy="fluid", bins_per_step=10**6)
    feed.epoch(inputs, 1)
    flow.advance()
    feed.check(outs, 1)
    assert plan.done and plan.waited == 0 and flow.partitions == 3
