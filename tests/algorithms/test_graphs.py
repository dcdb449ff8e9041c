"""The graph library against networkx, on random graphs changing over epochs and on real graphs."""
import gzip
import json
import os
from collections import Counter

import networkx as nx
import numpy as np
import pytest

import diffflow as dd
from diffflow import graphs
from tests.support import paths
from tests.support.helpers import drive

# every test here runs with the search tactics, and with the loops with compiled rounds
# forced on and off (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("graph_library_paths")

# real graphs shipped inside the repository (data/README.md: source and licence)
DATA = str(paths.DATA / "graphs")


def _digraph(state, name="edges"):
    g = nx.DiGraph()
    g.add_edges_from((r[0], r[1]) for r, m in state[name].items() if m > 0)
    return g


def _roots(state):
    return {r[0] for r, m in state["roots"].items() if m > 0}


def reach_oracle(state):
    g, roots = _digraph(state), _roots(state)
    seen = set(roots)
    for r in roots:
        if r in g:
            seen |= nx.descendants(g, r)
    return Counter({(n,): 1 for n in seen})


def bfs_oracle(state):
    g, roots = _digraph(state), _roots(state)
    g.add_nodes_from(roots)
    dist = nx.multi_source_dijkstra_path_length(g, roots) if roots else {}
    return Counter({(n, d): 1 for n, d in dist.items()})


def sssp_oracle(state):
    g = nx.DiGraph()
    for (a, b, w), m in state["edges"].items():
        if m > 0 and (not g.has_edge(a, b) or g[a][b]["weight"] > w):
            g.add_edge(a, b, weight=w)
    roots = _roots(state)
    g.add_nodes_from(roots)
    dist = nx.multi_source_dijkstra_path_length(g, roots) if roots else {}
    return Counter({(n, d): 1 for n, d in dist.items()})


def wcc_oracle(state):
    g = _digraph(state).to_undirected()
    return Counter({(n, min(c)): 1 for c in nx.connected_components(g) for n in c})


def scc_oracle(state):
    g = _digraph(state)
    return Counter({(n, min(c)): 1 for c in nx.strongly_connected_components(g) for n in c})


ALGORITHMS = {
    "reachable": (lambda f, i: graphs.reachable(i["edges"], i["roots"]), reach_oracle, True),
    "bfs": (lambda f, i: graphs.bfs_distances(i["edges"], i["roots"]), bfs_oracle, True),
    "wcc": (lambda f, i: graphs.connected_components(i["edges"]), wcc_oracle, False),
    "scc": (lambda f, i: graphs.strongly_connected_components(i["edges"]), scc_oracle, False),
}


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_against_networkx(name, seed, parts):
    build, oracle, with_roots = ALGORITHMS[name]
    inputs = {"edges": ["src", "dst"]}
    if with_roots:
        inputs["roots"] = ["node"]
    drive(inputs, build, oracle, seed=seed, parts=parts, domain=9, batch=9, epochs=6)


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(5))
def test_sssp_against_networkx(seed, parts):
    drive({"edges": ["src", "dst", "w"], "roots": ["node"]},
          lambda f, i: graphs.sssp(i["edges"], i["roots"]), sssp_oracle, seed=seed,
          parts=parts, domain=6, batch=8, epochs=6)


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", sorted(ALGORITHMS) + ["sssp"])
def test_an_edge_removed_more_often_than_inserted_counts_as_absent(name, seed, parts):
    """Negative counts (a removal of an edge that is not there, a difference of two
    collections) mean absent to every algorithm, as to the oracles: the loops settle (a
    negative count cancelling a real path's candidate once kept labels rising and falling
    for ever) and agree with the search tactics."""
    if name == "sssp":
        inputs = {"edges": ["src", "dst", "w"], "roots": ["node"]}
        build, oracle = (lambda f, i: graphs.sssp(i["edges"], i["roots"])), sssp_oracle
    else:
        build, oracle, with_roots = ALGORITHMS[name]
        inputs = {"edges": ["src", "dst"], **({"roots": ["node"]} if with_roots else {})}
    drive(inputs, build, oracle, seed=100 + seed, parts=parts, domain=7, batch=10, epochs=8,
          allow_negative=True)


def load_edges(name):
    with gzip.open(os.path.join(DATA, name), "rt") as fh:
        rows = [line.split() for line in fh if line.strip() and not line.startswith("#")]
    return np.unique(np.array(rows, dtype=np.int64), axis=0)


@pytest.mark.slow
@pytest.mark.parametrize("name,key", [("p2p-Gnutella08.txt.gz", "p2p-Gnutella08"),
                                      ("wiki-Vote.txt.gz", "wiki-Vote")])
def test_real_graph_component_sizes(name, key):
    with open(os.path.join(DATA, "stats.json")) as fh:
        stats = json.load(fh)
    entry = next(e for e in stats if key.lower().replace("-", "_") in e["file"].lower())
    edges_np = load_edges(name)
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    wcc = graphs.connected_components(edges).aggregate(by=["label"], size=dd.count()).output()
    scc = graphs.strongly_connected_components(edges).aggregate(
        by=["label"], size=dd.count()).output()
    edges.insert(edges_np)
    flow.advance()
    assert max(r[1] for r in wcc.snapshot()) == entry["largest_wcc_nodes"]
    assert max(r[1] for r in scc.snapshot()) == entry["largest_scc_nodes"]
