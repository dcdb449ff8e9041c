"""Records against the same program on flat columns, from scratch and per update.

    python bench/bench_records.py                  # 200k edges
    python bench/bench_records.py --edges 1000000

Both programs compute two-hop paths of a random graph and the paths' endpoints; the record
version keeps each hop as a record ``[a, b]`` and each path as ``[first, second]`` (records
built in heads, taken apart by patterns in bodies), the flat version as plain columns.  An
update removes one random edge and commits, then puts it back and commits; the figure is
the median over ``--updates`` edges.  Also the raw column kernels: building (``pack``) and
reading (``unpack``) record ids per million rows.  Soufflé is not installed here, so no
Soufflé column.
"""
from __future__ import annotations

import argparse
import random
import time

import numpy as np
from updates import scratch_and_updates

from diffflow.common import records
from diffflow.common.schema import SymbolTable

RECORDS = """.type Hop = [a: number, b: number]
.type Path = [first: Hop, second: Hop]
.decl edge(a: number, b: number)
.decl hop(h: Hop)
hop([a, b]) :- edge(a, b).
.decl path(p: Path)
path([h, [b, c]]) :- hop(h), h = [_, b], edge(b, c).
.decl ends(a: number, c: number)
ends(a, c) :- path([[a, _], [_, c]]).
"""
FLAT = """.decl edge(a: number, b: number)
.decl hop(a: number, b: number)
hop(a, b) :- edge(a, b).
.decl path(a: number, b: number, b2: number, c: number)
path(a, b, b, c) :- hop(a, b), edge(b, c).
.decl ends(a: number, c: number)
ends(a, c) :- path(a, _, _, c).
"""


def kernels(rows: int) -> tuple:
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 1 << 30, rows), rng.integers(0, 1 << 30, rows)
    table = SymbolTable()
    start = time.perf_counter()
    ids = records.pack(table, [a, b])
    first = time.perf_counter() - start
    start = time.perf_counter()
    records.pack(table, [a, b])
    again = time.perf_counter() - start
    start = time.perf_counter()
    records.unpack(table, ids, 2)
    read = time.perf_counter() - start
    return first, again, read


def main():
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=200_000)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    facts = sorted({(rng.randrange(args.nodes), rng.randrange(args.nodes))
                    for _ in range(args.edges)})
    print(f"{len(facts):,} edges over {args.nodes:,} nodes")
    print(f"{'program':<10}{'from scratch':>14}{'per update':>12}{'ends':>12}")
    for name, source in (("records", RECORDS), ("flat", FLAT)):
        size, scratch, update = scratch_and_updates(source, "edge", facts, "ends",
                                                    args.updates, args.seed)
        print(f"{name:<10}{scratch:>13.2f}s{update * 1000:>10.1f}ms{size:>12,}")
    first, again, read = kernels(1_000_000)
    print(f"kernels per 1M rows: pack new {first:.2f} s, pack known {again:.2f} s, "
          f"unpack {read:.2f} s")


if __name__ == "__main__":
    main()
