"""Peers: scipy, networkx and DuckDB computing what :mod:`.graphs` measures, from scratch.

Every peer function takes ``(edges, roots)`` — an ``(n, 2)`` int64 array of distinct
directed edges and an int64 array of root nodes — and returns the answer in the form
:func:`diffflow.bench.graphs.answer` gives it, so answers compare with ``==``:

* ``reach``: ``{"nodes_reached": n}``, roots included;
* ``bfs``: ``{"nodes_reached": n, "max_hops": d}``, the farthest node's hops from its
  nearest root;
* ``wcc`` / ``scc``: ``{"components": c, "largest_component_nodes": m}`` over the nodes
  that appear in an edge.

A peer is imported only when asked for (:func:`require`): this module imports nothing but
numpy and the standard library at its top, so ``bench/`` scripts load it as a file, in
processes that must not import diffflow.

>>> e = np.array([[1, 2], [2, 3], [4, 5]]); r = np.array([1])
>>> PEERS["networkx"]["reach"](e, r), PEERS["networkx"]["wcc"](e, r)
({'nodes_reached': 3}, {'components': 2, 'largest_component_nodes': 3})
"""
from __future__ import annotations

import importlib.util

import numpy as np

INSTALL = {"scipy": "scipy", "networkx": "networkx", "duckdb": "duckdb"}


def require(peers) -> None:
    """ValueError naming ``pip install`` for every peer of ``peers`` not installed here."""
    missing = [p for p in peers if importlib.util.find_spec(p) is None]
    if missing:
        raise ValueError(f"peer{'s' if len(missing) > 1 else ''} asked for but not installed: "
                         f"{', '.join(missing)}; pip install "
                         f"{' '.join(INSTALL.get(p, p) for p in missing)} (or pip install -e \".[bench]\" "
                         f"in a checkout)")


# ---------------------------------------------------------------------------------------------
# scipy.sparse.csgraph

def _csr(edges: np.ndarray, roots=None):
    """``(matrix, root indices)`` over the dense ids of the nodes of ``edges`` and ``roots``."""
    import scipy.sparse as sp

    extra = np.zeros(0, np.int64) if roots is None else np.asarray(roots, np.int64)
    ids, inv = np.unique(np.concatenate([edges.ravel(), extra]), return_inverse=True)
    e, r = inv[: edges.size].reshape(-1, 2), inv[edges.size:]
    m = sp.csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(len(ids), len(ids)))
    return m, r


def scipy_reach(edges: np.ndarray, roots: np.ndarray) -> int:
    """Nodes reachable from ``roots``, roots included."""
    from scipy.sparse.csgraph import breadth_first_order

    m, r = _csr(edges, roots)
    seen = np.zeros(m.shape[0], bool)
    for root in r:
        if not seen[root]:
            seen[breadth_first_order(m, root, directed=True, return_predecessors=False)] = True
    return int(seen.sum())


def scipy_components(edges: np.ndarray, connection: str = "weak") -> list:
    """``[number of components, nodes in the largest]`` (``connection`` weak or strong)."""
    from scipy.sparse.csgraph import connected_components

    m, _ = _csr(edges)
    n, labels = connected_components(m, directed=True, connection=connection)
    return [int(n), int(np.bincount(labels).max())]


def scipy_wcc(edges: np.ndarray) -> int:
    """Nodes in the largest weakly connected component."""
    return scipy_components(edges)[1]


def _scipy_bfs(edges, roots) -> dict:
    from scipy.sparse.csgraph import shortest_path

    m, r = _csr(edges, roots)
    hops = shortest_path(m, directed=True, unweighted=True, indices=np.unique(r)).min(axis=0)
    hops = hops[np.isfinite(hops)]
    return {"nodes_reached": int(len(hops)), "max_hops": int(hops.max())}


# ---------------------------------------------------------------------------------------------
# networkx

def _digraph(edges):
    import networkx as nx

    g = nx.DiGraph()
    g.add_edges_from(edges.tolist())
    return g


def nx_reach(edges, roots) -> int:
    """Nodes reachable from ``roots``, roots included."""
    import networkx as nx

    g = _digraph(edges)
    seen = set(roots.tolist())
    for r in roots.tolist():
        if r in g:
            seen |= nx.descendants(g, r)
    return len(seen)


def nx_wcc(edges) -> int:
    """Nodes in the largest weakly connected component."""
    import networkx as nx

    g = nx.Graph()
    g.add_edges_from(edges.tolist())
    return max(len(c) for c in nx.connected_components(g))


def _nx_bfs(edges, roots) -> dict:
    import networkx as nx

    g = _digraph(edges)
    g.add_nodes_from(roots.tolist())
    hops = nx.multi_source_dijkstra_path_length(g, set(roots.tolist()))  # unit weights: BFS
    return {"nodes_reached": len(hops), "max_hops": int(max(hops.values()))}


def _nx_components(edges, strong: bool) -> dict:
    import networkx as nx

    g = _digraph(edges)
    found = nx.strongly_connected_components(g) if strong else nx.weakly_connected_components(g)
    sizes = [len(c) for c in found]
    return {"components": len(sizes), "largest_component_nodes": max(sizes)}


# ---------------------------------------------------------------------------------------------
# DuckDB: recursive SQL (WITH RECURSIVE ... USING KEY needs DuckDB >= 1.3)

REACH_SQL = """WITH RECURSIVE r(node) AS (
    SELECT node FROM roots UNION SELECT e.dst FROM r JOIN edges e ON r.node = e.src)
  SELECT count(*) FROM r"""
# label propagation: a node's row is replaced (USING KEY) when a neighbour offers a smaller label
CC_SQL = """WITH RECURSIVE cc(node, label) USING KEY (node) AS (
    SELECT node, node FROM nodes
    UNION
    SELECT e.dst, min(c.label) FROM cc c JOIN und e ON c.node = e.src
      JOIN recurring.cc r ON r.node = e.dst
    GROUP BY e.dst HAVING min(c.label) < min(r.label))
  SELECT count(*), max(size) FROM (SELECT count(*) AS size FROM cc GROUP BY label)"""


def _duckdb(edges, roots):
    import duckdb
    import pandas as pd

    con = duckdb.connect()
    edge_df = pd.DataFrame(edges, columns=["src", "dst"])  # noqa: F841 (read by the SQL)
    root_df = pd.DataFrame({"node": np.asarray(roots, np.int64)})  # noqa: F841
    con.execute("CREATE TABLE edges AS SELECT * FROM edge_df")
    con.execute("CREATE TABLE roots AS SELECT * FROM root_df")
    return con


def _duckdb_reach(edges, roots) -> dict:
    return {"nodes_reached": int(_duckdb(edges, roots).execute(REACH_SQL).fetchone()[0])}


def _duckdb_wcc(edges, roots) -> dict:
    con = _duckdb(edges, roots)
    con.execute("CREATE TABLE und AS SELECT src, dst FROM edges UNION SELECT dst, src FROM edges")
    con.execute("CREATE TABLE nodes AS SELECT DISTINCT src AS node FROM und")
    n, largest = con.execute(CC_SQL).fetchone()
    return {"components": int(n), "largest_component_nodes": int(largest)}


# peer -> algorithm -> function(edges, roots) -> answer; what a peer lacks is not measured
PEERS = {
    "scipy": {
        "reach": lambda e, r: {"nodes_reached": scipy_reach(e, r)},
        "bfs": _scipy_bfs,
        "wcc": lambda e, r: dict(zip(("components", "largest_component_nodes"),
                                     scipy_components(e, "weak"))),
        "scc": lambda e, r: dict(zip(("components", "largest_component_nodes"),
                                     scipy_components(e, "strong"))),
    },
    "networkx": {
        "reach": lambda e, r: {"nodes_reached": nx_reach(e, r)},
        "bfs": _nx_bfs,
        "wcc": lambda e, r: _nx_components(e, strong=False),
        "scc": lambda e, r: _nx_components(e, strong=True),
    },
    "duckdb": {"reach": _duckdb_reach, "wcc": _duckdb_wcc},
}
