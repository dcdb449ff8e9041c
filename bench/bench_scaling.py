"""Scaling benchmark: diffflow next to DuckDB and scipy as inputs double, in one run.

    cd <repository checkout>
    PYTHONPATH=. python bench/bench_scaling.py                       # all sections, ~10 min
    PYTHONPATH=. python bench/bench_scaling.py --sections doubling --sizes 125,250 --cap 30

Sections (``--sections``, default all), each printed as a markdown table:

  doubling  chain (path 0-1-...-n-1) and grid (round(sqrt n)^2 nodes, edges right and down)
            graphs of doubling size: connected components and reachability from node 0,
            the initial run, then one edge cut (middle edge) and ``advance()``; DuckDB
            (recursive CTEs: USING KEY min-label propagation, UNION reachability) and scipy
            (``scipy_wcc`` / ``scipy_reach`` of bench_graphs) recompute from scratch.
  rmat      R-MAT scale 14 and 17 (bench_graphs' generator, 120,000 edges at scale 14, x2 per
            scale), reach from 10 roots and CC: initial, then the median of ``--batches``
            batches of 10 inserted + 10 removed edges; DuckDB / scipy recompute; peak memory.
  datalog   transitive closure and same generation (bench_datalog's programs) on R-MAT and on
            the first K edges of wiki-Vote: initial, one 10+10 update, peak memory and bytes
            per derived fact; DuckDB ``WITH RECURSIVE ... UNION`` on the same facts.
  count     ``n(0). n(x + 1) :- n(x), x < N.`` for N = 10^3 .. 10^6: time and rounds/s;
            DuckDB's recursive CTE counting to N.
  cold      a tiny CC query as the first thing of a fresh ``python -c`` (timed from before
            ``import``) and the same query again, warm, in that process.

Every diffflow case runs in a fresh subprocess (its peak memory is that process's ru_maxrss),
after an untimed warm-up on a tiny input that loads numba's cached kernels; DuckDB and scipy run
a whole series in one subprocess.  A case still running after ``--cap`` seconds is killed: the
table says "> cap" and that series stops doubling.  Answers are checked across engines (scipy
or a closed form is the reference); a disagreement is marked MISMATCH in its table, listed at
the end, and makes the exit status 1.  Plots (log-log time vs size, slope-1 and slope-2
reference lines) go to ``--plots`` (default bench/out/, git-ignored).  Single-threaded
(``--threads``).  No network.  Not collected by pytest.  Needs ``pip install -e ".[bench]"``.
"""
from __future__ import annotations

import argparse
import datetime
import math
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
from datasets import add_data_option, require  # noqa: E402
from scaling_workers import family_graph, run_cold, run_worker, update_batches  # noqa: E402

SECTIONS = ("doubling", "rmat", "datalog", "count", "cold")
PEERS = ("duckdb", "scipy")


def secs(x) -> str:
    return "-" if x is None else f"{x:.3g}" if x < 100 else f"{x:.0f}"


def rate(x) -> str:
    return "-" if x is None else f"{x:,.0f}"


class Bench:
    def __init__(self, args, tmp: str):
        self.args, self.tmp = args, tmp
        self.capped = f"> {args.cap:g} s"
        self.engines = [e for e in args.engines.split(",") if e]
        self.mismatches: list = []
        self.summary: list = []
        self.series: dict = {}     # (family, alg) -> {(engine, phase): [(n, seconds or None)]}

    def path(self, name: str, array=None, **arrays) -> str:
        p = os.path.join(self.tmp, name)
        np.savez(p, **arrays) if arrays else np.save(p, array)
        return p

    def worker(self, spec: dict) -> dict:
        return run_worker(dict(spec, threads=self.args.threads), self.args.cap, self.args.threads)

    def cell(self, result: dict, key: str, scale: float = 1.0) -> str:
        if key in result["done"]:
            return secs(result["done"][key]["s"] * scale)
        if result["capped"] == key:
            return self.capped
        return "not run" if result["capped"] else "error" if result["error"] else "-"

    def check(self, label: str, expected, got: dict) -> str:
        bad = {e: a for e, a in got.items() if a is not None and a != expected}
        if bad:
            self.mismatches.append(f"{label}: expected {expected}, got {bad}")
            return f"MISMATCH {bad}"
        return "ok" if any(a is not None for a in got.values()) else "-"

    @staticmethod
    def table(title: str, header, rows) -> None:
        print(f"\n### {title}\n\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(str(c) for c in row) + " |")
        sys.stdout.flush()

    @staticmethod
    def answer(result: dict, key: str):
        event = result["done"].get(key)
        return None if event is None else event["answer"]

    def note_errors(self, what: str, *results) -> None:
        for r in results:
            if r and r.get("error"):
                print(f"  ! {what}: {r['error']}", flush=True)

    # -- 1. chain and grid graphs of doubling size --------------------------------------------
    def doubling(self) -> None:
        args = self.args
        sizes = [int(s) for s in args.sizes.split(",")]
        for family in args.families.split(","):
            for alg in args.algorithms.split(","):
                cases = {}
                for n in sizes:
                    edges, cut = family_graph(family, n)
                    after = np.delete(edges, cut, axis=0)
                    cases[n] = (edges, after, self.path(
                        f"{family}-{alg}-{n}.npz", edges=edges, roots=np.array([0]),
                        steps=np.array(1), drop0=edges[[cut]], add0=np.zeros((0, 2), np.int64)),
                        self.path(f"{family}-{n}-0.npy", edges),
                        self.path(f"{family}-{n}-1.npy", after))
                ours = {}
                if "diffflow" in self.engines:
                    for n in sizes:
                        ours[n] = r = self.worker({"task": "graph", "engine": "diffflow",
                                                   "alg": alg, "data": cases[n][2]})
                        self.note_errors(f"diffflow {family} {alg} n={n}", r)
                        if r["capped"] or r["error"]:
                            break
                peers = {}
                for engine in (e for e in self.engines if e in PEERS):
                    states = [[f"{n}/{i}", cases[n][3 + i], [0]] for n in sizes for i in (0, 1)]
                    peers[engine] = self.worker({"task": "graph", "engine": engine, "alg": alg,
                                                 "states": states})
                    self.note_errors(f"{engine} {family} {alg}", peers[engine])
                self.doubling_table(family, alg, sizes, cases, ours, peers)

    def doubling_table(self, family, alg, sizes, cases, ours, peers) -> None:
        from bench_graphs import scipy_reach, scipy_wcc

        empty = {"done": {}, "capped": None, "error": None}
        series = self.series.setdefault((family, alg), {})
        rows = []
        for n in sizes:
            edges, after = cases[n][:2]
            r = ours.get(n, empty)
            if n not in ours and any(o["capped"] or o["error"] for o in ours.values()):
                r = dict(empty, capped="skipped")
            duck, sp = peers.get("duckdb", empty), peers.get("scipy", empty)
            answers = []
            for i, (key, state) in enumerate((("initial", edges), ("step0", after))):
                want = (scipy_reach(state, np.array([0])) if alg == "reach"
                        else scipy_wcc(state))
                got = {"diffflow": self.answer(r, key), "duckdb": self.answer(duck, f"{n}/{i}"),
                       "scipy": self.answer(sp, f"{n}/{i}")}
                if alg == "cc":      # [components, largest]: scipy_wcc gives the largest
                    counts = {a[0] for a in got.values() if isinstance(a, list)}
                    if len(counts) > 1:
                        self.mismatches.append(f"{family} {n} cc components: {got}")
                    got = {e: a[1] if isinstance(a, list) else a for e, a in got.items()}
                answers.append((self.check(f"{family} {alg} n={n} {key}", want, got), got))
            raw = [self.answer(r, k) or self.answer(duck, f"{n}/{i}")
                   for i, k in enumerate(("initial", "step0"))]
            shown = " → ".join("-" if a is None else f"{a[0]} comp. ({a[1]})" if
                               isinstance(a, list) else f"{a}" for a in raw)
            n_nodes = len(np.unique(edges))
            for engine, res, keys in (("diffflow", r, ("initial", "step0")),
                                      ("duckdb", duck, (f"{n}/0", f"{n}/1")),
                                      ("scipy", sp, (f"{n}/0", f"{n}/1"))):
                if engine in self.engines:
                    for phase, key in zip(("initial", "cut"), keys):
                        done = res["done"].get(key)
                        if done or res["capped"] == key:
                            series.setdefault((engine, phase), []).append(
                                (n_nodes, done["s"] if done else None))
            rows.append((f"{n_nodes:,}", f"{len(edges):,}", self.cell(r, "initial"),
                         self.cell(r, "step0"), f"{r['peak_mib']:.0f}" if "peak_mib" in r else "-",
                         self.cell(duck, f"{n}/0"), self.cell(duck, f"{n}/1"),
                         self.cell(sp, f"{n}/0", 1e3), self.cell(sp, f"{n}/1", 1e3),
                         shown + (" reached" if alg == "reach" else ""),
                         ", ".join(dict.fromkeys(a[0] for a in answers))))
        what = "connected components" if alg == "cc" else "reachability from node 0"
        self.table(f"{family}: {what}; initial, then one middle edge cut",
                   ("nodes", "edges", "diffflow initial s", "diffflow cut s", "diffflow peak MiB",
                    "DuckDB initial s", "DuckDB cut s", "scipy initial ms", "scipy cut ms",
                    "answer (initial → cut)", "check"), rows)

    # -- 2. R-MAT, batches of updates ---------------------------------------------------------
    def rmat(self) -> None:
        from bench_graphs import rmat_edges, scipy_reach, scipy_wcc

        rows = []
        for scale in (int(s) for s in self.args.rmat_scales.split(",")):
            edges = rmat_edges(scale, round(120_000 * 2.0 ** (scale - 14)))
            rng = np.random.default_rng(1)                     # roots as bench_graphs picks them
            roots = rng.choice(np.unique(edges[:, 0]), 10, replace=False)
            batches, final = update_batches(edges, self.args.batches)
            steps = {f"drop{i}": d for i, (d, _) in enumerate(batches)}
            steps.update({f"add{i}": a for i, (_, a) in enumerate(batches)})
            data = self.path(f"rmat{scale}.npz", edges=edges, roots=roots,
                             steps=np.array(len(batches)), **steps)
            states = [["0", self.path(f"rmat{scale}-0.npy", edges), roots.tolist()],
                      ["1", self.path(f"rmat{scale}-1.npy", final), roots.tolist()]]
            label = f"R-MAT s{scale}, {len(edges):,} edges"
            last = f"step{len(batches) - 1}"
            for alg in ("reach", "cc"):
                res = {e: self.worker({"task": "graph", "engine": e, "alg": alg, "data": data,
                                       "states": states}) for e in self.engines}
                self.note_errors(f"{label} {alg}", *res.values())
                empty = {"done": {}, "capped": None, "error": None}
                r, duck, sp = (res.get(e, empty) for e in ("diffflow", "duckdb", "scipy"))
                checks = []
                for key, peer_key, state in (("initial", "0", edges), (last, "1", final)):
                    want = scipy_reach(state, roots) if alg == "reach" else scipy_wcc(state)
                    got = {"diffflow": self.answer(r, key), "duckdb": self.answer(duck, peer_key),
                           "scipy": self.answer(sp, peer_key)}
                    if alg == "cc":     # [components, largest]; scipy_wcc gives the largest
                        got = {e: a[1] if isinstance(a, list) else a for e, a in got.items()}
                    checks.append(self.check(f"{label} {alg} {key}", want, got))
                lat = sorted(r["done"][f"step{i}"]["s"] * 1e3 for i in range(len(batches))
                             if f"step{i}" in r["done"])
                med = statistics.median(lat) if lat else None
                upd = (f"{med:.1f} ({lat[min(len(lat) - 1, int(0.9 * len(lat)))]:.1f})"
                       if lat else self.cell(r, "step0"))
                ratio = lambda res: (f"{res['done']['1']['s'] * 1e3 / med:.1f}x"  # noqa: E731
                                     if med and "1" in res["done"] else "-")
                answer = self.answer(r, "initial") or self.answer(duck, "0")
                rows.append((label, alg, self.cell(r, "initial"), upd,
                             f"{r['peak_mib']:.0f}" if "peak_mib" in r else "-",
                             f"{self.cell(duck, '0')} / {self.cell(duck, '1')}",
                             f"{self.cell(sp, '0', 1e3)} / {self.cell(sp, '1', 1e3)}",
                             f"{ratio(duck)} / {ratio(sp)}",
                             answer, ", ".join(dict.fromkeys(checks))))
                self.summary.append((f"{label}, {alg}", f"initial {self.cell(r, 'initial')} s, "
                                     f"update {med and f'{med:.1f}'} ms",
                                     f"{self.cell(duck, '0')} s", f"{self.cell(sp, '0', 1e3)} ms"))
        self.table(f"R-MAT: reach from 10 roots and CC; {self.args.batches} batches of 10+10 edges",
                   ("graph", "alg.", "diffflow initial s", "diffflow update ms, median (p90)",
                    "diffflow peak MiB", "DuckDB s, initial / recompute after batches",
                    "scipy ms, initial / recompute", "recompute ÷ diffflow update (DuckDB / "
                    "scipy)", "answer (reached / [components, largest])", "check"), rows)

    # -- 3. Datalog TC and SG ----------------------------------------------------------------
    def datalog(self) -> None:
        from bench_datalog import make_updates, reference_size
        from bench_graphs import rmat_edges
        from datasets import load_graph

        rows = []
        for spec in self.args.datalog_graphs.split(","):
            parts = spec.split(":")
            if parts[0] == "rmat":
                edges = np.unique(rmat_edges(int(parts[1]), int(parts[2]), seed=0), axis=0)
                label = f"R-MAT s{parts[1]}"
            else:
                edges = load_graph(parts[0], self.args.data)
                edges = edges[edges[:, 0] != edges[:, 1]]
                k = int(parts[1]) if len(parts) > 1 else 0
                edges, label = (edges[:k], f"{parts[0]} first {k:,}") if k else (edges, parts[0])
            (drop, add), after = (u[0] for u in make_updates(edges, 1))
            data = self.path(f"dl-{spec.replace(':', '-')}.npz", edges=edges, drop0=drop, add0=add)
            states = [["initial", self.path(f"dl-{spec.replace(':', '-')}-0.npy", edges)],
                      ["update", self.path(f"dl-{spec.replace(':', '-')}-1.npy", after)]]
            for wl in self.args.workloads.split(","):
                want = [reference_size(wl, e, None) for e in (edges, after)]
                res = {e: self.worker({"task": "datalog", "engine": e, "workload": wl,
                                       "data": data, "states": states})
                       for e in self.engines if e != "scipy"}
                self.note_errors(f"{label} {wl}", *res.values())
                empty = {"done": {}, "capped": None, "error": None}
                r, duck = res.get("diffflow", empty), res.get("duckdb", empty)
                checks = [self.check(f"{label} {wl} {key}", w,
                                     {"diffflow": self.answer(r, key),
                                      "duckdb": self.answer(duck, key)})
                          for key, w in zip(("initial", "update"), want)]
                per_fact = "-"
                if "peak_after_initial_mib" in r and "rss_mib" in r:
                    grown = r["peak_after_initial_mib"] - r["rss_mib"]
                    per_fact = f"{grown * 2**20 / want[0]:,.0f}"
                upd = r["done"].get("update")
                ratio = (f"{duck['done']['update']['s'] / upd['s']:.1f}x"
                         if upd and "update" in duck["done"] else "-")
                rows.append((label, f"{len(edges):,}", wl, f"{want[0]:,} → {want[1]:,}",
                             self.cell(r, "initial"), self.cell(r, "update", 1e3),
                             f"{r['peak_mib']:.0f}" if "peak_mib" in r else "-", per_fact,
                             self.cell(duck, "initial"), self.cell(duck, "update"),
                             f"{duck['peak_mib']:.0f}" if "peak_mib" in duck else "-", ratio,
                             ", ".join(dict.fromkeys(checks))))
                self.summary.append((f"Datalog {wl}, {label}",
                                     f"initial {self.cell(r, 'initial')} s, update "
                                     f"{self.cell(r, 'update', 1e3)} ms",
                                     f"{self.cell(duck, 'initial')} s", "-"))
        self.table("Datalog: transitive closure (tc) and same generation (sg); one update of "
                   "10 removed + 10 inserted edges",
                   ("graph", "edges", "workload", "derived facts (initial → after update)",
                    "diffflow initial s", "diffflow update ms", "diffflow peak MiB",
                    "diffflow bytes / fact", "DuckDB s", "DuckDB recompute s",
                    "DuckDB peak MiB", "DuckDB recompute ÷ diffflow update", "check"), rows)

    # -- 4. counting recursion ---------------------------------------------------------------
    def count(self) -> None:
        sizes = [int(s) for s in self.args.count_sizes.split(",")]
        ours = {}
        if "diffflow" in self.engines:
            for n in sizes:
                ours[n] = r = self.worker({"task": "count", "engine": "diffflow", "sizes": [n]})
                self.note_errors(f"diffflow count N={n}", r)
                if r["capped"] or r["error"]:
                    break
        duck = {"done": {}, "capped": None, "error": None}
        if "duckdb" in self.engines:
            duck = self.worker({"task": "count", "engine": "duckdb", "sizes": sizes})
            self.note_errors("duckdb count", duck)
        rows = []
        stopped = False
        for n in sizes:
            r = ours.get(n, {"done": {}, "capped": "skipped" if stopped else None, "error": None})
            stopped = stopped or bool(r["capped"] or r["error"])
            d, k = r["done"].get(str(n)), duck["done"].get(str(n))
            check = self.check(f"count N={n}", n + 1, {"diffflow": d and d["answer"],
                                                        "duckdb": k and k["answer"]})
            rows.append((f"{n:,}", self.cell(r, str(n)), rate(d and n / d["s"]),
                         f"{r['peak_mib']:.0f}" if "peak_mib" in r else "-",
                         self.cell(duck, str(n)), rate(k and n / k["s"]), check))
            series = self.series.setdefault(("count", "n"), {})
            if d or r["capped"] == str(n):
                series.setdefault(("diffflow", "initial"), []).append((n, d and d["s"]))
            if k or duck["capped"] == str(n):
                series.setdefault(("duckdb", "initial"), []).append((n, k and k["s"]))
        self.table("Counting recursion `n(0). n(x + 1) :- n(x), x < N.` (N rounds)",
                   ("N", "diffflow s", "diffflow rounds/s", "diffflow peak MiB", "DuckDB s",
                    "DuckDB rounds/s", "check"), rows)

    # -- 5. cold start -----------------------------------------------------------------------
    def cold(self) -> None:
        rows = []
        for engine in self.engines:
            runs = [run_cold(engine, self.args.threads) for _ in range(self.args.cold_repeats)]
            ok = [r for r in runs if "error" not in r]
            for r in runs:
                if "error" in r:
                    print(f"  ! cold {engine}: {r['error']}")
            if not ok:
                continue
            med = lambda k: statistics.median(r[k] for r in ok) * 1e3  # noqa: E731
            check = self.check(f"cold {engine}", [2, 2], {engine: ok[0]["answer"]})
            rows.append((engine, f"{ok[0]['cold'] * 1e3:.0f}", f"{med('cold'):.0f}",
                         f"{med('warm'):.2f}", f"{med('wall'):.0f}", check))
            figure = f"cold {med('cold'):.0f} ms, warm {med('warm'):.2f} ms"
            self.summary.append(("cold start, 5-node CC", *(figure if e == engine else "-"
                                                            for e in ("diffflow", *PEERS))))
        self.table(f"Cold start: a 5-node CC query in a fresh `python -c` "
                   f"({self.args.cold_repeats} processes each)",
                   ("engine", "first process: import + query ms", "median: import + query ms",
                    "median: same query again (warm) ms", "median process wall ms", "check"),
                   rows)


def slope(points) -> str:
    """Growth exponent over the last doubling measured: log(t2 / t1) / log(n2 / n1)."""
    pts = [(n, t) for n, t in points if t]
    if len(pts) < 2:
        return "-"
    (n1, t1), (n2, t2) = pts[-2:]
    return f"{math.log(t2 / t1) / math.log(n2 / n1):.2f}"


def plots(bench: Bench, folder: str) -> list:
    try:
        import matplotlib
    except ImportError:
        print("\n(matplotlib not installed: no plots; pip install -e \".[bench]\")")
        return []
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(folder, exist_ok=True)
    files = []
    colors = {"diffflow": "tab:blue", "duckdb": "tab:orange", "scipy": "tab:green"}
    groups = {}
    for (family, alg), series in bench.series.items():
        groups.setdefault(family, []).append((alg, series))
    for family, panels in groups.items():
        fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 5), squeeze=False)
        for ax, (alg, series) in zip(axes[0], panels):
            for (engine, phase), pts in sorted(series.items(), key=lambda kv: (
                    kv[0][0], kv[0][1] != "initial")):
                done = [(n, t) for n, t in pts if t]
                style = "-o" if phase == "initial" else "--s"
                name = engine if family == "count" else f"{engine} {phase}"
                if done:
                    ax.plot(*zip(*done), style, color=colors[engine], label=name)
                for n, t in pts:
                    if t is None:
                        ax.plot([n], [bench.args.cap], "^", color=colors[engine], ms=11,
                                label=f"{name} > cap")
            all_n = sorted({n for pts in series.values() for n, _ in pts})
            times = [t for pts in series.values() for _, t in pts if t]
            ax.set_ylim(min(times) / 2, max(times + [bench.args.cap]) * 3)
            first = series.get(("diffflow", "initial")) or next(iter(series.values()))
            y0 = next((t for _, t in first if t), 1.0)
            for k, ls in ((1, ":"), (2, "-.")):
                ax.plot(all_n, [y0 * (n / all_n[0]) ** k for n in all_n], ls, color="grey",
                        label=f"slope {k}")
            ax.axhline(bench.args.cap, color="red", lw=0.8, alpha=0.5, label="cap")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(all_n, [f"{n:,}" for n in all_n])
            ax.minorticks_off()
            ax.set_xlabel("N (rounds)" if family == "count" else "nodes")
            ax.set_ylabel("seconds")
            ax.set_title(f"{family} {alg}" if family != "count" else "counting recursion")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = os.path.join(folder, f"scaling_{family}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sections", default=",".join(SECTIONS), help=", ".join(SECTIONS))
    p.add_argument("--engines", default="diffflow,duckdb,scipy")
    p.add_argument("--cap", type=float, default=120, help="seconds per timed case")
    p.add_argument("--sizes", default="125,250,500,1000,2000", help="doubling: node counts")
    p.add_argument("--families", default="chain,grid")
    p.add_argument("--algorithms", default="cc,reach", help="doubling: cc, reach")
    p.add_argument("--rmat-scales", default="14,17")
    p.add_argument("--batches", type=int, default=10, help="rmat: update batches")
    p.add_argument("--datalog-graphs",
                   default="rmat:9:2000,rmat:10:4000,rmat:11:8000,wiki-Vote:10000",
                   help="rmat:SCALE:EDGES or NAME:K (first K distinct edges of a SNAP graph)")
    p.add_argument("--workloads", default="tc,sg")
    p.add_argument("--count-sizes", default="1000,10000,100000,1000000")
    p.add_argument("--cold-repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="DuckDB and numba threads")
    p.add_argument("--plots", default=os.path.join(HERE, "out"), help="folder for PNGs")
    add_data_option(p)
    args = p.parse_args()
    sections = [s for s in args.sections.split(",") if s]
    for s in sections:
        if s not in SECTIONS:
            p.error(f"unknown section {s!r}; choose from {', '.join(SECTIONS)}")
    require("scipy", "duckdb")
    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE,
                            capture_output=True, text=True).stdout.strip() or "?"
    import duckdb
    import scipy

    print(f"# diffflow scaling benchmark, {datetime.date.today()}, commit {commit}\n\npython "
          f"{sys.version.split()[0]}, numpy {np.__version__}, duckdb {duckdb.__version__}, scipy "
          f"{scipy.__version__}, {os.cpu_count()} cpus, threads {args.threads}, cap {args.cap:g} s",
          flush=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_scaling_") as tmp:
        bench = Bench(args, tmp)
        for section in sections:
            started = time.perf_counter()
            getattr(bench, section)()
            print(f"\n({section}: {time.perf_counter() - started:.0f} s)", flush=True)
    files = plots(bench, args.plots) if bench.series else []
    rows = []
    for (family, alg), series in bench.series.items():
        for engine in bench.engines:
            pts = {ph: series.get((engine, ph), []) for ph in ("initial", "cut")}
            if not pts["initial"]:
                continue
            times = {ph: dict(pts[ph]) for ph in pts}
            phases = [ph for ph in pts if pts[ph]]
            done = [n for n in times["initial"] if all(times[ph].get(n) for ph in phases)]
            capped = [n for ph in phases for n, t in pts[ph] if t is None]
            at = max(done) if done else None
            rows.append((f"{family} {alg}" if family != "count" else "count", engine,
                         (f"{at:,}" if at else "-") + (f" (> cap at {min(capped):,})"
                                                       if capped else ""),
                         " / ".join(secs(times[ph].get(at)) for ph in phases),
                         " / ".join(slope(pts[ph]) for ph in phases)))
    if rows:
        bench.table("Summary: doubling series",
                    ("series", "engine", "largest size within cap", "s there (initial / cut)",
                     "log-log slope of the last doubling (initial / cut)"), rows)
    if bench.summary:
        bench.table("Summary: other sections", ("case", "diffflow", "DuckDB", "scipy"),
                    bench.summary)
    for f in files:
        print(f"plot: {f}")
    env = " ".join(f"{k}={shlex.quote(os.environ[k])}" for k in ("PYTHONPATH",)
                   if k in os.environ)
    print(f"\ncommand ({time.perf_counter() - t0:.0f} s, cwd {os.getcwd()}):\n  "
          f"{env + ' ' if env else ''}{shlex.join([sys.executable] + sys.argv)}")
    if bench.mismatches:
        print("\nANSWERS DISAGREE:\n  " + "\n  ".join(bench.mismatches))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
