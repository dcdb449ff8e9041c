"""The graph library's loops (not its search tactics): initial run and small updates.

    cd <repository checkout>
    NUMBA_NUM_THREADS=1 PYTHONPATH=. python bench/bench_graph_loops.py --scale 14

``connected_components`` and ``reachable`` (from the first edge's source) in one local
dataflow of ``--partitions`` partitions (2) with ``DIFFFLOW_GRAPH_LOOPS=1``, so that both run
as loops, as on a cluster runtime; R-MAT edges from ``bench_graphs.graph500_edges`` (edge
factor 8, seed 1).  Times the initial run (insert, ``advance()``), then ``--batches``
batches of 10 present edges removed and 10 absent ones inserted, each ``advance()``:
median update.  Peak memory is the process's ``ru_maxrss``.  Run it after a warm-up run
of the same command so that numba's kernels load from the disk cache.  No network; not
collected by pytest.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

os.environ["DIFFFLOW_GRAPH_LOOPS"] = "1"  # (before diffflow reads it)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from bench_graphs import graph500_edges  # noqa: E402

import diffflow as dd  # noqa: E402
from diffflow import graphs  # noqa: E402


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=14, help="R-MAT scale (2^scale nodes)")
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--batches", type=int, default=20)
    args = p.parse_args(argv)
    edges = graph500_edges(args.scale, 8, seed=1)
    rng = np.random.default_rng(0)
    flow = dd.Dataflow(partitions=args.partitions)
    e = flow.input("e", ["a", "b"])
    r = flow.input("r", ["n"])
    components = graphs.connected_components(e).output(changes=False)
    graphs.reachable(e, r).output(changes=False)
    started = time.perf_counter()
    e.insert(edges)
    r.insert([int(edges[0, 0])])
    flow.advance()
    initial = time.perf_counter() - started
    present = [tuple(x) for x in edges.tolist()]
    known, nodes, updates = set(present), int(edges.max()) + 1, []
    for _ in range(args.batches):
        gone = [present[i] for i in rng.choice(len(present), 10, replace=False)]
        new: set = set()
        while len(new) < 10:
            edge = (int(rng.integers(nodes)), int(rng.integers(nodes)))
            if edge not in known:
                new.add(edge)
        started = time.perf_counter()
        e.remove(gone)
        e.insert(sorted(new))
        flow.advance()
        updates.append(time.perf_counter() - started)
        known = (known - set(gone)) | new
        present = sorted(known)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"R-MAT s{args.scale} x8: {len(edges):,} edges, {args.partitions} partitions: "
          f"initial {initial:.2f} s, update median {statistics.median(updates) * 1e3:.1f} ms, "
          f"peak {peak:.0f} MiB, {len(components.snapshot()):,} labelled nodes")
    flow.close()


if __name__ == "__main__":
    main()
