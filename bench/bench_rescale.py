"""Live rescaling, measured Megaphone's way (RESCALE.md §4): open-loop epochs, latency timelines.

Usage::

    python bench/bench_rescale.py                       # both workloads, three strategies
    python bench/bench_rescale.py --workloads count --keys 10000000 --runtime processes
    python bench/bench_rescale.py --workloads graph --graph ego-twitter

* **count**: ``aggregate(by=k, n=count())`` over ``--keys`` keys (10M by default) on
  ``--partitions`` partitions; every epoch inserts ``--rate`` random keys.  Epochs are
  scheduled open loop every ``--period`` seconds; an epoch's latency is when its
  ``advance()`` returns minus when the schedule says it starts, so a stall shows up as
  queueing in the epochs after it.  At 1/3 of the run a quarter of the bins move (the
  first half of the bins packed onto partition 0, Megaphone's uniform -> skew), at 2/3
  they move back; each plan is made ``--prepare`` epochs ahead of its first step.
* **graph**: reachability from 10 roots and connected components of a SNAP graph
  (``--graph``, ego-Twitter by default), rescaled 2 -> 4 partitions at 1/3 of the run
  under batches of 10 inserted + 10 removed edges per epoch.
* **routing**: the steady-state cost of routing by a bin table against ``hash % P``: the
  count workload without migrations, alternating runs of each; and the routing kernels'
  throughput.
* **plan**: what a plan that adds partitions costs the epochs around it (the workers it
  adds start in the background, ahead of its first step): reachability from 10 roots and
  connected components of ``--plan-edges`` random edges (seeded) on 2 partitions, epochs of
  15 inserted + 15 removed edges back to back; ``--plan-steady`` epochs with no plan, then a
  batched 2 -> 3 plan (the epochs until its last step), ``--plan-steady`` epochs on 3
  partitions, then an all-at-once 3 -> 1 step.  With ``--runtime processes`` or ``spark``
  (``local_session("local[3]")``) a new worker is launched by the plan.  Prints the steady
  p50 before (and the worst epoch before: a worker's first epochs) and after, the worst
  epoch of the plan (from the ``rescale`` call to its last step) against the steady p50,
  the epochs the first step waited for its worker, and the 3 -> 1 step's epoch.  ``--plan-runs`` runs, each in a fresh pool of workers.
* **explain**: explanation latency per runtime (``--explain-runtimes``, at P = 2):
  reachability from 10 roots over ``--explain-edges`` random edges with ``explain=True``;
  ``output.explain`` of one row (``--explain-rows`` random rows, ``--explain-repeats``
  times; p50, p90, and the p50 against the local runtime's), and the p50 epoch of 15 + 15
  edges while 20 live explanations are kept current.

For each workload and strategy it prints steady-state p50/p99 (a control run of the same
workload, as many epochs as the longest run, with no plan; see :func:`summarize`), the
p50/p99 of the epochs before the first plan, p99/max of the epochs preparing a plan (from the call to ``rescale`` to its first
step: they index the state by step in the background), p50/p99/max of the epochs while
steps run, migration duration (first step's
scheduled start to the end of the last step's epoch), rows moved, and per-worker peak
RSS (worker processes with ``--runtime processes``; the whole process otherwise).  It
draws latency over time per strategy into ``--plot`` (a PNG).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import diffflow as dd  # noqa: E402
from diffflow import graphs  # noqa: E402
from diffflow.runtime.routing import BINS  # noqa: E402

STRATEGIES = ("all_at_once", "fluid", "batched")


def rss_mb(pid: int) -> float:
    """Resident set size of a process, MB (from /proc)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return 0.0


def worker_pids(flow) -> list:
    pids = flow._runtime.worker_pids() if hasattr(flow._runtime, "worker_pids") else []
    return pids or [os.getpid()]


def default_table(parts: int) -> np.ndarray:
    """The routing table a dataflow starts with: bin ``b`` on partition ``b % parts``."""
    return np.arange(BINS, dtype=np.int32) % parts


def skew_table(parts: int) -> np.ndarray:
    """Megaphone's uniform -> skew: the first half of the bins on partition 0."""
    table = default_table(parts)
    table[: BINS // 2] = 0
    return table


def strategy_options(strategy: str, args) -> dict:
    if strategy == "fluid":
        return {"bins_per_step": args.fluid_bins}
    if strategy == "batched":
        return {"max_rows_per_step": args.batch_rows}
    return {}


class OpenLoop:
    """Epochs started on a fixed schedule; latency = end - scheduled start."""

    def __init__(self, flow, period: float):
        self.flow, self.period = flow, period
        self.latency, self.when, self.stepped, self.rss = [], [], [], {}
        self.plans_made = []  # the epoch (index) at which each plan was made
        self.start = None

    def epoch(self, feed) -> None:
        i = len(self.latency)
        if self.start is None:
            self.start = time.perf_counter()
        scheduled = self.start + i * self.period
        now = time.perf_counter()
        if now < scheduled:
            time.sleep(scheduled - now)
        feed()
        plan = self.flow.migration
        before = plan.progress[0] if plan is not None else 0
        self.flow.advance()
        end = time.perf_counter()
        self.latency.append(end - scheduled)
        self.when.append(scheduled - self.start)
        self.stepped.append(plan is not None and plan.progress[0] > before)
        for j, pid in enumerate(worker_pids(self.flow)):
            self.rss[j] = max(self.rss.get(j, 0.0), rss_mb(pid))


def open_loop(flow, feed, period: float, utilization: float | None) -> OpenLoop:
    """The open loop for a workload: every ``period`` seconds or, with ``utilization``, at
    the period that keeps the machine that busy in steady state (20 closed-loop epochs
    measure the median epoch first), so runs on faster and slower machines compare."""
    if utilization:
        took = []
        for _ in range(20):
            feed()
            t0 = time.perf_counter()
            flow.advance()
            took.append(time.perf_counter() - t0)
        period = float(np.median(took)) / utilization
    loop = OpenLoop(flow, period)
    loop.base_epoch = flow.epoch
    return loop


def summarize(loop: OpenLoop, plans: list, first_plan_epoch: int, control: np.ndarray) -> dict:
    """Figures of one strategy's run against ``control``, the latencies (ms) of the same
    workload run as long with no plan: the steady state.  Per plan, the epochs from its first
    step to its last, plus the queueing after (until latency is back under the steady p99).

    (Why a control run: epochs right after the bulk load are the cheapest a trace ever has
    -- one big batch; as updates arrive the trace's smaller batches fill up until they
    merge, and steady epochs of the count workload drift from ~26 ms to 45-60 ms over a few
    hundred epochs with no rescaling at all.  The epochs before the first plan are reported
    too, as "before the plan".)"""
    lat = np.array(loop.latency) * 1000
    steady = control[5:] if len(control) > 5 else control
    p99 = np.percentile(steady, 99)
    before = lat[5:first_plan_epoch] if first_plan_epoch > 5 else lat[:max(first_plan_epoch, 1)]
    touched, durations, preparing = [], [], []
    for made, plan in zip(loop.plans_made, plans):
        first = min(s.epoch for s in plan.steps) - loop.base_epoch
        last = max(s.epoch for s in plan.steps) - loop.base_epoch
        durations.append(loop.when[last] + loop.latency[last] - loop.when[first])
        preparing.extend(range(made, first))
        end = last
        while end + 1 < len(lat) and lat[end + 1] > p99:
            end += 1
        touched.extend(range(first, end + 1))
    during = lat[sorted(set(touched))]
    prep = lat[sorted(set(preparing) - set(touched))] if preparing else np.zeros(1)
    return {
        "steady_p50_ms": float(np.percentile(steady, 50)),
        "steady_p99_ms": float(p99),
        "before_p50_ms": float(np.percentile(before, 50)),
        "before_p99_ms": float(np.percentile(before, 99)),
        "during_p50_ms": float(np.percentile(during, 50)),
        "during_p99_ms": float(np.percentile(during, 99)),
        "during_max_ms": float(during.max()),
        "preparing_p99_ms": float(np.percentile(prep, 99)),
        "preparing_max_ms": float(prep.max()),
        "steps": [len(p.steps) for p in plans],
        "migration_s": [round(d, 3) for d in durations],
        "step_s_max": max((s.seconds for p in plans for s in p.steps if s.seconds), default=0),
        "rows_moved": [p.rows_moved for p in plans],
        "peak_rss_mb": {str(k): round(v) for k, v in loop.rss.items()},
        "timeline": {"t": loop.when, "latency_ms": lat.tolist(), "stepped": loop.stepped},
    }


def warm_up(args, strategies) -> None:
    """Load (or, after a code change, compile) every kernel a migration uses, on a tiny
    count, so that no measured epoch pays for numba's compilation."""
    small = argparse.Namespace(**vars(args))
    small.keys, small.batch_rows = 20_000, 2_000
    flow, keys, _, _ = count_flow(small)
    rng = np.random.default_rng(0)
    tables = [skew_table(args.partitions), default_table(args.partitions)]
    for strategy in strategies:
        for table in tables:
            flow.rescale(table=table, partitions=args.partitions, strategy=strategy,
                         start_epoch=flow.epoch + 2, **strategy_options(strategy, small))
            while flow.migration is not None:
                keys.insert(rng.integers(0, small.keys, size=(100, 1)))
                flow.advance()
    flow.close()


# -- workloads --------------------------------------------------------------------------------
def count_flow(args):
    flow = dd.Dataflow(partitions=args.partitions, runtime=args.runtime)
    keys = flow.input("keys", ["k"])
    counts = keys.aggregate(by=["k"], n=dd.count()).output()
    start = time.perf_counter()
    for lo in range(0, args.keys, 2_000_000):
        keys.insert(np.arange(lo, min(lo + 2_000_000, args.keys))[:, None])
    flow.advance()
    loaded = time.perf_counter() - start
    return flow, keys, counts, loaded


def run_count(args, strategy: str | None, epochs: int | None = None):
    """One run; ``strategy`` None: the control run, ``epochs`` epochs with no plan."""
    flow, keys, _, loaded = count_flow(args)
    rng = np.random.default_rng(1)
    loop = open_loop(flow, lambda: keys.insert(rng.integers(0, args.keys, size=(args.rate, 1))),
                     args.period, args.utilization)
    plans = []
    third = args.epochs // 3
    tables = [skew_table(args.partitions), default_table(args.partitions)]
    plan_seconds = []
    i = 0
    if strategy is None:
        while i < epochs:
            loop.epoch(lambda: keys.insert(rng.integers(0, args.keys, size=(args.rate, 1))))
            i += 1
        flow.close()
        return np.array(loop.latency) * 1000
    # there at 1/3 of the run, back at 2/3 (or once the first plan is done)
    while i < args.epochs or flow.migration is not None or len(plans) < 2:
        if flow.migration is None and len(plans) < 2 and i >= third * (len(plans) + 1):
            t0 = time.perf_counter()
            loop.plans_made.append(len(loop.latency))
            plans.append(flow.rescale(table=tables[len(plans)], partitions=args.partitions,
                                      strategy=strategy, start_epoch=flow.epoch + args.prepare,
                                      **strategy_options(strategy, args)))
            plan_seconds.append(time.perf_counter() - t0)
        loop.epoch(lambda: keys.insert(rng.integers(0, args.keys, size=(args.rate, 1))))
        i += 1
    extra = dict(load_s=round(loaded, 2), plan_s=[round(s, 3) for s in plan_seconds],
                 period_s=round(loop.period, 4))
    flow.close()
    return loop, plans, third, extra


def run_graph(args, strategy: str | None, epochs: int | None = None):
    """One run; ``strategy`` None: the control run, ``epochs`` epochs with no plan."""
    from datasets import load_graph

    edges_np = load_graph(args.graph, args.data)
    rng = np.random.default_rng(2)
    flow = dd.Dataflow(partitions=2, runtime=args.runtime)
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    reach = graphs.reachable(edges, roots).aggregate(by=[], n=dd.count()).output()
    comps = graphs.connected_components(edges).aggregate(by=[], n=dd.count()).output()
    t0 = time.perf_counter()
    edges.insert(edges_np)
    roots.insert(rng.choice(np.unique(edges_np[:, 0]), 10, replace=False)[:, None])
    flow.advance()
    loaded = time.perf_counter() - t0
    present = {tuple(e) for e in edges_np[rng.choice(len(edges_np), 5000, replace=False)]}
    nodes = np.unique(edges_np)
    third = args.graph_epochs // 3
    plans = []

    def feed():
        gone = [present.pop() for _ in range(10)]
        new = [tuple(x) for x in rng.choice(nodes, (10, 2))]
        edges.remove(gone)
        edges.insert(new)
        present.update(new)

    loop = open_loop(flow, feed, args.graph_period, args.utilization)

    if strategy is None:
        for _ in range(epochs):
            loop.epoch(feed)
        flow.close()
        return np.array(loop.latency) * 1000
    for i in range(args.graph_epochs):
        if i == third:
            loop.plans_made.append(len(loop.latency))
            plans.append(flow.rescale(partitions=4, strategy=strategy,
                                      start_epoch=flow.epoch + args.prepare,
                                      **strategy_options(strategy, args)))
        loop.epoch(feed)
    while flow.migration is not None:
        loop.epoch(feed)
    extra = dict(load_s=round(loaded, 2), edges=len(edges_np), partitions=flow.partitions,
                 period_s=round(loop.period, 4),
                 reach=next(iter(reach.snapshot()))[0], components=next(iter(comps.snapshot()))[0])
    flow.close()
    return loop, plans, third, extra


def run_routing(args) -> dict:
    """Steady epochs with the default routing vs a bin table (two bins swapped: same work).

    Both are measured on a flow that has migrated already (once to the table and back,
    unmeasured), and the rounds alternate their order (default, table, table, default, ...)
    so that the trace's growth over the run falls on both alike."""
    from diffflow.arrangements import columnar

    keys = np.random.default_rng(3).integers(0, 2**62, size=(1_000_000, 1))
    table = default_table(args.partitions)
    table[[0, 1]] = table[[1, 0]]
    columnar.partition_of(keys, args.partitions)
    columnar.owner_by_table(keys, table)
    kernel = {}
    for name, fn in (("hash % P", lambda: columnar.partition_of(keys, args.partitions)),
                     ("table[hash % B]", lambda: columnar.owner_by_table(keys, table))):
        best = min(timed(fn) for _ in range(5))
        kernel[name] = round(len(keys) / best / 1e6, 1)
    flow, key_input, _, _ = count_flow(args)
    rng = np.random.default_rng(4)
    lat = {"default": [], "table": [], "unmeasured": []}
    default = default_table(args.partitions)
    order = [("unmeasured", table), ("unmeasured", default)]
    for rnd in range(args.routing_rounds):
        pair = [("default", default), ("table", table)]
        order.extend(pair if rnd % 2 == 0 else pair[::-1])
    for mode, target in order:
        if (flow.routing_table != target).any():
            flow.rescale(table=target, partitions=args.partitions, strategy="all_at_once")
            key_input.insert(rng.integers(0, args.keys, size=(args.rate, 1)))
            flow.advance()
        for _ in range(args.routing_epochs):
            key_input.insert(rng.integers(0, args.keys, size=(args.rate, 1)))
            t0 = time.perf_counter()
            flow.advance()
            lat[mode].append((time.perf_counter() - t0) * 1000)
    del lat["unmeasured"]
    flow.close()
    return {"kernel_Mrows_per_s": kernel,
            **{f"{m}_p50_ms": float(np.percentile(v, 50)) for m, v in lat.items()},
            **{f"{m}_p99_ms": float(np.percentile(v, 99)) for m, v in lat.items()}}


def plan_flow(args, runtime_options: dict):
    """The plan workload's dataflow: reach + components of random edges, loaded."""
    rng = np.random.default_rng(9)
    nodes = max(args.plan_edges // 3, 10)
    edges_np = np.unique(rng.integers(0, nodes, (args.plan_edges, 2)), axis=0)
    flow = dd.Dataflow(partitions=2, **runtime_options)
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    graphs.reachable(edges, roots).aggregate(by=[], n=dd.count()).output()
    graphs.connected_components(edges).aggregate(by=[], n=dd.count()).output()
    edges.insert(edges_np)
    roots.insert(rng.choice(nodes, 10, replace=False)[:, None])
    flow.advance()
    present = [tuple(e) for e in edges_np.tolist()]

    def feed():
        gone = [present.pop(int(rng.integers(len(present)))) for _ in range(15)]
        new = [tuple(x) for x in rng.integers(0, nodes, (15, 2)).tolist()]
        edges.remove(gone)
        edges.insert(new)
        present.extend(new)

    return flow, feed


def run_plan(args, runtime_options: dict) -> dict:
    """One run of the plan workload (see the module docstring); epoch times in ms."""
    flow, feed = plan_flow(args, runtime_options)

    def epoch() -> float:
        feed()
        t0 = time.perf_counter()
        flow.advance()
        return (time.perf_counter() - t0) * 1000

    steady = [epoch() for _ in range(args.plan_steady)]
    t0 = time.perf_counter()
    plan = flow.rescale(partitions=3, strategy="batched")
    plan_ms = (time.perf_counter() - t0) * 1000
    during, first_step = [], None
    while flow.migration is not None:
        during.append(epoch())
        if first_step is None and plan.progress[0]:
            first_step = len(during) - 1
    after = [epoch() for _ in range(args.plan_steady)]
    flow.rescale(partitions=1, strategy="all_at_once")
    shrink = epoch()
    transport = getattr(flow._runtime, "transport", None)
    ahead = getattr(transport, "taken_ahead", None)
    flow.close()
    base = float(np.median(steady[5:] if len(steady) > 10 else steady))
    return {"steady_p50_ms": base, "steady_max_ms": max(steady), "plan_call_ms": plan_ms,
            "during_ms": during, "worst_ms": max(during), "ratio": max(during) / base,
            "first_step_ms": during[first_step], "waited": plan.waited,
            "steps": len(plan.steps), "taken_ahead": ahead,
            "after_p50_ms": float(np.median(after)),
            "ratio_after": max(during) / float(np.median(after)), "shrink_3_to_1_ms": shrink,
            "steady_ms": steady}


def plan_workload(args) -> dict:
    """``--plan-runs`` runs of the plan workload, each in a fresh pool of workers."""
    options = {"runtime": args.runtime}
    session = None
    if args.runtime == "spark":
        from diffflow.runtime.spark import local_session

        session = local_session("local[3]")
        options["spark"] = session
    runs = []
    for _ in range(args.plan_runs):
        runs.append(run_plan(args, options))
        fresh_pool(args.runtime, session)
        r = runs[-1]
        print(f"plan ({args.runtime}): steady p50 {r['steady_p50_ms']:.0f} ms (worst "
              f"{r['steady_max_ms']:.0f} ms, no plan yet), worst of the "
              f"plan {r['worst_ms']:.0f} ms (x{r['ratio']:.2f}; first step "
              f"{r['first_step_ms']:.0f} ms after waiting {r['waited']} epoch(s), "
              f"{r['steps']} steps, {r['taken_ahead']} worker(s) taken ready-made), "
              f"after (3 partitions) p50 {r['after_p50_ms']:.0f} ms (worst of the plan "
              f"x{r['ratio_after']:.2f} of it), 3 -> 1 all at once "
              f"{r['shrink_3_to_1_ms']:.0f} ms; the plan's epochs: "
              f"{[round(x) for x in r['during_ms']]}", flush=True)
    if session is not None:
        session.stop()
    return {"runs": runs}


def explain_flow(runtime: str, args, spark=None):
    """Reachability from ``--explain-roots`` roots over ``--explain-edges`` random edges at P = 2 with
    ``explain=True``; returns the flow, its edges input, the output and the edges."""
    options = {"runtime": runtime}
    if runtime == "spark":
        options["spark"] = spark
    rng = np.random.default_rng(args.seed)
    n = args.explain_edges // 3
    edges = rng.integers(0, n, size=(args.explain_edges, 2))
    flow = dd.Dataflow(partitions=2, explain=True, **options)
    links = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    reach = graphs.reachable(links, roots).output()
    links.insert(edges)
    roots.insert([(int(r),) for r in rng.choice(n, args.explain_roots, replace=False)])
    flow.advance()
    return flow, links, reach, edges


def explain_workload(args) -> dict:
    """Explanation latency (``output.explain`` of one row, and an epoch of 15 + 15 edges
    with 20 live explanations) per runtime, each against the local runtime's at P = 2.  The
    runtimes' dataflows live side by side and take turns, row by row and epoch by epoch, so
    the machine's drift reaches them alike."""
    spark = None
    if "spark" in args.explain_runtimes.split(","):
        from diffflow.runtime.spark import local_session
        spark = local_session("local[3]")
    runtimes = args.explain_runtimes.split(",")
    built = {runtime: explain_flow(runtime, args, spark) for runtime in runtimes}
    rng = np.random.default_rng(args.seed + 1)
    rows = sorted(built[runtimes[0]][2].snapshot())
    picked = [rows[i] for i in rng.choice(len(rows), args.explain_rows, replace=False)]
    warm_until = time.perf_counter() + args.explain_warm
    while time.perf_counter() < warm_until:   # (fresh workers load kernels while idle)
        for _, _, reach, _ in built.values():
            reach.explain([picked[0]])
        time.sleep(0.05)
    times = {runtime: [] for runtime in runtimes}
    sizes = {runtime: [] for runtime in runtimes}
    for _ in range(args.explain_repeats):
        for row in picked:
            for runtime, (_, _, reach, _) in built.items():
                started = time.perf_counter()
                ex = reach.explain([row])
                times[runtime].append(time.perf_counter() - started)
                sizes[runtime].append(ex.size)
    lives = {runtime: flow.explanations(reach) for runtime, (flow, _, reach, _) in built.items()}
    for live in lives.values():
        live.ask(picked[:20])
    epochs = {runtime: [] for runtime in runtimes}
    for epoch in range(args.explain_epochs):
        removed = built[runtimes[0]][3][epoch * 15:(epoch + 1) * 15]
        inserted = rng.integers(0, args.explain_edges // 3, size=(15, 2))
        for runtime, (flow, links, _, _) in built.items():
            links.remove(removed)
            links.insert(inserted)
            started = time.perf_counter()
            flow.advance()
            epochs[runtime].append(time.perf_counter() - started)
            lives[runtime].changes()
    results = {}
    for runtime, (flow, _, _, _) in built.items():
        flow.close()
        results[runtime] = {
            "explain_p50_ms": 1e3 * float(np.median(times[runtime])),
            "explain_p90_ms": 1e3 * float(np.percentile(times[runtime], 90)),
            "rows_per_explanation": float(np.mean(sizes[runtime])),
            "live_epoch_p50_ms": 1e3 * float(np.median(epochs[runtime][2:])),
        }
    local = results.get("local")
    for runtime, figures in results.items():
        if local is not None:
            figures["explain_vs_local"] = figures["explain_p50_ms"] / local["explain_p50_ms"]
        print(f"explain {runtime:9s} explain p50 {figures['explain_p50_ms']:6.2f} ms  "
              f"p90 {figures['explain_p90_ms']:6.2f} ms  "
              f"({figures['rows_per_explanation']:.1f} input rows)  "
              f"x local {figures.get('explain_vs_local', float('nan')):.2f}  "
              f"epoch with 20 live p50 {figures['live_epoch_p50_ms']:6.1f} ms", flush=True)
    return results


def fresh_pool(runtime: str, session) -> None:
    """End the pooled workers, so that the next run's plan launches its worker again."""
    if runtime == "processes":
        from diffflow.runtime import worker_pool

        if worker_pool._PROCESS_POOL is not None:
            worker_pool._PROCESS_POOL.close()
            worker_pool._PROCESS_POOL = None
    elif runtime == "spark":
        from diffflow.runtime.spark import release_workers

        release_workers(session)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


# -- output -----------------------------------------------------------------------------------
def table(name: str, results: dict) -> str:
    lines = [f"\n### {name}\n",
             "| strategy | steady p50 / p99 | before the plan p50 / p99 | preparing p99 / max | "
             "during p50 / p99 / max | worst / steady p99 | steps | migration | longest step | "
             "rows moved | peak RSS per worker |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for strategy, r in results.items():
        ratio = r["during_max_ms"] / r["steady_p99_ms"] if r["during_max_ms"] else 0
        lines.append(
            f"| {strategy} ({r['period_s'] * 1000:.0f} ms period) | "
            f"{r['steady_p50_ms']:.1f} / {r['steady_p99_ms']:.1f} ms | "
            f"{r['before_p50_ms']:.1f} / {r['before_p99_ms']:.1f} ms | "
            f"{r['preparing_p99_ms']:.1f} / {r['preparing_max_ms']:.1f} ms | "
            f"{r['during_p50_ms']:.1f} / {r['during_p99_ms']:.1f} / {r['during_max_ms']:.1f} ms | "
            f"x{ratio:.2f} | {r['steps']} | {' + '.join(f'{d:.2f} s' for d in r['migration_s'])}"
            f" | {r['step_s_max'] * 1000:.0f} ms | {r['rows_moved']} | "
            f"{', '.join(f'{v} MB' for v in r['peak_rss_mb'].values())} |")
    return "\n".join(lines)


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    workloads = list(results)
    fig, axes = plt.subplots(len(workloads), 1, figsize=(10, 3.6 * len(workloads)),
                             squeeze=False)
    colors = {"all_at_once": "#d62728", "fluid": "#1f77b4", "batched": "#2ca02c"}
    for ax, workload in zip(axes[:, 0], workloads):
        first = next(iter(results[workload].values()))
        control = np.array(first["control_latency_ms"])
        ax.plot(np.arange(len(control)) * first["period_s"], control, label="no plan (steady)",
                color="#7f7f7f", lw=1)
        for strategy, r in results[workload].items():
            t = np.array(r["timeline"]["t"])
            lat = np.array(r["timeline"]["latency_ms"])
            ax.plot(t, lat, label=strategy, color=colors[strategy], lw=1)
            stepped = np.array(r["timeline"]["stepped"])
            ax.scatter(t[stepped], lat[stepped], s=6, color=colors[strategy])
        ax.set_yscale("log")
        ax.set_ylabel("epoch latency (ms)")
        ax.set_title(f"{workload}: latency over time (dots: epochs that applied a step)")
        ax.legend()
    axes[-1, 0].set_xlabel("time since the first measured epoch (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    from datasets import add_data_option

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default="count,graph,routing")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--runtime", default="local", choices=["local", "processes", "spark"],
                        help="spark: the plan workload only, on local_session('local[3]')")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--rate", type=int, default=10_000, help="keys inserted per epoch")
    parser.add_argument("--period", type=float, default=0.1, help="seconds between epochs")
    parser.add_argument("--epochs", type=int, default=240)
    parser.add_argument("--prepare", type=int, default=5,
                        help="epochs between a plan and its first step")
    parser.add_argument("--fluid-bins", type=int, default=BINS // 256)
    parser.add_argument("--batch-rows", type=int, default=250_000)
    parser.add_argument("--utilization", type=float, default=None,
                        help="instead of --period/--graph-period: the period at which steady "
                             "epochs keep the machine this busy (measured first), e.g. 0.3")
    parser.add_argument("--graph", default="ego-twitter")
    parser.add_argument("--graph-period", type=float, default=0.25)
    parser.add_argument("--graph-epochs", type=int, default=120)
    parser.add_argument("--routing-rounds", type=int, default=4)
    parser.add_argument("--routing-epochs", type=int, default=25)
    parser.add_argument("--plan-edges", type=int, default=9_000)
    parser.add_argument("--plan-steady", type=int, default=30,
                        help="plan workload: epochs measured before and after the plan")
    parser.add_argument("--plan-runs", type=int, default=1)
    parser.add_argument("--explain-runtimes", default="local,processes",
                        help="runtimes of the explain workload (local,processes,spark)")
    parser.add_argument("--explain-edges", type=int, default=9_000)
    parser.add_argument("--explain-roots", type=int, default=10,
                        help="fewer roots: longer paths, explanations of more levels")
    parser.add_argument("--explain-rows", type=int, default=30)
    parser.add_argument("--explain-repeats", type=int, default=3)
    parser.add_argument("--explain-epochs", type=int, default=12)
    parser.add_argument("--explain-warm", type=float, default=5.0,
                        help="seconds of explanations before measuring (fresh workers "
                             "load their kernels while idle)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--plot", default=os.path.join(HERE, "rescale_latency.png"))
    parser.add_argument("--json", default=None, help="write every figure here")
    add_data_option(parser)
    args = parser.parse_args()
    workloads = args.workloads.split(",")
    strategies = args.strategies.split(",")
    results, out = {}, {}
    if "count" in workloads or "graph" in workloads:
        warm_up(args, strategies)
    for workload in [w for w in workloads if w in ("count", "graph")]:
        results[workload] = {}
        run = run_count if workload == "count" else run_graph
        runs = {strategy: run(args, strategy) for strategy in strategies}
        # the steady state: the same workload as long as the longest run, with no plan
        fixed = argparse.Namespace(**vars(args))  # (at the runs' period, when calibrated)
        fixed.utilization = None
        fixed.period = fixed.graph_period = next(iter(runs.values()))[0].period
        control = run(fixed, None, max(len(loop.latency) for loop, *_ in runs.values()))
        for strategy, (loop, plans, third, extra) in runs.items():
            r = results[workload][strategy] = summarize(loop, plans, third, control)
            r.update(extra, control_latency_ms=control.tolist())
            print(f"{workload} {strategy}: worst during {r['during_max_ms']:.1f} ms, steady p99 "
                  f"{r['steady_p99_ms']:.1f} ms (before the plan {r['before_p99_ms']:.1f} ms), "
                  f"migration {r['migration_s']} s", flush=True)
        print(table(f"{workload} ({args.runtime}, {args.partitions if workload == 'count' else '2 -> 4'}"
                    f" partitions)", results[workload]), flush=True)
    if "plan" in workloads:
        out["plan"] = plan_workload(args)
    if "explain" in workloads:
        out["explain"] = explain_workload(args)
    if "routing" in workloads:
        out["routing"] = run_routing(args)
        print("\nrouting:", json.dumps(out["routing"]), flush=True)
    if results:
        plot(results, args.plot)
        print(f"\nplot: {args.plot}")
    if args.json:
        out.update(results)
        with open(args.json, "w") as fh:
            json.dump(out, fh)


if __name__ == "__main__":
    main()
