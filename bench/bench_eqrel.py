"""eqrel against the same relation written as its three rules, from scratch and per update.

    python bench/bench_eqrel.py                      # 100 classes of 50 members
    python bench/bench_eqrel.py --size 100 --classes 200

Each class is a random path of links (so it is connected and a cut splits it).  Both
programs compute the same relation (every ordered pair of one class); ``eqrel`` computes it
as connected components (diffflow.datalog.lower.relation_value), the rules version with the
transitive rule ``same(a, c) :- same(a, b), same(b, c)``.  An update removes one random
link (splitting a class) and commits, then puts it back and commits; the figure is the
median of the two commits' mean over ``--updates`` links.  Soufflé is not installed here,
so no Soufflé column (its eqrel is a union-find without removal: an update means a re-run).
"""
from __future__ import annotations

import argparse
import random

from updates import scratch_and_updates

EQREL = """.decl link(a: number, b: number)
.decl same(a: number, b: number) eqrel
same(a, b) :- link(a, b).
"""
RULES = """.decl link(a: number, b: number)
.decl same(a: number, b: number)
same(a, b) :- link(a, b).
same(a, a) :- same(a, _).
same(a, b) :- same(b, a).
same(a, c) :- same(a, b), same(b, c).
"""


def links(size: int, classes: int, rng) -> list:
    out = []
    for c in range(classes):
        members = [c * size + i for i in range(size)]
        rng.shuffle(members)
        out += [(members[i], members[i + 1]) for i in range(size - 1)]
    return out


def main(argv=None):
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=50, help="members per class")
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--updates", type=int, default=7)
    args = parser.parse_args(argv)
    facts = links(args.size, args.classes, random.Random(0))
    print(f"{args.classes} classes of {args.size}: {len(facts)} links")
    print(f"{'program':8} {'pairs':>10} {'from scratch':>13} {'update (median)':>16}")
    for name, source in (("eqrel", EQREL), ("rules", RULES)):
        pairs, scratch, update = scratch_and_updates(source, "link", facts, "same",
                                                      args.updates, seed=1)
        print(f"{name:8} {pairs:>10,} {scratch:>11.2f} s {update * 1000:>13.0f} ms", flush=True)


if __name__ == "__main__":
    main()
