"""Throughput benchmark of the columnar numba kernels (one core).

Usage::

    NUMBA_NUM_THREADS=1 python bench/bench_kernels.py --rows 1000000 10000000

For every N it prints rows/s (best of ``--repeat`` runs after one warm-up
call) for

* consolidate of N random (key, time, diff) rows -- key uniform in [0, N),
  time uniform in [0, 10), diff +-1 -- and a numpy ``np.lexsort`` baseline;
* merge of two consolidated runs of N/2 rows each (and a numpy baseline:
  concatenate + lexsort consolidate);
* sorted merge-join producing N output pairs (N/2 unique left keys, each
  matching 2 right rows);
* hash partitioning into 8 parts (partition_of + group_by_partition), and the
  numpy hash + stable argsort baseline;
* key_ranges of 1000 random keys into N sorted rows (and np.searchsorted);
* gather_prefix of 1000 and N/1000 sorted keys (every update of each) from those N rows,
  and a numpy baseline (searchsorted x2 + one fancy-index copy).

Not collected by pytest (no ``test_`` prefix; everything runs under
``if __name__ == "__main__"``).
"""

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from diffflow.arrangements import columnar as C  # noqa: E402


def best_of(fn, repeat):
    fn()  # warm-up (compilation, page faults)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def numpy_consolidate(rows, times, diffs):
    """Reference numpy consolidate for one key and one time column."""
    k, t = rows[:, 0], times[:, 0]
    perm = np.lexsort((t, k))
    k, t, d = k[perm], t[perm], diffs[perm]
    n = len(k)
    if n == 0:
        return rows[:0], times[:0], diffs[:0]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = (k[1:] != k[:-1]) | (t[1:] != t[:-1])
    starts = np.flatnonzero(new)
    s = np.add.reduceat(d, starts)
    keep = s != 0
    return k[starts][keep, None], t[starts][keep, None], s[keep]


def report(name, n_items, seconds, unit="rows"):
    print(f"  {name:<48s} {seconds * 1e3:9.1f} ms  {n_items / seconds / 1e6:8.2f} M{unit}/s", flush=True)


def run(n, repeat, rng):
    print(f"N = {n:,}")
    rows = rng.integers(0, n, (n, 1))
    times = rng.integers(0, 10, (n, 1))
    diffs = rng.choice(np.array([-1, 1]), n)

    report("consolidate (numba)", n, best_of(lambda: C.consolidate(rows, times, diffs), repeat))
    report("consolidate (numpy lexsort baseline)", n,
           best_of(lambda: numpy_consolidate(rows, times, diffs), repeat))
    report("sort_permutation (rows + times)", n,
           best_of(lambda: C.sort_permutation(rows, times), repeat))
    cons = C.consolidate(rows, times, diffs)
    report("consolidate, already consolidated input", n, best_of(lambda: C.consolidate(*cons), repeat))

    h = n // 2
    a = C.consolidate(rows[:h], times[:h], diffs[:h])
    b = C.consolidate(rows[h:], times[h:], diffs[h:])
    na, nb = len(a[2]), len(b[2])
    report(f"merge_consolidated ({na + nb:,} rows in)", na + nb,
           best_of(lambda: C.merge_consolidated(*a, *b), repeat))
    report("merge (numpy concat + lexsort baseline)", na + nb,
           best_of(lambda: numpy_consolidate(*(np.concatenate(x) for x in zip(a, b))), repeat))

    left = np.arange(h, dtype=np.int64)[:, None]
    right = np.repeat(np.arange(h, dtype=np.int64), 2)[:, None]
    nout = len(C.match_sorted(left, right)[0])
    report(f"match_sorted (N/2 x N -> {nout:,} pairs)", nout,
           best_of(lambda: C.match_sorted(left, right), repeat), unit="out")

    def hash_partition():
        part = C.partition_of(rows, 8)
        return C.group_by_partition(part, 8)

    report("hash partition into 8 (partition_of + group)", n, best_of(hash_partition, repeat))
    report("  of which hash_rows", n, best_of(lambda: C.hash_rows(rows), repeat))

    def numpy_partition():
        part = (C._hash_rows_numpy(rows) % np.uint64(8)).astype(np.int64)
        perm = np.argsort(part, kind="stable")
        return perm, np.concatenate([[0], np.cumsum(np.bincount(part, minlength=8))])

    report("hash partition (numpy baseline)", n, best_of(numpy_partition, repeat))

    skeys = cons[0]
    q = rng.integers(0, n, (1000, 1))
    t_kr = best_of(lambda: C.key_ranges(skeys, q), repeat)
    print(f"  {'key_ranges (1000 queries, %s rows)' % f'{len(skeys):,}':<48s} {t_kr * 1e6:9.1f} us  "
          f"{1000 / t_kr / 1e6:8.2f} Mqueries/s")
    sk, qq = skeys[:, 0].copy(), q[:, 0].copy()
    t_np = best_of(lambda: (np.searchsorted(sk, qq), np.searchsorted(sk, qq, side="right")), repeat)
    print(f"  {'key_ranges (np.searchsorted x2 baseline)':<48s} {t_np * 1e6:9.1f} us  "
          f"{1000 / t_np / 1e6:8.2f} Mqueries/s")

    # a step's lookups: sorted keys, every update of each (sorted queries are searched in
    # lockstep groups), against searchsorted x2 and one fancy-index copy
    rows_c, times_c, diffs_c = cons
    for m in (1000, max(n // 1000, 1000)):
        qs = np.sort(rng.integers(0, n, m))[:, None]
        t_g = best_of(lambda: C.gather_prefix(rows_c, times_c, diffs_c, 1, qs), repeat)
        print(f"  {'gather_prefix (%s sorted keys)' % f'{m:,}':<48s} {t_g * 1e6:9.1f} us  "
              f"{m / t_g / 1e6:8.2f} Mqueries/s")
        qk = qs[:, 0].copy()

        def numpy_gather():
            lo, hi = np.searchsorted(sk, qk), np.searchsorted(sk, qk, side="right")
            at = np.repeat(lo, hi - lo) + np.arange(int((hi - lo).sum())) - \
                np.repeat(np.cumsum(hi - lo) - (hi - lo), hi - lo)
            return np.repeat(np.arange(m), hi - lo), rows_c[at], times_c[at], diffs_c[at]

        t_ng = best_of(numpy_gather, repeat)
        print(f"  {'gather_prefix (numpy searchsorted baseline)':<48s} {t_ng * 1e6:9.1f} us  "
              f"{m / t_ng / 1e6:8.2f} Mqueries/s")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    C.load_kernels()  # the kernels serve every size (not the numpy tactics of a fresh process)
    print(f"NUMBA_NUM_THREADS={os.environ['NUMBA_NUM_THREADS']}  numpy {np.__version__}")
    generator = np.random.default_rng(args.seed)
    for n_rows in args.rows:
        run(n_rows, args.repeat, generator)
