"""Incremental graph algorithms: diffflow versus recomputation with scipy and networkx.

    python bench/bench_graphs.py --graph rmat --scale 14 --edges 120000
    python bench/bench_graphs.py --graph ego-twitter
    python bench/bench_graphs.py --graph ego-twitter --algorithms components
    python bench/bench_graphs.py --graph rmat --trace /tmp/run.trace   # what tracing costs

For reachability from 10 roots and for weakly connected components it reports
the initial computation, then the latency of update batches (10 edges
inserted + 10 removed, ``--batches`` of them), next to scipy.sparse.csgraph
and networkx recomputing the same answer from scratch in the same run.
With ``--trace FILE`` it instead runs an untraced and a traced copy of each
dataflow on the same batches, alternating which goes first, and reports both
update latencies and tracing's overhead (traces go to ``FILE-<algorithm>``).
Not collected by pytest.  Single core: set NUMBA_NUM_THREADS=1.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from datasets import add_data_option, load_graph, require, stats_entry  # noqa: F401

# diffflow is imported inside the functions that use it: bench_peers.py times scipy_reach /
# scipy_wcc in processes that must not have imported diffflow.


def rmat_sample(rng, scale: int, n: int, a=0.57, b=0.19, c=0.19) -> np.ndarray:
    """``n`` R-MAT (Graph500 Kronecker) node pairs over ``2**scale`` nodes, self loops and
    duplicates included."""
    src = np.zeros(n, np.int64)
    dst = np.zeros(n, np.int64)
    for bit in range(scale):
        r = rng.random(n)
        right = (r >= a) & (r < a + b) | (r >= a + b + c)
        down = r >= a + b
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    return np.stack([src, dst], 1)


def rmat_edges(scale: int, count: int, seed: int = 0, a=0.57, b=0.19, c=0.19) -> np.ndarray:
    """``count`` distinct R-MAT (Graph500 Kronecker) edges over ``2**scale`` nodes, no self
    loops."""
    rng = np.random.default_rng(seed)
    out = np.zeros((0, 2), np.int64)
    while len(out) < count:
        batch = rmat_sample(rng, scale, int((count - len(out)) * 1.3) + 16, a, b, c)
        batch = batch[batch[:, 0] != batch[:, 1]]
        out = np.unique(np.concatenate([out, batch]), axis=0)
    return out[rng.permutation(len(out))[:count]]


def graph500_edges(scale: int, edge_factor: int, seed: int = 0) -> np.ndarray:
    """Graph500-sized R-MAT graph: ``edge_factor * 2**scale`` pairs sampled (Graph500's a, b,
    c), self loops and duplicates dropped (s15 x8: 243,678 edges; s17 x16: 1,942,371), in
    random order.  Unlike Graph500, node ids are not permuted."""
    rng = np.random.default_rng(seed)
    out = rmat_sample(rng, scale, edge_factor << scale)
    out = np.unique(out[out[:, 0] != out[:, 1]], axis=0)
    return out[rng.permutation(len(out))]


def scipy_reach(edges: np.ndarray, roots: np.ndarray) -> int:
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order

    ids, inv = np.unique(np.concatenate([edges.ravel(), roots]), return_inverse=True)
    e, r = inv[: edges.size].reshape(-1, 2), inv[edges.size:]
    m = sp.csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(len(ids), len(ids)))
    seen = np.zeros(len(ids), bool)
    for root in r:
        if not seen[root]:
            seen[breadth_first_order(m, root, directed=True, return_predecessors=False)] = True
    return int(seen.sum())


def scipy_components(edges: np.ndarray) -> list:
    """``[number of weakly connected components, nodes in the largest]``."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    ids, inv = np.unique(edges.ravel(), return_inverse=True)
    e = inv.reshape(-1, 2)
    m = sp.csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(len(ids), len(ids)))
    n, labels = connected_components(m, directed=True, connection="weak")
    return [int(n), int(np.bincount(labels).max())]


def scipy_wcc(edges: np.ndarray) -> int:
    """Nodes in the largest weakly connected component."""
    return scipy_components(edges)[1]


def nx_reach(edges, roots) -> int:
    import networkx as nx

    g = nx.DiGraph()
    g.add_edges_from(edges.tolist())
    seen = set(roots.tolist())
    for r in roots.tolist():
        if r in g:
            seen |= nx.descendants(g, r)
    return len(seen)


def nx_wcc(edges) -> int:
    import networkx as nx

    g = nx.Graph()
    g.add_edges_from(edges.tolist())
    return max(len(c) for c in nx.connected_components(g))


def timed(fn, *args):
    t0 = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - t0, value


def run(algorithm: str, edges_np: np.ndarray, batches: int, parts: int, seed: int = 1):
    import diffflow as dd
    from diffflow import graphs

    rng = np.random.default_rng(seed)
    flow = dd.Dataflow(partitions=parts)
    edges = flow.input("edges", ["src", "dst"])
    roots_np = rng.choice(np.unique(edges_np[:, 0]), 10, replace=False)
    if algorithm == "reach":
        roots = flow.input("roots", ["node"])
        result = graphs.reachable(edges, roots).aggregate(by=[], n=dd.count())
        roots.insert(roots_np[:, None])
    else:
        result = graphs.connected_components(edges).aggregate(by=["label"], size=dd.count())
    out = result.output()
    edges.insert(edges_np)
    initial, _ = timed(flow.advance)
    if algorithm == "reach":
        answer = out.snapshot() and next(iter(out.snapshot()))[0]
        t_scipy, ref = timed(scipy_reach, edges_np, roots_np)
        t_nx, _ = timed(nx_reach, edges_np, roots_np)
    else:
        answer = max(r[1] for r in out.snapshot())
        t_scipy, ref = timed(scipy_wcc, edges_np)
        t_nx, _ = timed(nx_wcc, edges_np)
    assert answer == ref, (answer, ref)
    current = edges_np.copy()
    nodes = np.unique(edges_np)
    latencies = []
    for _ in range(batches):
        drop = rng.choice(len(current), 10, replace=False)
        add = np.stack([rng.choice(nodes, 10), rng.choice(nodes, 10)], 1)
        edges.remove(current[drop])
        edges.insert(add)
        current[drop] = add
        t, _ = timed(flow.advance)
        latencies.append(t)
    if algorithm == "reach":
        check = scipy_reach(np.unique(current, axis=0), roots_np)
        got = next(iter(out.snapshot()))[0]
    else:
        check = scipy_wcc(np.unique(current, axis=0))
        got = max(r[1] for r in out.snapshot())
    assert got == check, (got, check)
    med = statistics.median(latencies)
    print(f"{algorithm:5s} initial {initial:7.2f} s | scipy {t_scipy * 1e3:8.1f} ms "
          f"(ratio {initial / t_scipy:6.1f}x) | networkx {t_nx:6.2f} s")
    print(f"{'':5s} 10+10 update batches: median {med * 1e3:7.1f} ms, "
          f"p90 {sorted(latencies)[int(0.9 * len(latencies))] * 1e3:7.1f} ms | "
          f"networkx recompute / update = {t_nx / med:7.0f}x | scipy recompute / update = "
          f"{t_scipy / med:5.2f}x")


def trace_overhead(algorithm: str, edges_np: np.ndarray, batches: int, parts: int, trace: str,
                   seed: int = 1, runtime: str = "local") -> None:
    """Update latency untraced and traced, the two copies fed the same batches in turns."""
    import diffflow as dd
    from diffflow import graphs

    rng = np.random.default_rng(seed)
    roots_np = rng.choice(np.unique(edges_np[:, 0]), 10, replace=False)
    root, ext = os.path.splitext(trace)
    copies = []
    for target in (None, f"{root}-{algorithm}{ext}"):
        flow = dd.Dataflow(partitions=parts, runtime=runtime, trace=target)
        edges = flow.input("edges", ["src", "dst"])
        if algorithm == "reach":
            roots = flow.input("roots", ["node"])
            result = graphs.reachable(edges, roots).aggregate(by=[], n=dd.count())
            roots.insert(roots_np[:, None])
        else:
            result = graphs.connected_components(edges).aggregate(by=["label"], size=dd.count())
        out = result.output()
        edges.insert(edges_np)
        flow.advance()
        copies.append((flow, edges, out, []))
    current = edges_np.copy()
    nodes = np.unique(edges_np)
    for i in range(batches):
        drop = rng.choice(len(current), 10, replace=False)
        add = np.stack([rng.choice(nodes, 10), rng.choice(nodes, 10)], 1)
        for flow, edges, _, latencies in copies[:: 1 if i % 2 else -1]:
            edges.remove(current[drop])
            edges.insert(add)
            latencies.append(timed(flow.advance)[0])
        current[drop] = add
    assert copies[0][2].snapshot() == copies[1][2].snapshot()
    for flow, *_ in copies:
        flow.close()
    plain, traced = (statistics.median(c[3]) for c in copies)
    print(f"{algorithm:5s} 10+10 update batches, median: untraced {plain * 1e3:6.2f} ms, traced "
          f"{traced * 1e3:6.2f} ms: overhead {100 * (traced / plain - 1):+5.1f} % "
          f"({batches} batches each, alternating)")


def component_sizes(edges_np: np.ndarray, graph: str, data=None) -> None:
    """Largest WCC and SCC computed by diffflow, checked against the graph's stats.json."""
    import diffflow as dd
    from diffflow import graphs

    entry = stats_entry(graph, data)
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    wcc = graphs.connected_components(edges).aggregate(by=["label"], size=dd.count()).output()
    scc = graphs.strongly_connected_components(edges).aggregate(
        by=["label"], size=dd.count()).output()
    edges.insert(edges_np)
    elapsed, _ = timed(flow.advance)
    largest_wcc = max(r[1] for r in wcc.snapshot())
    largest_scc = max(r[1] for r in scc.snapshot())
    expected = (entry["largest_wcc_nodes"], entry["largest_scc_nodes"]) if entry else None
    print(f"components: largest WCC {largest_wcc:,}, largest SCC {largest_scc:,} "
          f"(stats.json: {expected}) in {elapsed:.1f} s")
    if expected:
        assert (largest_wcc, largest_scc) == expected


def main() -> None:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--graph", default="rmat",
                        help="rmat, ego-twitter, wiki-Vote, soc-Epinions1, email-Enron, ...")
    parser.add_argument("--scale", type=int, default=14)
    parser.add_argument("--edges", type=int, default=120_000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--algorithms", default="reach,wcc")
    parser.add_argument("--trace", metavar="FILE",
                        help="measure tracing's overhead instead (traces to FILE-<algorithm>)")
    parser.add_argument("--runtime", default="local",
                        help="with --trace: local, cluster or processes")
    add_data_option(parser)
    args = parser.parse_args()
    require("scipy", "networkx")
    if args.graph == "rmat":
        edges = rmat_edges(args.scale, args.edges)
        label = f"R-MAT scale {args.scale}, {len(edges):,} edges"
    else:
        edges = load_graph(args.graph, args.data)
        label = f"{args.graph}, {len(edges):,} edges"
    print(label)
    for algorithm in args.algorithms.split(","):
        if algorithm == "components":
            component_sizes(edges, args.graph, args.data)
        elif args.trace:
            trace_overhead(algorithm, edges, args.batches, args.partitions, args.trace,
                           runtime=args.runtime)
        else:
            run(algorithm, edges, args.batches, args.partitions)


if __name__ == "__main__":
    main()
