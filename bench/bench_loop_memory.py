"""Memory of a loop over many small epochs: compaction keeps it bounded by the live data.

    python bench/bench_loop_memory.py --epochs 10000

Reachability (an ``iterate`` loop) over a random graph of ``--nodes`` nodes;
every epoch inserts one random edge and removes the one inserted two epochs
earlier, so the live data stays the same size.  Reports, at the start and
the end, the number of updates held by every trace (arrangements and reduce
outputs, after compaction) and the process's resident memory.
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import diffflow as dd
from diffflow import graphs


def trace_updates(flow) -> int:
    return sum(flow._runtime.trace_sizes())


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=2_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    out = graphs.reachable(edges, roots).aggregate(by=[], n=dd.count()).output()
    base = rng.integers(0, args.nodes, (4 * args.nodes, 2))  # a random graph, small diameter
    edges.insert(base)
    roots.insert([0])
    flow.advance()
    recent = []
    for _ in range(2):
        e = rng.integers(0, args.nodes, (1, 2))
        edges.insert(e)
        recent.append(e)
        flow.advance()
    start_updates, start_rss = trace_updates(flow), rss_mib()
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        e = rng.integers(0, args.nodes, (1, 2))
        edges.insert(e)
        edges.remove(recent.pop(0))
        recent.append(e)
        flow.advance()
    elapsed = time.perf_counter() - t0
    end_updates, end_rss = trace_updates(flow), rss_mib()
    print(f"{args.epochs:,} epochs in {elapsed:.1f} s ({elapsed / args.epochs * 1e3:.2f} ms each); "
          f"reachable: {next(iter(out.snapshot()))[0]:,}")
    print(f"trace updates: start {start_updates:,}, end {end_updates:,}")
    print(f"resident memory: start {start_rss:.0f} MiB, end {end_rss:.0f} MiB")


if __name__ == "__main__":
    main()
