"""Columnar primitives on int64 row arrays (sort, consolidate, merge, hash, join).

Data contract (shared with the rest of ``diffflow``):

* A set of rows is a C-contiguous ``int64`` array of shape ``(n, w)``
  (row-major; ``w`` may be 0).  All column types are encoded to ``int64``
  elsewhere.
* Times are a C-contiguous ``int64`` array ``(n, d)`` with ``d >= 1``; diffs
  are ``int64`` ``(n,)``.
* "Sorted" means lexicographic by the row columns, then by the time columns,
  all compared as signed ``int64``.  "Consolidated" means sorted with
  strictly increasing ``(row, time)`` and no zero diff.

The wrappers here validate shapes and dtypes (raising ``ValueError`` /
``TypeError``), convert every array to C-contiguous ``int64`` (any integer or
bool dtype that casts *safely* to ``int64`` is accepted; ``uint64`` and
floats are rejected) and then call the private numba kernels in
``_kernels.py`` -- or, before the kernels are loaded (:func:`load_kernels`), the
numpy tactics of :mod:`.small`.  numba and the kernels are imported lazily on
first use, so importing this module is cheap and compiles nothing.  Arrays returned by
functions that drop rows (``consolidate``, ``merge_consolidated``) are
freshly allocated, own their data, are sized exactly and never alias the
inputs (callers may keep them, e.g. in batches, while the inputs change).

Sorting strategy (``sort_permutation`` / ``consolidate``):

1. one pass computes every column's min and max; constant columns are
   dropped and each other column, offset by its min (wrapping uint64
   arithmetic, so full-range int64 columns are fine), needs
   ``bit_length(max - min)`` bits;
2. if the ``B`` key bits plus a ``low`` payload fit in one uint64 word, each
   row becomes ``key << low | payload`` (first column most significant).
   The payload is the row index (``sort_permutation``; words are then
   unique, so any sort is stable and the permutation is the low bits) or,
   in ``consolidate`` when the diffs' range is narrow enough, the diff
   itself -- then consolidation needs no random access at all: rows and
   times are decoded from the sorted words and diffs summed from the low
   bits.  The words are sorted with numpy's ``np.sort`` (numpy 2 uses an
   AVX-512/AVX2 quicksort for uint64), except when the key has at most
   ``_DIGIT_BITS * _MAX_RADIX_PASSES`` (= 11) bits: then the numba LSD radix
   sort (``_kernels.radix_sort_u64``: all digit histograms first, trivial
   digit passes skipped, software write-combining scatter) is faster;
3. otherwise the key bits are split into chunks of ``64 - index_bits`` and
   sorted chunk by chunk, least significant first, each chunk as a
   one-word sort of ``chunk << index_bits | position`` (stable LSD over
   chunks).

``consolidate`` first checks in one O(n) pass whether the input is already
sorted; if so it skips sorting (strictly sorted input only loses its zero
diffs).

Measured on this machine (1 core of a 2-vCPU AVX-512 Xeon VM shared with
other work, so +-20% noise; numpy 2.4, numba 0.68).  Sorting 10M packed
uint64 words (key uniform, index in the low 24 bits):

==============  ========  =========  ========  =========  =========  ========
key bits         8         11         16        22         28         33
==============  ========  =========  ========  =========  =========  ========
numba LSD        84 ms     154 ms     194 ms    255 ms     290 ms     371 ms
``np.sort``     185 ms     182 ms     175 ms    169 ms     176 ms     184 ms
==============  ========  =========  ========  =========  =========  ========

(at 1M rows: radix 9-31 ms vs ``np.sort`` 13 ms).  The numba radix pass is
memory/TLB bound in this VM (a plain 2048-way scatter costs ~140 ms per pass
at 10M; write-combining brings it to ~60 ms).  For comparison, on the 10M
rows of the benchmark below (28 key bits): ``np.argsort(kind='stable')`` on
the packed key 2.4 s, ``np.argsort`` (default) 1.0 s, ``np.lexsort`` of the
two columns 4.0 s.

End to end, ``consolidate`` of 10M random rows (key uniform in [0, N), time
in [0, 10), diff +-1) takes ~0.36-0.5 s (20-28M rows/s; min/max 15 ms, pack
70-100 ms, sort 160-180 ms, decode + sum 100-200 ms) versus ~5 s
(~2M rows/s) for an ``np.lexsort``-based numpy consolidate.

See ``bench/bench_kernels.py`` for the full figures.
"""

from __future__ import annotations

import numpy as np

from diffflow.arrangements import layout, small
from diffflow.common import memory_budget

__all__ = [
    "sort_permutation",
    "consolidate",
    "is_consolidated",
    "merge_consolidated",
    "hash_rows",
    "partition_of",
    "group_by_partition",
    "key_ranges",
    "match_sorted",
    "group_starts",
    "searchsorted_rows",
]

# Largest radix digit, in bits (2**11 buckets of int64 counters fit in L1/L2).
_DIGIT_BITS = 11
# Keys of at most _DIGIT_BITS * _MAX_RADIX_PASSES bits are radix sorted;
# wider ones use numpy's (SIMD) np.sort, which measured faster -- see above.
_MAX_RADIX_PASSES = 1

_KERNELS = None


def _k():
    """Import (once) and return the numba kernel module."""
    global _KERNELS
    if _KERNELS is None:
        import importlib

        _KERNELS = importlib.import_module("diffflow.arrangements._kernels")
        small.kernels_loaded()
    return _KERNELS


def load_kernels() -> None:
    """Load the numba kernels now, so that they serve every size from here on.

    A fresh process otherwise starts on the numpy tactics (:mod:`.small`) and loads the
    kernels once that work has cost about what loading them costs (~0.25 s); a long-running
    service, or a benchmark measuring the kernels, can load them first.  (Each kernel is then
    read from numba's cache at its first call, a few ms each; the first call also starts
    numba's runtime and code loader, ~0.1-0.2 s, so one is made here.)
    """
    rows = np.zeros((2, 1), np.int64)
    _k().group_starts(rows, np.empty(3, np.int64))
    small.kernels_loaded()  # (again: a test may have reset the record since the import)


def load_cached_kernels():
    """:func:`load_kernels`, then every variant of the kernels numba's cache holds
    (:func:`diffflow.common.jit.load_cached`); a generator, yielding after each step, for a
    long-running process to run ahead of use (a partition worker, while idle).

    >>> next(load_cached_kernels())
    'load_kernels'
    """
    from diffflow.common.jit import load_cached

    load_kernels()
    yield "load_kernels"
    yield from load_cached(_k())


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------
_I64 = np.dtype(np.int64)


def _int64(x, name: str, ndim: int) -> np.ndarray:
    """Validate dtype / ndim of ``x`` and return it as C-contiguous int64."""
    a = np.asarray(x)
    if a.ndim != ndim:
        shape = "(n, w)" if ndim == 2 else "(n,)"
        raise ValueError(f"{name} must be a {ndim}-D array of shape {shape}, got shape {a.shape}")
    if a.dtype != _I64:
        if not np.can_cast(a.dtype, _I64, casting="safe"):
            raise TypeError(f"{name} must have an integer dtype castable to int64, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int64)


def _rows(x, name: str = "rows") -> np.ndarray:
    return _int64(x, name, 2)


def _times(t, n: int, name: str = "times") -> np.ndarray:
    a = _int64(t, name, 2)
    if a.shape[0] != n:
        raise ValueError(f"{name} has {a.shape[0]} rows, expected {n}")
    if a.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column, got shape {a.shape}")
    return a


def _diffs(x, n: int, name: str = "diffs") -> np.ndarray:
    a = _int64(x, name, 1)
    if a.shape[0] != n:
        raise ValueError(f"{name} has length {a.shape[0]}, expected {n}")
    return a


def _triple(rows, times, diffs, suffix: str = ""):
    r = _rows(rows, "rows" + suffix)
    n = r.shape[0]
    return r, _times(times, n, "times" + suffix), _diffs(diffs, n, "diffs" + suffix)


def _same_width(a: np.ndarray, b: np.ndarray, an: str, bn: str) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"{an} has {a.shape[1]} columns but {bn} has {b.shape[1]}")


def trim(buf: np.ndarray, m: int) -> np.ndarray:
    """``buf`` shrunk to its first ``m`` entries, in place.

    ``buf`` must be a fresh buffer that owns its data and has no views (the
    wrappers allocate it and only kernels, which keep no reference, have seen
    it).  ``resize`` reallocates in place: shrinking a large (mmap'd) block
    unmaps its tail without copying, where ``buf[:m].copy()`` would copy the
    rows and a view would pin the unused tail.
    """
    if m == buf.shape[0]:
        return buf
    if not buf.flags.owndata:  # not a fresh buffer after all: never resize shared memory
        return buf[:m].copy()
    buf.resize((m,) + buf.shape[1:], refcheck=False)  # refcheck counts the caller's names
    return buf


# ---------------------------------------------------------------------------
# sorting
# ---------------------------------------------------------------------------
def _sort_u64(words: np.ndarray, low: int, high: int) -> np.ndarray:
    """Sort uint64 ``words`` by bits ``[low, high)``; the bits below ``low``
    make every word unique (row index) or are an order-irrelevant payload."""
    npass = -(-(high - low) // _DIGIT_BITS)
    if npass <= _MAX_RADIX_PASSES:
        K = _k()
        # the kernel's work arrays, allocated here: numba's own allocation would load numba's
        # array implementation (~45 ms) with the kernel's cached code
        width = -(-(high - low) // max(npass, 1))
        return K.radix_sort_u64(words, np.empty_like(words), low, high, _DIGIT_BITS,
                                np.zeros((npass, 1 << width), np.int64),
                                np.empty((1 << width) * K._WC, np.uint64),
                                np.empty(1 << width, np.int64), np.empty(1 << width, np.int64))
    words.sort()  # numpy 2: AVX-512 / AVX2 quicksort on uint64
    return words


def _sort_plan(rows: np.ndarray, times: np.ndarray, diffs=None):
    """Sort ``(rows, times)`` (validated, n >= 2); see the module docstring.

    Returns one of

    * ``("identity",)`` -- every column is constant;
    * ``("packed", sorted_words, low, mode, mins, c_sh, c_mask, dmin)`` --
      sorted uint64 words ``key << low | payload`` where the payload is the
      row index (``mode == 1``) or, only when ``diffs`` is given and fits,
      ``diff - dmin`` (``mode == 2``); ``c_sh`` / ``c_mask`` decode column
      ``c`` from a word;
    * ``("perm", perm)`` -- a stable permutation (multi-chunk keys).
    """
    K = _k()
    n = rows.shape[0]
    mins, maxs = layout.minmax(K, [(rows, times)], rows.shape[1] + times.shape[1])
    cols, total = layout.key_bits(mins, maxs)
    if total == 0:
        return ("identity",)
    ib = (n - 1).bit_length()
    dmin, dmax = K.minmax1(diffs) if diffs is not None else (None, None)
    mode, low = layout.payload(ib, total, dmin, dmax)
    if total + low <= 64:
        c_sh, c_mask, p_col = layout.fields(cols, total, low, len(mins))
        dmin = 0 if dmin is None else int(dmin)
        words = np.empty(n, dtype=np.uint64)  # numpy allocation: huge pages
        K.pack_single(rows, times, mins, p_col, c_sh[p_col], diffs if diffs is not None
                      else np.zeros(0, np.int64), dmin, mode, words, 0)
        words = _sort_u64(words, low, low + total)
        return ("packed", words, low, mode, mins, c_sh, c_mask, dmin)
    # Multi-chunk keys: split the key bits (first column most significant)
    # into chunks of 64 - ib bits and run one stable LSD stage per chunk,
    # least significant first, on words (chunk << ib | position).
    size = 64 - ib
    nchunks = -(-total // size)
    pieces = []
    off = total
    for c, b in cols:
        off -= b
        lo_g, hi_g = off, off + b
        for wd in range(lo_g // size, (hi_g - 1) // size + 1):
            lo = max(lo_g, size * wd)
            hi = min(hi_g, size * wd + size)
            pieces.append((c, lo - lo_g, (1 << (hi - lo)) - 1, wd, lo - size * wd))
    arr = lambda i, dt: np.array([p[i] for p in pieces], dtype=dt)  # noqa: E731
    chunks = np.zeros((nchunks, n), dtype=np.uint64)
    K.pack_words(rows, times, mins, arr(0, np.int64), arr(1, np.uint64), arr(2, np.uint64),
                 arr(3, np.int64), arr(4, np.uint64), chunks)
    perm = np.zeros(0, dtype=np.int64)
    mask = np.uint64((1 << ib) - 1)
    for j in range(nchunks):
        bits = min(size, total - size * j)
        words = np.empty(n, dtype=np.uint64)
        K.chunk_keys(chunks[j], perm, ib, j == 0, words)
        words = _sort_u64(words, ib, ib + bits)
        nperm = np.empty(n, dtype=np.int64)
        K.compose_perm(perm, words, mask, j == 0, nperm)
        perm = nperm
    return ("perm", perm)


def _no_times(n: int) -> np.ndarray:
    return np.empty((n, 0), dtype=np.int64)


def sort_permutation(rows, times=None) -> np.ndarray:
    """Stable permutation sorting lexicographically by ``rows`` then ``times``.

    ``rows`` is ``(n, w)``, ``times`` (optional) is ``(n, d)``; returns an
    ``int64`` array ``perm`` such that ``rows[perm]`` is sorted (ties keep
    their original order).  Complexity: O(n * (w + d)) to pack the columns
    plus O(n * B / 11) for an LSD radix sort over ``B`` total key bits.

    >>> sort_permutation(np.array([[3], [1], [3], [2]]), np.array([[0], [5], [-1], [7]]))
    array([1, 3, 2, 0])
    >>> sort_permutation(np.zeros((3, 0), dtype=np.int64))
    array([0, 1, 2])
    """
    r = _rows(rows)
    n = r.shape[0]
    t = _no_times(n) if times is None else _int64(times, "times", 2)
    if t.shape[0] != n:
        raise ValueError(f"times has {t.shape[0]} rows, expected {n}")
    if n < 2:
        return np.arange(n, dtype=np.int64)
    if small.prefer(n, small.SMALL, n):
        return small.sort_permutation(r, t)
    plan = _sort_plan(r, t)
    if plan[0] == "identity":
        return np.arange(n, dtype=np.int64)
    if plan[0] == "packed":
        perm = np.empty(n, dtype=np.int64)
        _k().low_bits(plan[1], np.uint64((1 << plan[2]) - 1), perm)
        return perm
    return plan[1]


# ---------------------------------------------------------------------------
# consolidation and merging
# ---------------------------------------------------------------------------
def _finish(out, m):
    r, t, d = out
    return trim(r, m), trim(t, m), trim(d, m)


def consolidate(rows, times, diffs):
    """Sort by (row, time), sum the diffs of equal pairs and drop zero sums.

    Returns fresh C-contiguous ``(rows, times, diffs)``.  Complexity:
    O(n) if the input is already sorted (detected in one pass), otherwise
    the cost of :func:`sort_permutation` plus O(n * (w + d)).

    >>> r, t, d = consolidate(np.array([[2], [1], [2], [1]]),
    ...                       np.array([[0], [0], [0], [1]]),
    ...                       np.array([1, 1, -1, 3]))
    >>> r.tolist(), t.tolist(), d.tolist()
    ([[1], [1]], [[0], [1]], [1, 3])
    """
    r, t, d = _triple(rows, times, diffs)
    n = r.shape[0]
    # the result, and the sort's words and permutation
    memory_budget.reserve(n * 8 * (r.shape[1] + t.shape[1] + 3),
                          "consolidating {:,} updates", n)
    if n >= 2 and small.prefer(n, small.SMALL, n):
        return small.consolidate(r, t, d)
    state = _k().sortedness(r, t) if n >= 2 else 2
    if state == 2:  # strictly sorted: only zero diffs can go
        keep = d != 0
        if keep.all():
            return r.copy(), t.copy(), d.copy()
        return r[keep], t[keep], d[keep]
    K = _k()
    # numpy allocates the outputs (transparent huge pages: cheaper faults)
    out = (np.empty_like(r), np.empty_like(t), np.empty_like(d))
    if state == 1:
        return _finish(out, K.consolidate_sorted(r, t, d, *out))
    plan = _sort_plan(r, t, d)
    if plan[0] == "packed":
        _, words, low, mode, mins, c_sh, c_mask, dmin = plan
        return _finish(out, K.consolidate_packed(words, low, mode, mins.view(np.uint64), c_sh,
                                                 c_mask, d, dmin, *out))
    # (an unsorted input always has a varying column, so plan is not identity)
    return _finish(out, K.consolidate_perm(plan[1], r, t, d, *out))


def is_consolidated(rows, times, diffs) -> bool:
    """True iff ``(row, time)`` strictly increases and no diff is zero.

    Complexity: O(n * (w + d)), one pass with early exit.

    >>> is_consolidated(np.array([[1], [2]]), np.array([[0], [0]]), np.array([1, -2]))
    True
    >>> is_consolidated(np.array([[1], [1]]), np.array([[0], [0]]), np.array([1, 1]))
    False
    """
    r, t, d = _triple(rows, times, diffs)
    if small.prefer(len(d), small.SMALL, len(d)):
        return small.is_consolidated(r, t, d)
    return bool(_k().is_consolidated(r, t, d))


def merge_consolidated(rows_a, times_a, diffs_a, rows_b, times_b, diffs_b):
    """Merge two consolidated runs into their consolidated sum.

    Equal ``(row, time)`` pairs have their diffs added; zero sums are
    dropped.  Inputs must already be consolidated (not re-checked).
    Complexity: O((na + nb) * (w + d)), one two-pointer pass.

    >>> r, t, d = merge_consolidated(np.array([[1], [3]]), np.array([[0], [0]]), np.array([1, 2]),
    ...                              np.array([[2], [3]]), np.array([[0], [0]]), np.array([5, -2]))
    >>> r.tolist(), t.tolist(), d.tolist()
    ([[1], [2]], [[0], [0]], [1, 5])
    """
    ra, ta, da = _triple(rows_a, times_a, diffs_a, "_a")
    rb, tb, db = _triple(rows_b, times_b, diffs_b, "_b")
    _same_width(ra, rb, "rows_a", "rows_b")
    _same_width(ta, tb, "times_a", "times_b")
    cap = ra.shape[0] + rb.shape[0]
    memory_budget.reserve(cap * 8 * (ra.shape[1] + ta.shape[1] + 1),
                          "merging {:,} updates", cap)
    if small.prefer(cap, small.SMALL, cap):
        return small.merge_consolidated(ra, ta, da, rb, tb, db)
    out = (np.empty((cap, ra.shape[1]), np.int64), np.empty((cap, ta.shape[1]), np.int64),
           np.empty(cap, np.int64))
    return _finish(out, _k().merge_consolidated(ra, ta, da, rb, tb, db, *out))


# ---------------------------------------------------------------------------
# hashing and partitioning
# ---------------------------------------------------------------------------
_SEED = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def hash_rows(keys) -> np.ndarray:
    """Fixed 64-bit hash of each row's columns, as ``uint64`` ``(n,)``.

    The hash is stable across processes and runtimes::

        h = 0x9E3779B97F4A7C15
        for each column value v (reinterpreted as uint64):
            h = fmix(h ^ v)
        fmix(z): z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
                 z = (z ^ (z >> 27)) * 0x94D049BB133111EB
                 return z ^ (z >> 31)          # all wrapping uint64

    (``fmix`` is the splitmix64 finalizer.)  Width 0 gives the seed for every
    row.  Complexity: O(n * w).

    >>> hash_rows(np.zeros((2, 0), dtype=np.int64)).tolist() == [0x9E3779B97F4A7C15] * 2
    True
    >>> bool((hash_rows(np.array([[1, -2], [7, 0]])) == _hash_rows_numpy(np.array([[1, -2], [7, 0]]))).all())
    True
    """
    k = _rows(keys, "keys")
    if small.prefer(k.shape[0], small.SMALL, k.shape[0]):
        return _hash_rows_numpy(k)
    out = np.empty(k.shape[0], dtype=np.uint64)
    _k().hash_rows(k, out)
    return out


def _hash_rows_numpy(keys) -> np.ndarray:
    """Pure-numpy reference implementation of :func:`hash_rows`.

    >>> int(_hash_rows_numpy(np.array([[0]]))[0]) == int(hash_rows(np.array([[0]]))[0])
    True
    """
    k = _rows(keys, "keys").view(np.uint64)
    n, w = k.shape
    h = np.full(n, _SEED, dtype=np.uint64)
    s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)
    m1, m2 = np.uint64(_M1), np.uint64(_M2)
    with np.errstate(over="ignore"):
        for c in range(w):
            z = h ^ k[:, c]
            z = (z ^ (z >> s30)) * m1
            z = (z ^ (z >> s27)) * m2
            h = z ^ (z >> s31)
    return h


def _check_parts(parts) -> int:
    if isinstance(parts, (bool, np.bool_)) or not isinstance(parts, (int, np.integer)):
        raise TypeError(f"parts must be an int, got {type(parts).__name__}")
    parts = int(parts)
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    return parts


def partition_of(keys, parts) -> np.ndarray:
    """Partition id ``hash_rows(keys) % parts`` (unsigned modulo), int64 ``(n,)``.

    Complexity: O(n * w).

    >>> p = partition_of(np.array([[1], [2], [1]]), 4)
    >>> bool(p[0] == p[2]) and bool(((0 <= p) & (p < 4)).all())
    True
    """
    parts = _check_parts(parts)
    k = _rows(keys, "keys")
    if small.prefer(k.shape[0], small.SMALL, k.shape[0]):
        return (_hash_rows_numpy(k) % np.uint64(parts)).astype(np.int64)
    out = np.empty(k.shape[0], dtype=np.int64)
    _k().partition_of(k, parts, out)
    return out


def bin_of(keys, bins) -> np.ndarray:
    """Bin id ``hash_rows(keys) % bins`` (unsigned), int64 ``(n,)``: the unit of state
    that rescaling moves between partitions.  When ``parts`` divides ``bins``,
    ``bin_of(keys, bins) % parts == partition_of(keys, parts)``.

    >>> k = np.arange(50)[:, None]
    >>> bool((bin_of(k, 720720) % 3 == partition_of(k, 3)).all())
    True
    """
    k = _rows(keys, "keys")
    out = np.empty(k.shape[0], dtype=np.int64)
    bin_of_prefix(k, k.shape[1], bins, out)
    return out


def bin_of_prefix(rows, width: int, bins: int, out: np.ndarray, start: int = 0,
                  stop: int | None = None) -> None:
    """Fill ``out[start:stop]`` with :func:`bin_of` of ``rows[start:stop, :width]`` (no copy
    of the key columns; a long array can be filled a slice at a time).

    >>> rows = np.array([[1, 9], [2, 9]]); out = np.empty(2, np.int64)
    >>> bin_of_prefix(rows, 1, 720720, out); out.tolist() == bin_of(rows[:, :1], 720720).tolist()
    True
    """
    r = _rows(rows, "rows")
    stop = len(r) if stop is None else stop
    if small.prefer(stop - start, small.SMALL, stop - start):
        keys = np.ascontiguousarray(r[start:stop, :width])
        out[start:stop] = (_hash_rows_numpy(keys) % np.uint64(bins)).astype(np.int64)
        return
    _k().bin_of_prefix(r, int(width), int(bins), int(start), int(stop), out)


def owner_by_table(keys, table) -> np.ndarray:
    """Partition id ``table[hash_rows(keys) % len(table)]``, int64 ``(n,)``: routing by a
    bin table (see :mod:`diffflow.runtime.routing`).

    >>> table = np.arange(720720, dtype=np.int32) % 3
    >>> k = np.arange(50)[:, None]
    >>> bool((owner_by_table(k, table) == partition_of(k, 3)).all())
    True
    """
    k = _rows(keys, "keys")
    if small.prefer(k.shape[0], small.SMALL, k.shape[0]):
        return table[(_hash_rows_numpy(k) % np.uint64(len(table))).astype(np.int64)].astype(
            np.int64)
    out = np.empty(k.shape[0], dtype=np.int64)
    _k().owner_by_table(k, table, out)
    return out


def group_by_partition(part, parts):
    """Stable counting sort by partition id: ``(perm, offsets)``.

    Rows of partition ``p`` are ``perm[offsets[p]:offsets[p + 1]]`` in their
    original order; ``offsets`` has length ``parts + 1``.  Every ``part``
    value must lie in ``[0, parts)``.  Complexity: O(n + parts).

    >>> perm, off = group_by_partition(np.array([1, 0, 1, 2]), 3)
    >>> perm.tolist(), off.tolist()
    ([1, 0, 2, 3], [0, 1, 3, 4])
    """
    parts = _check_parts(parts)
    p = _int64(part, "part", 1)
    if small.prefer(p.shape[0], small.SMALL, p.shape[0]):
        if len(p) and (p.min() < 0 or p.max() >= parts):
            raise ValueError(f"part values must lie in [0, {parts})")
        offsets = np.zeros(parts + 1, np.int64)
        offsets[1:] = np.cumsum(np.bincount(p, minlength=parts))
        return np.argsort(p, kind="stable").astype(np.int64), offsets
    K = _k()
    if not K.part_range_ok(p, parts):
        raise ValueError(f"part values must lie in [0, {parts})")
    perm = np.empty(p.shape[0], dtype=np.int64)
    return perm, K.group_by_partition(p, parts, perm, np.zeros(parts + 1, np.int64))


# ---------------------------------------------------------------------------
# searching and joining
# ---------------------------------------------------------------------------
def key_ranges(sorted_keys, query_keys):
    """For each query row, the half-open range ``[lo, hi)`` of equal sorted rows.

    ``sorted_keys`` ``(n, k)`` must be sorted (duplicates allowed);
    ``query_keys`` ``(m, k)`` may be in any order.  With ``k = 0`` every row
    matches every query.  Complexity: O(m * k * (log n + log r)) for runs of
    length r (lower bound by binary search, upper bound by galloping), one
    kernel call.

    >>> lo, hi = key_ranges(np.array([[1], [3], [3], [5]]), np.array([[3], [4], [0]]))
    >>> lo.tolist(), hi.tolist()
    ([1, 3, 0], [3, 3, 0])
    """
    s = _rows(sorted_keys, "sorted_keys")
    q = _rows(query_keys, "query_keys")
    _same_width(s, q, "sorted_keys", "query_keys")
    if small.prefer(s.shape[0] * q.shape[0], small.SMALL_PAIRS, s.shape[0] + q.shape[0]):
        return small.key_ranges(s, q)
    lo = np.empty(q.shape[0], dtype=np.int64)
    hi = np.empty(q.shape[0], dtype=np.int64)
    _k().key_ranges(s, q, lo, hi)
    return lo, hi


def prefix_key_ranges(rows, queries, width: int):
    """:func:`key_ranges` on the first ``width`` columns of ``rows`` (sorted) and of
    ``queries`` (any order), which may be wider: no key columns are copied out.  Always the
    kernel (callers take it once the kernels are loaded).

    >>> lo, hi = prefix_key_ranges(np.array([[1, 0], [3, 1], [3, 2]]), np.array([[3, 9]]), 1)
    >>> lo.tolist(), hi.tolist()
    ([1], [3])
    """
    K = _k()
    lo, hi = np.empty(len(queries), np.int64), np.empty(len(queries), np.int64)
    K.prefix_ranges(rows, queries, width, lo, hi, np.empty(K.GROUP, np.int64))
    return lo, hi


def merge_prefix_ranges(probe, rows, width: int):
    """:func:`prefix_key_ranges` for ``probe`` rows sorted too, in one merge pass
    (``O(n + m)``: for probes about as many as the rows).  Always the kernel.

    >>> lo, hi = merge_prefix_ranges(np.array([[1, 5], [3, 9], [3, 8]]),
    ...                              np.array([[1, 0], [3, 1], [3, 2]]), 1)
    >>> lo.tolist(), hi.tolist()
    ([0, 1, 1], [1, 3, 3])
    """
    lo, hi = np.empty(len(probe), np.int64), np.empty(len(probe), np.int64)
    _k().merge_prefix_ranges(probe, rows, width, lo, hi)
    return lo, hi


def gather_prefix(rows, times, diffs, width: int, query_keys):
    """Updates whose first ``width`` row columns equal one of ``query_keys``.

    ``(rows, times, diffs)`` must be sorted by row (a batch); the queries may
    be in any order.  Returns ``(query_index, rows, times, diffs)`` grouped by
    query.  Complexity: O(m * width * log n) to search plus the output size,
    one kernel call.

    >>> q, r, t, d = gather_prefix(np.array([[1, 5], [3, 6], [3, 7]]), np.zeros((3, 1), np.int64),
    ...                            np.array([1, 1, 2]), 1, np.array([[3], [9]]))
    >>> q.tolist(), r.tolist(), d.tolist()
    ([0, 0], [[3, 6], [3, 7]], [1, 2])
    """
    r, t, d = _triple(rows, times, diffs)
    q = _rows(query_keys, "query_keys")
    if not 0 <= width <= r.shape[1] or q.shape[1] != width:
        raise ValueError(f"gather_prefix: width {width} does not fit rows of width "
                         f"{r.shape[1]} and queries of width {q.shape[1]}")
    return gather_prefix_unchecked(r, t, d, width, q)


def gather_prefix_unchecked(rows, times, diffs, width: int, queries):
    """:func:`gather_prefix` on arrays known valid (a spine's batches): no checks."""
    n, m = rows.shape[0], queries.shape[0]
    if small.prefer(n * m, small.SMALL_PAIRS, n + m):
        return small.gather_prefix(rows, times, diffs, width, queries)
    K = _k()
    lo, hi = np.empty(m, np.int64), np.empty(m, np.int64)
    total = K.prefix_ranges(rows, queries, width, lo, hi, np.empty(K.GROUP, np.int64))
    memory_budget.reserve(total * 8 * (rows.shape[1] + times.shape[1] + 2),
                          "a lookup of {:,} keys finding {:,} updates", m, total)
    out = (np.empty(total, np.int64), np.empty((total, rows.shape[1]), np.int64),
           np.empty((total, times.shape[1]), np.int64), np.empty(total, np.int64))
    K.gather_ranges(rows, times, diffs, lo, hi, *out)
    return out


def add_prefix_sums_unchecked(rows, diffs, width: int, queries, out) -> None:
    """Add to ``out[j]`` the diffs of the rows (sorted, a batch's) whose first ``width``
    columns equal ``queries[j]``: :func:`gather_prefix`'s diffs summed per query, without
    copying the matched updates.

    >>> out = np.zeros(2, np.int64)
    >>> add_prefix_sums_unchecked(np.array([[1, 5], [3, 6], [3, 7]]), np.array([1, 1, 2]), 1,
    ...                           np.array([[3], [9]]), out)
    >>> out.tolist()
    [3, 0]
    """
    n, m = rows.shape[0], queries.shape[0]
    if small.prefer(n * m, small.SMALL_PAIRS, n + m):
        query, position = small.expand_ranges(*small.key_ranges(rows[:, :width], queries))
        np.add.at(out, query, np.take(diffs, position))
        return
    _k().add_range_sums(diffs, *prefix_key_ranges(rows, queries, width), out)


def searchsorted_rows(sorted_rows, query_rows, side: str = "left") -> np.ndarray:
    """Lexicographic ``np.searchsorted`` over rows: insertion points, int64 ``(m,)``.

    ``side='left'`` gives the first index ``i`` with ``sorted_rows[i] >= q``,
    ``side='right'`` the first with ``sorted_rows[i] > q``.
    Complexity: O(m * k * log n).

    >>> s = np.array([[1, 0], [1, 2], [2, 0]])
    >>> searchsorted_rows(s, np.array([[1, 2], [0, 9]])).tolist()
    [1, 0]
    >>> searchsorted_rows(s, np.array([[1, 2]]), side="right").tolist()
    [2]
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    s = _rows(sorted_rows, "sorted_rows")
    q = _rows(query_rows, "query_rows")
    _same_width(s, q, "sorted_rows", "query_rows")
    if small.prefer(s.shape[0] * q.shape[0], small.SMALL_PAIRS, s.shape[0] + q.shape[0]):
        return small.searchsorted_rows(s, q, side == "right")
    out = np.empty(q.shape[0], dtype=np.int64)
    _k().searchsorted_rows(s, q, side == "right", out)
    return out


def match_sorted(left_keys, right_keys):
    """All index pairs ``(i, j)`` with ``left_keys[i] == right_keys[j]``.

    Both inputs are sorted lexicographically (duplicates allowed).  Pairs
    are ordered by ``i`` then ``j``; ``k = 0`` gives the full cross product.
    Complexity: O((nl + nr) * k + output), two merge passes (count, fill).

    >>> li, ri = match_sorted(np.array([[1], [2], [2], [4]]), np.array([[2], [2], [3], [4]]))
    >>> li.tolist(), ri.tolist()
    ([1, 1, 2, 2, 3], [0, 1, 0, 1, 3])
    """
    a = _rows(left_keys, "left_keys")
    b = _rows(right_keys, "right_keys")
    _same_width(a, b, "left_keys", "right_keys")
    if small.prefer(a.shape[0] * b.shape[0], small.SMALL_PAIRS, a.shape[0] + b.shape[0]):
        return small.match_sorted(a, b)
    K = _k()
    total = K.match_count(a, b)
    memory_budget.reserve(total * 16, "a list of {:,} matching pairs of keys", total)
    li = np.empty(total, dtype=np.int64)
    ri = np.empty(total, dtype=np.int64)
    K.match_fill(a, b, li, ri)
    return li, ri


def group_starts(sorted_rows) -> np.ndarray:
    """Start offsets of runs of equal rows, with ``n`` appended (int64).

    Group ``i`` is ``starts[i]:starts[i + 1]``; ``n = 0`` gives ``[0]``.
    Complexity: O(n * w).

    >>> group_starts(np.array([[1], [1], [2], [5], [5]])).tolist()
    [0, 2, 3, 5]
    >>> group_starts(np.zeros((0, 1), dtype=np.int64)).tolist()
    [0]
    """
    s = _rows(sorted_rows, "sorted_rows")
    if small.prefer(s.shape[0], small.SMALL, s.shape[0]):
        return small.group_starts(s)
    buf = np.empty(s.shape[0] + 1, dtype=np.int64)
    return trim(buf, _k().group_starts(s, buf))
