"""Datalog benchmark: transitive closure and same generation, diffflow next to other engines.

    NUMBA_NUM_THREADS=1 python bench/bench_datalog.py           # R-MAT s11 + wiki-Vote 2,000 ids
    NUMBA_NUM_THREADS=1 python bench/bench_datalog.py --graphs wiki-Vote --nodes 0 \
        --workloads tc-roots,tc --timeout 600 --memory-limit 22 --profile 15
    NUMBA_NUM_THREADS=1 python bench/bench_datalog.py --graphs rmat --rmat-scale 8 --edges 1000 \
        --engines diffflow,duckdb,clingo,pydatalog
    NUMBA_NUM_THREADS=1 python bench/bench_datalog.py --planner points,samegen,records \
        --workloads ""                      # the planner's sections only (bench_planner.py)

Programs (Soufflé syntax; every engine runs the same rules on the same facts):

    tc        path(x, y) :- edge(x, y).
              path(x, z) :- path(x, y), edge(y, z).
    tc-roots  path(x, y) :- root(x), edge(x, y).            (TC from --roots seeded sources)
              path(x, z) :- path(x, y), edge(y, z).
    sg        sg(x, y) :- edge(p, x), edge(p, y), x != y.
              sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).

``--planner SECTIONS`` also runs ``bench_planner.py``'s sections (point queries on
wiki-Vote's closure next to DuckDB, a standing query, same generation with and without
magic sets, a record-keyed join of 10^5 facts; see that file) after the workloads.

Graphs: ``rmat`` (the R-MAT generator of bench_graphs.py, ``--rmat-scale``, ``--edges``,
seed 0) and SNAP graphs found under ``--data`` (``wiki-Vote``, ...), optionally cut to
the subgraph induced by the ``--nodes`` smallest node ids (0 = the whole graph).

Engines, each in its own subprocess killed after ``--timeout`` seconds:

    diffflow   dd.Program; initial insert + commit, then --batches update batches of
               10 inserted + 10 removed edges, each followed by commit (median latency)
    duckdb     WITH RECURSIVE ... UNION (set semantics), ``SET threads`` = --threads (1)
    clingo     gringo grounding + clasp (the model is the least model; facts as text)
    pydatalog  pyDatalog 0.22 (pure Python, top-down with tabling)
    scipy      not a Datalog engine: a hand-written semi-naive fixpoint over scipy.sparse
               boolean matrices (always run in-process as the reference the others must match)

"seconds" is from edges in a numpy array to the answer computed (facts loading included:
text facts for clingo, a DataFrame for DuckDB, ``insert`` of the array for diffflow); it
excludes interpreter start and imports.  diffflow first runs the same program on a 300-edge
graph (with one update) so that loading numba kernels from the on-disk cache is not counted.
Not collected by pytest.  Bench-only dependencies: ``pip install -e ".[bench]"``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from datasets import add_data_option, require

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

BATCH = 10          # edges inserted and removed per update batch

SOURCES = {
    "tc": """
.decl edge(x: number, y: number)
.decl path(x: number, y: number)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
""",
    "tc-roots": """
.decl edge(x: number, y: number)
.decl root(x: number)
.decl path(x: number, y: number)
path(x, y) :- root(x), edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
""",
    "sg": """
.decl edge(x: number, y: number)
.decl sg(x: number, y: number)
sg(x, y) :- edge(p, x), edge(p, y), x != y.
sg(x, y) :- edge(a, x), sg(a, b), edge(b, y).
""",
}
OUTPUT = {"tc": "path", "tc-roots": "path", "sg": "sg"}


# ---------------------------------------------------------------------------------------------
# inputs and the reference fixpoint

def make_graph(name: str, scale: int, edges: int, nodes: int,
               data: str | None = None) -> tuple[str, np.ndarray]:
    from bench_graphs import load_graph, rmat_edges

    if name == "rmat":
        e = rmat_edges(scale, edges, seed=0)
        return f"R-MAT s{scale}", np.unique(e, axis=0)
    e = load_graph(name, data)
    e = e[e[:, 0] != e[:, 1]]
    label = name
    if nodes:
        keep = np.unique(e)[:nodes]
        e = e[np.isin(e[:, 0], keep) & np.isin(e[:, 1], keep)]
        label = f"{name} first {nodes} ids"
    return label, e


def pick_roots(edges: np.ndarray, k: int, seed: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sources = np.unique(edges[:, 0])
    return np.sort(rng.choice(sources, min(k, len(sources)), replace=False))


def make_updates(edges: np.ndarray, batches: int, seed: int = 1):
    """``batches`` pairs (removed, inserted): 10 present edges out, 10 absent edges in.

    Also returns the edge set after each batch.

    New edges join existing nodes and are not self loops; removed edges are chosen among the
    edges present at that point (so a batch may remove an edge an earlier batch inserted).
    """
    rng = np.random.default_rng(seed)
    nodes = np.unique(edges)
    current = {tuple(r) for r in edges.tolist()}
    order = list(map(tuple, edges.tolist()))
    out, states = [], []
    for _ in range(batches):
        drop_at = rng.choice(len(order), BATCH, replace=False)
        drop = [order[i] for i in drop_at]
        add = []
        while len(add) < BATCH:
            a, b = (int(v) for v in rng.choice(nodes, 2))
            if a != b and (a, b) not in current and (a, b) not in add:
                add.append((a, b))
        for r in drop:
            current.discard(r)
        current.update(add)
        drop_set = set(drop)
        order = [r for r in order if r not in drop_set] + add
        out.append((np.array(drop, np.int64), np.array(add, np.int64)))
        states.append(np.array(sorted(current), np.int64).reshape(-1, 2))
    return out, states


def reference(workload: str, edges: np.ndarray, roots: np.ndarray | None, ids: np.ndarray):
    """Semi-naive fixpoint with scipy.sparse boolean matrices (the oracle for every engine).

    Returns the output relation as a boolean CSR matrix over ``ids`` (all node ids).
    """
    import scipy.sparse as sp

    n = len(ids)
    e = np.searchsorted(ids, edges)
    a = sp.csr_matrix((np.ones(len(e), bool), (e[:, 0], e[:, 1])), shape=(n, n))
    if workload == "sg":
        total = (a.T @ a).astype(bool).tolil()
        total.setdiag(False)
        total = total.tocsr()
        total.eliminate_zeros()
        step = lambda d: a.T @ d @ a  # noqa: E731
    else:
        total = a
        if workload == "tc-roots":
            mask = np.zeros(n, bool)
            mask[np.searchsorted(ids, roots)] = True
            total = sp.diags(mask.astype(float)).tocsr() @ a
        step = lambda d: d @ a  # noqa: E731
    total = total.astype(bool)
    delta = total
    while delta.nnz:
        new = step(delta).astype(bool) > total
        total = (total + new).astype(bool)
        delta = new
    return total


def reference_size(workload: str, edges: np.ndarray, roots: np.ndarray | None) -> int:
    ids = np.unique(np.concatenate([edges.ravel(), roots if roots is not None else []]))
    return int(reference(workload, edges, roots, ids.astype(np.int64)).nnz)


# ---------------------------------------------------------------------------------------------
# engines (run in a worker subprocess)

def run_diffflow(workload, edges, roots, updates, args):
    from bench_graphs import rmat_edges

    import diffflow as dd
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on
    name = OUTPUT[workload]
    source = SOURCES[workload]
    # warm-up on a 300-edge R-MAT graph, with one update batch: numba kernels load or compile
    warm_edges = rmat_edges(7, 300, seed=5)
    warm = dd.Program(source, partitions=args.partitions, outputs=[name])
    warm.insert("edge", warm_edges)
    if roots is not None:
        warm.insert("root", warm_edges[:5, :1])
    warm.commit()
    warm.size(name)
    warm.remove("edge", warm_edges[:10])
    warm.insert("edge", warm_edges[:10, ::-1])
    warm.commit()
    warm.size(name)
    del warm

    profile = None
    if args.profile:
        import cProfile
        profile = cProfile.Profile()
        profile.enable()
    t0 = time.perf_counter()
    p = dd.Program(source, partitions=args.partitions, outputs=[name])
    p.insert("edge", edges)
    if roots is not None:
        p.insert("root", roots[:, None])
    p.commit()
    seconds = time.perf_counter() - t0
    if profile is not None:
        profile.disable()
    size = p.size(name)
    result = {"output": size, "seconds": seconds, "update_ms": [], "sizes": []}
    if profile is not None:
        import io
        import pstats

        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(args.profile)
        result["profile"] = text.getvalue()
        profile = cProfile.Profile()
        profile.enable()
    for drop, add in updates:
        t0 = time.perf_counter()
        p.remove("edge", drop)
        p.insert("edge", add)
        p.commit()
        result["update_ms"].append((time.perf_counter() - t0) * 1e3)
        if profile is not None:
            profile.disable()
        result["sizes"].append(p.size(name))
        if profile is not None:
            profile.enable()
    if profile is not None:
        profile.disable()
        if updates:
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(args.profile)
            result["profile_updates"] = text.getvalue()
    return result


DUCKDB_SQL = {
    "tc": """WITH RECURSIVE path(x, y) AS (
        SELECT x, y FROM edge
        UNION
        SELECT p.x, e.y FROM path p JOIN edge e ON p.y = e.x)
      SELECT count(*) FROM path""",
    "tc-roots": """WITH RECURSIVE path(x, y) AS (
        SELECT e.x, e.y FROM root r JOIN edge e ON r.x = e.x
        UNION
        SELECT p.x, e.y FROM path p JOIN edge e ON p.y = e.x)
      SELECT count(*) FROM path""",
    "sg": """WITH RECURSIVE sg(x, y) AS (
        SELECT e1.y, e2.y FROM edge e1 JOIN edge e2 ON e1.x = e2.x WHERE e1.y <> e2.y
        UNION
        SELECT e1.y, e2.y FROM edge e1 JOIN sg s ON e1.x = s.x JOIN edge e2 ON s.y = e2.x)
      SELECT count(*) FROM sg""",
}


def run_duckdb(workload, edges, roots, updates, args):
    import duckdb
    import pandas as pd

    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    t0 = time.perf_counter()
    edge_df = pd.DataFrame(edges, columns=["x", "y"])  # noqa: F841 (read by DuckDB)
    con.execute("CREATE TABLE edge AS SELECT * FROM edge_df")
    if roots is not None:
        root_df = pd.DataFrame({"x": roots})  # noqa: F841
        con.execute("CREATE TABLE root AS SELECT * FROM root_df")
    size = con.execute(DUCKDB_SQL[workload]).fetchone()[0]
    return {"output": int(size), "seconds": time.perf_counter() - t0,
            "version": duckdb.__version__}


CLINGO_RULES = {
    "tc": "path(X,Y) :- edge(X,Y).\npath(X,Z) :- path(X,Y), edge(Y,Z).\n",
    "tc-roots": "path(X,Y) :- root(X), edge(X,Y).\npath(X,Z) :- path(X,Y), edge(Y,Z).\n",
    "sg": "sg(X,Y) :- edge(P,X), edge(P,Y), X != Y.\nsg(X,Y) :- edge(A,X), sg(A,B), edge(B,Y).\n",
}


def run_clingo(workload, edges, roots, updates, args):
    import clingo

    t0 = time.perf_counter()
    facts = "".join(f"edge({a},{b}).\n" for a, b in edges.tolist())
    if roots is not None:
        facts += "".join(f"root({a}).\n" for a in roots.tolist())
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], facts + CLINGO_RULES[workload])
    ctl.ground([("base", [])])
    grounded = time.perf_counter() - t0
    ctl.solve()
    seconds = time.perf_counter() - t0
    # a positive program: every derived atom is a fact of the single model
    size = sum(1 for _ in ctl.symbolic_atoms.by_signature(OUTPUT[workload], 2))
    return {"output": size, "seconds": seconds, "ground_seconds": grounded,
            "version": clingo.__version__}


PYDATALOG_RULES = {
    "tc": "path(X,Y) <= edge(X,Y)\npath(X,Z) <= path(X,Y) & edge(Y,Z)\n",
    "tc-roots": "path(X,Y) <= root(X) & edge(X,Y)\npath(X,Z) <= path(X,Y) & edge(Y,Z)\n",
    "sg": "sg(X,Y) <= edge(P,X) & edge(P,Y) & (X != Y)\n"
          # body reordered (same rule): with edge(A,X) first pyDatalog's top-down evaluation
          # did not finish within 40 s on a 30-edge graph; with sg first it takes 15 ms
          "sg(X,Y) <= sg(A,B) & edge(A,X) & edge(B,Y)\n",
}


def run_pydatalog(workload, edges, roots, updates, args):
    sys.setrecursionlimit(100_000)
    from pyDatalog import pyDatalog

    t0 = time.perf_counter()
    for a, b in edges.tolist():
        pyDatalog.assert_fact("edge", a, b)
    if roots is not None:
        for a in roots.tolist():
            pyDatalog.assert_fact("root", a)
    pyDatalog.load(PYDATALOG_RULES[workload])
    answer = pyDatalog.ask(f"{OUTPUT[workload]}(X,Y)")
    size = len(answer.answers) if answer else 0
    return {"output": size, "seconds": time.perf_counter() - t0}


def run_scipy(workload, edges, roots, updates, args):
    t0 = time.perf_counter()
    size = reference_size(workload, edges, roots)
    return {"output": size, "seconds": time.perf_counter() - t0}


ENGINES = {"diffflow": run_diffflow, "duckdb": run_duckdb, "clingo": run_clingo,
           "pydatalog": run_pydatalog, "scipy": run_scipy}


def worker(args) -> None:
    import resource

    data = np.load(os.path.join(args.worker_dir, "input.npz"))
    roots = data["roots"] if "roots" in data.files else None
    updates = [(data[f"drop{i}"], data[f"add{i}"]) for i in range(int(data["batches"]))]
    result = ENGINES[args.worker](args.workload_one, data["edges"], roots, updates, args)
    result["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(result), flush=True)


# ---------------------------------------------------------------------------------------------
# driver

def run_engine(engine, workload, folder, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", engine,
           "--workload-one", workload, "--worker-dir", folder,
           "--threads", str(args.threads), "--partitions", str(args.partitions)]
    if args.profile and engine == "diffflow":
        cmd += ["--profile", str(args.profile)]
    env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads),
               OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads))
    def limit_memory():
        import resource

        if args.memory_limit:
            cap = int(args.memory_limit * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=args.timeout, preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout > {args.timeout:g} s"}
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
            result["wall"] = wall
            return result
    import re

    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
             for line in proc.stderr.splitlines() if line.strip()] or ["no output"]
    errors = [line for line in lines if re.match(r"^[\w.]*(Error|Exception)\b", line)]
    return {"error": f"failed (exit {proc.returncode}): {(errors or lines)[-1][:160]}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--graphs", default="rmat,wiki-Vote",
                        help="comma list: rmat and/or SNAP graph names found under --data")
    parser.add_argument("--rmat-scale", type=int, default=11)
    parser.add_argument("--edges", type=int, default=8000, help="R-MAT edges")
    parser.add_argument("--nodes", type=int, default=2000,
                        help="SNAP graphs: keep the subgraph induced by the N smallest node "
                             "ids (0 = whole graph)")
    parser.add_argument("--workloads", default="tc,sg", help="tc, sg, tc-roots")
    parser.add_argument("--roots", type=int, default=100, help="tc-roots: seeded sample size")
    parser.add_argument("--engines", default="diffflow,duckdb,clingo",
                        help="diffflow, duckdb, clingo, pydatalog, scipy")
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--memory-limit", type=float, default=20,
                        help="GiB of address space per engine subprocess (RLIMIT_AS; 0 = none)")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for DuckDB and numba (default 1: single core)")
    parser.add_argument("--partitions", type=int, default=1, help="diffflow partitions")
    parser.add_argument("--profile", type=int, default=0,
                        help="print the top N cProfile entries (cumulative) of diffflow's "
                             "initial run")
    parser.add_argument("--planner", default="",
                        help="also run these sections of bench_planner.py: points, live, "
                             "samegen, records")
    add_data_option(parser)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--workload-one", help=argparse.SUPPRESS)
    parser.add_argument("--worker-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    engines = [e for e in args.engines.split(",") if e]
    for e in engines:
        if e not in ENGINES:
            parser.error(f"unknown engine {e!r}; choose from {', '.join(ENGINES)}")
    peers = {"duckdb": "duckdb", "clingo": "clingo", "pydatalog": "pyDatalog"}
    require("scipy", *(peers[e] for e in engines if e in peers))  # scipy: the reference sizes
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in SOURCES:
            parser.error(f"unknown workload {w!r}; choose from {', '.join(SOURCES)}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, threads={args.threads}, "
          f"timeout {args.timeout:g} s, memory limit {args.memory_limit:g} GiB, "
          f"{args.batches} update batches of {BATCH}+{BATCH} edges")
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE,
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    print(f"diffflow at {commit or '?'}")
    rows = []
    profiles = []
    with tempfile.TemporaryDirectory(prefix="bench_datalog_") as tmp:
        for graph in args.graphs.split(","):
            label, edges = make_graph(graph, args.rmat_scale, args.edges, args.nodes, args.data)
            updates, states = make_updates(edges, args.batches)
            for workload in workloads:
                roots = pick_roots(edges, args.roots) if workload == "tc-roots" else None
                ids = np.unique(np.concatenate([edges.ravel()] + ([roots] if roots is not None
                                                                  else [])))
                t0 = time.perf_counter()
                truth = reference(workload, edges, roots, ids)
                t_ref = time.perf_counter() - t0
                expected = int(truth.nnz)
                # sizes after each update batch and how many output facts each batch changes
                batch_sizes, batch_changes = [], []
                if "diffflow" in engines:
                    before = truth
                    for state in states:
                        after = reference(workload, state, roots, ids)
                        batch_sizes.append(int(after.nnz))
                        batch_changes.append(int((after != before).nnz))
                        before = after
                folder = os.path.join(tmp, f"{graph}-{workload}")
                os.makedirs(folder)
                arrays = {"edges": edges, "batches": np.array(len(updates))}
                if roots is not None:
                    arrays["roots"] = roots
                for i, (drop, add) in enumerate(updates):
                    arrays[f"drop{i}"], arrays[f"add{i}"] = drop, add
                np.savez(os.path.join(folder, "input.npz"), **arrays)
                n_in = len(edges) + (len(roots) if roots is not None else 0)
                wl = workload if roots is None else f"tc-roots({len(roots)})"
                print(f"\n{label}: {wl}, {n_in:,} input facts, expected output "
                      f"{expected:,} (scipy reference {t_ref:.2f} s)", flush=True)
                if batch_changes:
                    print(f"  output facts changed per update batch: {batch_changes}")
                for engine in engines:
                    if engine == "scipy":
                        r = {"output": expected, "seconds": t_ref}
                    else:
                        r = run_engine(engine, workload, folder, args)
                    if "error" in r:
                        status = r["error"]
                    else:
                        status = "ok" if r["output"] == expected else \
                            f"MISMATCH (expected {expected:,})"
                        if "sizes" in r:
                            bad = [i for i, (got, want) in
                                   enumerate(zip(r["sizes"], batch_sizes)) if got != want]
                            status += f", sizes after all {len(batch_sizes)} batches ok" \
                                if not bad else f", MISMATCH after batches {bad}"
                    upd = "-"
                    if r.get("update_ms"):
                        lat = sorted(r["update_ms"])
                        p90 = lat[min(len(lat) - 1, int(0.9 * len(lat)))]
                        upd = f"{statistics.median(lat):.1f} (p90 {p90:.1f})"
                    row = (engine, wl, label, f"{n_in:,}",
                           f"{r['output']:,}" if "output" in r else "-",
                           f"{r['seconds']:.2f}" if "seconds" in r else "-",
                           upd,
                           f"{statistics.median(batch_changes):,.0f}"
                           if upd != "-" and batch_changes else "-",
                           f"{r['peak_mib']:.0f}" if "peak_mib" in r else "-",
                           status)
                    rows.append(row)
                    print("  " + " | ".join(row), flush=True)
                    for key in ("profile", "profile_updates"):
                        if r.get(key):
                            profiles.append((f"{label} {wl}, "
                                             + ("initial run" if key == "profile" else
                                                f"{len(updates)} update batches"), r[key]))
    header = ("engine", "workload", "graph", "input facts", "output facts", "initial s",
              "update ms, median (p90)", "output changes / batch", "peak MiB", "check")
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    for title, text in profiles:
        print(f"\ncProfile of diffflow, {title}:")
        print(text)
    if args.planner:
        command = [sys.executable, os.path.join(HERE, "bench_planner.py"),
                   "--sections", args.planner, "--threads", str(args.threads)]
        if args.data:
            command += ["--data", args.data]
        print("\nthe planner's sections (bench_planner.py):", flush=True)
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
