"""Explanations: what provenance mode costs, and how long one explanation takes.

    cd <repository checkout>
    PYTHONPATH=. python bench/bench_explain.py                      # both workloads
    PYTHONPATH=. python bench/bench_explain.py --workload cc --cc-graph p2p-Gnutella08

Two workloads on real graphs, each run twice in this process: plain and with
``provenance=True``.

* ``reach``: transitive closure from ``--sources`` random sources of ``--graph``
  (``reach(x, y) :- src(x), edge(x, y).  reach(x, z) :- reach(x, y), edge(y, z).``); every
  explanation is checked to be a shortest path (BFS).
* ``cc``: connected components of ``--cc-graph`` by label propagation (``label(y, l) :-
  cc(x, l), edge``, ``cc(x, l) :- label(x, _), l = min m : { label(x, m) }``, a ``min`` inside
  the recursion); every explanation is checked against the BFS distance from the component's
  label (its lowest node) in the undirected graph.

Both also run through the collection API with ``Dataflow(explain=True)`` (the same
``reach(x, y)`` as an ``iterate``, and ``graphs.connected_components``): ``--api datalog``,
``collection`` or ``both`` (the default).

Printed per workload: the initial run and the median of ``--updates`` single edge removals
and re-insertions (each the median over ``--repeat`` runs), the overhead factors, and for
``--queries`` random derived facts the explanation latency (median, p90), its size in edges;
the first few explanations also pass ``check()``.  Single-threaded numba; no network; not
collected by pytest.
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


CC = """
.decl edge(x: number, y: number)
.decl node(x: number)
.decl label(x: number, l: number)
.decl cc(x: number, l: number)
node(x) :- edge(x, _) ; edge(_, x).
label(x, x) :- node(x).
label(y, l) :- cc(x, l), (edge(x, y) ; edge(y, x)).
cc(x, l) :- label(x, l), l = min m : { label(x, m) }.
"""


def bfs_distances(edges: np.ndarray, source: int, undirected: bool = False) -> dict:
    succ = collections.defaultdict(list)
    for x, y in edges.tolist():
        succ[x].append(y)
        if undirected:
            succ[y].append(x)
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


def run(source, edges, sources, updates: int, provenance: bool, seed: int):
    import diffflow as dd

    program = dd.Program(source, provenance=provenance)
    program.insert("edge", edges)
    if sources is not None:
        program.insert("src", sources[:, None])
    started = time.perf_counter()
    program.commit()
    initial = time.perf_counter() - started
    return program, initial, update_time(edges, updates, seed,
                                         lambda e: program.remove("edge", e),
                                         lambda e: program.insert("edge", e), program.commit)


def update_time(edges, updates: int, seed: int, remove, insert, commit) -> float:
    """The median time of ``updates`` random single-edge removals and re-insertions."""
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(updates):
        edge = edges[rng.integers(len(edges))][None]
        for change in (remove, insert):
            started = time.perf_counter()
            change(edge)
            commit()
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def medians(run_once, repeat: int) -> tuple:
    """``(the last run's result, median initial time, median update time)`` of ``repeat``
    runs of ``run_once()``; only the last run's program or dataflow stays alive."""
    times = []
    for _ in range(repeat):
        result = None
        result, initial, update = run_once()
        times.append((initial, update))
    return (result, statistics.median(t[0] for t in times),
            statistics.median(t[1] for t in times))


def measure(name, source, relation, edges, sources, args, conciseness) -> None:
    rows = []
    for provenance in (False, True):   # compile kernels and warm caches before timing
        run(source, edges[:1000], None if sources is None else sources[:5], 1, provenance,
            args.seed)
    for provenance in (False, True):
        program, initial, update = medians(
            lambda: run(source, edges, sources, args.updates, provenance, args.seed),
            args.repeat)
        rows.append((provenance, initial, update, program.size(relation)))
    plain, explained = rows
    print(f"## {name} ({len(edges):,} edges, {plain[3]:,} derived {relation} facts)\n")
    print("| mode | initial s | update ms, median | facts |\n|---|---|---|---|")
    for provenance, initial, update, size in rows:
        print(f"| {'provenance' if provenance else 'plain'} | {initial:.3g} | "
              f"{update * 1000:.3g} | {size:,} |")
    print(f"\noverhead: initial x{explained[1] / plain[1]:.2f}, update "
          f"x{explained[2] / plain[2]:.2f}")
    facts = random.Random(args.seed).sample(program.rows(relation), args.queries)
    latencies, sizes = [], []
    for i, fact in enumerate(facts):
        started = time.perf_counter()
        ex = program.explain(relation, fact)
        latencies.append(time.perf_counter() - started)
        sizes.append(len(ex.inputs.get("edge", ())))
        conciseness(fact, ex)
        if i < 3:
            ex.check()
    latencies.sort()
    print(f"explanations of {len(facts)} random facts: median "
          f"{statistics.median(latencies) * 1000:.1f} ms, p90 "
          f"{latencies[int(0.9 * len(latencies))] * 1000:.1f} ms; edges median "
          f"{statistics.median(sizes):g}, max {max(sizes)}\n")


def run_collections(workload, edges, sources, updates: int, explain: bool, seed: int):
    import diffflow as dd
    from diffflow import graphs

    flow = dd.Dataflow(explain=explain)
    e = flow.input("edges", ["src", "dst"])
    if workload == "reach":  # the Datalog program's reach(x, y), from each source
        roots = flow.input("roots", ["node"])
        start = roots.join(e, left_on="node", right_on="src").select(x="node", y="dst")
        out = start.iterate(lambda reach: start.concat(
            reach.join(e, left_on="y", right_on="src").select(x="x", y="dst")).distinct(),
            name="reach").output()
        roots.insert(sources[:, None])
    else:
        out = graphs.connected_components(e).output()
    e.insert(edges)
    started = time.perf_counter()
    flow.advance()
    initial = time.perf_counter() - started
    return out, initial, update_time(edges, updates, seed, e.remove, e.insert, flow.advance)


def measure_collections(name, workload, edges, sources, args, conciseness) -> None:
    rows = []
    run_collections(workload, edges[:1000], sources, 1, True, args.seed)   # compile kernels
    for explain in (False, True):
        out, initial, update = medians(
            lambda: run_collections(workload, edges, sources, args.updates, explain,
                                    args.seed), args.repeat)
        rows.append((explain, initial, update, len(out.snapshot())))
    plain, explained = rows
    print(f"## {name}, collection API ({len(edges):,} edges, {plain[3]:,} output rows)\n")
    print("| mode | initial s | update ms, median | rows |\n|---|---|---|---|")
    for explain, initial, update, size in rows:
        print(f"| {'explain=True' if explain else 'plain'} | {initial:.3g} | "
              f"{update * 1000:.3g} | {size:,} |")
    print(f"\noverhead: initial x{explained[1] / plain[1]:.2f}, update "
          f"x{explained[2] / plain[2]:.2f}")
    facts = random.Random(args.seed).sample(sorted(out.snapshot()), args.queries)
    latencies, sizes = [], []
    for i, fact in enumerate(facts):
        started = time.perf_counter()
        ex = out.explain([fact])
        latencies.append(time.perf_counter() - started)
        sizes.append(len(ex.inputs.get("edges", ())))
        conciseness(fact, ex)
        if i < 3:
            ex.check()
    latencies.sort()
    print(f"explanations of {len(facts)} random rows: median "
          f"{statistics.median(latencies) * 1000:.1f} ms, p90 "
          f"{latencies[int(0.9 * len(latencies))] * 1000:.1f} ms; edges median "
          f"{statistics.median(sizes):g}, max {max(sizes)}\n")


def main() -> None:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workload", choices=["reach", "cc", "both"], default="both")
    p.add_argument("--graph", default="wiki-Vote", help="the reach workload's graph")
    p.add_argument("--cc-graph", default="p2p-Gnutella08", help="the cc workload's graph")
    p.add_argument("--sources", type=int, default=100)
    p.add_argument("--updates", type=int, default=10)
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=5,
                   help="runs per mode; the medians of their times are printed")
    p.add_argument("--api", choices=["datalog", "collection", "both"], default="both")
    add_data_option(p)
    args = p.parse_args()
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")
    datalog, collection = args.api in ("datalog", "both"), args.api in ("collection", "both")
    print("# explanations\n")
    if args.workload in ("reach", "both"):
        edges = load_graph(args.graph, args.data)
        rng = np.random.default_rng(args.seed)
        sources = rng.choice(np.unique(edges[:, 0]), args.sources, replace=False)
        distances: dict = {}

        def shortest_path(fact, ex):
            source, node = fact
            if source not in distances:   # None: from any of the sources
                distances[source] = multi_source_bfs(edges, sources if source is None
                                                     else [source])
            used = len(ex.inputs.get("edge", ex.inputs.get("edges", ())))
            if used != distances[source][node]:
                raise SystemExit(f"MISMATCH: the explanation of {fact} is not a shortest path")
        name = f"reach from {args.sources} sources on {args.graph}"
        if datalog:
            measure(name, REACH, "reach", edges, sources, args, shortest_path)
        if collection:
            measure_collections(name, "reach", edges, sources, args, shortest_path)
        print("every reach explanation is a shortest path (BFS)\n")
    if args.workload in ("cc", "both"):
        edges = load_graph(args.cc_graph, args.data)
        labels: dict = {}
        extra = collections.Counter()

        def from_the_label(fact, ex):
            node, label = fact
            if label not in labels:
                labels[label] = bfs_distances(edges, label, undirected=True)
            distance = labels[label].get(node, 0)
            used = len(ex.inputs.get("edge", ex.inputs.get("edges", ())))
            if used < distance:
                raise SystemExit(f"MISMATCH: cc{fact} explained by {used} edges, but "
                                 f"the label is {distance} edges away")
            extra[used - distance] += 1
        name = f"connected components of {args.cc_graph}"
        if datalog:
            measure(name, CC, "cc", edges, None, args, from_the_label)
        if collection:
            measure_collections(name, "cc", edges, None, args, from_the_label)
        print("cc explanations: edges beyond the BFS distance from the label -> count: "
              + ", ".join(f"+{k}: {v}" for k, v in sorted(extra.items())))


def multi_source_bfs(edges: np.ndarray, sources) -> dict:
    """Edges on a shortest path from the nearest source (BFS)."""
    best: dict = {}
    for source in sources:
        for node, d in bfs_distances(edges, int(source)).items():
            best[node] = min(d, best.get(node, d))
        best[int(source)] = 0
    return best


if __name__ == "__main__":
    main()
