"""Where a big computation's memory goes: peak and resident memory, and what holds it.

    PYTHONPATH=. python bench/bench_memory.py                      # TC s10, components s17
    PYTHONPATH=. python bench/bench_memory.py --cases cc --scale 15 --holders 12

Each case runs in a fresh process with the kernels loaded first (their code is in the
baseline): Datalog transitive closure over R-MAT s``--tc-scale`` (edge factor 8, as
bench_peers' TC row) and connected components over R-MAT s``--scale`` (factor
``--factor``).  Printed per case: the time, the peak resident memory above the baseline
(``VmHWM``), the resident memory after the run (``VmRSS``; per derived fact for TC), and,
with ``--holders N``, the N largest owners of the numpy arrays reachable from the dataflow
(the path of attributes that holds them, list indices folded).  Set
``MALLOC_MMAP_THRESHOLD_`` in the environment to see glibc's mmap threshold's effect.
Not collected by pytest; no network.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def status_mib(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def holders(root, top: int) -> list:
    """``[(MiB, path)]``: the arrays reachable from ``root`` through diffflow objects'
    attributes and containers, summed by the path that holds them (list indices folded)."""
    seen, owners, arrays = set(), collections.Counter(), set()
    stack = [(root, "flow")]
    while stack:
        obj, path = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            base = obj
            while isinstance(base.base, np.ndarray):
                base = base.base
            if id(base) not in arrays:
                arrays.add(id(base))
                owners[re.sub(r"\[\d+\]", "[]", path)] += base.nbytes
        elif isinstance(obj, dict):
            stack.extend((v, f"{path}[{k!r}]"[:160]) for k, v in obj.items())
        elif isinstance(obj, (list, tuple, set, collections.deque)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(obj))
        elif type(obj).__module__.startswith("diffflow"):
            names = list(getattr(obj, "__dict__", {}))
            names += [s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())]
            stack.extend((getattr(obj, n), f"{path}.{n}") for n in names if hasattr(obj, n))
    return [(b / 2**20, p) for p, b in owners.most_common(top)]


def worker(spec: dict) -> None:
    from bench_datalog import SOURCES
    from bench_graphs import rmat_edges
    from scaling_workers import graph_flow

    import diffflow as dd
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()
    if spec["case"] == "tc":
        edges = np.unique(rmat_edges(spec["scale"], 8 << spec["scale"]), axis=0)
    else:
        edges = rmat_edges(spec["scale"], spec["factor"] << spec["scale"])
    base = status_mib("VmRSS")
    started = time.perf_counter()
    if spec["case"] == "tc":
        program = dd.Program(SOURCES["tc"], outputs=["path"])
        program.insert("edge", edges)
        program.commit()
        facts, flow = int(program.size("path")), program.flow
    else:
        flow, inp, readers = graph_flow(["cc"], [0])
        inp.insert(edges)
        flow.advance()
        facts = None
    seconds = time.perf_counter() - started
    out = {"seconds": seconds, "facts": facts, "edges": len(edges),
           "peak_mib": status_mib("VmHWM") - base, "rest_mib": status_mib("VmRSS") - base}
    if spec["holders"]:
        out["holders"] = holders(flow, spec["holders"])
    print(json.dumps(out))


def main() -> None:
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):
        return worker(json.loads(sys.argv[1]))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", default="tc,cc", help="tc and/or cc")
    p.add_argument("--tc-scale", type=int, default=10)
    p.add_argument("--scale", type=int, default=17, help="components: R-MAT scale")
    p.add_argument("--factor", type=int, default=16, help="components: edge factor")
    p.add_argument("--holders", type=int, default=0, help="list the N largest array holders")
    args = p.parse_args()
    env = dict(os.environ, NUMBA_NUM_THREADS=os.environ.get("NUMBA_NUM_THREADS", "1"))
    for case in args.cases.split(","):
        scale = args.tc_scale if case == "tc" else args.scale
        spec = {"case": case, "scale": scale, "factor": args.factor, "holders": args.holders}
        run = subprocess.run([sys.executable, os.path.abspath(__file__), json.dumps(spec)],
                             capture_output=True, text=True, env=env, check=True)
        r = json.loads(run.stdout.strip().splitlines()[-1])
        if case == "tc":
            per = 2**20 / r["facts"]
            print(f"TC R-MAT s{scale} x8 ({r['facts']:,} facts): {r['seconds']:.2f} s, peak "
                  f"{r['peak_mib'] * per:.0f} B/fact ({r['peak_mib']:.0f} MiB), resident after "
                  f"{r['rest_mib'] * per:.0f} B/fact")
        else:
            print(f"components R-MAT s{scale} x{args.factor} ({r['edges']:,} edges): "
                  f"{r['seconds']:.2f} s, peak {r['peak_mib']:.0f} MiB, resident after "
                  f"{r['rest_mib']:.0f} MiB")
        for mib, path in r.get("holders", []):
            print(f"  {mib:8.1f} MiB  {path}")


if __name__ == "__main__":
    main()
