"""Incremental graph algorithms: now the command ``diffflow bench graphs`` (diffflow/bench/).

    diffflow bench graphs --graph rmat --scale 14 --edges 120000 --peers scipy,networkx
    diffflow bench graphs --graph ego-Twitter --download
    python bench/bench_graphs.py ...                           # the same, forwarded
    python bench/bench_graphs.py --graph rmat --trace /tmp/run.trace   # what tracing costs

This script forwards its arguments to the command (``--data DIR`` becomes ``--data-dir
DIR/graphs``; ``--algorithms components`` becomes ``wcc,scc`` with no batches), except
``--trace FILE``: it then runs an untraced and a traced copy of each dataflow on the same
batches, alternating which goes first, and reports both update latencies and tracing's
overhead (traces go to ``FILE-<algorithm>``).

It also keeps the names other bench scripts import — the R-MAT generators and the scipy /
networkx recomputations — loaded from diffflow/bench/ as files, so that importing this
module does not import diffflow (bench_peers.py times scipy_reach / scipy_wcc in processes
that must not have).  Not collected by pytest.  Single core: set NUMBA_NUM_THREADS=1.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from datasets import add_data_option, load_graph, package_module  # noqa: F401

_rmat, _peers = package_module("rmat"), package_module("peers")
rmat_sample, rmat_edges, graph500_edges = (_rmat.rmat_sample, _rmat.rmat_edges,
                                           _rmat.graph500_edges)
scipy_reach, scipy_components, scipy_wcc = (_peers.scipy_reach, _peers.scipy_components,
                                            _peers.scipy_wcc)
nx_reach, nx_wcc = _peers.nx_reach, _peers.nx_wcc


def timed(fn, *args):
    t0 = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - t0, value


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
        elif algorithm == "wcc":
            result = graphs.connected_components(edges).aggregate(by=["label"], size=dd.count())
        else:
            raise SystemExit(f"--trace measures reach and wcc, not {algorithm!r}")
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


def _trace_main(argv) -> None:
    from diffflow.arrangements.columnar import load_kernels

    parser = argparse.ArgumentParser(description="tracing's overhead on update batches")
    parser.add_argument("--graph", default="rmat")
    parser.add_argument("--scale", type=int, default=14)
    parser.add_argument("--edges", type=int, default=120_000)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--algorithms", default="reach,wcc")
    parser.add_argument("--trace", metavar="FILE", required=True)
    parser.add_argument("--runtime", default="local", help="local, cluster or processes")
    add_data_option(parser)
    args = parser.parse_args(argv)
    load_kernels()
    edges = (rmat_edges(args.scale, args.edges) if args.graph == "rmat"
             else load_graph(args.graph, args.data))
    print(f"{args.graph}, {len(edges):,} edges")
    for algorithm in args.algorithms.split(","):
        trace_overhead(algorithm, edges, args.batches, args.partitions, args.trace,
                       runtime=args.runtime)


def _forwarded(argv) -> list:
    """The script's arguments as ``diffflow bench graphs`` takes them."""
    out, args = [], list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--data" and args:
            out += ["--data-dir", os.path.join(args.pop(0), "graphs")]
        elif arg == "--algorithms" and args and args[0] == "components":
            args.pop(0)
            out += ["--algorithms", "wcc,scc", "--batches", "0"]
        else:
            out.append(arg)
    return ["bench", "graphs"] + out


def main() -> None:
    if any(a == "--trace" or a.startswith("--trace=") for a in sys.argv[1:]):
        _trace_main(sys.argv[1:])
        return
    from diffflow.cli import main as diffflow

    sys.exit(diffflow(_forwarded(sys.argv[1:])))


if __name__ == "__main__":
    main()
