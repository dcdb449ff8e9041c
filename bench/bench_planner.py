"""The Datalog planner: point queries, standing queries, magic sets, record-keyed joins.

    NUMBA_NUM_THREADS=1 python bench/bench_planner.py                  # every section
    NUMBA_NUM_THREADS=1 python bench/bench_planner.py --sections points,live --queries 200
    NUMBA_NUM_THREADS=1 python bench/bench_planner.py --sections points --with-closure

Sections (each engine in its own subprocess, so "peak MiB" is that engine's own high-water
resident memory, interpreter and imports included):

    points   wiki-Vote's closure asked at --queries seeded nodes (that have out-edges):
             ``Program.query("tc(n, y)")`` on a program that computes no relation whole, its
             median and p90 latency after a warm-up of 10 queries, every answer checked
             against a BFS; next to DuckDB's recursive CTE from the same node.
             ``--with-closure`` also runs the whole closure in diffflow (minutes, GBs) for
             the memory it would take.
    live     a standing query ``tc(30, y)`` on wiki-Vote, then --rounds commits that each
             remove 20 random edges (and put the previous 20 back): the commit latency, the
             query's ``rows()`` checked against a BFS each time.
    samegen  ``queries/magic_samegen`` (Soufflé's magic_samegen shape) through ``diffflow run``:
             heights 10, 12 and 15 with magic sets, and heights 10 and 12 without (the
             pragma removed; 15 without computes ~358M pairs and is not attempted).
    records  the issue's record-keyed join, r2(p, u) :- s([x, y], [p, q]), s([x, y], [u, v]),
             (p > u ; (p = u, q > v)), over --record-facts facts of s (ids drawn so each
             [x, y] has ~4 facts): initial run and 10 updates of 10 facts, next to DuckDB on
             the same facts as flat columns.

Not collected by pytest.  Bench-only dependencies: ``pip install -e ".[bench]"``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from datasets import add_data_option, load_graph, require  # noqa: E402

TC = """
.decl e(x: number, y: number)
.decl tc(x: number, y: number)
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
"""

RECORDS = """
.type Id = [c: number, n: number]
.decl s(a: Id, b: Id)
.decl r2(p: number, u: number)
r2(p, u) :- s([x, y], [p, q]), s([x, y], [u, v]), (p > u ; (p = u, q > v)).
"""


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bfs(succ, start) -> set:
    seen, todo = set(), list(succ.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(succ.get(node, ()))
    return seen


def successors(edges) -> dict:
    succ: dict = {}
    for x, y in edges.tolist():
        succ.setdefault(x, []).append(y)
    return succ


def asked_nodes(edges, k, seed=3):
    rng = np.random.default_rng(seed)
    return [int(n) for n in rng.choice(np.unique(edges[:, 0]), k, replace=False)]


# -- the engines (each runs in a worker subprocess) -----------------------------------------
def points_diffflow(args):
    import diffflow as dd

    edges = load_graph("wiki-Vote", args.data)
    succ = successors(edges)
    started = time.perf_counter()
    program = dd.Program(TC, outputs=[])
    program.insert("e", edges)
    program.commit()
    load = time.perf_counter() - started
    nodes = asked_nodes(edges, args.queries + 10)
    latencies = []
    for i, node in enumerate(nodes):
        started = time.perf_counter()
        answer = program.query(f"tc({node}, y)")
        seconds = time.perf_counter() - started
        if i >= 10:  # (the first queries build the engine and load its kernels)
            latencies.append(seconds)
        assert {y for _, y in answer} == bfs(succ, node), node
    return {"load s": load, "median ms": statistics.median(latencies) * 1e3,
            "p90 ms": float(np.percentile(latencies, 90)) * 1e3, "peak MiB": peak_mib(),
            "queries": len(latencies)}


def points_duckdb(args):
    import duckdb

    edges = load_graph("wiki-Vote", args.data)
    succ = successors(edges)
    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    started = time.perf_counter()
    con.register("frame", _frame(edges, ["x", "y"]))
    con.execute("CREATE TABLE e AS SELECT * FROM frame")
    load = time.perf_counter() - started
    query = ("WITH RECURSIVE r(y) AS (SELECT y FROM e WHERE x = ? UNION "
             "SELECT e.y FROM r JOIN e ON r.y = e.x) SELECT y FROM r")
    latencies = []
    for i, node in enumerate(asked_nodes(edges, args.queries + 10)):
        started = time.perf_counter()
        answer = con.execute(query, [node]).fetchall()
        seconds = time.perf_counter() - started
        if i >= 10:
            latencies.append(seconds)
        assert {y for (y,) in answer} == bfs(succ, node), node
    return {"load s": load, "median ms": statistics.median(latencies) * 1e3,
            "p90 ms": float(np.percentile(latencies, 90)) * 1e3, "peak MiB": peak_mib(),
            "queries": len(latencies)}


def closure_diffflow(args):
    import diffflow as dd

    edges = load_graph("wiki-Vote", args.data)
    started = time.perf_counter()
    program = dd.Program(TC, outputs=["tc"])
    program.insert("e", edges)
    program.commit()
    return {"seconds": time.perf_counter() - started, "facts": program.size("tc"),
            "peak MiB": peak_mib()}


def live_diffflow(args):
    import diffflow as dd

    edges = load_graph("wiki-Vote", args.data)
    program = dd.Program(TC, outputs=[])
    program.insert("e", edges)
    program.commit()
    live = program.query("tc(30, y)", live=True)
    live.changes()
    rng = np.random.default_rng(5)
    present = {tuple(e) for e in edges.tolist()}
    latencies, removed, sizes = [], None, []
    for _ in range(args.rounds):
        if removed is not None:
            program.insert("e", removed)
            present |= {tuple(e) for e in removed.tolist()}
        removed = edges[rng.choice(len(edges), 20, replace=False)]
        present -= {tuple(e) for e in removed.tolist()}
        program.remove("e", removed)
        started = time.perf_counter()
        program.commit()
        changes = live.changes()
        latencies.append(time.perf_counter() - started)
        answer = {y for _, y in live.rows()}
        assert answer == bfs(successors(np.array(sorted(present))), 30)
        sizes.append(len(changes))
    return {"median ms": statistics.median(latencies) * 1e3,
            "p90 ms": float(np.percentile(latencies, 90)) * 1e3,
            "answer": len(answer), "changes median": statistics.median(sizes),
            "peak MiB": peak_mib()}


def records_facts(n, seed=4):
    rng = np.random.default_rng(seed)
    groups = max(1, n // 4)
    x = rng.integers(0, groups, n)
    return np.stack([x // 100, x % 100, rng.integers(0, 1000, n), rng.integers(0, 50, n)], 1)


def records_diffflow(args):
    import diffflow as dd

    flat = records_facts(args.record_facts)
    rows = [((a, b), (p, q)) for a, b, p, q in flat.tolist()]
    program = dd.Program(RECORDS)
    started = time.perf_counter()
    program.insert("s", rows)
    program.commit()
    initial = time.perf_counter() - started
    size = program.size("r2")
    rng = np.random.default_rng(6)
    latencies = []
    for _ in range(10):
        new = [((int(a), int(b)), (int(p), int(q))) for a, b, p, q in
               records_facts(10, int(rng.integers(1 << 30))).tolist()]
        gone = [rows[i] for i in rng.choice(len(rows), 10, replace=False)]
        program.insert("s", new)
        program.remove("s", gone)
        started = time.perf_counter()
        program.commit()
        latencies.append(time.perf_counter() - started)
    return {"initial s": initial, "update median ms": statistics.median(latencies) * 1e3,
            "r2 facts": size, "peak MiB": peak_mib()}


def records_duckdb(args):
    import duckdb

    flat = records_facts(args.record_facts)
    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    started = time.perf_counter()
    con.register("frame", _frame(flat, ["x", "y", "p", "q"]))
    con.execute("CREATE TABLE s AS SELECT DISTINCT * FROM frame")
    size = con.execute(
        "SELECT count(*) FROM (SELECT DISTINCT a.p, b.p AS u FROM s a JOIN s b "
        "ON a.x = b.x AND a.y = b.y WHERE a.p > b.p OR (a.p = b.p AND a.q > b.q))").fetchone()[0]
    return {"initial s": time.perf_counter() - started, "r2 facts": size,
            "peak MiB": peak_mib()}


def _frame(array, names):
    import pandas as pd

    return pd.DataFrame({n: array[:, i] for i, n in enumerate(names)})


def samegen_run(args, height, magic):
    folder = tempfile.mkdtemp(prefix="samegen")
    with open(os.path.join(folder, "node.facts"), "w") as f:
        f.write("".join(f"{i}\n" for i in range(1, 2 ** height)))
    with open(os.path.join(folder, "parent.facts"), "w") as f:
        f.write("".join(f"{i}\t{i // 2}\n" for i in range(2, 2 ** height)))
    source = os.path.join(os.path.dirname(HERE), "queries", "magic_samegen", "prog.dl")
    with open(source) as f:
        text = f.read()
    if not magic:
        text = text.replace('.pragma "magic-transform" "*"', "")
    prog = os.path.join(folder, "prog.dl")
    with open(prog, "w") as f:
        f.write(text)
    left, right = 2 ** (height - 1), 2 ** height - 1
    command = [sys.executable, "-m", "diffflow", "run", prog, "-F", folder, "-D", "-",
               "-M", f"LEFT={left} RIGHT={right}"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    assert "()" in done.stdout, done.stdout
    return {"seconds (diffflow run, process start included)": seconds}


WORKERS = {"points-diffflow": points_diffflow, "points-duckdb": points_duckdb,
           "closure-diffflow": closure_diffflow, "live-diffflow": live_diffflow,
           "records-diffflow": records_diffflow, "records-duckdb": records_duckdb}


def in_subprocess(name, args) -> dict:
    command = [sys.executable, __file__, "--worker", name, "--queries", str(args.queries),
               "--rounds", str(args.rounds), "--record-facts", str(args.record_facts),
               "--threads", str(args.threads)]
    if args.data:
        command += ["--data", args.data]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout {args.timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", default="points,live,samegen,records")
    parser.add_argument("--queries", type=int, default=100, help="points: queries timed")
    parser.add_argument("--rounds", type=int, default=20, help="live: commits timed")
    parser.add_argument("--record-facts", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=1, help="DuckDB threads")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--with-closure", action="store_true",
                        help="points: also compute wiki-Vote's whole closure in diffflow")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    add_data_option(parser)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(WORKERS[args.worker](args)))
        return
    require("duckdb", "pandas")
    sections = args.sections.split(",")
    results = {}
    if "points" in sections:
        results["points"] = {e: in_subprocess(f"points-{e}", args) for e in ("diffflow", "duckdb")}
        if args.with_closure:
            results["points"]["diffflow whole closure"] = in_subprocess("closure-diffflow", args)
    if "live" in sections:
        results["live"] = {"diffflow": in_subprocess("live-diffflow", args)}
    if "samegen" in sections:
        results["samegen"] = {f"height {h}, {'magic' if m else 'no magic'}":
                              samegen_run(args, h, m)
                              for h, m in ((10, True), (10, False), (12, True), (12, False),
                                           (15, True))}
    if "records" in sections:
        results["records"] = {e: in_subprocess(f"records-{e}", args)
                              for e in ("diffflow", "duckdb")}
    for section, rows in results.items():
        print(f"\n{section}")
        for engine, row in rows.items():
            cells = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                              for k, v in row.items())
            print(f"  {engine:32s} {cells}")


if __name__ == "__main__":
    main()
