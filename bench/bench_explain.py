"""Explanations: what provenance mode costs, and how long one explanation takes.

    cd <repository checkout>
    PYTHONPATH=. python bench/bench_explain.py                      # wiki-Vote, 100 sources
    PYTHONPATH=. python bench/bench_explain.py --graph p2p-Gnutella08 --sources 50

Transitive closure from ``--sources`` random sources (``reach(x, y) :- src(x), edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).``) on a real graph, run twice in this process: plain
and with ``provenance=True``.  Printed: the initial run, the median of ``--updates`` single
edge removals and re-insertions, the overhead factors, and for ``--queries`` random derived
facts the explanation latency (median, p90), its size in edges and its proof height; every
explanation is checked to be a shortest path (BFS) and, for the first few, by ``check()``.
Single-threaded numba; no network; not collected by pytest.
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from datasets import add_data_option, load_graph  # noqa: E402

REACH = """
.decl edge(x: number, y: number)
.decl src(x: number)
.decl reach(x: number, y: number)
reach(x, y) :- src(x), edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
"""


def bfs_distances(edges: np.ndarray, source: int) -> dict:
    succ = collections.defaultdict(list)
    for x, y in edges.tolist():
        succ[x].append(y)
    dist, frontier, d = {}, [source], 0
    while frontier:
        d += 1
        following = []
        for x in frontier:
            for y in succ[x]:
                if y not in dist:
                    dist[y] = d
                    following.append(y)
        frontier = following
    return dist


def run(edges, sources, updates: int, provenance: bool, seed: int):
    import diffflow as dd

    program = dd.Program(REACH, provenance=provenance)
    program.insert("edge", edges)
    program.insert("src", sources[:, None])
    started = time.perf_counter()
    program.commit()
    initial = time.perf_counter() - started
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(updates):
        edge = edges[rng.integers(len(edges))][None]
        for change in (program.remove, program.insert):
            started = time.perf_counter()
            change("edge", edge)
            program.commit()
            times.append(time.perf_counter() - started)
    return program, initial, statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--graph", default="wiki-Vote")
    p.add_argument("--sources", type=int, default=100)
    p.add_argument("--updates", type=int, default=10)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    add_data_option(p)
    args = p.parse_args()
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    edges = load_graph(args.graph, args.data)
    rng = np.random.default_rng(args.seed)
    sources = rng.choice(np.unique(edges[:, 0]), args.sources, replace=False)
    rows = []
    for provenance in (False, True):
        program, initial, update = run(edges, sources, args.updates, provenance, args.seed)
        rows.append((provenance, initial, update, program.size("reach")))
    plain, explained = rows
    print(f"# explanations: reach from {args.sources} sources on {args.graph} "
          f"({len(edges):,} edges, {plain[3]:,} derived facts)\n")
    print("| mode | initial s | update ms, median | facts |\n|---|---|---|---|")
    for provenance, initial, update, size in rows:
        print(f"| {'provenance' if provenance else 'plain'} | {initial:.3g} | "
              f"{update * 1000:.3g} | {size:,} |")
    print(f"\noverhead: initial x{explained[1] / plain[1]:.2f}, update "
          f"x{explained[2] / plain[2]:.2f}")
    facts = random.Random(args.seed).sample(program.rows("reach"), args.queries)
    latencies, sizes, heights = [], [], []
    distances: dict = {}
    for i, fact in enumerate(facts):
        started = time.perf_counter()
        ex = program.explain("reach", fact)
        latencies.append(time.perf_counter() - started)
        sizes.append(ex.size - 1)  # the src fact is one of the inputs
        heights.append(ex.tree.height)
        if fact[0] not in distances:
            distances[fact[0]] = bfs_distances(edges, fact[0])
        if len(ex.inputs["edge"]) != distances[fact[0]][fact[1]]:
            raise SystemExit(f"MISMATCH: explanation of reach{fact} is not a shortest path")
        if i < 3:
            ex.check()
    latencies.sort()
    print(f"explanations of {len(facts)} random facts: median "
          f"{statistics.median(latencies) * 1000:.1f} ms, p90 "
          f"{latencies[int(0.9 * len(latencies))] * 1000:.1f} ms; edges median "
          f"{statistics.median(sizes):g}, max {max(sizes)}; every one a shortest path")


if __name__ == "__main__":
    main()
