"""Custom reducers (``Collection.reduce``) next to the built-in ``min`` on the same data.

    NUMBA_NUM_THREADS=1 python bench/bench_custom_reduce.py
    NUMBA_NUM_THREADS=1 python bench/bench_custom_reduce.py --rows 1000000 --groups 100000

1. A per-group reduce of ``values(k, v)``: the built-in ``min`` aggregate, a
   custom min and a weighted median as numba kernels, the median in numpy, and
   the median through ``dd.per_group`` (the slow path).  Reports the initial
   computation and the median latency of update epochs (``--change`` rows
   inserted + as many removed).
2. Label-propagation components on an R-MAT graph, once with ``aggregate(min)``
   and once with a numba custom min, the same rounds otherwise: initial, then
   10 + 10 edge updates.  The answers are asserted equal.

Not collected by pytest.  Single core: set NUMBA_NUM_THREADS=1.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np
from bench_graphs import rmat_edges

import diffflow as dd


@numba.njit(cache=True)
def nb_min(starts, cols, mults):
    g = len(starts) - 1
    out = np.empty(g, np.int64)
    for i in range(g):
        out[i] = cols[0][starts[i]]
    return np.arange(g), (out,)


@numba.njit(cache=True)
def nb_median(starts, cols, mults):
    g = len(starts) - 1
    out = np.empty(g, np.int64)
    for i in range(g):
        total = 0
        for r in range(starts[i], starts[i + 1]):
            total += mults[r]
        need, seen = (total + 1) // 2, 0
        for r in range(starts[i], starts[i + 1]):
            seen += mults[r]
            if seen >= need:
                out[i] = cols[0][r]
                break
    return np.arange(g), (out,)


def np_median(starts, cols, mults):
    cum = np.cumsum(mults)
    first = starts[:-1]
    target = cum[first] - mults[first] + (np.add.reduceat(mults, first) + 1) // 2
    return np.arange(len(first)), (cols[0][np.searchsorted(cum, target)],)


def one_median(cols, mults):
    values = np.repeat(cols[0], mults)
    return values[(len(values) - 1) // 2]


VARIANTS = {
    "built-in min": lambda c: c.aggregate(by=["k"], r=dd.min("v")),
    "custom min (numba)": lambda c: c.reduce(nb_min, by="k", out=["r"]),
    "median (numba)": lambda c: c.reduce(nb_median, by="k", out=["r"]),
    "median (numpy)": lambda c: c.reduce(np_median, by="k", out=["r"]),
    "median (per_group)": lambda c: c.reduce(dd.per_group(one_median), by="k", out=["r"]),
}


def per_group_reduce(rows: int, groups: int, change: int, epochs: int, show=print) -> None:
    rng = np.random.default_rng(0)
    data = np.stack([rng.integers(0, groups, rows), rng.integers(0, 1 << 30, rows)], 1)
    show(f"values(k, v): {rows:,} rows, {groups:,} groups; epochs of {change} inserts + "
         f"{change} removals")
    show(f"{'reducer':22} {'initial':>9} {'update median':>14} {'p90':>9}")
    for name, build in VARIANTS.items():
        flow = dd.Dataflow()
        values = flow.input("values", ["k", "v"])
        out = build(values).output()
        start = time.perf_counter()
        values.insert(data)
        flow.advance()
        initial = time.perf_counter() - start
        live = data.copy()
        times = []
        for _ in range(epochs):
            gone = rng.choice(len(live), change, replace=False)
            new = np.stack([rng.integers(0, groups, change), rng.integers(0, 1 << 30, change)], 1)
            start = time.perf_counter()
            values.remove(live[gone])
            values.insert(new)
            flow.advance()
            times.append(time.perf_counter() - start)
            live[gone] = new
        assert len(out.snapshot()) <= groups
        times.sort()
        show(f"{name:22} {initial:8.2f}s {statistics.median(times) * 1e3:11.1f} ms "
             f"{times[int(len(times) * 0.9)] * 1e3:6.1f} ms")
        flow.close()


def components(scale: int, edges: int, batches: int) -> None:
    e_all = rmat_edges(scale, edges + 10 * batches, seed=1)
    base, spare = e_all[:edges], e_all[edges:]
    print(f"\nlabel propagation on R-MAT scale {scale}, {edges:,} edges; {batches} batches of "
          f"10 + 10 edges")
    print(f"{'min':22} {'initial':>9} {'update median':>14}")
    answers = []
    for name in ("built-in min", "custom min (numba)"):
        flow = dd.Dataflow()
        e = flow.input("e", ["a", "b"])
        both = e.concat(e.select(a="b", b="a")).distinct()
        start_labels = both.select(node="a").distinct().select("node", label="node")

        def round_(labels, name=name):
            step = labels.join(both, left_on="node", right_on="a").select(node="b",
                                                                          label="label")
            grouped = start_labels.concat(step)
            if name == "built-in min":
                return grouped.aggregate(by=["node"], label=dd.min("label"))
            return grouped.reduce(nb_min, by="node", columns=["label"], out=["label"])

        out = start_labels.iterate(round_).output()
        start = time.perf_counter()
        e.insert(base)
        flow.advance()
        initial = time.perf_counter() - start
        times = []
        for b in range(batches):
            start = time.perf_counter()
            e.remove(base[b * 10:(b + 1) * 10])
            e.insert(spare[b * 10:(b + 1) * 10])
            flow.advance()
            times.append(time.perf_counter() - start)
        answers.append(out.snapshot())
        print(f"{name:22} {initial:8.2f}s {statistics.median(times) * 1e3:11.1f} ms")
        flow.close()
    assert answers[0] == answers[1]


def main() -> None:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--change", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--scale", type=int, default=14)
    parser.add_argument("--edges", type=int, default=60_000)
    parser.add_argument("--batches", type=int, default=10)
    args = parser.parse_args()
    # load every kernel (and compile the two above) outside the timings
    per_group_reduce(20_000, 2_000, 100, 2, show=lambda *a: None)
    per_group_reduce(args.rows, args.groups, args.change, args.epochs)
    components(args.scale, args.edges, args.batches)


if __name__ == "__main__":
    main()
