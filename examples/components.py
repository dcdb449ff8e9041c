"""Connected components of a real peer-to-peer graph, kept exact while edges are removed.

    python examples/components.py [--partitions 2] [--runtime processes] [--trace cc.trace]

Reads the Gnutella snapshot shipped in ``data/graphs`` (6,301 hosts, 20,777 links), computes
its weakly connected components, then removes random links a hundred at a time and reports
how the components change (a host that loses its last link leaves the graph). With ``--trace`` the run is recorded for ``diffflow pag serve cc.trace``
(the README's dashboard screenshot is such a run).
"""
import argparse
import gzip
import pathlib

import numpy as np

import diffflow as dd
from diffflow.graphs import connected_components

GRAPH = pathlib.Path(__file__).resolve().parent.parent / "data" / "graphs" / "p2p-Gnutella08.txt.gz"


def read_edges(path=GRAPH) -> np.ndarray:
    """The SNAP edge list as an (n, 2) int64 array (``#`` lines are comments)."""
    with gzip.open(path, "rt") as lines:
        return np.array([line.split() for line in lines if not line.startswith("#")], np.int64)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--runtime", default="local", help="local, cluster, processes or spark")
    parser.add_argument("--trace", help="record the run's activity for `diffflow pag`")
    parser.add_argument("--updates", type=int, default=3, help="batches of 100 removed links")
    args = parser.parse_args(argv)
    edges = read_edges()
    with dd.Dataflow(partitions=args.partitions, runtime=args.runtime, trace=args.trace) as flow:
        links = flow.input("links", ["src", "dst"])
        labels = connected_components(links).output()     # (node, smallest node of its component)
        links.insert(edges)
        flow.advance()
        labels.changes()                                  # taken: later calls give news only
        print(f"{len(edges):,} links: {summary(labels.snapshot())}")
        order = np.random.default_rng(seed=1).permutation(len(edges))
        for batch in np.array_split(order[:100 * args.updates], args.updates):
            links.remove(edges[batch])
            flow.advance()                                # computes from the 100 removals only
            relabelled = sum(1 for _row, _epoch, diff in labels.changes() if diff > 0)
            print(f"{len(batch)} links removed: {summary(labels.snapshot())}, "
                  f"{relabelled} hosts relabelled")


def summary(labels) -> str:
    """'H hosts in N components (largest M)' for a snapshot of (node, label) rows."""
    sizes = np.unique(np.array([label for _node, label in labels]), return_counts=True)[1]
    return f"{sizes.sum():,} hosts in {len(sizes):,} components (largest {sizes.max():,})"


if __name__ == "__main__":
    main()
