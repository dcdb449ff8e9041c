"""PAG analysis throughput: construction + critical participation, events per second.

    PYTHONPATH=. NUMBA_NUM_THREADS=1 python bench/bench_pag.py [--events 10000000]

Two workloads:

* ``triangles``: ST2's PAG of a differential triangles query (tests/fixtures/st2,
  12,404 edges over 10 epochs), replayed epoch after epoch (shifted in time)
  until it holds ``--events`` edges; measured: critical participation of
  every epoch, then metrics and invariants (a PAG edge stands for one logged event);
* ``diffflow``: raw events in diffflow's trace format (a traced run of
  connected components at P=2, replayed the same way), measured from raw
  events: construction (epochs) + critical participation; then the same
  events cut into 1 s time windows (construction A) + critical participation.

Per-snapshot latency is the time of one snapshot's analysis alone (the
median over the snapshots of one pass, each analysed separately).
The anchors (PAG.md §6): SnailTrail 1 reached 1.2 M events/s with CP on 1 s
snapshots (32 cores); ST2 0.75-1.1 M events/s for construction alone on one worker.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from diffflow.pag.activity_metrics import metrics  # noqa: E402
from diffflow.pag.checks import violations  # noqa: E402
from diffflow.pag.critical import critical_participation  # noqa: E402
from diffflow.pag.edges import Edges  # noqa: E402
from diffflow.pag.epochs import build_epochs  # noqa: E402
from diffflow.pag.st2 import read_st2  # noqa: E402
from diffflow.pag.windows import build_windows  # noqa: E402
from diffflow.runtime.events import Events, read_events  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def replay(table, target: int, snap_col: str, time_cols):
    """Copies of ``table`` after one another (snapshots renumbered, times shifted) up to ``target`` rows."""
    copies = max(1, -(-target // len(table)))
    snaps = getattr(table, snap_col)
    span = int(max(getattr(table, c).max() for c in time_cols)) + 1
    nsnap = int(snaps.max()) + 1
    parts = []
    for i in range(copies):
        cols = {c: getattr(table, c) for c in table.COLUMNS}
        cols[snap_col] = snaps + i * nsnap
        for c in time_cols:
            cols[c] = cols[c] + i * span
        parts.append(type(table)(**cols, names=table.names))
    return type(table).concat(parts)


def timed(fn, repeat=3):
    best = float("inf")
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def per_snapshot_latency(edges: Edges, pad: bool, limit=200):
    times = []
    for i, (_, snap) in enumerate(edges.snapshots()):
        if i >= limit:
            break
        start = time.perf_counter()
        critical_participation(snap, pad=pad)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def traced_run_events(path: str) -> Events:
    """A traced run of connected components at P=2 on a small R-MAT graph (needs Dataflow(trace=...))."""
    import diffflow as dd
    from diffflow.graphs import connected_components

    rng = np.random.default_rng(1)
    edges = rng.integers(0, 20_000, size=(60_000, 2))
    with dd.Dataflow(partitions=2, trace=path) as flow:
        e = flow.input("edges", ["src", "dst"])
        out = connected_components(e).output()
        e.insert(edges)
        flow.advance()
        for step in range(10):
            e.remove(edges[step * 10:(step + 1) * 10])
            flow.advance()
        out.snapshot()
    return read_events(path)


def main(argv=None) -> int:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000, help="events per workload (default 10^7)")
    args = parser.parse_args(argv)
    print(f"{'workload':<34}{'events':>12}{'seconds':>10}{'M events/s':>12}{'per snapshot':>14}")

    tri = read_st2(os.path.join(HERE, "..", "tests", "fixtures", "st2", "triangles.pag.jsonl.gz"))
    big = replay(tri, args.events, "snap", ("src_t", "dst_t"))
    critical_participation(tri)  # compile the kernels
    seconds, _ = timed(lambda: critical_participation(big), repeat=1)
    latency = per_snapshot_latency(big, pad=True)
    print(f"{'triangles: CP':<34}{len(big):>12,}{seconds:>10.2f}{len(big) / seconds / 1e6:>12.2f}"
          f"{latency * 1e3:>11.1f} ms")
    seconds, _ = timed(lambda: (metrics(big), violations(big, message_max_ns=10**6, operator_max_ns=10**6)),
                       repeat=1)
    print(f"{'triangles: metrics + invariants':<34}{len(big):>12,}{seconds:>10.2f}{len(big) / seconds / 1e6:>12.2f}")

    with tempfile.TemporaryDirectory() as tmp:
        try:
            events = traced_run_events(os.path.join(tmp, "cc.trace"))
        except TypeError as exc:  # a diffflow without Dataflow(trace=...)
            print(f"diffflow: skipped ({exc})")
            return 0
    big = replay(events, args.events, "e", ("t",))
    build_epochs(events)
    seconds, _ = timed(lambda: critical_participation(build_epochs(big)), repeat=1)
    pag = build_epochs(big)
    latency = per_snapshot_latency(pag, pad=True)
    print(f"{'diffflow CC P=2: build + CP':<34}{len(big):>12,}{seconds:>10.2f}{len(big) / seconds / 1e6:>12.2f}"
          f"{latency * 1e3:>11.1f} ms")
    # SnailTrail 1's model: 1 s time windows (construction A with projection and gap filling)
    window = 10**9
    build_windows(events, window)
    seconds, pag = timed(lambda: build_windows(big, window), repeat=1)
    cp_seconds, _ = timed(lambda: critical_participation(pag, pad=False), repeat=1)
    total = seconds + cp_seconds
    latencies, sizes = [], []
    windows = big.t // window
    for k in np.unique(windows)[:50]:
        part = big.take(windows == k)
        start = time.perf_counter()
        critical_participation(build_windows(part, window), pad=False)
        latencies.append(time.perf_counter() - start)
        sizes.append(len(part))
    print(f"{'diffflow CC P=2: 1 s windows':<34}{len(big):>12,}{total:>10.2f}{len(big) / total / 1e6:>12.2f}"
          f"{statistics.median(latencies) * 1e3:>11.1f} ms  ({int(statistics.median(sizes)):,} events per window)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
