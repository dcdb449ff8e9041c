"""Engine state saved and read back: the safe format against pickle, on a 1M-row dataflow.

Usage::

    python bench/bench_state_format.py                 # 1M rows, 2 partitions
    python bench/bench_state_format.py --rows 4000000 --partitions 1

Loads ``--rows`` random ``(k, v)`` rows into ``facts``, joins them with ``--keys`` ``(k, w)``
rows and keeps ``distinct()`` of the join and ``aggregate(by=k, n=count())`` of the facts,
then times, per partition's engine state (what a checkpoint holds): ``state_format.dumps``
and ``loads`` against ``pickle.dumps`` / ``loads`` (protocol 5), best of ``--repeat``, and
the whole restore of a checkpoint into fresh engines (build them, read the files back,
``PartitionEngine.restore``).
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import best  # noqa: E402 (bench/timing.py)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        help="the checkout whose diffflow to import")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, args.root)
    import diffflow as dd
    from diffflow.arrangements.columnar import load_kernels
    from diffflow.runtime.durable import state_format
    from diffflow.runtime.engine import PartitionEngine

    load_kernels()
    rng = np.random.default_rng(1)
    flow = dd.Dataflow(partitions=args.partitions)
    facts = flow.input("facts", ["k", "v"])
    keys = flow.input("keys", ["k", "w"])
    facts.join(keys, on="k").select("v", "w").distinct().output()
    facts.aggregate(by=["k"], n=dd.count()).output()
    facts.insert(np.stack([rng.integers(0, args.keys, args.rows),
                           rng.integers(0, 1 << 40, args.rows)], axis=1))
    keys.insert(np.stack([np.arange(args.keys), np.arange(args.keys) % 7], axis=1))
    started = time.perf_counter()
    flow.advance()
    print(f"{args.rows:,} rows loaded in {time.perf_counter() - started:.2f} s "
          f"({args.partitions} partitions)")
    engines = flow._runtime.engines
    states = [engines[p].state() for p in range(args.partitions)]
    blobs = [state_format.dumps(s) for s in states]
    pickles = [pickle.dumps(s, protocol=5) for s in states]
    arrays = sum(len(b) for b in blobs)
    print(f"saved: {arrays / 2**20:.1f} MiB safe format, {sum(map(len, pickles)) / 2**20:.1f} "
          f"MiB pickle")
    rows = [("state_format.dumps", lambda: [state_format.dumps(s) for s in states]),
            ("state_format.loads", lambda: [state_format.loads(b) for b in blobs]),
            ("pickle.dumps", lambda: [pickle.dumps(s, protocol=5) for s in states]),
            ("pickle.loads", lambda: [pickle.loads(b) for b in pickles])]
    for name, fn in rows:
        print(f"{name:20s} {best(fn, args.repeat) * 1000:8.1f} ms")

    def restore():
        for p in range(args.partitions):
            fresh = PartitionEngine(flow.graph, p, args.partitions, flow.symbols)
            fresh.restore(state_format.loads(blobs[p]))

    print(f"{'restore (fresh engines)':20s} {best(restore, args.repeat) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
