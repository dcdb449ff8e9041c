"""Steady epochs of a keyed count over a big trace: does any epoch pay for a whole merge?

Usage::

    python bench/bench_spine_merges.py                     # this checkout
    python bench/bench_spine_merges.py --root /tmp/old     # another checkout, side by side

Loads ``--keys`` keys (10M) into ``aggregate(by=k, n=count())`` on 2 partitions, then runs
``--epochs`` closed-loop epochs of ``--rate`` random inserts each and prints the per-epoch
latency p50 / p90 / p99 / max.  With eager geometric merging an epoch whose insert cascades
into a trace's oldest batches pays for merging millions of rows; with fuelled merges every
epoch pays a bounded share.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def main() -> None:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the checkout whose diffflow to import")
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, default=300)
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    import diffflow as dd

    flow = dd.Dataflow(partitions=2)
    keys = flow.input("keys", ["k"])
    keys.aggregate(by=["k"], n=dd.count()).output()
    for lo in range(0, args.keys, 2_000_000):
        keys.insert(np.arange(lo, min(lo + 2_000_000, args.keys))[:, None])
    flow.advance()
    rng = np.random.default_rng(1)
    latency = []
    for _ in range(args.epochs):
        keys.insert(rng.integers(0, args.keys, size=(args.rate, 1)))
        started = time.perf_counter()
        flow.advance()
        latency.append((time.perf_counter() - started) * 1000)
    p50, p90, p99, top = np.percentile(latency, [50, 90, 99, 100])
    print(f"{dd.__file__}: p50 {p50:.1f}  p90 {p90:.1f}  p99 {p99:.1f}  max {top:.1f} ms")


if __name__ == "__main__":
    main()
