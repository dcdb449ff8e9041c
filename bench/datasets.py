"""Where benchmarks find real data: ``--data DIR`` (or the ``DIFFFLOW_DATA`` environment
variable), else the repository's ``data/``, else (without ``--data``) where ``diffflow bench
graphs`` looks and downloads (:mod:`diffflow.bench.datasets`: its cache folder, and
``../shared/data`` beside the clone).

A graph ``name`` is the file ``<dir>/graphs/<name>.txt.gz`` in the first folder that has it;
when none has it, :func:`graph_file` stops with a message naming the folders searched and the
graphs that are there.
"""
from __future__ import annotations

import gzip
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_DATA = os.path.normpath(os.path.join(HERE, "..", "data"))
DATA_ENV = "DIFFFLOW_DATA"  # a folder of more graphs (graphs/<name>.txt.gz), when set


def add_data_option(parser) -> None:
    """Add ``--data DIR`` to an argparse parser."""
    parser.add_argument("--data", metavar="DIR", default=None,
                        help=f"folder holding graphs/<name>.txt.gz (default: ${DATA_ENV} when "
                             f"set, then {REPO_DATA})")


def require(*modules: str) -> None:
    """Stop with the install command when a peer the benchmark measures is not installed."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise SystemExit(f"this benchmark measures {', '.join(missing)} side by side; not "
                         f"installed here: pip install -e \".[bench]\"")


def data_dirs(data: str | None = None) -> list:
    """Folders to search, in order."""
    if data:
        if not os.path.isdir(data):
            raise SystemExit(f"--data {data}: no such folder; it should hold graphs/<name>.txt.gz")
        return [data]
    named = os.environ.get(DATA_ENV)
    if named and not os.path.isdir(named):
        raise SystemExit(f"{DATA_ENV}={named}: no such folder; it should hold "
                         f"graphs/<name>.txt.gz")
    return [d for d in (named, REPO_DATA) if d and os.path.isdir(d)]


def available_graphs(data: str | None = None) -> list:
    """Names of the graphs found in the data folders."""
    names = set()
    for folder in data_dirs(data):
        graphs = os.path.join(folder, "graphs")
        if os.path.isdir(graphs):
            names |= {f[: -len(".txt.gz")] for f in os.listdir(graphs) if f.endswith(".txt.gz")}
    return sorted(names)


def graph_file(name: str, data: str | None = None) -> str:
    """Path of graph ``name`` (``wiki-Vote`` or ``wiki-Vote.txt.gz``), or SystemExit saying why."""
    file = name if name.endswith(".gz") else f"{name}.txt.gz"
    for folder in data_dirs(data):
        path = os.path.join(folder, "graphs", file)
        if os.path.exists(path):
            return path
    searched = ", ".join(os.path.join(d, "graphs") for d in data_dirs(data)) or "(no folder)"
    catalog = package_module("datasets")
    try:
        known = catalog.entry(name)
    except ValueError:
        known = None
    if known and not data:  # the graphs `diffflow bench graphs --download` keeps in its cache
        found = catalog.find(known)
        if found:
            return found
        raise SystemExit(f"graph {name!r} not found in {searched} nor in "
                         f"{', '.join(catalog.search_dirs())}. Fetch it once (~{known.gz_mib:g} "
                         f"MiB, from {known.url}, verified) with: diffflow bench graphs --graph "
                         f"{known.name} --download --batches 0 --algorithms reach")
    have = ", ".join(available_graphs(data)) or "none"
    raise SystemExit(f"graph {name!r} not found: looked for {file} in {searched}. Graphs there: "
                     f"{have}. Pass --data DIR (or set {DATA_ENV}) for a folder with graphs/{file} "
                     f"(SNAP edge lists, https://snap.stanford.edu/data/).")


def package_module(name: str):
    """``diffflow/bench/<name>.py`` of this checkout loaded as a file, without importing
    diffflow: :mod:`diffflow.bench.rmat`, ``.peers`` and ``.datasets`` import only numpy and
    the standard library at their top (bench_peers times scipy in processes that must not
    have imported diffflow)."""
    import importlib.util
    import sys

    key = f"_diffflow_bench_{name}"
    if key not in sys.modules:
        path = os.path.join(HERE, "..", "diffflow", "bench", f"{name}.py")
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def stats_entry(name: str, data: str | None = None):
    """The stats.json entry (measured SCC/WCC sizes, ...) beside graph ``name``, or None."""
    import json

    folder = os.path.dirname(graph_file(name, data))
    path = os.path.join(folder, "stats.json")
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        stats = json.load(fh)
    key = name.removesuffix(".txt.gz").lower().replace("-", "_")
    return next((e for e in stats if key in e["file"].lower()), None)


def load_graph(name: str, data: str | None = None) -> np.ndarray:
    """Distinct directed edges of a SNAP edge list as an ``(n, 2)`` int64 array."""
    with gzip.open(graph_file(name, data), "rt") as fh:
        rows = [line.split() for line in fh if line.strip() and not line.startswith("#")]
    return np.unique(np.array(rows, dtype=np.int64), axis=0)
