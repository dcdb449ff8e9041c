"""Cold start: what a fresh process pays before its first answer, once caches are filled.

    PYTHONPATH=. python bench/bench_cold.py                  # every case, median of 5
    PYTHONPATH=. python bench/bench_cold.py --repeats 3 --cases rmat
    PYTHONPATH=. python bench/bench_cold.py --no-bytecode    # keep PYTHONDONTWRITEBYTECODE

Three cases, each run in fresh subprocesses after one untimed warm-up run that fills numba's
on-disk cache (and Python's ``__pycache__``, as an installed package has it):

``rmat``  ``import diffflow`` (timed from before ``import numpy``), then reachability from one
          root on R-MAT scale 15, edge factor 8 (``bench_graphs.rmat_edges``, 262,144 edges;
          made by this script, loaded by the child with ``np.load`` before the first query,
          untimed), counted with ``aggregate``: first query, then the same query again in the
          same process (warm).  Reported: import, first, warm, and import + first - warm;
          then, in the same process, the kernels forced to load (``columnar.load_kernels()``
          and the join's kernel module: what numba's import costs), the query once more (the
          kernels' specialisations load from numba's cache) and again (the kernels warm).
``cli``   wall time of ``python -m diffflow run queries/transitive_closure/prog.dl
          -F queries/transitive_closure/facts -D <tmp>`` from start to exit.
``symbols`` the same for ``queries/andersen`` (points-to over symbols: its facts are
          interned, so it pays for hashing strings to symbol ids).

The children inherit the environment, with ``PYTHONDONTWRITEBYTECODE`` removed unless
``--no-bytecode`` is given: an installed package has its bytecode compiled, and a source
tree run with that variable set recompiles every module at every start (~70 ms here).
``NUMBA_DEBUG_CACHE`` and friends pass through.  Not collected by pytest.
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

RMAT_CHILD = """
import time; t0 = time.perf_counter()
import numpy as np
import diffflow as dd
from diffflow import graphs
t_import = time.perf_counter() - t0
edges, root = np.load({path!r}), {root}

def query():
    flow = dd.Dataflow()
    e, r = flow.input("edges", ["src", "dst"]), flow.input("roots", ["node"])
    out = graphs.reachable(e, r).aggregate(by=[], n=dd.count()).output()
    r.insert(np.array([[root]], np.int64)); e.insert(edges)
    flow.advance()
    return int(next(iter(out.snapshot()))[0])

t1 = time.perf_counter(); a = query(); t2 = time.perf_counter(); b = query()
t3 = time.perf_counter()
import sys
numba_used = "numba" in sys.modules
# then the kernels, loaded now whatever numpy has served: what loading costs, and their speed
from diffflow.arrangements import columnar
from diffflow.operators import join
getattr(columnar, "load_kernels", columnar._k)()  # (_k: before load_kernels existed)
join._kernels(); t4 = time.perf_counter()
c = query(); t5 = time.perf_counter(); query(); t6 = time.perf_counter()
import json
print("@@ " + json.dumps({{"import": t_import, "first": t2 - t1, "warm": t3 - t2,
                          "load": t4 - t3, "kernels_first": t5 - t4, "kernels_warm": t6 - t5,
                          "answer": [a, b, c], "numba": numba_used}}))
"""


def child_env(bytecode: bool) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_rmat(path: str, root: int, env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", RMAT_CHILD.format(path=path, root=root)],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    for line in proc.stdout.splitlines():
        if line.startswith("@@ "):
            return json.loads(line[3:])
    raise RuntimeError(proc.stderr.strip()[-2000:] or "no output")


def run_cli(out_dir: str, env: dict, query: str = "transitive_closure") -> float:
    q = os.path.join(ROOT, "queries", query)
    cmd = [sys.executable, "-m", "diffflow", "run", os.path.join(q, "prog.dl"),
           "-F", os.path.join(q, "facts"), "-D", out_dir]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip()[-2000:])
    return wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cases", default="rmat,cli,symbols")
    p.add_argument("--scale", type=int, default=15)
    p.add_argument("--edge-factor", type=int, default=8)
    p.add_argument("--no-bytecode", action="store_true",
                   help="keep PYTHONDONTWRITEBYTECODE in the children's environment")
    args = p.parse_args()
    cases = args.cases.split(",")
    env = child_env(not args.no_bytecode)
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, repeats {args.repeats}, "
          f"bytecode {'off' if args.no_bytecode else 'on'}, load {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        if "rmat" in cases:
            from bench_graphs import rmat_edges

            edges = rmat_edges(args.scale, args.edge_factor << args.scale, seed=0)
            path = os.path.join(tmp, "edges.npy")
            np.save(path, edges)
            root = int(edges[0, 0])
            run_rmat(path, root, env)                     # warm-up: fills the caches
            runs = [run_rmat(path, root, env) for _ in range(args.repeats)]
            keys = ("import", "first", "warm", "load", "kernels_first", "kernels_warm")
            med = {k: statistics.median(r[k] for r in runs) * 1e3 for k in keys}
            over = statistics.median((r["import"] + r["first"] - r["warm"]) for r in runs)
            print(f"rmat s{args.scale} x{args.edge_factor} reach ({len(edges):,} edges, "
                  f"reached {runs[0]['answer'][0]:,}; numba imported by the first two "
                  f"queries: {runs[0]['numba']})")
            print(f"  import {med['import']:6.0f} ms | first {med['first']:6.0f} ms | "
                  f"warm {med['warm']:6.0f} ms | import + first - warm {over * 1e3:6.0f} ms | "
                  f"first - warm {med['first'] - med['warm']:6.0f} ms")
            print(f"  then the kernels forced: module load {med['load']:5.0f} ms | first "
                  f"query {med['kernels_first']:5.0f} ms | warm {med['kernels_warm']:5.0f} ms")
            print("  runs (import/first/warm/load/kernels first/kernels warm ms): " + ", ".join(
                "/".join(f"{r[k] * 1e3:.0f}" for k in keys) for r in runs))
        for case, query in (("cli", "transitive_closure"), ("symbols", "andersen")):
            if case not in cases:
                continue
            out = os.path.join(tmp, "out")
            run_cli(out, env, query)                      # warm-up
            walls = [run_cli(out, env, query) for _ in range(args.repeats)]
            print(f"{case} diffflow run {query}: wall median "
                  f"{statistics.median(walls) * 1e3:.0f} ms "
                  f"(runs {', '.join(f'{w * 1e3:.0f}' for w in walls)})")


if __name__ == "__main__":
    main()
