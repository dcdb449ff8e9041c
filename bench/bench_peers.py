"""Peers table: diffflow, DuckDB, scipy and Pathway side by side, one markdown table, one run.

    cd <repository checkout>
    PYTHONPATH=. python bench/bench_peers.py                  # R-MAT s15 + s17, ~5 min
    PYTHONPATH=. python bench/bench_peers.py --big --cap 900  # adds R-MAT s20 (diffflow ~17 GB)
    PYTHONPATH=. python bench/bench_peers.py --scales 12,13 --update-scale 11 --tc-scale 8 \
        --repeats 1 --batches 5 --pipeline-rows 100000        # quick check of the program
    PYTHONPATH=. python bench/bench_peers.py --only updates   # the update rows alone

Graphs: ``bench_graphs.graph500_edges`` (edge factor x 2^scale R-MAT pairs, Graph500's a, b,
c = 0.57, 0.19, 0.19, self loops and duplicates dropped).  "reach" counts the nodes reachable
from ``--roots`` sources (seed 1, as bench_scaling picks them); "components" is [weakly
connected components, nodes in the largest].  Rows, for ``--scales A,B`` (15,17) and
``--edge-factors F,G`` (8,16):

  sA reach / components, first in process: a fresh process times from before the engine's
      import to the answer (import of diffflow / duckdb + pandas / scipy.sparse / pathway,
      build, load the edges, compute).  Only numpy and the input array (``np.load``) precede
      it; an earlier, unreported process ran the same diffflow cases, so numba's on-disk
      cache is filled and diffflow loads cached kernels, compiling nothing.
  ... second in process: the same query again in that process (a new dataflow; DuckDB: the
      same connection, tables replaced).
  Datalog TC on R-MAT s``--tc-scale`` (10), factor F, first / second: bench_datalog's
      transitive closure (``dd.Program``; DuckDB ``WITH RECURSIVE ... UNION``; scipy: its
      semi-naive sparse fixpoint), timed as above; then the first run's peak memory above
      the baseline per derived fact (diffflow's includes loading its cached kernels, ~70 MiB).
  sB components and reach (factor G): first in process; components also peak memory.
  sB and s``--update-scale`` (14, factor F) update: one dataflow computing reach and
      components; after the initial load, ``--batches`` batches of 10 present edges removed
      and 10 absent ones inserted, each then ``advance()`` (remove / insert timed too): median
      / p90 per process.  DuckDB and scipy recompute both answers from scratch (edges loaded
      again) on the edge set after the batches, ``--recomputes`` times in a warm process.
  s20 (``--big``, factor G): reach and components, first in process, time and peak memory.
  100k-update epoch, single-row epoch: bench_pipeline's join -> aggregate(by=g, count) over
      ``--pipeline-rows`` facts, every one joining a query, in 100 groups: epochs of 100,000
      fact updates (M updates/s over ``--pipeline-batches`` epochs) and single-query epochs
      (one query key removed or put back: ~10 facts; median ms of ``--epochs``).

Peak memory above the baseline: ``ru_maxrss`` after the first run minus the RSS right after
the engine's imports (the input edge array is in the baseline).  A cell is the median over
``--repeats`` fresh processes (3); a timed case still open after ``--cap`` s is killed ("> cap").
``--threads`` (1) sets NUMBA_NUM_THREADS, DuckDB's ``threads`` and PATHWAY_THREADS.  Answers
are checked against scipy run in this process: a disagreement prints MISMATCH, exit status 1.
Pathway runs where ``import pathway`` works (``pip install pathway``; from-scratch reach,
components and the transitive closure with ``pw.iterate``, and the updates through a streaming
input: bench/peers_pathway.py says how they are timed), else its column says "not installed";
"-": the engine does not run that case (the pipeline rows).
Progress goes to stderr.  No network.  Not collected by pytest.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import importlib.util
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# scaling_workers imports only numpy and the standard library: the engines stay unimported
# until a timed case imports them.
from scaling_workers import (case, emit, maxrss_mib, rss_mib, run_worker,  # noqa: E402
                             update_batches)

ENGINES = ("diffflow", "duckdb", "scipy", "pathway")


# ---------------------------------------------------------------------------------------------
# worker side: ``python bench_peers.py '<json spec>'`` (started by scaling_workers.run_worker)

def setup_diffflow(spec):
    """Import diffflow; a query function for spec["alg"] (reach, cc or tc)."""
    import numba  # noqa: F401 (diffflow imports it on its first large input: in the baseline)

    import diffflow as dd

    from scaling_workers import graph_flow

    if spec["alg"] == "tc":
        from bench_datalog import SOURCES

        def tc(edges, roots):
            program = dd.Program(SOURCES["tc"], outputs=["path"])
            program.insert("edge", edges)
            program.commit()
            return lambda: int(program.size("path"))   # read outside the timed region
        return tc

    def graph(edges, roots):
        flow, inp, readers = graph_flow([spec["alg"]], roots)
        inp.insert(edges)
        flow.advance()
        return readers[spec["alg"]]
    return graph


def setup_duckdb(spec):
    import duckdb
    import pandas  # noqa: F401 (the query functions load edges through a DataFrame)

    from scaling_workers import duckdb_datalog_query, duckdb_graph_query

    con = duckdb.connect()
    con.execute(f"SET threads = {spec['threads']}")
    if spec["alg"] == "tc":
        return lambda edges, roots: duckdb_datalog_query(con, "tc", edges)
    # WITH RECURSIVE ... USING KEY exists from DuckDB 1.3 (no probing query: this is timed)
    using_key = tuple(int(p) for p in duckdb.__version__.split(".")[:2]) >= (1, 3)
    return lambda edges, roots: duckdb_graph_query(con, spec["alg"], edges, roots, using_key)


def setup_scipy(spec):
    import scipy.sparse.csgraph  # noqa: F401 (imported by the functions below when called)

    if spec["alg"] == "tc":
        from bench_datalog import reference_size
        return lambda edges, roots: reference_size("tc", edges, None)
    from bench_graphs import scipy_components, scipy_reach
    if spec["alg"] == "reach":
        return scipy_reach
    return lambda edges, roots: scipy_components(edges)


def setup_pathway(spec):
    from peers_pathway import setup_pathway as pathway_query

    return pathway_query(spec)


SETUPS = {"diffflow": setup_diffflow, "duckdb": setup_duckdb, "scipy": setup_scipy,
          "pathway": setup_pathway}


def scratch_worker(spec, edges, roots) -> None:
    """"first": setup (imports) + query, timed; its baseline and peak; then "second"."""
    state = {}

    def first():
        state["query"] = SETUPS[spec["engine"]](spec)
        state["base"] = rss_mib()          # after the imports; reading statm takes ~10 us
        return state["query"](edges, roots)

    emit(ready=True)
    case("first", first)
    emit(base_mib=state["base"], peak_first_mib=maxrss_mib())
    for _ in range(spec["runs"] - 1):
        gc.collect()                       # the first run's garbage is not the second's cost
        case("second", state["query"], edges, roots)


def update_worker(spec, data) -> None:
    """diffflow: the batches of updates on one reach + components dataflow; peers: recompute
    both answers on each given edge set."""
    if spec["engine"] == "pathway":       # a streaming input: see peers_pathway
        from peers_pathway import update_worker as pathway_updates

        return pathway_updates(data, emit)
    if spec["engine"] != "diffflow":
        states = [np.load(p) for p in spec["states"]]     # the same edge set each time
        reach = SETUPS[spec["engine"]](dict(spec, alg="reach"))
        components = SETUPS[spec["engine"]](dict(spec, alg="cc"))

        def both(e):
            return {"reach": reach(e, data["roots"]), "cc": components(e, None)}
        both(states[0][:100])              # warm-up (first queries of the process), untimed
        emit(ready=True)
        for i, edges in enumerate(states):
            case(f"state{i}", both, edges)
        return
    from scaling_workers import graph_flow, warm_graph_flow

    warm_graph_flow(["reach", "cc"])   # the kernels the updates call load here, untimed
    flow, inp, readers = graph_flow(["reach", "cc"], data["roots"])
    steps = int(data["steps"])
    read = lambda: {alg: r() for alg, r in readers.items()}  # noqa: E731

    def initial():
        inp.insert(data["edges"])
        flow.advance()

    def step(i):
        inp.remove(data[f"drop{i}"])
        inp.insert(data[f"add{i}"])
        flow.advance()
        return read if i == steps - 1 else None    # answers read after the last batch only

    emit(ready=True)
    case("initial", initial)
    for i in range(steps):
        case(f"step{i}", step, i)


def pipeline_worker(spec) -> None:
    from bench_pipeline import batch_epochs, build, query_change, timed_epochs

    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    flow, q, facts, _, fact_rows, keys, _, rng = build(spec["rows"], spec["queries"], 1,
                                                       groups=spec["groups"])
    emit(ready=True)
    med, _ = timed_epochs(flow, query_change(q, keys, rng), spec["epochs"])
    rate, _ = batch_epochs(flow, facts, fact_rows, keys, rng, spec["batch"], spec["batches"])
    emit(single_ms=med, rate=rate)


def worker(spec: dict) -> None:
    if spec["kind"] == "pipeline":
        return pipeline_worker(spec)
    data = dict(np.load(spec["data"]))     # in memory before anything is timed
    if spec["kind"] == "update":
        return update_worker(spec, data)
    return scratch_worker(spec, data["edges"], data["roots"])


# ---------------------------------------------------------------------------------------------
# parent side

class Peers:
    def __init__(self, args, tmp: str):
        self.args, self.tmp = args, tmp
        self.engines = [e for e in args.engines.split(",") if e]
        self.pathway = importlib.util.find_spec("pathway") is not None
        self.rows: list = []
        self.mismatches: list = []
        self.graphs: dict = {}

    def log(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def graph(self, scale: int, factor: int, batches: int = 0) -> dict:
        """Edges, roots and (``batches``) update batches saved for the workers; answers."""
        from bench_graphs import graph500_edges, scipy_components, scipy_reach

        key = (scale, factor, batches)
        if key not in self.graphs:
            edges = graph500_edges(scale, factor)
            roots = np.random.default_rng(1).choice(np.unique(edges[:, 0]), self.args.roots,
                                                    replace=False)
            g = {"edges": edges, "roots": roots, "label": f"R-MAT s{scale} x{factor} "
                 f"({len(edges):,} edges)"}
            arrays = {"edges": edges, "roots": roots, "steps": np.array(batches)}
            if batches:
                pairs, g["final"] = update_batches(edges, batches)
                for i, (drop, add) in enumerate(pairs):
                    arrays[f"drop{i}"], arrays[f"add{i}"] = drop, add
                g["final_path"] = os.path.join(self.tmp, f"s{scale}x{factor}-final.npy")
                np.save(g["final_path"], g["final"])
            g["path"] = os.path.join(self.tmp, f"s{scale}x{factor}-{batches}.npz")
            np.savez(g["path"], **arrays)
            g["want"] = {"reach": scipy_reach(edges, roots), "cc": scipy_components(edges)}
            self.graphs[key] = g
        return self.graphs[key]

    def run(self, spec: dict, engines) -> dict:
        """``--repeats`` fresh worker processes per engine; {engine: [results]} (an engine
        not measured: None).  A capped or failed process is not repeated."""
        out = {}
        for engine in self.engines:
            if engine not in engines or (engine == "pathway" and not self.pathway):
                out[engine] = None
                continue
            results = out[engine] = []
            for _ in range(self.args.repeats):
                started = time.perf_counter()
                results.append(r := self.worker(dict(spec, engine=engine)))
                self.log(f"  {engine}: {time.perf_counter() - started:.1f} s" + (
                    f"  ! capped at {r['capped']}" if r["capped"] else "") + (
                    f"  ! {r['error']}" if r["error"] else ""))
                if r["capped"] or r["error"]:
                    break
        return out

    def worker(self, spec: dict, cap: float | None = None) -> dict:
        return run_worker(dict(spec, threads=self.args.threads), cap or self.args.cap,
                          self.args.threads, script=os.path.abspath(__file__))

    def check(self, what: str, want, results: dict, key: str) -> None:
        """Record every process whose answer at ``key`` is not ``want`` (scipy's)."""
        for engine, rs in results.items():
            for r in rs or ():
                event = r["done"].get(key)
                if event is not None and event["answer"] != want:
                    self.mismatches.append(f"{what}, {engine}: {event['answer']}, "
                                           f"expected {want}")

    def cells(self, results: dict, value, fmt, key=None) -> list:
        """One cell per engine: fmt(median over processes of value(result)), or why not (a
        row measuring ``key`` says "not run" when an earlier case was capped)."""
        out = []
        for engine in self.engines:
            rs = results.get(engine)
            vals = [value(r) for r in rs or ()]
            if engine == "pathway" and not self.pathway:
                out.append("not installed")
            elif not rs:
                out.append("-")
            elif None in vals:
                bad = rs[vals.index(None)]
                out.append("error" if bad["error"] else "-" if not bad["capped"] else
                           f"> {self.args.cap:g} s" if key in (None, bad["capped"]) else
                           "not run")
            elif isinstance(vals[0], tuple):        # (median, p90): the median of each
                out.append(fmt(tuple(statistics.median(x) for x in zip(*vals))))
            else:
                out.append(fmt(statistics.median(vals)))
        return out

    def row(self, label: str, results: dict, value, fmt, key=None) -> None:
        self.rows.append([label] + self.cells(results, value, fmt, key))

    # -- the cases ---------------------------------------------------------------------------
    def scratch(self, scale: int, factor: int, alg: str, runs: int, memory: bool) -> None:
        g = self.graph(scale, factor)
        self.log(f"{g['label']} {alg}, {runs} run(s) per process")
        res = self.run({"kind": "scratch", "alg": alg, "data": g["path"], "runs": runs}, ENGINES)
        want = g["want"][alg]
        self.check(f"{g['label']} {alg}", want, res, "first")
        self.check(f"{g['label']} {alg} (second)", want, res, "second")
        roots = f"{self.args.roots} root" + "s" * (self.args.roots > 1)
        what = (f"reach from {roots} ({want:,} nodes)" if alg == "reach" else
                f"components ({want[0]:,}; largest {want[1]:,} nodes)")
        for key, when in (("first", "first in process"), ("second", "second in process"))[:runs]:
            self.row(f"{g['label']} {what}, {when}, s", res, seconds(key), num, key)
        if memory:
            self.row(f"{g['label']} {what}: peak memory above baseline, MiB", res, growth, num)

    def tc_graph(self) -> tuple:
        """The TC input saved for the workers: (path, edges)."""
        from bench_graphs import graph500_edges

        path = os.path.join(self.tmp, f"tc-s{self.args.tc_scale}.npz")
        edges = graph500_edges(self.args.tc_scale, self.args.factors[0])
        np.savez(path, edges=edges, roots=np.zeros(0, np.int64))
        return path, edges

    def prime(self) -> None:
        """Fill numba's on-disk cache: one unreported diffflow process per kind of case."""
        self.log("priming numba's on-disk cache")
        a, f = self.args.scales[0], self.args.factors[0]
        for spec in ({"kind": "scratch", "alg": "reach", "data": self.graph(a, f)["path"]},
                     {"kind": "scratch", "alg": "cc", "data": self.graph(a, f)["path"]},
                     {"kind": "scratch", "alg": "tc", "data": self.tc_graph()[0]},
                     {"kind": "update", "data": self.graph(self.args.update_scale, f, 2)["path"]}):
            r = self.worker(dict(spec, runs=1, engine="diffflow"), max(self.args.cap, 900))
            if r["error"] or r["capped"]:
                self.log(f"  ! priming {spec}: {r['error'] or 'capped'}")

    def tc(self) -> None:
        from bench_datalog import reference_size

        path, edges = self.tc_graph()
        facts = reference_size("tc", edges, None)
        label = (f"Datalog TC, R-MAT s{self.args.tc_scale} x{self.args.factors[0]} "
                 f"({len(edges):,} edges, {facts:,} facts)")
        self.log(label)
        res = self.run({"kind": "scratch", "alg": "tc", "data": path, "runs": 2},
                       ("diffflow", "duckdb", "scipy", "pathway"))
        for key in ("first", "second"):
            self.check(f"{label} {key}", facts, res, key)
            self.row(f"{label}, {key} in process, s", res, seconds(key), num, key)
        self.row(f"{label}: peak memory above baseline, bytes / derived fact", res,
                 lambda r: None if growth(r) is None else growth(r) * 2**20 / facts, num)

    def updates(self, scale: int, factor: int) -> None:
        g = self.graph(scale, factor, self.args.batches)
        self.log(f"{g['label']} updates")
        states = [g["final_path"]] * self.args.recomputes
        res = self.run({"kind": "update", "data": g["path"], "states": states},
                       ("diffflow", "duckdb", "scipy", "pathway"))
        from bench_graphs import scipy_components, scipy_reach

        final = {"reach": scipy_reach(g["final"], g["roots"]), "cc": scipy_components(g["final"])}
        what = f"{g['label']} after {self.args.batches} batches"
        self.check(what, final, {e: res.get(e) for e in ("diffflow", "pathway")},
                   f"step{self.args.batches - 1}")
        for i in range(len(states)):
            self.check(what, final, {e: res.get(e) for e in ("duckdb", "scipy")}, f"state{i}")

        def latency(r):
            prefix = "step" if any(k.startswith("step") for k in r["done"]) else "state"
            ms = sorted(e["s"] * 1e3 for k, e in r["done"].items() if k.startswith(prefix))
            if len(ms) < (self.args.batches if prefix == "step" else len(states)):
                return None
            return statistics.median(ms), ms[min(len(ms) - 1, int(0.9 * len(ms)))]
        self.row(f"{g['label']} 10+10-edge update, reach + components (DuckDB, scipy: "
                 f"recompute), median / p90 ms", res, latency,
                 lambda t: f"{num(t[0])} / {num(t[1])}")

    def pipeline(self) -> None:
        a = self.args
        self.log(f"pipeline, {a.pipeline_rows:,} facts")
        # every fact joins a query and is counted in one of 100 groups (~10^4 rows each)
        res = self.run({"kind": "pipeline", "rows": a.pipeline_rows, "epochs": a.epochs,
                        "queries": a.pipeline_rows // 10, "groups": 100, "batch": 100_000,
                        "batches": a.pipeline_batches}, ("diffflow",))
        what = f"join -> aggregate(by=g, count) over {a.pipeline_rows:,} rows in 100 groups"
        self.row(f"{what}: 100,000-update epoch, M updates/s", res,
                 lambda r: r.get("rate") and r["rate"] / 1e6, lambda v: f"{v:.2f}")
        self.row(f"{what}: single-row epoch, median ms", res, lambda r: r.get("single_ms"), num)


def seconds(key: str):
    return lambda r: r["done"][key]["s"] if key in r["done"] else None


def growth(r):
    """MiB of the first run's peak above the RSS after the imports."""
    if "peak_first_mib" not in r or "base_mib" not in r:
        return None
    return max(0.0, r["peak_first_mib"] - r["base_mib"])


def num(x: float) -> str:
    """Three significant digits, or a whole number with thousands separators from 100 up."""
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


GROUPS = ("scratch", "tc", "updates", "pipeline")  # --only: the rows each group prints


def main() -> None:
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):     # a worker process
        worker(json.loads(sys.argv[1]))
        emit(peak_mib=maxrss_mib())
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scales", default="15,17", help="A,B: first/second rows at A, the rest at B")
    p.add_argument("--edge-factors", default="8,16", help="F,G: edge factors of A and B")
    p.add_argument("--update-scale", type=int, default=14, help="second update row (factor F)")
    p.add_argument("--tc-scale", type=int, default=10, help="Datalog TC graph (factor F)")
    p.add_argument("--big", action="store_true", help="add the R-MAT s20 rows (factor G)")
    p.add_argument("--roots", type=int, default=1, help="reach: number of sources")
    p.add_argument("--batches", type=int, default=20, help="update rows: batches per process")
    p.add_argument("--recomputes", type=int, default=5, help="update rows: peer recomputes")
    p.add_argument("--pipeline-rows", type=int, default=1_000_000)
    p.add_argument("--epochs", type=int, default=300, help="pipeline: single-row epochs")
    p.add_argument("--pipeline-batches", type=int, default=5, help="pipeline: 100k epochs")
    p.add_argument("--repeats", type=int, default=3, help="fresh processes per cell (median)")
    p.add_argument("--cap", type=float, default=600, help="seconds per timed case")
    p.add_argument("--threads", type=int, default=1, help="numba, DuckDB and Pathway threads")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--only", default=",".join(GROUPS),
                   help="row groups to run, of " + ", ".join(GROUPS))
    args = p.parse_args()
    args.scales = [int(s) for s in args.scales.split(",")]
    args.factors = [int(f) for f in args.edge_factors.split(",")]
    if len(args.scales) != 2 or len(args.factors) != 2:
        p.error("--scales and --edge-factors take two numbers each")
    from datasets import require

    require("scipy", "duckdb")
    os.environ["PATHWAY_THREADS"] = str(args.threads)      # inherited by the workers
    import duckdb
    import scipy

    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE, check=False,
                            capture_output=True, text=True).stdout.strip() or "?"
    t0 = time.perf_counter()
    (a, b), (f, g) = args.scales, args.factors
    with tempfile.TemporaryDirectory(prefix="bench_peers_") as tmp:
        bench = Peers(args, tmp)
        only = set(args.only.split(","))
        bench.prime()
        if "scratch" in only:
            for alg in ("reach", "cc"):
                bench.scratch(a, f, alg, runs=2, memory=False)
        if "tc" in only:
            bench.tc()
        if "scratch" in only:
            bench.scratch(b, g, "cc", runs=1, memory=True)
            bench.scratch(b, g, "reach", runs=1, memory=False)
        if "updates" in only:
            bench.updates(b, g)
            bench.updates(args.update_scale, f)
        if args.big:
            for alg in ("reach", "cc"):
                bench.scratch(20, g, alg, runs=1, memory=True)
        if "pipeline" in only:
            bench.pipeline()
    print(f"# diffflow and its peers, {datetime.date.today()}, commit {commit}\n\npython "
          f"{sys.version.split()[0]}, numpy {np.__version__}, duckdb {duckdb.__version__}, "
          f"scipy {scipy.__version__}, pathway {'installed' if bench.pathway else 'not installed'}"
          f", {os.cpu_count()} cpus, threads {args.threads}, medians of {args.repeats} "
          f"processes, cap {args.cap:g} s, {time.perf_counter() - t0:.0f} s in all\n")
    header = ["workload"] + [{"duckdb": "DuckDB", "pathway": "Pathway"}.get(e, e)
                             for e in bench.engines]
    print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in bench.rows:
        print("| " + " | ".join(r) + " |")
    print(f"\ncommand: {shlex.join(['python'] + sys.argv)}")
    if bench.mismatches:
        print("\nMISMATCH\n  " + "\n  ".join(bench.mismatches))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
