"""Latency and throughput of a join + count pipeline over a 1M-row arrangement.

    python bench/bench_pipeline.py --rows 1000000 --epochs 1000

Pipeline: ``queries(k)`` joined with ``facts(k, v)`` on ``k``, then
``aggregate(by=["k"], n=count())`` (with ``--groups G``: counted by ``v % G``, e.g.
``--groups 100 --queries 100000``: every fact joins, 100 groups of ~10^4 rows).  ``facts`` holds ``--rows`` rows over
``rows / 10`` keys; ``queries`` holds ``--queries`` keys.  Reported:

* single-row epochs: one query inserted or removed (the join reads ~10 rows
  of the big arrangement) and one fact inserted or removed; median / p90 of
  ``flow.advance()`` end to end;
* throughput: epochs of ``--batch`` fact updates (half inserts, half removals).

Not collected by pytest.  Single core: set NUMBA_NUM_THREADS=1.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import diffflow as dd


def build(rows: int, queries: int, parts: int, seed: int = 0, groups: int = 0):
    """The pipeline, loaded; with ``groups`` it counts by ``g = v % groups`` instead of by ``k``
    (a few big groups: what a count that re-read its groups would pay for)."""
    rng = np.random.default_rng(seed)
    keys = max(1, rows // 10)
    flow = dd.Dataflow(partitions=parts)
    q = flow.input("queries", ["k"])
    facts = flow.input("facts", ["k", "v"])
    joined = q.join(facts, on="k")
    if groups:
        counts = joined.select(g=dd.col("v") % groups).aggregate(by=["g"], n=dd.count())
    else:
        counts = joined.aggregate(by=["k"], n=dd.count())
    out = counts.output()
    fact_rows = np.stack([rng.integers(0, keys, rows), rng.integers(0, 1 << 40, rows)], axis=1)
    facts.insert(fact_rows)
    q.insert(rng.choice(keys, size=queries, replace=False)[:, None])
    t0 = time.perf_counter()
    flow.advance()
    load = time.perf_counter() - t0
    return flow, q, facts, out, fact_rows, keys, load, rng


def timed_epochs(flow, change, epochs: int) -> tuple:
    """Median and p90 ms of ``flow.advance()`` over ``epochs`` epochs, each after ``change()``."""
    samples = []
    for _ in range(epochs):
        change()
        t0 = time.perf_counter()
        flow.advance()
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return statistics.median(samples) * 1e3, samples[int(len(samples) * 0.9)] * 1e3


def query_change(q, keys: int, rng):
    """A change that inserts one random query key, or removes it if it is present."""
    live_queries = set()

    def change():
        k = int(rng.integers(0, keys))
        if k in live_queries:
            q.remove([(k,)])
            live_queries.discard(k)
        else:
            q.insert([(k,)])
            live_queries.add(k)
    return change


def fact_change(facts, fact_rows, rng):
    """A change that replaces one random fact's value (one removal + one insertion)."""
    def change():
        i = int(rng.integers(0, len(fact_rows)))
        facts.update(fact_rows[i:i + 1], np.array([-1]))
        fact_rows[i, 1] = int(rng.integers(0, 1 << 40))
        facts.update(fact_rows[i:i + 1].copy(), np.array([1]))
    return change


def batch_epochs(flow, facts, fact_rows, keys: int, rng, batch: int, epochs: int) -> tuple:
    """``epochs`` epochs of ``batch`` fact updates (half removals of present facts, half
    insertions); returns (updates per second, seconds per epoch) of ``flow.advance()``."""
    total, spent = 0, 0.0
    half = batch // 2
    for _ in range(epochs):
        removed = rng.choice(len(fact_rows), size=half, replace=False)
        added = np.stack([rng.integers(0, keys, half), rng.integers(0, 1 << 40, half)], axis=1)
        facts.update(fact_rows[removed], -np.ones(half, np.int64))
        facts.update(added, np.ones(half, np.int64))
        fact_rows[removed] = added
        t0 = time.perf_counter()
        flow.advance()
        spent += time.perf_counter() - t0
        total += 2 * half
    return total / spent, spent / epochs


def main() -> None:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--batch-epochs", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--groups", type=int, default=0,
                        help="count by v %% GROUPS instead of by k (0: by k)")
    args = parser.parse_args()

    flow, q, facts, out, fact_rows, keys, load, rng = build(args.rows, args.queries,
                                                            args.partitions, groups=args.groups)
    print(f"initial load: {args.rows:,} facts + {args.queries:,} queries in {load:.2f} s "
          f"({(args.rows + args.queries) / load / 1e6:.2f} M updates/s)")
    med, p90 = timed_epochs(flow, query_change(q, keys, rng), args.epochs)
    print(f"single-row query epochs: median {med:.3f} ms, p90 {p90:.3f} ms")
    med, p90 = timed_epochs(flow, fact_change(facts, fact_rows, rng), args.epochs)
    print(f"single-fact replace epochs (1 remove + 1 insert): median {med:.3f} ms, p90 {p90:.3f} ms")
    rate, per_epoch = batch_epochs(flow, facts, fact_rows, keys, rng, args.batch,
                                   args.batch_epochs)
    print(f"{args.batch:,}-update epochs: {rate / 1e6:.2f} M updates/s "
          f"({per_epoch * 1e3:.0f} ms per epoch)")
    print(f"output groups: {len(out.snapshot()):,}")


if __name__ == "__main__":
    main()
