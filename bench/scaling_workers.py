"""Helpers of ``bench_scaling.py``: its generated inputs (chain, grid, update batches), the
worker subprocess (one engine, one task, timed cases) and the runner that starts a worker and
enforces the per-case time cap.

A worker is ``python bench/scaling_workers.py '<json spec>'``; it prints one line per event,
``@@ {json}``: ``{"ready": ..}`` after its untimed warm-up, ``{"begin": key}`` before a timed
case, ``{"done": key, "s": seconds, "answer": ..}`` after it, and ``{"peak_mib": ..}`` (the
process's ``ru_maxrss``) at the end.  :func:`run_worker` kills the worker's process group when a
case stays open longer than the cap and reports that case as capped.
"""
from __future__ import annotations

import json
import math
import os
import queue
import resource
import signal
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from datasets import package_module  # noqa: E402

COUNT_SRC = ".decl n(x: number)\nn(0).\nn(x + 1) :- n(x), x < {N}.\n"
COUNT_SQL = ("WITH RECURSIVE n(x) AS (SELECT 0 UNION SELECT x + 1 FROM n WHERE x < {N}) "
             "SELECT count(*) FROM n")
# the peers' recursive SQL, shared with `diffflow bench graphs --peers duckdb` (loaded as a file:
# these workers must not import diffflow)
REACH_SQL, CC_SQL = package_module("peers").REACH_SQL, package_module("peers").CC_SQL
CC_UPDATE = """UPDATE labels SET label = m.label FROM (
    SELECT e.dst AS node, min(l.label) AS label FROM und e JOIN labels l ON l.node = e.src
    GROUP BY e.dst) m WHERE labels.node = m.node AND m.label < labels.label"""


def emit(**event) -> None:
    print("@@ " + json.dumps(event), flush=True)


def rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def maxrss_mib() -> float:
    """The process's peak resident memory so far (``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case(key, fn, *args):
    """Run ``fn(*args)`` as the timed case ``key``; fn returns (answer, untimed_reader)."""
    emit(begin=key)
    t0 = time.perf_counter()
    answer = fn(*args)
    seconds = time.perf_counter() - t0
    if callable(answer):          # read the answer outside the timed region
        answer = answer()
    emit(done=key, s=seconds, answer=answer)


def chain(n: int) -> np.ndarray:
    return np.stack([np.arange(n - 1), np.arange(1, n)], 1).astype(np.int64)


def grid(n: int) -> np.ndarray:
    s = max(2, round(math.sqrt(n)))
    idx = np.arange(s * s).reshape(s, s)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1)
    down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], 1)
    return np.concatenate([right, down]).astype(np.int64)


def family_graph(family: str, n: int):
    """Edges and the index of the edge to cut (chain: the middle one; grid: the horizontal
    edge into the centre node)."""
    if family == "chain":
        return chain(n), (n - 1) // 2
    edges = grid(n)
    s = max(2, round(math.sqrt(n)))
    return edges, (s // 2) * (s - 1) + s // 2 - 1


def update_batches(edges: np.ndarray, count: int, size: int = 10, seed: int = 1):
    """``count`` batches (drop, add) of ``size`` present edges removed and ``size`` absent edges
    (no self loops, between existing nodes) inserted; returns them and the final edge set."""
    rng = np.random.default_rng(seed)
    nodes = np.unique(edges)
    base = int(nodes.max()) + 1
    current = edges.copy()
    keys = set((current[:, 0] * base + current[:, 1]).tolist())
    out = []
    for _ in range(count):
        drop_at = rng.choice(len(current), size, replace=False)
        drop = current[drop_at].copy()
        add = []
        while len(add) < size:
            a, b = (int(v) for v in rng.choice(nodes, 2))
            if a != b and a * base + b not in keys:
                keys.add(a * base + b)
                add.append((a, b))
        keys -= set((drop[:, 0] * base + drop[:, 1]).tolist())
        current[drop_at] = add
        out.append((drop, np.array(add, np.int64)))
    return out, current


# ---------------------------------------------------------------------------------------------
# graphs: reach from roots / connected components (answer: reached count / [components, largest])

def load_kernels() -> None:
    """Make the untimed warm-up load numba's kernels: diffflow's numpy tactics
    (arrangements/small.py) would otherwise serve the first work and leave the load to a
    timed run."""
    from diffflow.arrangements import columnar

    columnar.load_kernels()


def graph_flow(algs, roots, partitions: int = 1):
    """A dataflow over one ``edges`` input computing each of ``algs`` ("reach": nodes reachable
    from ``roots``; "cc": connected components), local runtime with ``partitions``; returns
    (flow, edges input, {alg: reader}), a reader giving the reached count or [components,
    largest] after ``advance()``."""
    import diffflow as dd
    from diffflow import graphs

    flow = dd.Dataflow(partitions=partitions)
    edges = flow.input("edges", ["src", "dst"])
    readers = {}
    if "reach" in algs:
        r = flow.input("roots", ["node"])
        reach = graphs.reachable(edges, r).aggregate(by=[], n=dd.count()).output()
        r.insert(np.asarray(roots, np.int64)[:, None])
        readers["reach"] = lambda: int(next(iter(reach.snapshot()))[0])
    if "cc" in algs:
        cc = graphs.connected_components(edges).aggregate(by=["label"], size=dd.count()).output()

        def components():
            sizes = [r[1] for r in cc.snapshot()]
            return [len(sizes), int(max(sizes))]
        readers["cc"] = components
    return flow, edges, readers


def warm_graph_flow(algs, partitions: int = 1) -> None:
    """Untimed warm-up: numba kernels load (or compile) on a 20-node chain, its first epoch
    and one edge removed."""
    load_kernels()
    warm = chain(20)
    flow, edges, readers = graph_flow(algs, [0], partitions)
    edges.insert(warm)
    flow.advance()
    for read in readers.values():
        read()
    edges.remove(warm[[10]])
    flow.advance()


def diffflow_graph(spec):
    def build(roots):
        flow, edges, readers = graph_flow([spec["alg"]], roots)
        return flow, edges, readers[spec["alg"]]

    warm_graph_flow([spec["alg"]])
    emit(ready=True, rss_mib=rss_mib())
    data = np.load(spec["data"])
    flow, edges, read = build(data["roots"])

    def initial():
        edges.insert(data["edges"])
        flow.advance()
        return read

    def step(i):
        edges.remove(data[f"drop{i}"])
        edges.insert(data[f"add{i}"])
        flow.advance()
        return read

    case("initial", initial)
    for i in range(int(data["steps"])):
        case(f"step{i}", step, i)


def duckdb_graph_query(con, alg: str, edges: np.ndarray, roots, using_key: bool = True):
    """Load ``edges`` into DuckDB connection ``con`` and answer ``alg`` ("reach": count of nodes
    reachable from ``roots``; "cc": [components, largest]) with recursive SQL; ``using_key``
    False iterates an UPDATE instead of ``WITH RECURSIVE ... USING KEY`` (DuckDB < 1.3)."""
    import pandas as pd

    edge_df = pd.DataFrame(edges, columns=["src", "dst"])  # noqa: F841 (read by the SQL)
    con.execute("CREATE OR REPLACE TABLE edges AS SELECT * FROM edge_df")
    if alg == "reach":
        root_df = pd.DataFrame({"node": np.asarray(roots, np.int64)})  # noqa: F841
        con.execute("CREATE OR REPLACE TABLE roots AS SELECT * FROM root_df")
        return int(con.execute(REACH_SQL).fetchone()[0])
    con.execute("CREATE OR REPLACE TABLE und AS SELECT src, dst FROM edges "
                "UNION SELECT dst, src FROM edges")
    con.execute("CREATE OR REPLACE TABLE nodes AS SELECT DISTINCT src AS node FROM und")
    if using_key:
        return list(map(int, con.execute(CC_SQL).fetchone()))
    con.execute("CREATE OR REPLACE TABLE labels AS SELECT node, node AS label FROM nodes")
    while con.execute(CC_UPDATE).fetchone()[0]:
        pass
    return list(map(int, con.execute("SELECT count(*), max(c) FROM (SELECT count(*) c "
                                     "FROM labels GROUP BY label)").fetchone()))


def duckdb_graph(spec):
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {spec['threads']}")
    try:
        con.execute("WITH RECURSIVE t(k, v) USING KEY (k) AS (SELECT 1, 1 UNION "
                    "SELECT k, v + 1 FROM t WHERE v < 3) SELECT * FROM t").fetchall()
        using_key = True
    except duckdb.Error:                      # DuckDB < 1.3: iterate an UPDATE instead
        using_key = False

    def run(path, roots):
        edges = np.load(path) if isinstance(path, str) else path
        return duckdb_graph_query(con, spec["alg"], edges, roots, using_key)

    run(chain(20), [0])                       # warm-up: first query of the connection, untimed
    emit(ready=True, version=duckdb.__version__, using_key=using_key)
    for key, path, roots in spec["states"]:
        case(key, run, path, roots)


def scipy_graph(spec):
    from bench_graphs import scipy_reach, scipy_wcc

    def run(path, roots):
        edges = np.load(path) if isinstance(path, str) else path
        if spec["alg"] == "reach":
            return scipy_reach(edges, np.asarray(roots, np.int64))
        return scipy_wcc(edges)           # largest component; the others' [count, largest][1]

    run(chain(20), [0])                   # warm-up (scipy.sparse imports), untimed
    emit(ready=True)

    for key, path, roots in spec["states"]:
        case(key, run, path, roots)


# ---------------------------------------------------------------------------------------------
# Datalog: transitive closure / same generation (answer: output size) and the counting loop

def diffflow_datalog(spec):
    import diffflow as dd
    load_kernels()
    from bench_datalog import OUTPUT, SOURCES
    from bench_graphs import rmat_edges

    source, name = SOURCES[spec["workload"]], OUTPUT[spec["workload"]]
    warm_edges = rmat_edges(7, 300, seed=5)   # kernels load untimed (as bench_datalog does)
    warm = dd.Program(source, outputs=[name])
    warm.insert("edge", warm_edges)
    warm.commit()
    warm.remove("edge", warm_edges[:10])
    warm.insert("edge", warm_edges[:10, ::-1])
    warm.commit()
    del warm
    base = rss_mib()
    emit(ready=True, rss_mib=base)
    data = np.load(spec["data"])
    program = dd.Program(source, outputs=[name])

    def initial():
        program.insert("edge", data["edges"])
        program.commit()
        return lambda: int(program.size(name))

    def update():
        program.remove("edge", data["drop0"])
        program.insert("edge", data["add0"])
        program.commit()
        return lambda: int(program.size(name))

    case("initial", initial)
    emit(peak_after_initial_mib=maxrss_mib())
    case("update", update)


def duckdb_datalog_query(con, workload: str, edges: np.ndarray) -> int:
    """Load ``edges`` as ``edge(x, y)`` into DuckDB connection ``con``; the size of
    ``workload``'s output (bench_datalog's recursive SQL)."""
    import pandas as pd
    from bench_datalog import DUCKDB_SQL

    edge_df = pd.DataFrame(edges, columns=["x", "y"])  # noqa: F841 (read by the SQL)
    con.execute("CREATE OR REPLACE TABLE edge AS SELECT * FROM edge_df")
    return int(con.execute(DUCKDB_SQL[workload]).fetchone()[0])


def duckdb_datalog(spec):
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {spec['threads']}")

    def run(path):
        edges = np.load(path) if isinstance(path, str) else path
        return duckdb_datalog_query(con, spec["workload"], edges)

    run(chain(20))                        # warm-up, untimed
    emit(ready=True, version=duckdb.__version__)

    for key, path in spec["states"]:
        case(key, run, path)


def diffflow_count(spec):
    import diffflow as dd
    load_kernels()

    dd.Program(COUNT_SRC.format(N=10)).commit()      # warm-up
    emit(ready=True)

    def run(n):
        program = dd.Program(COUNT_SRC.format(N=n), outputs=["n"])
        program.commit()
        return lambda: int(program.size("n"))

    for n in spec["sizes"]:
        case(str(n), run, n)


def duckdb_count(spec):
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {spec['threads']}")
    con.execute(COUNT_SQL.format(N=10)).fetchone()      # warm-up
    emit(ready=True, version=duckdb.__version__)
    for n in spec["sizes"]:
        case(str(n), lambda: int(con.execute(COUNT_SQL.format(N=n)).fetchone()[0]))


TASKS = {("graph", "diffflow"): diffflow_graph, ("graph", "duckdb"): duckdb_graph,
         ("graph", "scipy"): scipy_graph, ("datalog", "diffflow"): diffflow_datalog,
         ("datalog", "duckdb"): duckdb_datalog, ("count", "diffflow"): diffflow_count,
         ("count", "duckdb"): duckdb_count}

# cold start (section 5): the first query of a fresh `python -c`, timed from before the import
COLD = {
    "diffflow": """
import time; t0 = time.perf_counter()
import numpy as np, diffflow as dd
from diffflow import graphs
def query():
    flow = dd.Dataflow(); e = flow.input("edges", ["src", "dst"])
    out = graphs.connected_components(e).aggregate(by=["label"], size=dd.count()).output()
    e.insert(np.array([[0, 1], [1, 2], [3, 4]])); flow.advance(); return len(out.snapshot())
""",
    "duckdb": """
import time; t0 = time.perf_counter()
import duckdb
con = duckdb.connect(); con.execute("SET threads = 1")
def query():
    return con.execute('''WITH RECURSIVE cc(node, label) USING KEY (node) AS (
      SELECT * FROM (VALUES (0, 0), (1, 1), (2, 2), (3, 3), (4, 4)) UNION
      SELECT e.dst, min(c.label) FROM cc c JOIN (VALUES (0, 1), (1, 0), (1, 2), (2, 1), (3, 4),
        (4, 3)) e(src, dst) ON c.node = e.src JOIN recurring.cc r ON r.node = e.dst
      GROUP BY e.dst HAVING min(c.label) < min(r.label))
    SELECT count(DISTINCT label) FROM cc''').fetchone()[0]
""",
    "scipy": """
import time; t0 = time.perf_counter()
import numpy as np, scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
def query():
    m = sp.csr_matrix((np.ones(3), ([0, 1, 3], [1, 2, 4])), shape=(5, 5))
    return int(connected_components(m, directed=True, connection="weak")[0])
""",
}
COLD_TAIL = """
a = query(); t1 = time.perf_counter(); b = query(); t2 = time.perf_counter()
import json; print("@@ " + json.dumps({"cold": t1 - t0, "warm": t2 - t1, "answer": [a, b]}))
"""


# ---------------------------------------------------------------------------------------------
# parent side

def child_env(threads: int) -> dict:
    t = str(threads)
    return dict(os.environ, NUMBA_NUM_THREADS=t, OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t)


def run_worker(spec: dict, cap: float, threads: int = 1, setup: float = 900.0,
               script: str | None = None) -> dict:
    """Run one worker (``script``, default this file, given the spec as JSON); returns {"done":
    {key: event}, "capped": key or None, "error": str or None, **other events}.  A case open for
    more than ``cap`` s kills the worker (its whole process group); so does ``setup`` s without
    any event (warm-up stuck)."""
    script = script or os.path.abspath(__file__)
    proc = subprocess.Popen([sys.executable, script, json.dumps(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(threads), start_new_session=True)
    lines: queue.Queue = queue.Queue()
    errors: list = []

    def pump(stream, sink):
        for line in stream:
            sink(line)
        if stream is proc.stdout:
            lines.put(None)

    threading.Thread(target=pump, args=(proc.stdout, lines.put), daemon=True).start()
    threading.Thread(target=pump, args=(proc.stderr, errors.append), daemon=True).start()
    out: dict = {"done": {}, "capped": None, "error": None}
    open_key, deadline = None, time.monotonic() + setup
    try:
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                if open_key is not None:
                    out["capped"] = open_key
                else:
                    out["error"] = f"no progress for {setup:g} s"
                break
            if line is None:
                break
            if not line.startswith("@@ "):
                continue
            event = json.loads(line[3:])
            if "begin" in event:
                open_key, deadline = event["begin"], time.monotonic() + cap
            elif "done" in event:
                out["done"][event["done"]] = event
                open_key, deadline = None, time.monotonic() + setup
            else:
                out.update(event)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    if out["capped"] is None and out["error"] is None and proc.returncode != 0:
        tail = [e.strip() for e in errors if e.strip()] or ["no output"]
        out["error"] = f"exit {proc.returncode}: {tail[-1][:200]}"
    return out


def run_cold(engine: str, threads: int = 1, timeout: float = 600.0) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", COLD[engine] + COLD_TAIL], capture_output=True,
                          text=True, env=child_env(threads), timeout=timeout)
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith("@@ "):
            return dict(json.loads(line[3:]), wall=wall)
    return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]}


def main() -> None:
    spec = json.loads(sys.argv[1])
    TASKS[spec["task"], spec["engine"]](spec)
    emit(peak_mib=maxrss_mib())


if __name__ == "__main__":
    main()
