"""What durability costs: per-epoch overhead of the write-ahead log and checkpoints, and how
long a resume takes (issue 42's targets: <= 10 % per epoch at 10,000-row epochs, <= 1 ms
at single-row epochs, resume of a 1M-row dataflow <= 5 s).

    NUMBA_NUM_THREADS=1 PYTHONPATH=. python bench/bench_durable.py
    NUMBA_NUM_THREADS=1 PYTHONPATH=. python bench/bench_durable.py --cases resume --rows 1000000

``epochs``: the same dataflow (a count per key and the distinct keys) fed the same epochs,
plain and durable (``checkpoint_every`` 100, the default), both in one process, epoch by
epoch in turn (so both see the machine at the same moment: this 2-core VM's speed drifts
by a third between runs); printed per
epoch size: the median epoch time of each and the overhead.  ``resume``: a durable dataflow
holding ``--rows`` rows checkpointed, then a new one resumes it (restore and replay of
``--replay`` logged epochs); printed: the checkpoint's size and write time, and the resume
time.  The checkpoint folder is a temporary folder on this machine's disk (``--dir`` to
choose).  Not collected by pytest; no network.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import diffflow as dd  # noqa: E402


def build(**kw):
    flow = dd.Dataflow(**kw)
    rows = flow.input("rows", ["k", "v"])
    counts = rows.aggregate(by=["k"], n=dd.count()).output()
    keys = rows.select(k="k").distinct().output()
    return flow, rows, (counts, keys)


def epoch_times(size: int, epochs: int, folder: str, seed: int) -> tuple:
    """Per-epoch seconds of a plain and a durable dataflow fed the same epochs in turn, in
    one process (epoch by epoch, so both see the same machine at the same moment)."""
    rng = np.random.default_rng(seed)
    runs = [build(), build(checkpoint_dir=folder, durable=True)]
    held, times = [], ([], [])
    for epoch in range(epochs):
        add = rng.integers(0, 1 << 20, size=(size, 2))
        gone = held.pop(0) if len(held) > 3 else None
        turns = list(zip(runs, times))
        for (flow, rows, outputs), into in turns[::1 if epoch % 2 else -1]:  # (who goes
            # first alternates: the one that goes second may pay for the first's garbage)
            started = time.perf_counter()
            rows.insert(add)
            if gone is not None:
                rows.remove(gone)
            flow.advance()
            for out in outputs:
                out.changes()
            into.append(time.perf_counter() - started)
        held.append(add)
    for flow, _rows, _outputs in runs:
        flow.close()
    return times[0][5:], times[1][5:]  # (the first epochs load kernels)


def case_epochs(args) -> None:
    print(f"{'rows/epoch':>10}  {'plain ms':>9}  {'durable ms':>10}  {'overhead':>12}")
    for size, epochs in ((1, args.small_epochs), (10_000, args.epochs)):
        plain, durable = [], []
        for repeat in range(args.repeats):
            folder = tempfile.mkdtemp(dir=args.dir)
            p, d = epoch_times(size, epochs, folder, seed=repeat)
            plain += p
            durable += d
            shutil.rmtree(folder, ignore_errors=True)
        p, d = statistics.median(plain) * 1e3, statistics.median(durable) * 1e3
        mean_p, mean_d = statistics.mean(plain) * 1e3, statistics.mean(durable) * 1e3
        print(f"{size:>10,}  {p:>9.3f}  {d:>10.3f}  {d - p:>+8.3f} ms ({(d - p) / p:+.0%} median; "
              f"mean {mean_p:.3f} -> {mean_d:.3f} ms, checkpoints included)")


def case_resume(args) -> None:
    folder = tempfile.mkdtemp(dir=args.dir)
    rng = np.random.default_rng(1)
    flow, rows, outputs = build(checkpoint_dir=folder, durable=True, checkpoint_every=1)
    step = max(args.rows // 10, 1)
    started = time.perf_counter()
    for at in range(0, args.rows, step):
        rows.insert(rng.integers(0, 1 << 40, size=(min(step, args.rows - at), 2)))
        flow.advance()
    built = time.perf_counter() - started
    checkpoint = sorted(p for p in os.listdir(folder) if p.startswith("checkpoint-"))[-1]
    size = sum(os.path.getsize(os.path.join(folder, checkpoint, f))
               for f in os.listdir(os.path.join(folder, checkpoint)))
    started = time.perf_counter()
    flow._durability.checkpoint(flow._runtime, flow.epoch)
    written = time.perf_counter() - started
    flow._durability.every = 10 ** 9  # (no checkpoint now: these epochs stay in the log)
    for _ in range(args.replay):  # logged after the checkpoint: replayed by the resume
        rows.insert(rng.integers(0, 1 << 40, size=(1000, 2)))
        flow.advance()
    expected = [len(out.snapshot()) for out in outputs]
    del flow, rows, outputs
    started = time.perf_counter()
    again, _rows, outputs = build(checkpoint_dir=folder, resume=True)
    epoch = again.resume()
    resumed = time.perf_counter() - started
    assert [len(out.snapshot()) for out in outputs] == expected
    print(f"{args.rows:,} rows in {built:.1f} s; checkpoint {size / 2**20:.1f} MiB written in "
          f"{written:.2f} s; resume (restore + {args.replay} logged epochs, at epoch {epoch}) "
          f"{resumed:.2f} s")
    again.close()
    shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="epochs,resume")
    parser.add_argument("--epochs", type=int, default=60, help="10,000-row epochs per run")
    parser.add_argument("--small-epochs", type=int, default=1000, help="1-row epochs per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--replay", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where the checkpoint folders go")
    args = parser.parse_args()
    for case in args.cases.split(","):
        {"epochs": case_epochs, "resume": case_resume}[case](args)


if __name__ == "__main__":
    main()
