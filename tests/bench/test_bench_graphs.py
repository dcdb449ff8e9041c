"""``diffflow bench graphs`` end to end, in process: a tiny R-MAT and the shipped
p2p-Gnutella08, answers checked against networkx on the same edges; the errors a user meets
(unknown algorithm, missing graph, peer not installed).  No network: a graph that is not
here is reported, never fetched."""
import json
import os
import shutil
import urllib.request

import networkx as nx
import numpy as np
import pytest

from diffflow.bench import datasets, peers
from diffflow.bench.graphs import update_batches
from diffflow.bench.rmat import rmat_edges
from diffflow.cli import main


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to open a URL fails the test; no folder outside the test's is searched."""
    def refuse(*args, **kwargs):
        raise AssertionError("the benchmark tried to download")
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.delenv(datasets.DATA_ENV, raising=False)
    monkeypatch.delenv(datasets.CACHE_ENV, raising=False)


def run(capsys, *args):
    status = main(["bench", "graphs", "--quiet", *args])
    out, err = capsys.readouterr()
    return status, out, err


def oracle(edges, roots):
    """networkx's answers for ``edges`` (a set of pairs) and ``roots``."""
    edges = list(edges)
    g = nx.DiGraph(edges)
    g.add_nodes_from(roots)
    hops = nx.multi_source_dijkstra_path_length(g, set(roots))
    wcc = [len(c) for c in nx.weakly_connected_components(nx.DiGraph(edges))]
    scc = [len(c) for c in nx.strongly_connected_components(nx.DiGraph(edges))]
    return {"reach": {"nodes_reached": len(hops)},
            "bfs": {"nodes_reached": len(hops), "max_hops": max(hops.values())},
            "wcc": {"components": len(wcc), "largest_component_nodes": max(wcc)},
            "scc": {"components": len(scc), "largest_component_nodes": max(scc)}}


@pytest.mark.slow
def test_rmat_json_answers_are_networkx_answers(capsys, tmp_path):
    plot = tmp_path / "bench.png"
    status, out, err = run(capsys, "--graph", "rmat", "--scale", "8", "--edges", "1200",
                           "--algorithms", "reach,bfs,wcc,scc", "--batches", "3",
                           "--batch-size", "5", "--json", "--plot", str(plot),
                           "--data-dir", str(tmp_path))
    assert status == 0, err
    result = json.loads(out)
    assert result["graph"]["edges"] == 1200
    # the same edges and batches, applied here with sets
    edges = rmat_edges(8, 1200, seed=1)
    final = set(map(tuple, edges.tolist()))
    for removed, inserted in update_batches(edges, 3, 5, seed=1):
        final -= set(map(tuple, removed.tolist()))
        final |= set(map(tuple, inserted.tolist()))
    roots = result["settings"]["root_nodes"]
    before, after = oracle(map(tuple, edges.tolist()), roots), oracle(final, roots)
    for name, figures in result["algorithms"].items():
        assert figures["answer_initial"] == before[name], name
        assert figures["answer_final"] == after[name], name
        assert len(figures["update_ms"]) == 3
        assert figures["initial_s"] > 0 and figures["update_ms_median"] > 0
        assert figures["update_ms_p90"] >= figures["update_ms_median"]
        assert figures["initial_edges_per_s"] == pytest.approx(1200 / figures["initial_s"])
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_shipped_graph_table_with_a_peer(capsys, tmp_path):
    status, out, err = run(capsys, "--graph", "p2p-Gnutella08", "--algorithms", "wcc",
                           "--batches", "2", "--peers", "networkx", "--data-dir", str(tmp_path))
    assert status == 0, err
    header = out.splitlines()[0]
    assert header.startswith("graph p2p-Gnutella08: 6,301 nodes, 20,777 edges")
    row = next(line for line in out.splitlines() if line.startswith("wcc "))
    assert " ms" in row or " s " in row
    assert "update edges/s" in out and "initial edges/s" in out
    assert next(line for line in out.splitlines() if line.startswith("networkx")).endswith("agree")


def test_shipped_graph_answer_is_its_stats(capsys, tmp_path):
    status, out, _ = run(capsys, "--graph", "p2p-gnutella08", "--algorithms", "wcc",
                         "--batches", "0", "--json", "--data-dir", str(tmp_path))
    assert status == 0
    stats = json.load(open(os.path.join(datasets._REPO, "data", "graphs", "stats.json")))
    entry = next(e for e in stats if "Gnutella08" in e["file"])
    answers = {k: v["answer_initial"] for k, v in json.loads(out)["algorithms"].items()}
    assert answers["wcc"]["largest_component_nodes"] == entry["largest_wcc_nodes"]


def test_edges_samples_a_real_graph(capsys, tmp_path):
    status, out, _ = run(capsys, "--graph", "wiki-Vote", "--edges", "2000", "--algorithms",
                         "reach", "--batches", "1", "--json", "--data-dir", str(tmp_path))
    assert status == 0
    assert json.loads(out)["graph"]["edges"] == 2000


def test_unknown_algorithm_is_rejected_with_the_valid_ones(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["bench", "graphs", "--algorithms", "reach,pagerank"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "unknown algorithm 'pagerank'" in err and "reach, bfs, wcc, scc" in err


def test_missing_graph_names_download_and_the_url_and_downloads_nothing(capsys, tmp_path):
    status, out, err = run(capsys, "--graph", "email-Enron", "--data-dir", str(tmp_path))
    assert status == 1 and out == ""
    assert "--download" in err and "https://snap.stanford.edu/data/email-Enron.txt.gz" in err
    assert os.listdir(tmp_path) == []


def test_unknown_graph_lists_the_graphs(capsys, tmp_path):
    status, _, err = run(capsys, "--graph", "ego-facebook", "--data-dir", str(tmp_path))
    assert status == 1 and "soc-LiveJournal1" in err and "rmat" in err


def test_a_peer_not_installed_names_pip_install(capsys, monkeypatch):
    real = peers.importlib.util.find_spec
    monkeypatch.setattr(peers.importlib.util, "find_spec",
                        lambda name: None if name == "duckdb" else real(name))
    status, out, err = run(capsys, "--graph", "rmat", "--scale", "6", "--peers", "duckdb")
    assert status == 1 and out == ""
    assert "not installed: duckdb; pip install duckdb" in err


def test_list_says_where_each_graph_is(capsys, tmp_path):
    shutil.copy(os.path.join(datasets._REPO, "data", "graphs", "wiki-Vote.txt.gz"), tmp_path)
    status, out, _ = run(capsys, "--list", "--data-dir", str(tmp_path))
    assert status == 0
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert str(tmp_path / "wiki-Vote.txt.gz") in lines["wiki-Vote"]
    assert "no: --download" in lines["soc-LiveJournal1"]


def test_update_batches_keep_the_graph_simple():
    edges = rmat_edges(7, 600, seed=3)
    present = set(map(tuple, edges.tolist()))
    for removed, inserted in update_batches(edges, 5, 20, seed=2):
        assert set(map(tuple, removed.tolist())) <= present
        added = set(map(tuple, inserted.tolist()))
        assert len(added) == 20 and not added & present
        assert all(s != d for s, d in added)
        present = (present - set(map(tuple, removed.tolist()))) | added
    assert np.all(edges[:, 0] != edges[:, 1])
