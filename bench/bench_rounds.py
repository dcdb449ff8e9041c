"""Compiled loop rounds: diffflow next to DuckDB (threads = 1) and scipy, one table, one run.

    cd <repository checkout>
    PYTHONPATH=. python bench/bench_rounds.py                        # all sections
    PYTHONPATH=. python bench/bench_rounds.py --quick                # tiny sizes, smoke run
    PYTHONPATH=. python bench/bench_rounds.py --sections count,chain --repeats 5 --million
    PYTHONPATH=. python bench/bench_rounds.py --sections doubling --sizes 128,256,512 --cap 30
    PYTHONPATH=. python bench/bench_rounds.py --partitions 2 --compiled-rounds off  # P = 2, general

Loops whose rounds carry small deltas (one hop of a chain, one count) used to pay the
scheduler's per-round cost once per round; compiled rounds (``diffflow.runtime.
compiled_rounds``) run such rounds in one kernel once numba's kernels are loaded.  This
benchmark times the loops that need many rounds.  Rows of the table (``--sections``, default
all):

  count     ``.decl n(x: number) .output n  n(0).  n(x + 1) :- n(x), x < N.`` for N = 1,000
            and 100,000 (and 1,000,000 with ``--million``): ``Program(src)`` and ``commit()``,
            in ms and per round (time / N, µs); DuckDB's ``WITH RECURSIVE n(x) AS (SELECT 0
            UNION ALL SELECT x + 1 FROM n WHERE x < N) SELECT count(*) FROM n``, the same two
            figures.  Both answers must be N + 1.
  chain     a chain of 4,000 nodes (edges i -> i+1), reachability from node 0
            (``graphs.reachable``): the initial run (insert the edges, ``advance()``), then the
            middle edge removed and ``advance()`` (cut); DuckDB recomputes with the recursive
            ``UNION`` CTE of scaling_workers, scipy with bench_graphs' ``scipy_reach``
            (``breadth_first_order`` on a CSR matrix).  The reached counts must agree.
  updates   a chain of 2,000 nodes and a 100 x 100 grid (edges right and down), one dataflow
            computing reachability from node 0 and connected components over the same edges
            (``graphs.reachable``, ``graphs.connected_components``): the initial run, then
            ``--batches`` (20) updates of 10 present edges removed + 10 absent edges inserted
            (scaling_workers' ``update_batches``), median and p90 ms per update; DuckDB (UNION
            reach + ``USING KEY`` min-label CC) and scipy (``scipy_reach`` +
            ``scipy_components``) recompute both answers from scratch on the initial state and
            after every batch, their median shown.  Every state's answers must agree.
  doubling  chains of 128, 256, ..., 16,384 nodes (``--sizes``), reachability from node 0:
            initial, middle cut, then the median of ``--batches`` 10+10 updates (after the
            cut); DuckDB recomputes each state.  A diffflow case still running after ``--cap``
            seconds is killed and larger sizes are not run.  The series is also printed as its
            own table (with the growth per doubling) and plotted, log-log, to
            ``bench/out/rounds_doubling.png`` (``--plot``; bench/out is git-ignored).

Every diffflow case runs in a fresh subprocess (numba's JIT state and the memory start clean),
``--repeats`` times (default 3; the median is shown), after ``columnar.load_kernels()`` (compiled
rounds run only once the kernels are loaded) and an untimed warm-up on a tiny input of the
same shape.  The column "compiled runs / rounds (sweeps)" says which path the loops took in
that case: the runs and rounds of ``flow._runtime.rounds`` (the compiled-rounds driver; "None"
when it was never built: no loop ran, or ``DIFFFLOW_COMPILED_ROUNDS=0``) and the scheduler's
sweeps (``flow._runtime.sweeps``; the general path sweeps about once per round); for updates,
the totals over the batches.  Reachability and components are the graph library's: at one
partition not loops but search tactics kept between epochs (``operators/reduce_reach.py``,
``reduce_components.py``), so they run no rounds; ``--graph-loops`` sets
``DIFFFLOW_GRAPH_LOOPS=1`` in the workers to measure them as loops (compiled rounds
included).  ``--compiled-rounds off`` (or ``force``) sets
``DIFFFLOW_COMPILED_ROUNDS`` in the workers, to compare with the general path.  DuckDB and scipy
run each section's states in one subprocess, after a warm-up query; one-off cases (count,
initial, cut) are run ``--repeats`` times there (median), recomputations after update batches
once each (the median over the batches is shown).  ``--cap`` bounds each timed case (for a
peer, all its repeats).  Times include loading the edges (diffflow ``insert``, a DataFrame into
DuckDB, the CSR matrix for scipy).  ``--quick``: counting to 100 and 1,000, a 200-node chain,
a 100-node chain and a 10 x 10 grid with 5 batches, doubling 64 and 128, one process per case.

A disagreement is marked MISMATCH; mismatches and cases that failed are listed after the
table and make the exit status 1.  Single-threaded (DuckDB ``SET threads = 1``,
``NUMBA_NUM_THREADS=1``).  No network, nothing downloaded.  Not collected by pytest.  Needs
``pip install -e ".[bench]"`` (duckdb, scipy, matplotlib).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from datasets import require
from scaling_workers import (
    chain,
    duckdb_graph_query,
    emit,
    family_graph,
    graph_flow,
    load_kernels,
    run_worker,
    update_batches,
    warm_graph_flow,
)

SECTIONS = ("count", "chain", "updates", "doubling")
COUNT_SRC = ".decl n(x: number)\n.output n\nn(0).\nn(x + 1) :- n(x), x < {N}.\n"
COUNT_SQL = ("WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n WHERE x < {N}) "
             "SELECT count(*) FROM n")
FULL = {"count": [1_000, 100_000], "chain": 4_000, "updates": [("chain", 2_000), ("grid", 10_000)],
        "sizes": "128,256,512,1024,2048,4096,8192,16384", "batches": 20}
QUICK = {"count": [100, 1_000], "chain": 200, "updates": [("chain", 100), ("grid", 100)],
         "sizes": "64,128", "batches": 5}


# ---------------------------------------------------------------------------------------------
# worker side: ``python bench/bench_rounds.py '<json spec>'`` (run_worker's protocol, "@@ {..}")

def partitions() -> int:
    """The local runtime's partitions in a diffflow worker (``--partitions``)."""
    return int(os.environ.get("BENCH_ROUNDS_PARTITIONS", "1"))


def counters(flow):
    """((compiled runs, rounds) or None, sweeps of the last run) of ``flow``'s runtime."""
    runtime = getattr(flow, "_runtime", None)
    rounds = getattr(runtime, "rounds", None)
    return (None if rounds is None else (rounds.runs, rounds.rounds),
            getattr(runtime, "sweeps", None))


def timed(key, fn, flow_of=None, repeats: int = 1):
    """Time ``fn()`` (``repeats`` calls; the median) as case ``key``.  ``fn`` returns a reader
    of the answer (called untimed) or the answer; ``flow_of()`` the diffflow dataflow whose
    compiled-rounds counters the case moved (read before and after, untimed)."""
    before = counters(flow_of())[0] if flow_of else None
    emit(begin=key)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        answer = fn()
        times.append(time.perf_counter() - t0)
    if callable(answer):
        answer = answer()
    event = {"done": key, "s": statistics.median(times), "answer": answer}
    if flow_of:
        after, sweeps = counters(flow_of())
        event["sweeps"] = sweeps
        event["compiled"] = None if after is None else [a - b for a, b in
                                                        zip(after, before or (0, 0))]
    emit(**event)


def worker_count_diffflow(spec):
    load_kernels()                            # compiled rounds wait for the kernels
    from diffflow.datalog import Program

    parts = partitions()
    Program(COUNT_SRC.format(N=10), partitions=parts).commit()  # untimed warm-up: kernel loads
    emit(ready=True)
    held = {}

    def run(n):
        held["p"] = program = Program(COUNT_SRC.format(N=n), partitions=parts)
        program.commit()
        return lambda: int(program.size("n"))

    for n in spec["sizes"]:
        held.clear()
        timed(str(n), lambda n=n: run(n), lambda: held["p"].flow if held else None)


def worker_count_duckdb(spec):
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute(COUNT_SQL.format(N=10)).fetchone()      # warm-up, untimed
    emit(ready=True, version=duckdb.__version__)
    for n in spec["sizes"]:
        timed(str(n), lambda n=n: int(con.execute(COUNT_SQL.format(N=n)).fetchone()[0]),
              repeats=spec["repeats"])


def worker_graph_diffflow(spec):
    algs = spec["algs"]
    warm_graph_flow(algs, partitions())       # load_kernels(), then a 20-node chain, untimed
    emit(ready=True)
    data = np.load(spec["data"])
    flow, edges, readers = graph_flow(algs, [0], partitions())

    def advance():
        flow.advance()
        return lambda: {a: readers[a]() for a in algs}

    def initial():
        edges.insert(data["edges"])
        return advance()

    def cut():
        edges.remove(data["cut"])
        return advance()

    def update(i):
        edges.remove(data[f"drop{i}"])
        edges.insert(data[f"add{i}"])
        return advance()

    timed("initial", initial, lambda: flow)
    if "cut" in data:
        timed("cut", cut, lambda: flow)
    for i in range(int(data["batches"])):
        timed(f"u{i}", lambda i=i: update(i), lambda: flow)


def worker_graph_peer(spec):
    """DuckDB or scipy recomputing ``spec["algs"]`` for every state ``[key, path, repeats]``."""
    algs, engine = spec["algs"], spec["engine"]
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute("SET threads = 1")
        try:                                  # as scaling_workers.duckdb_graph
            con.execute("WITH RECURSIVE t(k, v) USING KEY (k) AS (SELECT 1, 1 UNION "
                        "SELECT k, v + 1 FROM t WHERE v < 3) SELECT * FROM t").fetchall()
            using_key = True
        except duckdb.Error:                  # DuckDB < 1.3: iterate an UPDATE instead
            using_key = False

        def run(edges):
            return {a: duckdb_graph_query(con, a, edges, [0], using_key) for a in algs}
    else:
        from bench_graphs import scipy_components, scipy_reach

        def run(edges):
            return {a: scipy_reach(edges, np.array([0])) if a == "reach"
                    else scipy_components(edges) for a in algs}
    run(chain(20))                            # warm-up (first query, imports), untimed
    emit(ready=True)
    for key, path, repeats in spec["states"]:
        edges = np.load(path)
        timed(key, lambda edges=edges: run(edges), repeats=repeats)


WORKERS = {("count", "diffflow"): worker_count_diffflow, ("count", "duckdb"): worker_count_duckdb,
           ("graph", "diffflow"): worker_graph_diffflow, ("graph", "duckdb"): worker_graph_peer,
           ("graph", "scipy"): worker_graph_peer}


# ---------------------------------------------------------------------------------------------
# parent side

def figure(x) -> str:
    """Three significant figures or so: 0.123, 1.23, 12.3, 1,234."""
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else \
        f"{x:,.0f}"


def ms(seconds) -> str:
    return "-" if seconds is None else figure(seconds * 1e3)


def p90(values):
    values = sorted(values)
    return values[min(len(values) - 1, int(0.9 * len(values)))]


class Runs:
    """The worker results of one case (one per fresh process for diffflow; one for a peer)."""

    def __init__(self, results: list, cap: float):
        self.results, self.cap = results, cap

    def event(self, key):
        return next((r["done"][key] for r in self.results if key in r["done"]), None)

    def s(self, key):
        times = [r["done"][key]["s"] for r in self.results if key in r["done"]]
        return statistics.median(times) if times else None

    def answer(self, key):
        event = self.event(key)
        return None if event is None else event["answer"]

    def capped_at(self, keys) -> bool:
        return any(r["capped"] in keys for r in self.results)

    def failed(self) -> bool:
        return any(r["capped"] or r["error"] for r in self.results)

    def status(self, key) -> str:
        """What to show for a key no run finished."""
        if any(r["capped"] == key for r in self.results):
            return f"> {self.cap:g} s"
        if any(r["error"] for r in self.results):
            return "error"
        return "not run" if self.failed() else "-"

    def cell(self, key, per=None) -> str:
        s = self.s(key)
        if s is None:
            return self.status(key)
        return ms(s) if per is None else f"{ms(s)} ({figure(s / per * 1e6)})"

    def updates(self, keys):
        """(median, p90) ms over the update keys: each process's, then the median of those;
        None when some process did not finish them all."""
        per = [[r["done"][k]["s"] for k in keys] for r in self.results
               if all(k in r["done"] for k in keys)]
        if not per or len(per) < len(self.results):
            return None
        return (statistics.median(statistics.median(p) for p in per),
                statistics.median(p90(p) for p in per))

    def update_cell(self, keys) -> str:
        med = self.updates(keys)
        if med:
            return f"{ms(med[0])} ({ms(med[1])})"
        done = min(sum(k in r["done"] for k in keys) for r in self.results)
        return f"{self.status(keys[done])} at batch {done + 1}" if done < len(keys) else "-"

    def recompute(self, keys):
        times = [self.s(k) for k in keys]
        return statistics.median(times) if times and all(t is not None for t in times) else None

    def compiled(self, keys) -> str:
        """Compiled runs / rounds (sweeps) over ``keys`` (first process that ran them)."""
        events = [self.event(k) for k in keys]
        if not events or any(e is None for e in events):
            return "-"
        sweeps = sum(e.get("sweeps") or 0 for e in events)
        if all(e.get("compiled") is None for e in events):
            return f"None ({sweeps:,})"
        runs = sum(e["compiled"][0] for e in events if e.get("compiled"))
        rounds = sum(e["compiled"][1] for e in events if e.get("compiled"))
        return f"{runs:,} / {rounds:,} ({sweeps:,})"

    def errors(self):
        return [r["error"] for r in self.results if r["error"]]


def show(answer) -> str:
    """A graph answer {alg: value} or a count, for the table."""
    if answer is None:
        return "-"
    if isinstance(answer, int):
        return f"{answer:,} facts"
    parts = []
    if "reach" in answer:
        parts.append(f"{answer['reach']:,} reached")
    if "cc" in answer:
        parts.append(f"{answer['cc'][0]:,} comp. (largest {answer['cc'][1]:,})")
    return "; ".join(parts)


def replay(edges: np.ndarray, batches) -> list:
    """The edge set after each of ``batches`` (drop, add), as update_batches applies them."""
    base = int(max(edges.max(), max(a.max() for _, a in batches))) + 1
    states, current = [], edges
    for drop, add in batches:
        keep = ~np.isin(current[:, 0] * base + current[:, 1], drop[:, 0] * base + drop[:, 1])
        current = np.concatenate([current[keep], add])
        states.append(current)
    return states


class Bench:
    def __init__(self, args, tmp: str):
        self.args, self.tmp = args, tmp
        self.rows: list = []
        self.series: list = []       # doubling: (nodes, diffflow Runs, DuckDB Runs, keys)
        self.mismatches: list = []
        self.failures: list = []

    def save(self, name: str, array=None, **arrays) -> str:
        path = os.path.join(self.tmp, name)      # (name ends in .npz / .npy)
        np.savez(path, **arrays) if arrays else np.save(path, array)
        return path

    def log(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def worker(self, spec: dict) -> dict:
        return run_worker(spec, self.args.cap, 1, script=os.path.abspath(__file__))

    def ours(self, label: str, spec: dict) -> Runs:
        """A diffflow case in ``--repeats`` fresh processes (stops at a capped or failed one)."""
        results = []
        for rep in range(self.args.repeats):
            t0 = time.perf_counter()
            r = self.worker(dict(spec, engine="diffflow"))
            results.append(r)
            self.log(f"  diffflow {label} #{rep + 1}: {time.perf_counter() - t0:.1f} s wall"
                     + (f", capped at {r['capped']}" if r["capped"] else "")
                     + (f", ERROR {r['error']}" if r["error"] else ""))
            if r["capped"] or r["error"]:
                break
        runs = Runs(results, self.args.cap)
        self.failures += [f"diffflow {label}: {e}" for e in runs.errors()]
        return runs

    def peer(self, engine: str, label: str, spec: dict) -> Runs:
        t0 = time.perf_counter()
        r = self.worker(dict(spec, engine=engine))
        self.log(f"  {engine} {label}: {time.perf_counter() - t0:.1f} s wall"
                 + (f", capped at {r['capped']}" if r["capped"] else "")
                 + (f", ERROR {r['error']}" if r["error"] else ""))
        runs = Runs([r], self.args.cap)
        self.failures += [f"{engine} {label}: {e}" for e in runs.errors()]
        return runs

    def check(self, label: str, want, got: dict) -> str:
        bad = {e: a for e, a in got.items() if a is not None and a != want}
        if bad:
            self.mismatches.append(f"{label}: expected {want}, got {bad}")
            return "MISMATCH"
        return "ok" if any(a is not None for a in got.values()) else "-"

    @staticmethod
    def reference(algs, edges: np.ndarray) -> dict:
        from bench_graphs import scipy_components, scipy_reach

        return {a: scipy_reach(edges, np.array([0])) if a == "reach" else scipy_components(edges)
                for a in algs}

    def graph_case(self, label: str, family: str, n: int, algs, cut: bool, batches: int,
                   peers=("duckdb", "scipy")):
        """Inputs, the diffflow case, the peers' recomputations and the checks of one graph;
        returns (diffflow Runs, {engine: Runs}, keys, {key: check})."""
        edges, middle = family_graph(family, n)
        states = {"initial": edges}
        arrays = {"edges": edges, "batches": np.array(batches)}
        start = edges
        if cut:
            arrays["cut"] = edges[[middle]]
            states["cut"] = start = np.delete(edges, middle, axis=0)
        ups, _ = update_batches(start, batches) if batches else ([], None)
        for i, ((drop, add), state) in enumerate(zip(ups, replay(start, ups) if ups else [])):
            arrays[f"drop{i}"], arrays[f"add{i}"] = drop, add
            states[f"u{i}"] = state
        name = f"{family}-{n}-{'-'.join(algs)}"
        data = self.save(f"{name}.npz", **arrays)
        ours = self.ours(label, {"task": "graph", "algs": algs, "data": data})
        paths = {k: self.save(f"{name}-{k}.npy", s) for k, s in states.items()}
        spec = {"task": "graph", "algs": algs,
                "states": [[k, paths[k], 1 if k.startswith("u") else self.args.repeats]
                           for k in states]}
        theirs = {e: self.peer(e, label, spec) for e in peers}
        checks = {}
        for key, state in states.items():
            got = {"diffflow": ours.answer(key)}
            got.update({e: r.answer(key) for e, r in theirs.items()})
            checks[key] = self.check(f"{label} {key}", self.reference(algs, state), got)
        return ours, theirs, list(states), checks

    # -- 1. counting ---------------------------------------------------------------------------
    def count(self) -> None:
        sizes = list(self.args.count_sizes)
        ours, stopped = {}, False
        for n in sizes:
            if stopped:
                break
            ours[n] = r = self.ours(f"count N={n:,}", {"task": "count", "sizes": [n]})
            stopped = r.failed()
        duck = self.peer("duckdb", "count", {"task": "count", "sizes": sizes,
                                             "repeats": self.args.repeats})
        for n in sizes:
            r = ours.get(n) or Runs([{"done": {}, "capped": "skipped", "error": None}],
                                    self.args.cap)
            key = str(n)
            check = self.check(f"count N={n}", n + 1,
                               {"diffflow": r.answer(key), "duckdb": duck.answer(key)})
            answer = r.answer(key) if r.answer(key) is not None else duck.answer(key)
            self.rows.append(("count", f"N = {n:,}", "ms (µs per round)", r.cell(key, n),
                              r.compiled([key]), duck.cell(key, n), "-", show(answer), check))

    # -- 2. chain: initial and middle cut ------------------------------------------------------
    def chain(self) -> None:
        n = self.args.chain
        label = f"chain {n:,} reach"
        ours, theirs, _, checks = self.graph_case(label, "chain", n, ["reach"], True, 0)
        for key, what in (("initial", "initial, ms"), ("cut", "middle edge cut, ms")):
            answer = ours.answer(key) or theirs["duckdb"].answer(key) or \
                theirs["scipy"].answer(key)
            self.rows.append(("chain", f"chain {n:,} nodes, reach from 0", what, ours.cell(key),
                              ours.compiled([key]), theirs["duckdb"].cell(key),
                              theirs["scipy"].cell(key), show(answer), checks[key]))

    # -- 3. reach + CC under 10+10 updates -----------------------------------------------------
    def updates(self) -> None:
        batches = self.args.batches
        for family, n in self.args.update_graphs:
            edges, _ = family_graph(family, n)
            nodes = len(np.unique(edges))
            what = (f"chain {nodes:,}" if family == "chain" else
                    f"grid {math.isqrt(nodes)} x {math.isqrt(nodes)}")
            ours, theirs, keys, checks = self.graph_case(f"{what} reach+CC", family, n,
                                                         ["reach", "cc"], False, batches)
            ups = [k for k in keys if k.startswith("u")]
            engines = [ours, *theirs.values()]
            case = f"{what}, reach + CC in one dataflow"
            self.rows.append(("updates", case, "initial, ms", ours.cell("initial"),
                              ours.compiled(["initial"]), theirs["duckdb"].cell("initial"),
                              theirs["scipy"].cell("initial"),
                              show(next((r.answer("initial") for r in engines
                                         if r.answer("initial")), None)), checks["initial"]))
            peers = [ms(r.recompute(ups)) if r.recompute(ups) else r.status(ups[0])
                     for r in (theirs["duckdb"], theirs["scipy"])]
            self.rows.append((
                "updates", case, (f"{batches} updates of 10+10 edges, ms: diffflow median "
                                  "(p90); peers recompute both answers, median"),
                ours.update_cell(ups),
                ours.compiled(ups), *peers,
                "final: " + show(next((r.answer(ups[-1]) for r in engines
                                       if r.answer(ups[-1])), None)),
                ", ".join(dict.fromkeys(checks[k] for k in ups))))

    # -- 4. doubling chains ------------------------------------------------------------------
    def doubling(self) -> None:
        sizes = [int(s) for s in self.args.sizes.split(",") if s]
        batches, stopped = self.args.batches, False
        for n in sizes:
            label = f"doubling chain {n:,} reach"
            if stopped:
                skipped = Runs([{"done": {}, "capped": "skipped", "error": None}], self.args.cap)
                self.series.append((n, skipped, None, None, {}))
                continue
            ours, theirs, keys, checks = self.graph_case(label, "chain", n, ["reach"], True,
                                                         batches, peers=("duckdb",))
            stopped = ours.failed()               # capped or failed: stop doubling
            self.series.append((n, ours, theirs["duckdb"], keys, checks))
        for n, ours, duck, keys, checks in self.series:
            if keys is None:
                self.rows.append(("doubling", f"chain {n:,}, reach from 0",
                                  "initial / cut / update median, ms",
                                  "not run (a smaller size hit the cap or failed)",
                                  "-", "-", "-", "-", "-"))
                continue
            ups = [k for k in keys if k.startswith("u")]
            med = ours.updates(ups)
            rec = duck.recompute(ups)
            self.rows.append((
                "doubling", f"chain {n:,}, reach from 0",
                f"initial / cut / median of {len(ups)} 10+10 updates, ms",
                (f"{ours.cell('initial')} / {ours.cell('cut')} / "
                 f"{ms(med[0]) if med else ours.update_cell(ups)}"),
                f"{ours.compiled(['initial'])}; {ours.compiled(['cut'])}; {ours.compiled(ups)}",
                (f"{duck.cell('initial')} / {duck.cell('cut')} / "
                 f"{ms(rec) if rec else duck.status(ups[0])}"), "-",
                show(ours.answer("cut") or duck.answer("cut")) + " after the cut",
                ", ".join(dict.fromkeys(checks.values()))))

    def doubling_table(self) -> list:
        """The doubling series on its own, with the growth per doubling; (n, {line: s})."""
        points = []
        header = ("nodes", "diffflow initial ms", "cut ms", "update median ms",
                  "growth per doubling (initial / cut / update)", "DuckDB initial ms",
                  "cut ms", "recompute median ms")
        rows, previous = [], None
        for n, ours, duck, keys, _ in self.series:
            if keys is None:
                rows.append((f"{n:,}", "not run", "", "", "", "", "", ""))
                continue
            ups = [k for k in keys if k.startswith("u")]
            med, rec = ours.updates(ups), duck.recompute(ups)
            line = {("diffflow", "initial"): ours.s("initial"), ("diffflow", "cut"): ours.s("cut"),
                    ("diffflow", "update"): med and med[0], ("duckdb", "initial"):
                    duck.s("initial"), ("duckdb", "cut"): duck.s("cut"), ("duckdb", "update"): rec}
            capped = {(e, phase): r.capped_at(k) for e, r in (("diffflow", ours),
                                                              ("duckdb", duck))
                      for phase, k in (("initial", ["initial"]), ("cut", ["cut"]),
                                       ("update", ups))}
            points.append((n, line, capped))
            ours_now = [line["diffflow", p] for p in ("initial", "cut", "update")]
            growth = "-" if previous is None else " / ".join(
                f"x{b / a:.2f}" if a and b else "-" for a, b in zip(previous, ours_now))
            previous = ours_now
            rows.append((f"{n:,}", ours.cell("initial"), ours.cell("cut"),
                         ms(med[0]) if med else ours.update_cell(ups), growth,
                         duck.cell("initial"), duck.cell("cut"),
                         ms(rec) if rec else duck.status(ups[0])))
        table(f"Doubling series: chain, reachability from node 0 (initial, middle cut, median "
              f"of {self.args.batches} 10+10 updates after the cut)", header, rows)
        return points


def table(title: str, header, rows) -> None:
    print(f"\n### {title}\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    sys.stdout.flush()


def plot(points, path: str, cap: float):
    """Log-log ms vs nodes of the doubling series; the path written, or None."""
    if not points:
        return None
    try:
        import matplotlib
    except ImportError:
        print("\n(matplotlib not installed: no plot; pip install -e \".[bench]\")")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(7.5, 5.5))
    colors = {"diffflow": "tab:blue", "duckdb": "tab:orange"}
    markers = {"initial": "o", "cut": "s", "update": "^"}
    for engine in ("diffflow", "duckdb"):
        for phase in ("initial", "cut", "update"):
            done = [(n, line[engine, phase] * 1e3) for n, line, _ in points
                    if line[engine, phase]]
            if done:
                ax.plot(*zip(*done), "-" if engine == "diffflow" else "--",
                        marker=markers[phase], color=colors[engine],
                        label=f"{engine} {phase if phase != 'update' else '10+10 update'}"
                        + (" (recompute)" if engine == "duckdb" and phase == "update" else ""))
            over = [n for n, _, capped in points if capped.get((engine, phase))]
            if over:
                ax.plot(over, [cap * 1e3] * len(over), "x", color=colors[engine], ms=10,
                        label=f"{engine} {phase} > cap")
    ns = [n for n, _, _ in points]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(ns, [f"{n:,}" for n in ns], rotation=30)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("chain nodes")
    ax.set_ylabel("ms")
    how = ("loops, compiled rounds" if os.environ.get("DIFFFLOW_GRAPH_LOOPS", "0")
           not in ("", "0") else "search tactic")
    ax.set_title(f"Chain reachability from node 0: diffflow ({how}, P = {partitions()}) "
                 "vs DuckDB (threads = 1)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main() -> None:
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):     # a worker (run_worker)
        spec = json.loads(sys.argv[1])
        WORKERS[spec["task"], spec["engine"]](spec)
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sections", default=",".join(SECTIONS), help=", ".join(SECTIONS))
    p.add_argument("--sizes", help="doubling: chain lengths (default 128,256,...,16384)")
    p.add_argument("--cap", type=float, default=120, help="seconds per timed case")
    p.add_argument("--repeats", type=int, help="fresh diffflow processes per case, median "
                   "(default 3; 1 with --quick)")
    p.add_argument("--batches", type=int, help="10+10 update batches (default 20; 5 with --quick)")
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    p.add_argument("--million", action="store_true", help="count: also N = 1,000,000")
    p.add_argument("--compiled-rounds", choices=("on", "off", "force"),
                   help="set DIFFFLOW_COMPILED_ROUNDS in the workers (default: inherit)")
    p.add_argument("--graph-loops", action="store_true",
                   help="set DIFFFLOW_GRAPH_LOOPS=1 in the workers: reachability and components "
                   "as loops (whose rounds compile) instead of their search tactics")
    p.add_argument("--partitions", type=int, default=1,
                   help="the local runtime's partitions in the diffflow cases (default 1)")
    p.add_argument("--plot", default=os.path.join(HERE, "out", "rounds_doubling.png"))
    args = p.parse_args()
    sections = [s for s in args.sections.split(",") if s]
    for s in sections:
        if s not in SECTIONS:
            p.error(f"unknown section {s!r}; choose from {', '.join(SECTIONS)}")
    preset = QUICK if args.quick else FULL
    args.repeats = args.repeats or (1 if args.quick else 3)
    args.batches = args.batches if args.batches is not None else preset["batches"]
    args.sizes = args.sizes or preset["sizes"]
    args.count_sizes = preset["count"] + ([1_000_000] if args.million else [])
    args.chain, args.update_graphs = preset["chain"], preset["updates"]
    if args.compiled_rounds:
        os.environ["DIFFFLOW_COMPILED_ROUNDS"] = {"on": "1", "off": "0",
                                                  "force": "force"}[args.compiled_rounds]
    if args.graph_loops:
        os.environ["DIFFFLOW_GRAPH_LOOPS"] = "1"
    os.environ["BENCH_ROUNDS_PARTITIONS"] = str(args.partitions)
    require("scipy", "duckdb")
    import duckdb
    import scipy
    try:
        import numba
        numba_version = numba.__version__
    except ImportError:
        numba_version = "-"

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, check=False,
                            capture_output=True, text=True).stdout.strip() or "?"
    print(f"# diffflow compiled loop rounds, {datetime.date.today()}, commit {commit}\n\n"
          f"python {platform.python_version()}, numpy {np.__version__}, numba {numba_version}, "
          f"duckdb {duckdb.__version__} (threads 1), scipy {scipy.__version__}, "
          f"{os.cpu_count()} cpus, {platform.machine()}; repeats {args.repeats}, cap "
          f"{args.cap:g} s, DIFFFLOW_COMPILED_ROUNDS="
          f"{os.environ.get('DIFFFLOW_COMPILED_ROUNDS', '(unset: on)')}, graphs by "
          + ("their loops (DIFFFLOW_GRAPH_LOOPS=1)" if os.environ.get("DIFFFLOW_GRAPH_LOOPS",
                                                                      "0") not in ("", "0")
             else "search tactics")
          + f", local runtime P = {args.partitions}"
          + (", --quick" if args.quick else ""), flush=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_rounds_") as tmp:
        bench = Bench(args, tmp)
        for section in sections:
            started = time.perf_counter()
            bench.log(f"[{section}]")
            getattr(bench, section)()
            bench.log(f"[{section}: {time.perf_counter() - started:.0f} s]")
    table("Deep loops and deep-graph updates: diffflow next to DuckDB (threads = 1) and scipy",
          ("section", "case", "measure", "diffflow", "compiled runs / rounds (sweeps)",
           "DuckDB", "scipy", "answer", "check"), bench.rows)
    if bench.series:
        points = bench.doubling_table()
        saved = plot(points, args.plot, args.cap)
        if saved:
            print(f"\nplot: {os.path.relpath(saved)}")
    env = " ".join(f"{k}={shlex.quote(os.environ[k])}" for k in ("PYTHONPATH",
                                                                "DIFFFLOW_COMPILED_ROUNDS")
                   if k in os.environ and not (k == "DIFFFLOW_COMPILED_ROUNDS"
                                               and args.compiled_rounds))
    print(f"\ncommand ({time.perf_counter() - t0:.0f} s, cwd {os.getcwd()}):\n  "
          f"{env + ' ' if env else ''}{shlex.join([sys.executable] + sys.argv)}")
    if bench.failures:
        print("\nFAILED CASES:\n  " + "\n  ".join(bench.failures))
    if bench.mismatches:
        print("\nANSWERS DISAGREE:\n  " + "\n  ".join(bench.mismatches))
    if bench.failures or bench.mismatches:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
