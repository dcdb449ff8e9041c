"""Reading Soufflé fact files: diffflow's checked reader next to plain parsers and Soufflé.

    NUMBA_NUM_THREADS=1 python bench/bench_facts.py --lines 5000000
    NUMBA_NUM_THREADS=1 python bench/bench_facts.py --lines 5000000 --souffle /path/to/souffle

For a TAB-separated file of ``--lines`` facts (two ``number`` columns, then a
``symbol`` and a ``number`` column), it times ``read_facts`` (every line's field
count checked, strict numbers, symbols kept as text) and ``Program.load_facts``
(read, check, encode, insert), next to pandas' and pyarrow's CSV readers
parsing the same file without those checks, and Soufflé loading the facts
and counting them (``.printsize``) when ``--souffle`` names its binary.
Best of ``--repeat`` runs.  Not collected by pytest.
"""
from __future__ import annotations

import argparse
import os
import sys
import subprocess
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import best  # noqa: E402 (bench/timing.py)

import diffflow as dd
from diffflow.datalog.values.facts import read_facts


def write_files(folder, lines, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 2**31 - 1, lines), rng.integers(-(2**31), 2**31 - 1, lines)
    with open(os.path.join(folder, "nums.facts"), "w") as f:
        f.write("\n".join(f"{x}\t{y}" for x, y in zip(a.tolist(), b.tolist())) + "\n")
    names = [f"user{int(v):07d}" for v in rng.integers(0, lines // 4 + 1, lines)]
    with open(os.path.join(folder, "syms.facts"), "w") as f:
        f.write("\n".join(f"{n}\t{y}" for n, y in zip(names, a.tolist())) + "\n")


PROGRAM = """
.decl nums(x: number, y: number)
.decl syms(s: symbol, y: number)
.input nums
.input syms
.printsize nums
.printsize syms
"""


def main():
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--souffle", help="path of a souffle binary to time alongside")
    args = parser.parse_args()
    import pandas as pd
    import pyarrow.csv as pcsv

    with tempfile.TemporaryDirectory(prefix="bench_facts_") as folder:
        write_files(folder, args.lines)
        program = dd.Program(PROGRAM)
        rel = program.relations
        sizes = {n: os.path.getsize(os.path.join(folder, f"{n}.facts")) for n in ("nums", "syms")}
        print(f"{args.lines:,} lines per file: nums.facts {sizes['nums'] / 1e6:.0f} MB, "
              f"syms.facts {sizes['syms'] / 1e6:.0f} MB; best of {args.repeat}")
        print("| reader | nums (number, number) s | syms (symbol, number) s |")
        print("|---|---|---|")
        for label, reader in [
            ("diffflow read_facts (checked)",
             lambda n: read_facts(os.path.join(folder, f"{n}.facts"), rel[n])),
            ("pandas read_csv (C engine, unchecked)",
             lambda n: pd.read_csv(os.path.join(folder, f"{n}.facts"), sep="\t", header=None,
                                   quoting=3, na_filter=False)),
            ("pyarrow csv (unchecked)",
             lambda n: pcsv.read_csv(os.path.join(folder, f"{n}.facts"),
                                     read_options=pcsv.ReadOptions(autogenerate_column_names=True),
                                     parse_options=pcsv.ParseOptions(delimiter="\t",
                                                                     quote_char=False))),
        ]:
            times = [best(lambda n=n: reader(n), args.repeat) for n in ("nums", "syms")]
            print(f"| {label} | {times[0]:.2f} | {times[1]:.2f} |")

        def load():
            p = dd.Program(PROGRAM)
            p.load_facts(folder)
        print(f"| diffflow Program.load_facts (both files: read, check, encode, insert) | "
              f"{best(load, args.repeat):.2f} (both) | |")
        if args.souffle:
            prog = os.path.join(folder, "p.dl")
            with open(prog, "w") as f:
                f.write(PROGRAM)

            def souffle():
                subprocess.run([args.souffle, prog, "-F", folder, "-D", folder], check=True,
                               capture_output=True)
            print(f"| Soufflé {args.souffle} (interpreter: load both files, printsize) | "
                  f"{best(souffle, args.repeat):.2f} (both) | |")


if __name__ == "__main__":
    main()
