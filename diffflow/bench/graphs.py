"""The graph benchmark: one dataflow per algorithm computes its answer from scratch over a
graph's edges, then keeps it up to date through batches of edge updates.

Each batch removes ``batch_size`` edges of the graph and inserts ``batch_size`` edges that
are not in it (between nodes of the graph, no self loops); every algorithm gets the same
batches (:func:`update_batches`).  What is timed:

* ``initial_s``: inserting the edges and ``advance()`` until the answer is computed;
* ``update_ms``: one batch's ``remove`` + ``insert`` + ``advance()``, per batch.

An answer is read (outside the timings) after the initial computation and after the last
batch, in the form the peers give (:mod:`.peers`), so the two compare with ``==``.

>>> import numpy as np
>>> e = np.array([[1, 2], [2, 3], [3, 1], [4, 5]])
>>> out = measure("scc", e, np.array([1]), update_batches(e, 1, 1, seed=0))
>>> out["answer_initial"]
{'components': 3, 'largest_component_nodes': 3}
"""
from __future__ import annotations

import statistics
import time

import numpy as np

ALGORITHMS = {
    "reach": "nodes reachable from the roots (diffflow.graphs.reachable)",
    "bfs": "hops from the nearest root (diffflow.graphs.bfs_distances)",
    "wcc": "weakly connected components (diffflow.graphs.connected_components)",
    "scc": "strongly connected components (diffflow.graphs.strongly_connected_components)",
}


def pick_roots(edges: np.ndarray, count: int, seed: int = 1) -> np.ndarray:
    """``count`` distinct nodes with an out-edge (all of them when fewer), chosen by ``seed``.

    >>> pick_roots(np.array([[5, 1], [6, 1]]), 10).tolist()
    [5, 6]
    """
    sources = np.unique(edges[:, 0])
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(sources, min(count, len(sources)), replace=False))


def update_batches(edges: np.ndarray, batches: int, batch_size: int, seed: int = 1) -> list:
    """``[(removed, inserted), ...]``: each batch removes ``batch_size`` edges present at
    that point and inserts ``batch_size`` distinct absent ones between the graph's nodes.

    >>> e = np.array([[1, 2], [2, 3], [3, 4]])
    >>> (rm, add), = update_batches(e, 1, 2)
    >>> len(rm), len(add), bool(set(map(tuple, add.tolist())) & set(map(tuple, e.tolist())))
    (2, 2, False)
    """
    nodes = np.unique(edges)
    if batch_size > len(edges):
        raise ValueError(f"--batch-size {batch_size} is more than the graph's {len(edges)} edges")
    if batch_size > len(nodes) * (len(nodes) - 1) - len(edges):
        raise ValueError(f"--batch-size {batch_size}: the graph has too few absent edges")
    rng = np.random.default_rng(seed)
    current = edges.copy()
    present = set(map(tuple, current.tolist()))  # harness only, outside every timing
    out = []
    for _ in range(batches):
        drop = rng.choice(len(current), batch_size, replace=False)
        add = []
        while len(add) < batch_size:
            s, d = (int(x) for x in rng.choice(nodes, 2))
            if s != d and (s, d) not in present:
                present.add((s, d))
                add.append((s, d))
        removed, inserted = current[drop].copy(), np.array(add, np.int64)
        present.difference_update(map(tuple, removed.tolist()))
        current[drop] = inserted
        out.append((removed, inserted))
    return out


def final_edges(edges: np.ndarray, batches: list) -> np.ndarray:
    """The edges after every batch of ``batches``, sorted.

    >>> final_edges(np.array([[1, 2]]), [(np.array([[1, 2]]), np.array([[2, 1]]))]).tolist()
    [[2, 1]]
    """
    if not batches:
        return np.unique(edges, axis=0)
    removed = np.concatenate([r for r, _ in batches])
    inserted = np.concatenate([a for _, a in batches])
    everything = np.concatenate([edges, inserted])
    keep = np.ones(len(everything), bool)
    keys = _keys(everything, removed)
    keep[np.isin(keys[0], keys[1])] = False
    return np.unique(everything[keep], axis=0)


def _keys(a: np.ndarray, b: np.ndarray) -> tuple:
    """One int64 per edge of ``a`` and of ``b``, equal exactly when the edges are."""
    ids, inv = np.unique(np.concatenate([a.ravel(), b.ravel()]), return_inverse=True)
    k = inv.reshape(-1, 2)
    k = k[:, 0].astype(np.int64) * len(ids) + k[:, 1]
    return k[: len(a)], k[len(a):]


def _build(algorithm: str, edges, roots):
    """The algorithm's output and a function reading its answer from it."""
    from diffflow.algorithms import graphs
    from diffflow.api import count, max as largest

    if algorithm == "reach":
        out = graphs.reachable(edges, roots).aggregate(by=[], n=count()).output()
        return lambda: {"nodes_reached": _single(out)[0]}
    if algorithm == "bfs":
        out = graphs.bfs_distances(edges, roots).aggregate(
            by=[], n=count(), far=largest("dist")).output()
        return lambda: dict(zip(("nodes_reached", "max_hops"), _single(out)))
    find = graphs.connected_components if algorithm == "wcc" else \
        graphs.strongly_connected_components
    sizes = find(edges).aggregate(by=["label"], size=count()).output()

    def components():
        rows = sizes.snapshot()
        return {"components": len(rows),
                "largest_component_nodes": int(np.max([r[1] for r in rows], initial=0))}
    return components


def _single(out) -> tuple:
    rows = list(out.snapshot())
    return tuple(int(x) for x in rows[0]) if rows else (0, 0)


def measure(algorithm: str, edges: np.ndarray, roots: np.ndarray, batches: list,
            partitions: int = 1, advance=None) -> dict:
    """Time ``algorithm`` on ``edges`` from scratch, then through ``batches``; the figures
    (``initial_s``, ``update_ms`` per batch) and the answers before and after the batches.
    ``advance()`` is called after each batch (a progress bar)."""
    from diffflow.api import Dataflow

    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; algorithms: {', '.join(ALGORITHMS)}")
    flow = Dataflow(partitions=partitions)
    try:
        edge_input = flow.input("edges", ["src", "dst"])
        root_input = flow.input("roots", ["node"])
        answer = _build(algorithm, edge_input, root_input)
        t0 = time.perf_counter()
        root_input.insert(roots[:, None])
        edge_input.insert(edges)
        flow.advance()
        initial = time.perf_counter() - t0
        result = {"initial_s": initial, "answer_initial": answer()}
        latencies = []
        for removed, inserted in batches:
            t0 = time.perf_counter()
            edge_input.remove(removed)
            edge_input.insert(inserted)
            flow.advance()
            latencies.append((time.perf_counter() - t0) * 1e3)
            if advance:
                advance()
        result["update_ms"] = latencies
        result["answer_final"] = answer() if batches else result["answer_initial"]
    finally:
        flow.close()
    return result


def summarize(result: dict, edges: int, batch_size: int) -> dict:
    """The figures of one :func:`measure` result, every one with its unit in its name.

    >>> s = summarize({"initial_s": 2.0, "update_ms": [1.0, 2.0, 3.0]}, 1000, 10)
    >>> s["initial_edges_per_s"], s["update_ms_median"], s["update_edges_per_s"]
    (500.0, 2.0, 10000.0)
    """
    lat = sorted(result["update_ms"])
    out = {"initial_s": result["initial_s"],
           "initial_edges_per_s": edges / result["initial_s"] if result["initial_s"] else None}
    if lat:
        out.update(update_ms_median=statistics.median(lat),
                   update_ms_p90=lat[min(len(lat) - 1, int(0.9 * len(lat)))],
                   update_ms_max=lat[-1],
                   update_edges_per_s=2 * batch_size * len(lat) / (sum(lat) / 1e3))
    return out
