"""Long runs (soak): many small epochs, answers checked exactly, memory sampled.

    python bench/bench_soak.py --runtime local --epochs 20000
    python bench/bench_soak.py --runtime processes --partitions 2 --minutes 10
    python bench/bench_soak.py --runtime local --durable --minutes 10
    python bench/bench_soak.py --dashboard-clients 50 --minutes 10

The dataflow: reachability from a few roots (an ``iterate`` loop, written out here so it
is a loop on every runtime), a count of the reached nodes per group (an aggregate after
the loop) and the out-degree of every node (an aggregate on an input), over a random
graph of ``--nodes`` nodes.  Every epoch inserts ``--changes`` random new edges and
removes as many live ones, so the live data keeps its size.  Every ``--check-every``
epochs the three outputs are compared exactly with a from-scratch computation in plain
Python (a breadth-first search and counters), each output's change feed is drained and
checked to add up to its contents, and resident memory (VmRSS from /proc) is
sampled for the driving process and, on the processes runtime, every worker process.

With ``--dashboard-clients N`` the dataflow is traced and serves its live dashboard
(``Dataflow(trace=PATH, dashboard=PORT)``, on 127.0.0.1 only) while N clients, in a
separate process so that their memory is not counted, hold server-sent-event connections
to ``/events``; each counts the events it receives, and its errors and disconnects.

Verdict: memory is flat when, for every process sampled, the mean of the last quarter of
the samples is within ``--tolerance-mib`` MiB or ``--tolerance-pct`` % (whichever is larger)
of the mean of the second quarter (the first quarter is warm-up: kernels compiling,
arenas growing to their working size).
"""
from __future__ import annotations

import argparse
import collections
import http.client
import multiprocessing
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

import numpy as np

import diffflow as dd

GROUPS = 7   # reached nodes are counted per node % GROUPS


def rss_mib(pid: int | str = "self") -> float:
    """Resident memory of process ``pid`` in MiB (VmRSS), or nan when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


# ---------------------------------------------------------------- the dataflow and its oracle

def build(flow):
    """Inputs and outputs of the soak dataflow (a loop and two aggregates)."""
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    groups = flow.input("groups", ["node", "grp"])
    start = roots.distinct()
    reach = start.iterate(
        lambda reached: start.concat(
            reached.join(edges, left_on="node", right_on="src").select(node="dst")).distinct(),
        name="reach", max_rounds=None)
    outputs = {
        "reach": reach.output(),
        "per_group": reach.join(groups, on="node").aggregate(by=["grp"], n=dd.count()).output(),
        "degree": edges.aggregate(by=["src"], n=dd.count()).output(),
    }
    return edges, roots, groups, outputs


def expected(live: set, roots: list) -> dict:
    """The three outputs computed from scratch in plain Python."""
    succ = collections.defaultdict(list)
    for s, d in live:
        succ[s].append(d)
    seen, todo = set(roots), list(roots)
    while todo:
        for d in succ[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    per_group = collections.Counter(n % GROUPS for n in seen)
    degree = collections.Counter(s for s, _ in live)
    return {"reach": {(n,): 1 for n in seen},
            "per_group": {(g, c): 1 for g, c in per_group.items()},
            "degree": {(s, c): 1 for s, c in degree.items()}}


def check(outputs: dict, live: set, roots: list, feeds: dict) -> list:
    """The outputs that differ from the from-scratch answer, and how (empty: all exact).

    Each output's change feed is drained into ``feeds`` (name -> Counter of rows), which
    must add up to the contents too.  Drained, because an output keeps its changes until
    someone reads them (the feed hands out each change once): a run that never reads them
    holds every change it made, which is growth by design, not a leak.
    """
    want = expected(live, roots)
    got = {name: {tuple(int(v) for v in row): m for row, m in out.snapshot().items()}
           for name, out in outputs.items()}
    wrong = []
    for name, out in outputs.items():
        feed = feeds.setdefault(name, collections.Counter())
        for row, _epoch, diff in out.changes():
            feed[tuple(int(v) for v in row)] += diff
        for row in [row for row, m in feed.items() if m == 0]:
            del feed[row]
        if dict(feed) != got[name]:
            wrong.append(f"{name}'s change feed does not add up to its contents")
    for name in want:
        if got[name] != want[name]:
            extra = sorted(set(got[name].items()) - set(want[name].items()))
            missing = sorted(set(want[name].items()) - set(got[name].items()))
            wrong.append(f"{name} ({len(got[name])} rows, {len(want[name])} expected; extra "
                         f"{extra[:3]}{'...' if len(extra) > 3 else ''}, missing "
                         f"{missing[:3]}{'...' if len(missing) > 3 else ''})")
    return wrong


class Changes:
    """Random small epochs: ``k`` new edges in, ``k`` live edges out."""

    def __init__(self, nodes: int, seed: int = 0):
        self.nodes, self.rng = nodes, np.random.default_rng(seed)
        self.live: set = set()
        self.order: list = []   # live edges, for picking one to remove in O(1)

    def fresh(self, k: int) -> list:
        new = []
        while len(new) < k:
            s, d = (int(x) for x in self.rng.integers(0, self.nodes, 2))
            if (s, d) not in self.live:
                self.live.add((s, d))
                self.order.append((s, d))
                new.append((s, d))
        return new

    def retire(self, k: int) -> list:
        gone = []
        for _ in range(k):
            i = int(self.rng.integers(0, len(self.order)))
            self.order[i], self.order[-1] = self.order[-1], self.order[i]
            edge = self.order.pop()
            self.live.discard(edge)
            gone.append(edge)
        return gone


# ---------------------------------------------------------------- server-sent-event clients

def sse_client(port: int, stop_at: float, tally: dict, key: int) -> None:
    """Hold a connection to /events until ``stop_at``; count events, errors, reconnects."""
    mine = tally[key] = {"events": 0, "errors": 0, "disconnects": 0, "last": 0.0,
                         "first_error": ""}
    while time.monotonic() < stop_at:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("GET", "/events", headers={"Accept": "text/event-stream"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise OSError(f"HTTP {resp.status}")
            while time.monotonic() < stop_at:
                line = resp.fp.readline()
                if not line:
                    mine["disconnects"] += 1   # the server ended the stream
                    break
                if line.startswith(b"event:"):
                    mine["events"] += 1
                    mine["last"] = time.monotonic()
        except Exception as exc:   # counted, reported; the client reconnects
            mine["errors"] += 1
            mine["first_error"] = mine["first_error"] or f"{type(exc).__name__}: {exc}"
            time.sleep(0.5)
        finally:
            conn.close()


def sse_clients_process(port: int, clients: int, seconds: float, result) -> None:
    """Run the clients (a separate process, so the server's memory is measured alone)."""
    stop_at = time.monotonic() + seconds
    tally: dict = {}
    threads = [threading.Thread(target=sse_client, args=(port, stop_at, tally, i), daemon=True)
               for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 60)
    now = time.monotonic()
    result.put([{**tally[i], "since_last": now - tally[i]["last"] if tally[i]["last"] else None}
                for i in range(clients)])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------- the run

def flat(samples: list, tol_mib: float, tol_pct: float):
    """(second-quarter mean, last-quarter mean, flat?) of a list of MiB samples."""
    q = len(samples) // 4
    if q == 0:
        return float("nan"), float("nan"), False
    second, last = np.mean(samples[q:2 * q]), np.mean(samples[-q:])
    return second, last, bool(last - second <= max(tol_mib, second * tol_pct / 100))


def run(args) -> bool:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()   # compile first: the timings and samples are of the run, not of numba
    tmp = tempfile.mkdtemp(prefix="soak-")
    options = {}
    if args.durable:
        options.update(checkpoint_dir=os.path.join(tmp, "ckpt"), durable=True,
                       checkpoint_every=100)
    port = None
    if args.dashboard_clients:
        port = free_port()
        options.update(trace=os.path.join(tmp, "run.trace"), dashboard=port)
    flow = dd.Dataflow(partitions=args.partitions, runtime=args.runtime, **options)
    edges, roots, groups, outputs = build(flow)
    changes = Changes(args.nodes, seed=args.seed)
    root_nodes = list(range(args.roots))
    edges.insert(changes.fresh(args.edges))
    roots.insert([(n,) for n in root_nodes])
    groups.insert([(n, n % GROUPS) for n in range(args.nodes)])
    flow.advance()
    print(f"runtime {args.runtime} x{args.partitions}, {args.nodes:,} nodes, {args.edges:,} "
          f"live edges, {args.changes} in + {args.changes} out per epoch"
          f"{', durable (checkpoint every 100)' if args.durable else ''}"
          f"{f', dashboard on 127.0.0.1:{port} with {args.dashboard_clients} SSE clients' if port else ''}",
          flush=True)

    clients = None
    seconds = args.minutes * 60 if args.minutes else None
    if port:
        result = multiprocessing.get_context("spawn").Queue()
        clients = (multiprocessing.get_context("spawn").Process(
            target=sse_clients_process, args=(port, args.dashboard_clients, seconds, result)),
            result)
        clients[0].start()

    pids = flow._runtime.worker_pids() if hasattr(flow._runtime, "worker_pids") else []
    names = ["driver"] + [f"worker {i}" for i in range(len(pids))]
    served = flow._features["dashboard"].server.dashboard if port else None
    samples = []   # (epoch, seconds, [MiB per process], checks passed, epochs the page lags)
    errors, passed, feeds = [], 0, {}
    t0 = time.monotonic()
    epoch = 0
    while (epoch < args.epochs) if seconds is None else (time.monotonic() - t0 < seconds):
        try:
            edges.remove(changes.retire(args.changes))
            edges.insert(changes.fresh(args.changes))
            flow.advance()
            epoch += 1
            if epoch % args.check_every == 0:
                wrong = check(outputs, changes.live, root_nodes, feeds)
                if wrong:
                    errors.append(f"epoch {epoch}: {', '.join(wrong)} differ from scratch")
                else:
                    passed += 1
                lag = epoch - max(list(served.where), default=0) if served else 0
                samples.append((epoch, time.monotonic() - t0,
                                [rss_mib()] + [rss_mib(p) for p in pids], passed, lag))
        except Exception as exc:
            errors.append(f"epoch {epoch}: {type(exc).__name__}: {exc}")
            break
        if args.epoch_pause:
            time.sleep(args.epoch_pause)

    report_clients = None
    if clients:
        proc, result = clients
        try:
            report_clients = result.get(timeout=120)
        except Exception as exc:
            errors.append(f"SSE clients gave no report: {exc}")
        proc.join(timeout=30)
    flow.close()
    shutil.rmtree(tmp, ignore_errors=True)

    # the table: about 20 rows, evenly spread
    print(f"\n{'epoch':>8} {'seconds':>8} " + " ".join(f"{n + ' MiB':>14}" for n in names)
          + f" {'checks passed':>14}" + (f" {'page lags':>10}" if served else ""))
    step = max(1, len(samples) // 20)
    for i, (e, s, mibs, ok, lag) in enumerate(samples):
        if i % step == 0 or i == len(samples) - 1:
            print(f"{e:>8,} {s:>8.0f} " + " ".join(f"{m:>14.1f}" for m in mibs) + f" {ok:>14,}"
                  + (f" {lag:>10,}" if served else ""))
    good = not errors
    print(f"\n{epoch:,} epochs in {time.monotonic() - t0:.0f} s; {passed:,} of {len(samples):,} "
          f"exact checks passed")
    for j, name in enumerate(names):
        series = [sample[2][j] for sample in samples]
        second, last, ok = flat(series, args.tolerance_mib, args.tolerance_pct)
        good &= ok
        half = samples[len(samples) // 2:]   # the trend after warm-up, MiB per 1,000 epochs
        slope = (np.polyfit([x[0] for x in half], [x[2][j] for x in half], 1)[0] * 1000
                 if len(half) > 2 else float("nan"))
        print(f"{name}: first {series[0] if series else float('nan'):.1f} MiB, last "
              f"{series[-1] if series else float('nan'):.1f} MiB; second-quarter mean "
              f"{second:.1f}, last-quarter mean {last:.1f}: {'flat' if ok else 'GROWS'}; "
              f"second-half trend {slope:+.2f} MiB per 1,000 epochs")
    if report_clients is not None:
        events = [c["events"] for c in report_clients]
        errs = sum(c["errors"] for c in report_clients)
        drops = sum(c["disconnects"] for c in report_clients)
        stale = [i for i, c in enumerate(report_clients)
                 if c["since_last"] is None or c["since_last"] > 30]
        print(f"SSE clients: {len(events)}; events each min {min(events):,} / median "
              f"{int(np.median(events)):,} / max {max(events):,}; errors {errs}, disconnects "
              f"{drops}; clients with no event in the last 30 s: {len(stale)}")
        firsts = {c["first_error"] for c in report_clients if c["first_error"]}
        for message in sorted(firsts)[:5]:
            print(f"  client error: {message}")
        good &= errs == 0 and drops == 0 and not stale
        lags = [sample[4] for sample in samples]
        if lags:   # the page shows an epoch once the trace follower has parsed it
            print(f"the page lagged the dataflow by {lags[len(lags) // 2]:,} epochs mid-run and "
                  f"{lags[-1]:,} at the end ({epoch / max(samples[-1][1], 1e-9):.1f} epochs/s fed)")
    for message in errors[:10]:
        print(f"ERROR {message}")
    tol = f"{args.tolerance_pct:g} % or {args.tolerance_mib:g} MiB, whichever is larger"
    print(f"verdict: {'PASS' if good else 'FAIL'} (memory flat = last-quarter mean within {tol} "
          f"of the second quarter's; errors {len(errors)})")
    return good


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runtime", choices=["local", "processes"], default="local")
    parser.add_argument("--partitions", type=int, default=None,
                        help="default: 1 on local, 2 on processes")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--epochs", type=int, default=None)
    length.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--durable", action="store_true",
                        help="Dataflow(checkpoint_dir=tmp, durable=True, checkpoint_every=100)")
    parser.add_argument("--dashboard-clients", type=int, default=0,
                        help="serve the live dashboard to this many SSE clients (needs --minutes)")
    parser.add_argument("--nodes", type=int, default=2_000)
    parser.add_argument("--edges", type=int, default=3_000, help="live edges, kept constant")
    parser.add_argument("--roots", type=int, default=3)
    parser.add_argument("--changes", type=int, default=3, help="edges in and out per epoch")
    parser.add_argument("--check-every", type=int, default=None,
                        help="epochs between exact checks and memory samples (default 100; "
                             "25 with the dashboard)")
    parser.add_argument("--epoch-pause", type=float, default=None,
                        help="seconds to sleep after each epoch (default 0; 0.1 with the "
                             "dashboard, whose trace follower parses ~4,900 trace lines/s, "
                             "about 20 epochs/s of this dataflow)")
    parser.add_argument("--tolerance-mib", type=float, default=5.0)
    parser.add_argument("--tolerance-pct", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.partitions is None:
        args.partitions = 2 if args.runtime == "processes" else 1
    if args.epochs is None and args.minutes is None:
        args.epochs = 20_000
    if args.dashboard_clients and not args.minutes:
        parser.error("--dashboard-clients needs --minutes (the clients' connection time)")
    if args.check_every is None:
        args.check_every = 25 if args.dashboard_clients else 100
    if args.epoch_pause is None:
        args.epoch_pause = 0.1 if args.dashboard_clients else 0.0
    sys.exit(0 if run(args) else 1)


if __name__ == "__main__":
    main()
