"""``diffflow.graphs``: incremental graph algorithms (reachability, BFS, shortest paths,
connected and strongly connected components), written with the public collection API.

The public name of :mod:`diffflow.algorithms.graphs`, where they live.

>>> import diffflow as dd
>>> flow = dd.Dataflow()
>>> edges, roots = flow.input("edges", ["src", "dst"]), flow.input("roots", ["node"])
>>> reach = dd.graphs.reachable(edges, roots).output()
>>> edges.insert([(1, 2), (2, 3)]); roots.insert([1]); flow.advance()
>>> sorted(reach.snapshot())
[(1,), (2,), (3,)]
"""
from diffflow.algorithms import graphs as _graphs
from diffflow.algorithms.graphs import (bfs_distances, connected_components, reachable, sssp,
                                        strongly_connected_components)

__all__ = ["reachable", "bfs_distances", "sssp", "connected_components",
           "strongly_connected_components"]


def __getattr__(name):
    # the rest of the module the graph library lived in before (its helpers and imports)
    return getattr(_graphs, name)
