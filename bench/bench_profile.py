"""The rule profiler's overhead: the same program run with and without ``--profile``.

    cd <repository checkout>
    NUMBA_NUM_THREADS=1 PYTHONPATH=. python bench/bench_profile.py                   # both programs, 5 repeats
    PYTHONPATH=. python bench/bench_profile.py --quick           # tiny sizes, smoke run
    PYTHONPATH=. python bench/bench_profile.py --programs andersen --repeats 7 --steps 50

Each case runs ``queries/<program>/prog.dl`` (the query library's transitive closure and
Andersen points-to) on generated facts, as ``diffflow run --updates`` runs it: load the
facts, ``commit()`` (the initial run), then ``--steps`` update steps of a few inserted and
removed facts, each ``commit()`` on its own.  Unprofiled, the program runs as ``diffflow
run`` does; profiled, it runs as ``diffflow run --profile`` does: traced into a
``ProfileRecorder`` (compiled rounds stay on: the same execution path), the relations'
sizes counted after the last step and the profile built and written as
JSON at the end (all timed).  Both
run in this process, alternating, after an untimed warm-up of each (numba's kernels loaded,
so update steps' small deltas take compiled rounds in both); the median (and the minimum)
of ``--repeats`` is shown (CPU seconds of this process: the machine may be busy with others) for the initial run, the update steps together, the profile's writing (the sizes
counted, the profile built and written: none unprofiled) and the whole.

Facts: ``transitive_closure``: a random tree of ``--nodes`` nodes (each node's parent
below it) and a tenth as many forward edges (``edge``, a DAG); ``andersen``: ``--nodes`` variables, as many ``addressOf`` and ``assign`` facts,
a hundredth as many ``load`` and ``store`` facts.  Steps insert 2 and remove 2 of the facts
(``edge``, ``assign``).  Seeded: every run sees the same facts.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

# CPU time of this process: the machine may be shared, and other processes' load would
# otherwise be measured too (the runs are single-threaded: NUMBA_NUM_THREADS=1)
clock = time.process_time
HERE = os.path.dirname(os.path.abspath(__file__))
QUERIES = os.path.join(os.path.dirname(HERE), "queries")


def facts_for(program: str, nodes: int, steps: int, seed: int = 7):
    """``({relation: rows}, [[(sign, relation, rows)], ...])``: the initial facts and steps."""
    rng = np.random.default_rng(seed)
    if program == "transitive_closure":
        # a random tree (node i's parent below i) and a tenth as many forward edges: a DAG
        # whose closure grows about as n log n
        child = np.arange(1, nodes)
        edges = {(int(rng.integers(i)), int(i)) for i in child}
        a, b = rng.integers(0, nodes, (2, nodes // 10))
        edges |= {(int(x), int(y)) for x, y in zip(np.minimum(a, b), np.maximum(a, b)) if x < y}
        initial = {"edge": sorted(edges)}
        changing = "edge"
        fresh = lambda: tuple(sorted(int(v) for v in rng.integers(0, nodes, 2)))  # noqa: E731
    elif program == "andersen":
        var = lambda k: [f"v{int(i)}" for i in rng.integers(0, nodes, k)]  # noqa: E731
        pairs = lambda k: sorted(set(zip(var(k), var(k))))  # noqa: E731
        initial = {"addressOf": pairs(nodes), "assign": pairs(nodes),
                   "load": pairs(nodes // 100), "store": pairs(nodes // 100)}
        changing = "assign"
        fresh = lambda: tuple(var(2))  # noqa: E731
    else:
        raise SystemExit(f"unknown program {program!r}; use transitive_closure or andersen")
    present = list(initial[changing])
    updates = []
    for _ in range(steps):
        gone = [present.pop(int(rng.integers(len(present)))) for _ in range(2)]
        added = [fresh() for _ in range(2)]
        present.extend(added)
        updates.append([(-1, changing, gone), (+1, changing, added)])
    return initial, updates


def run_once(program: str, initial, updates, profile_path: str | None) -> tuple:
    """``(initial run s, update steps s, profile written s, compiled runs)`` of one run,
    profiled when ``profile_path``; compiled runs: runs of loops' rounds in the kernel."""
    import diffflow as dd
    from diffflow.datalog.cli.profile_file import write_profile
    from diffflow.datalog.cli.profile_record import ProfileRecorder

    path = os.path.join(QUERIES, program, "prog.dl")
    source = open(path).read()
    recorder = ProfileRecorder(path) if profile_path else None
    options = {"trace": recorder.sink()} if recorder else {}
    p = dd.Program(source, filename=path, outputs="directives", **options)
    for name, rows in initial.items():
        p.insert(name, rows)
    if recorder:
        recorder.attach(p)
    t0 = clock()
    p.commit()
    if recorder:
        recorder.step_done(0, (clock() - t0) * 1e9)
    t1 = clock()
    for number, step in enumerate(updates, 1):
        started = clock()
        for sign, name, rows in step:
            (p.insert if sign > 0 else p.remove)(name, rows)
        p.commit()
        if recorder:
            recorder.step_done(number, (clock() - started) * 1e9)
    t2 = clock()
    if recorder:
        recorder.note_sizes(p)
        write_profile(profile_path, recorder.profile())
    t3 = clock()
    rounds = getattr(p.flow._runtime, "rounds", None)
    p.close()
    return t1 - t0, t2 - t1, t3 - t2, 0 if rounds is None else rounds.runs


def _share(a: float, b: float) -> str:
    return f"{100 * (b - a) / a:>8.1f}%" if a > 1e-3 else f"{'-':>9}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default="transitive_closure,andersen")
    parser.add_argument("--nodes", type=int, default=None,
                        help="nodes / variables (default 30,000 for the closure, 1,000 for "
                             "points-to)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.steps = 2, 3
    from diffflow.arrangements import columnar

    columnar.load_kernels()  # (compiled rounds run once the kernels are loaded)
    folder = tempfile.mkdtemp(prefix="bench_profile_")
    print(f"{'program':<20} {'facts':>8} {'part':<8} {'plain s':>9} {'profiled s':>11} "
          f"{'overhead':>9}   {'(min: plain':>12} {'profiled':>9} {'overhead)':>10}")
    for program in args.programs.split(","):
        nodes = args.nodes or {"transitive_closure": 30000, "andersen": 1000}.get(program, 1000)
        if args.quick:
            nodes = 200
        initial, updates = facts_for(program, nodes, args.steps)
        profile = os.path.join(folder, f"{program}.json")
        run_once(program, initial, updates, None)       # warm-up: kernels loaded, caches
        run_once(program, initial, updates, profile)
        plain, profiled = [], []
        for _ in range(args.repeats):
            plain.append(run_once(program, initial, updates, None))
            profiled.append(run_once(program, initial, updates, profile))
        facts = sum(len(rows) for rows in initial.values())
        for j, part in enumerate(("initial", f"{args.steps} steps", "written", "total")):
            pick = (lambda r: r[0] + r[1] + r[2]) if j == 3 else (lambda r, j=j: r[j])
            a = statistics.median(pick(r) for r in plain)
            b = statistics.median(pick(r) for r in profiled)
            lo_a, lo_b = min(pick(r) for r in plain), min(pick(r) for r in profiled)
            print(f"{program:<20} {facts:>8,} {part:<8} {a:>9.3f} {b:>11.3f} {_share(a, b)}   "
                  f"{lo_a:>12.3f} {lo_b:>9.3f} {_share(lo_a, lo_b)}")
        print(f"{'':<20} compiled loop runs per run: {plain[0][3]} plain, {profiled[0][3]} "
              f"profiled; profile {profile} ({os.path.getsize(profile):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
