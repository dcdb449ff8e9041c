"""The real graphs a benchmark runs on: two shipped with the repository, the rest SNAP's,
downloaded only when the user asks (``--download``).

Where a graph is looked for, in order: the cache folder (``--data-dir``, else
``$DIFFFLOW_GRAPHS``, else ``$XDG_CACHE_HOME/diffflow/graphs``, else
``~/.cache/diffflow/graphs``), the repository's ``data/graphs`` (wiki-Vote and
p2p-Gnutella08 ship there), ``$DIFFFLOW_DATA/graphs`` (the ``bench/`` scripts' folder) and,
without ``--data-dir``, ``../shared/data/graphs`` beside the clone when there is one.  A
download goes to the cache folder.

What a download is checked against (:mod:`.download`): the size and sha256 of the edge list
*inside* the ``.gz``.  The copies pinned here had been recompressed, so their ``.gz`` bytes
are not SNAP's; the text in them is SNAP's as far as can be told (its header lines are
intact).  ego-Twitter's copy at hand is a reconstruction (sorted, header dropped) and
soc-LiveJournal1 was not at hand: for those two nothing is pinned and a download is only
checked to be a complete gzip file.

>>> entry("WIKI-VOTE").name, entry("wiki-Vote").edges
('wiki-Vote', 103689)
"""
from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

SNAP = "https://snap.stanford.edu/data/"
CACHE_ENV = "DIFFFLOW_GRAPHS"   # the cache folder, when set
DATA_ENV = "DIFFFLOW_DATA"      # a folder of more graphs (graphs/<name>.txt.gz), as bench/ reads
_REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class Graph(NamedTuple):
    """One graph of the catalog: SNAP's name, the file it is kept as, where SNAP serves it,
    its size as SNAP states it, and the pinned checks of its edge list (None: not pinned)."""
    name: str
    file: str
    url: str
    nodes: int
    edges: int
    gz_mib: float          # the download's size, roughly (MiB)
    text_size: int | None  # bytes of the edge list inside the .gz
    text_sha256: str | None
    about: str


CATALOG = {g.name.lower(): g for g in (
    Graph("p2p-Gnutella08", "p2p-Gnutella08.txt.gz", SNAP + "p2p-Gnutella08.txt.gz",
          6_301, 20_777, 0.06, 215_359,
          "fecc14ef3c36ac13210bf9618cec773d7354ec9b033fe716a3af3fb815049499",
          "Gnutella peer-to-peer network, August 2002 (shipped)"),
    Graph("wiki-Vote", "wiki-Vote.txt.gz", SNAP + "wiki-Vote.txt.gz",
          7_115, 103_689, 0.28, 1_095_059,
          "6f371ed427cc96f636580561da94c8f4ba823113da703cd491c0b0e05c6aa696",
          "Wikipedia adminship votes (shipped)"),
    Graph("email-Enron", "email-Enron.txt.gz", SNAP + "email-Enron.txt.gz",
          36_692, 367_662, 1.0, 3_681_659,
          "ba199cf123cfd4dfc9388b4c9c0cf236cb294c951d844b5f853efc41ac4684e9",
          "Enron e-mail exchanges"),
    Graph("soc-Epinions1", "soc-Epinions1.txt.gz", SNAP + "soc-Epinions1.txt.gz",
          75_879, 508_837, 1.6, 5_663_083,
          "3e42b000e66cada74053ac7f8b24de291f9837264421dc2f3730b45cc58d17b1",
          "Epinions who-trusts-whom"),
    Graph("ego-Twitter", "ego-twitter.txt.gz", SNAP + "twitter_combined.txt.gz",
          81_306, 1_768_149, 10.0, None, None,
          "Twitter follow circles (checksum not pinned: the copy at hand is a reconstruction)"),
    Graph("soc-LiveJournal1", "soc-LiveJournal1.txt.gz", SNAP + "soc-LiveJournal1.txt.gz",
          4_847_571, 68_993_773, 250.0, None, None,
          "LiveJournal friendships (checksum not pinned: not at hand; needs tens of GB of memory)"),
)}


def entry(name: str) -> Graph:
    """The catalog's graph ``name`` (any case), or ValueError listing the names known.

    >>> entry("nope")
    Traceback (most recent call last):
    ...
    ValueError: no graph named 'nope'; graphs: rmat (generated), p2p-Gnutella08, wiki-Vote, email-Enron, soc-Epinions1, ego-Twitter, soc-LiveJournal1
    """
    found = CATALOG.get(name.lower().removesuffix(".txt.gz"))
    if found is None:
        names = ", ".join(g.name for g in CATALOG.values())
        raise ValueError(f"no graph named {name!r}; graphs: rmat (generated), {names}")
    return found


def cache_dir(data_dir: str | None = None) -> str:
    """Where downloads go: ``data_dir``, else ``$DIFFFLOW_GRAPHS``, else the user's cache.

    >>> cache_dir("/tmp/g")
    '/tmp/g'
    """
    if data_dir:
        return data_dir
    if os.environ.get(CACHE_ENV):
        return os.environ[CACHE_ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "diffflow", "graphs")


def search_dirs(data_dir: str | None = None) -> list:
    """Folders searched for a graph's file, in order (existing or not).

    >>> search_dirs("/tmp/g")[:2] == ["/tmp/g", os.path.join(_REPO, "data", "graphs")]
    True
    """
    dirs = [cache_dir(data_dir), os.path.join(_REPO, "data", "graphs")]
    if os.environ.get(DATA_ENV):
        dirs.append(os.path.join(os.environ[DATA_ENV], "graphs"))
    if not data_dir:
        dirs.append(os.path.join(os.path.dirname(_REPO), "shared", "data", "graphs"))
    return list(dict.fromkeys(os.path.normpath(d) for d in dirs))


def find(graph: Graph, data_dir: str | None = None) -> str | None:
    """Path of ``graph``'s file in the first folder that has it, or None.

    >>> find(entry("p2p-Gnutella08"), "/nonexistent").endswith("p2p-Gnutella08.txt.gz")
    True
    """
    for folder in search_dirs(data_dir):
        path = os.path.join(folder, graph.file)
        if os.path.isfile(path):
            return path
    return None


def missing_message(graph: Graph, data_dir: str | None = None) -> str:
    """What to do about a graph that is nowhere here."""
    return (f"graph {graph.name!r} is not here (looked for {graph.file} in "
            f"{', '.join(search_dirs(data_dir))}). Add --download to fetch it "
            f"(~{graph.gz_mib:g} MiB) from {graph.url} into {cache_dir(data_dir)}, or pass "
            f"--data-dir DIR, a folder holding {graph.file}.")


def load_edges(path: str) -> np.ndarray:
    """Distinct directed edges of a SNAP edge list (``#`` comments, two ids a line, plain or
    gzipped) as an ``(n, 2)`` int64 array, sorted.

    >>> load_edges(find(entry("p2p-Gnutella08"))).shape
    (20777, 2)
    """
    import pandas as pd

    try:
        frame = pd.read_csv(path, sep=r"\s+", comment="#", header=None, usecols=[0, 1],
                            dtype=np.int64, engine="c")
    except (ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"{path}: not a SNAP edge list (two integer ids a line, '#' "
                         f"comments): {exc}") from None
    edges = frame.to_numpy(np.int64)
    edges = edges[np.lexsort((edges[:, 1], edges[:, 0]))]  # (np.unique(axis=0): 4x slower)
    keep = np.ones(len(edges), bool)
    keep[1:] = (edges[1:] != edges[:-1]).any(axis=1)
    return edges[keep]
