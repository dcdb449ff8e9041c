"""Private numba kernels for :mod:`diffflow.arrangements.columnar`.

Imported only (and lazily) by ``columnar.py``.  Every kernel *assumes* its
inputs were validated by the wrapper:

* rows / keys are C-contiguous ``int64`` arrays of shape ``(n, w)`` (``w`` may
  be 0), times are C-contiguous ``int64`` ``(n, d)`` (``d`` may be 0 where a
  kernel is used for rows only), diffs are ``int64`` ``(n,)``;
* "sorted" means lexicographic by the row columns, then the time columns,
  all compared as signed ``int64``.

All kernels are single-threaded ``@kernel`` functions (numba's ``njit``, cached on
disk: :mod:`diffflow.common.jit`); each is compiled for one type signature because the
wrapper always passes C-contiguous ``int64`` / ``uint64`` arrays and Python ints / bools.  Large
outputs are allocated by the wrapper with numpy and passed in (``out``
arguments): numpy requests transparent huge pages for big buffers, which
makes first-touch page faults and the TLB misses of scatters much cheaper
than with numba's own allocator.
"""

import numpy as np

from diffflow.common.jit import kernel

# --------------------------------------------------------------------------
# uint64 constants (numba freezes module globals; all are typed uint64 so
# that arithmetic never silently promotes to float64)
# --------------------------------------------------------------------------
_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U27 = np.uint64(27)
_U30 = np.uint64(30)
_U31 = np.uint64(31)
# write-combining buffer slots per radix bucket (64 x 2**11 x 8 B = 1 MiB)
_WC = 64
_HASH_SEED = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


# --------------------------------------------------------------------------
# lexicographic comparison helpers
# --------------------------------------------------------------------------
@kernel
def _cmp_prefix(a, i, b, j, width):
    """Compare ``a[i, :width]`` with ``b[j, :width]`` lexicographically: -1, 0 or 1."""
    for c in range(width):
        x = a[i, c]
        y = b[j, c]
        if x < y:
            return -1
        if x > y:
            return 1
    return 0


@kernel
def _cmp_row(a, i, b, j):
    """Compare row ``a[i]`` with row ``b[j]``: -1, 0 or 1."""
    return _cmp_prefix(a, i, b, j, a.shape[1])


@kernel
def _cmp_rt(ra, ta, i, rb, tb, j):
    """Compare ``(ra[i], ta[i])`` with ``(rb[j], tb[j])``: -1, 0 or 1."""
    c = _cmp_row(ra, i, rb, j)
    if c != 0:
        return c
    return _cmp_row(ta, i, tb, j)


# --------------------------------------------------------------------------
# sorting: column statistics, key packing, radix sorts
# --------------------------------------------------------------------------
@kernel
def _minmax_cols(a, mins, maxs, base):
    """Column-wise min/max of ``a`` (n >= 1) into ``mins/maxs[base:]``."""
    n = a.shape[0]
    for c in range(a.shape[1]):
        mn = a[0, c]
        mx = mn
        for i in range(n):
            v = a[i, c]
            mn = v if v < mn else mn
            mx = v if v > mx else mx
        mins[base + c] = mn
        maxs[base + c] = mx


@kernel
def col_minmax(rows, times, mins, maxs):
    """Per-column min and max of the concatenated columns ``rows | times``
    into ``mins`` / ``maxs`` (length ``w + d``); requires ``n >= 1``."""
    _minmax_cols(rows, mins, maxs, 0)
    _minmax_cols(times, mins, maxs, rows.shape[1])


@kernel
def minmax1(a):
    """``(min, max)`` of a non-empty 1-D int64 array."""
    mn = a[0]
    mx = mn
    for i in range(a.shape[0]):
        v = a[i]
        mn = v if v < mn else mn
        mx = v if v > mx else mx
    return mn, mx


@kernel
def pack_single(rows, times, mins, p_col, p_dst, diffs, dmin, mode, out, base):
    """Pack ``(rows, times)`` into one uint64 word per row, written to ``out``.

    Column ``p_col[p]`` contributes ``(v - mins[c]) << p_dst[p]`` (the caller
    guarantees the bit fields fit and do not overlap).  The low bits receive
    the row index plus ``base`` (``mode == 1``; ``base`` is the chunk's offset
    when several chunks are packed into slices of one array) or
    ``diffs[i] - dmin`` (``mode == 2``); ``mode == 0`` leaves them zero.
    """
    n = rows.shape[0]
    w = rows.shape[1]
    npieces = p_col.shape[0]
    udmin = np.uint64(dmin)
    for i in range(n):
        if mode == 1:
            acc = np.uint64(base + i)
        elif mode == 2:
            acc = np.uint64(diffs[i]) - udmin
        else:
            acc = _U0
        for p in range(npieces):
            c = p_col[p]
            if c < w:
                v = rows[i, c]
            else:
                v = times[i, c - w]
            acc |= (np.uint64(v) - np.uint64(mins[c])) << p_dst[p]
        out[i] = acc


@kernel
def pack_words(rows, times, mins, p_col, p_src, p_mask, p_word, p_dst, out):
    """Pack ``(rows, times)`` into bit chunks ``out`` (nchunks, n), zeroed.

    Column ``c = p_col[p]`` contributes ``((v - mins[c]) >> p_src) & p_mask``
    shifted left by ``p_dst`` into chunk ``p_word``, for each piece ``p``
    (a column may straddle chunks).  Chunk 0 is the *least* significant.
    """
    n = rows.shape[0]
    w = rows.shape[1]
    npieces = p_col.shape[0]
    for i in range(n):
        for p in range(npieces):
            c = p_col[p]
            if c < w:
                v = rows[i, c]
            else:
                v = times[i, c - w]
            u = (np.uint64(v) - np.uint64(mins[c])) >> p_src[p]
            out[p_word[p], i] |= (u & p_mask[p]) << p_dst[p]


@kernel
def _scatter_u64(src, dst, off, sh, nb, buf, cnt):
    """One stable counting-sort pass of ``src`` into ``dst`` by digit
    ``(k >> sh) & (nb - 1)``; ``off`` holds the bucket start offsets.

    Software write-combining: keys are staged in a per-bucket buffer of
    ``_WC`` slots and flushed in blocks, so only a few destination pages are
    touched at a time (a plain scatter to 2**11 destinations is TLB-bound).
    """
    n = src.shape[0]
    mask = np.uint64(nb - 1)
    ush = np.uint64(sh)
    L = _WC
    for b in range(nb):
        cnt[b] = 0
    for i in range(n):
        k = src[i]
        b = np.int64((k >> ush) & mask)
        c = cnt[b]
        buf[b * L + c] = k
        c += 1
        if c == L:
            o = off[b]
            for t in range(L):
                dst[o + t] = buf[b * L + t]
            off[b] = o + L
            c = 0
        cnt[b] = c
    for b in range(nb):
        o = off[b]
        for t in range(cnt[b]):
            dst[o + t] = buf[b * L + t]


@kernel
def radix_sort_u64(keys, scratch, lo_bit, hi_bit, max_digit_bits, hist, buf, cnt, off):
    """LSD radix sort of ``keys`` (uint64) by bits ``[lo_bit, hi_bit)``.

    The bit range is split into near-equal digits of at most
    ``max_digit_bits``; one sweep per digit builds all histograms first, and
    digit passes in which every key has the same digit are skipped.  Bits
    below ``lo_bit`` are ignored (they hold a unique row index or a payload
    in the packed layouts).  Returns the sorted array: ``keys`` or
    ``scratch`` (same shape; allocating both with numpy gives transparent
    huge pages, which the scatter passes need).  Work arrays, from the
    wrapper (``columnar._sort_u64``): ``hist`` zeros ``(npass, 2**width)``,
    ``buf`` ``2**width * _WC`` uint64, ``cnt`` and ``off`` ``2**width``.
    """
    n = keys.shape[0]
    nbits = hi_bit - lo_bit
    npass = (nbits + max_digit_bits - 1) // max_digit_bits
    if n < 2 or npass <= 0:
        return keys
    width = (nbits + npass - 1) // npass
    for p in range(npass):
        sh = np.uint64(lo_bit + p * width)
        mask = np.uint64((1 << min(width, hi_bit - lo_bit - p * width)) - 1)
        hp = hist[p]
        for i in range(n):
            hp[(keys[i] >> sh) & mask] += 1
    src = keys
    dst = scratch
    for p in range(npass):
        nb = 1 << min(width, hi_bit - lo_bit - p * width)
        hp = hist[p]
        trivial = False
        total = 0
        for b in range(nb):
            if hp[b] == n:
                trivial = True
            off[b] = total
            total += hp[b]
        if trivial:
            continue
        _scatter_u64(src, dst, off, lo_bit + p * width, nb, buf, cnt)
        src, dst = dst, src
    return src


@kernel
def chunk_keys(chunk, perm, ib, first, out):
    """``out[i] = (chunk[perm[i]] << ib) | i`` (``perm`` ignored if ``first``,
    i.e. the identity).  Prepares one LSD stage of a multi-chunk sort."""
    n = chunk.shape[0]
    ush = np.uint64(ib)
    if first:
        for i in range(n):
            out[i] = (chunk[i] << ush) | np.uint64(i)
    else:
        for i in range(n):
            out[i] = (chunk[perm[i]] << ush) | np.uint64(i)


@kernel
def compose_perm(perm, sorted_keys, mask, first, out):
    """``out = perm[sorted_keys & mask]`` (or just ``sorted_keys & mask`` if
    ``first``): the permutation after one stable LSD stage."""
    n = sorted_keys.shape[0]
    if first:
        for i in range(n):
            out[i] = np.int64(sorted_keys[i] & mask)
    else:
        for i in range(n):
            out[i] = perm[np.int64(sorted_keys[i] & mask)]


@kernel
def low_bits(a, mask, out):
    """``out = a & mask`` as int64 (extracts the row index of packed keys)."""
    for i in range(a.shape[0]):
        out[i] = np.int64(a[i] & mask)


# --------------------------------------------------------------------------
# consolidation
# --------------------------------------------------------------------------
@kernel
def sortedness(rows, times):
    """0 if unsorted, 1 if sorted with equal neighbours, 2 if strictly sorted."""
    n = rows.shape[0]
    strict = True
    for i in range(1, n):
        c = _cmp_rt(rows, times, i - 1, rows, times, i)
        if c > 0:
            return 0
        if c == 0:
            strict = False
    return 2 if strict else 1


@kernel
def is_consolidated(rows, times, diffs):
    """True iff (row, time) strictly increases and no diff is zero."""
    n = rows.shape[0]
    for i in range(n):
        if diffs[i] == 0:
            return False
        if i > 0 and _cmp_rt(rows, times, i - 1, rows, times, i) >= 0:
            return False
    return True


@kernel
def _emit(out_r, out_t, out_d, m, r, t, i, dv):
    """Write row ``r[i]``, time ``t[i]`` and diff ``dv`` at output slot ``m``."""
    _emit_wd(out_r, out_t, out_d, m, r, t, i, dv, r.shape[1], t.shape[1])


@kernel
def consolidate_packed(sorted_keys, low, mode, umins, c_sh, c_mask, diffs, dmin,
                       out_r, out_t, out_d):
    """Consolidate from sorted packed words ``(key << low) | payload``.

    Equal ``key`` (the bits above ``low``) <=> equal (row, time), and the
    row / time columns are decoded from the key (``mins[c] + ((k >> c_sh[c])
    & c_mask[c])``; ``umins``: the mins as uint64, a view the wrapper makes:
    converting here would load numba's array allocation with the kernel), so
    only the diffs may need a random access: the payload
    is the row index (``mode == 1``: diff = ``diffs[idx]``) or the diff
    itself (``mode == 2``: diff = ``payload + dmin``).  Writes into the
    ``out_*`` buffers (capacity ``n``) and returns the number of rows ``m``.
    """
    n = sorted_keys.shape[0]
    w = out_r.shape[1]
    d = out_t.shape[1]
    ush = np.uint64(low)
    lmask = (_U1 << ush) - _U1
    m = 0
    i = 0
    while i < n:
        k = sorted_keys[i]
        kk = k >> ush
        s = np.int64(0)
        j = i
        while j < n:
            kj = sorted_keys[j]
            if (kj >> ush) != kk:
                break
            if mode == 1:
                s += diffs[np.int64(kj & lmask)]
            else:
                s += np.int64(kj & lmask) + dmin
            j += 1
        if s != 0:
            for c in range(w):
                out_r[m, c] = np.int64(umins[c] + ((k >> c_sh[c]) & c_mask[c]))
            for c in range(d):
                out_t[m, c] = np.int64(umins[w + c] + ((k >> c_sh[w + c]) & c_mask[w + c]))
            out_d[m] = s
            m += 1
        i = j
    return m


@kernel
def consolidate_perm(perm, rows, times, diffs, out_r, out_t, out_d):
    """Consolidate rows visited in the (sorting) order ``perm``.

    Writes into the ``out_*`` buffers (capacity ``n``); returns the count.
    """
    n = perm.shape[0]
    m = 0
    i = 0
    while i < n:
        first = perm[i]
        s = diffs[first]
        i += 1
        while i < n and _cmp_rt(rows, times, first, rows, times, perm[i]) == 0:
            s += diffs[perm[i]]
            i += 1
        if s != 0:
            _emit(out_r, out_t, out_d, m, rows, times, first, s)
            m += 1
    return m


@kernel
def consolidate_sorted(rows, times, diffs, out_r, out_t, out_d):
    """Consolidate input already sorted (possibly with equal neighbours).

    Writes into the ``out_*`` buffers (capacity ``n``); returns the count.
    """
    n = rows.shape[0]
    m = 0
    i = 0
    while i < n:
        first = i
        s = diffs[i]
        i += 1
        while i < n and _cmp_rt(rows, times, first, rows, times, i) == 0:
            s += diffs[i]
            i += 1
        if s != 0:
            _emit(out_r, out_t, out_d, m, rows, times, first, s)
            m += 1
    return m


@kernel
def merge_consolidated(ra, ta, da, rb, tb, db, out_r, out_t, out_d):
    """Two-pointer merge of two consolidated runs into a consolidated run.

    Writes into the ``out_*`` buffers (capacity ``na + nb``); returns the
    number of output rows.  (Compares the first column inline and the rest only
    on ties, with widths hoisted: 2-3x faster than comparing through helpers.)
    """
    na = ra.shape[0]
    nb = rb.shape[0]
    w = ra.shape[1]
    d = ta.shape[1]
    i = 0
    j = 0
    m = 0
    while i < na and j < nb:
        c = 0
        if w > 0:
            x = ra[i, 0]
            y = rb[j, 0]
            if x != y:
                c = -1 if x < y else 1
        if c == 0:
            for k in range(1, w):
                x = ra[i, k]
                y = rb[j, k]
                if x != y:
                    c = -1 if x < y else 1
                    break
        if c == 0:
            for k in range(d):
                x = ta[i, k]
                y = tb[j, k]
                if x != y:
                    c = -1 if x < y else 1
                    break
        if c < 0:
            _emit_wd(out_r, out_t, out_d, m, ra, ta, i, da[i], w, d)
            m += 1
            i += 1
        elif c > 0:
            _emit_wd(out_r, out_t, out_d, m, rb, tb, j, db[j], w, d)
            m += 1
            j += 1
        else:
            s = da[i] + db[j]
            if s != 0:
                _emit_wd(out_r, out_t, out_d, m, ra, ta, i, s, w, d)
                m += 1
            i += 1
            j += 1
    while i < na:
        _emit_wd(out_r, out_t, out_d, m, ra, ta, i, da[i], w, d)
        m += 1
        i += 1
    while j < nb:
        _emit_wd(out_r, out_t, out_d, m, rb, tb, j, db[j], w, d)
        m += 1
        j += 1
    return m


@kernel(inline="always")
def _emit_wd(out_r, out_t, out_d, m, r, t, i, dv, w, d):
    """Write row ``r[i]`` (``w`` columns), time ``t[i]`` (``d``) and diff ``dv`` at output
    slot ``m`` (widths given: a caller's loop hoists them)."""
    for k in range(w):
        out_r[m, k] = r[i, k]
    for k in range(d):
        out_t[m, k] = t[i, k]
    out_d[m] = dv


# --------------------------------------------------------------------------
# hashing and partitioning
# --------------------------------------------------------------------------
@kernel
def _hash_prefix(rows, i, width):
    """Hash of ``rows[i, :width]``: splitmix64 finalizer chained over columns."""
    h = _HASH_SEED
    for c in range(width):
        z = h ^ np.uint64(rows[i, c])
        z = (z ^ (z >> _U30)) * _MIX1
        z = (z ^ (z >> _U27)) * _MIX2
        h = z ^ (z >> _U31)
    return h


@kernel
def _hash_row(keys, i):
    """Hash of row ``keys[i]`` (every column)."""
    return _hash_prefix(keys, i, keys.shape[1])


@kernel
def hash_rows(keys, out):
    """Fixed 64-bit hash of each row into ``out`` (uint64); see
    ``columnar.hash_rows`` for the definition."""
    for i in range(keys.shape[0]):
        out[i] = _hash_row(keys, i)


@kernel
def partition_of(keys, parts, out):
    """``hash_rows(keys) % parts`` (unsigned) as int64, into ``out``."""
    up = np.uint64(parts)
    for i in range(keys.shape[0]):
        out[i] = np.int64(_hash_row(keys, i) % up)


@kernel
def bin_of_prefix(rows, width, bins, start, stop, out):
    """``hash_rows(rows[i, :width]) % bins`` for ``start <= i < stop``, into ``out[i]``."""
    ub = np.uint64(bins)
    for i in range(start, stop):
        out[i] = np.int64(_hash_prefix(rows, i, width) % ub)


@kernel
def count_groups(bins, group_of_bin, start, stop, counts):
    """Add to ``counts[g + 1]`` the rows ``start <= i < stop`` whose bin is in group ``g``
    (``group_of_bin[b]``, -1 counting as group -1 at ``counts[0]``)."""
    for i in range(start, stop):
        counts[group_of_bin[bins[i]] + 1] += 1


@kernel
def scatter_rows_by_group(bins, group_of_bin, start, stop, cursor, rows, times, diffs,
                          out_rows, out_times, out_diffs, out_bins):
    """Copy the updates ``start <= i < stop`` whose bin is in a group ``g >= 0`` to their
    group's ``cursor[g]`` in the ``out_`` arrays (a stable counting sort of the rows that
    move, done a slice at a time; rows of group -1 are skipped)."""
    w, d = rows.shape[1], times.shape[1]
    for i in range(start, stop):
        b = bins[i]
        g = group_of_bin[b]
        if g < 0:
            continue
        c = cursor[g]
        for j in range(w):
            out_rows[c, j] = rows[i, j]
        for j in range(d):
            out_times[c, j] = times[i, j]
        out_diffs[c] = diffs[i]
        out_bins[c] = b
        cursor[g] = c + 1


@kernel
def owner_by_table(keys, table, out):
    """``table[hash_rows(keys) % len(table)]`` as int64, into ``out``."""
    ub = np.uint64(table.shape[0])
    for i in range(keys.shape[0]):
        out[i] = np.int64(table[np.int64(_hash_row(keys, i) % ub)])


@kernel
def part_range_ok(part, parts):
    """True iff every entry of ``part`` lies in ``[0, parts)``."""
    for i in range(part.shape[0]):
        p = part[i]
        if p < 0 or p >= parts:
            return False
    return True


@kernel
def group_by_partition(part, parts, perm, offsets):
    """Stable counting sort of indices by partition id into ``perm``; fills
    ``offsets`` (zeros, length ``parts + 1``) and returns it."""
    n = part.shape[0]
    for i in range(n):
        offsets[part[i] + 1] += 1
    for p in range(parts):
        offsets[p + 1] += offsets[p]
    for i in range(n):  # offsets[p] is partition p's cursor: it ends at p + 1's start ...
        p = part[i]
        perm[offsets[p]] = i
        offsets[p] += 1
    for p in range(parts, 0, -1):  # ... so shift the cursors back to starts
        offsets[p] = offsets[p - 1]
    offsets[0] = 0
    return offsets


# --------------------------------------------------------------------------
# searching and joining sorted rows
# --------------------------------------------------------------------------
@kernel
def _lower_bound(s, q, j, lo, hi):
    """First index in ``[lo, hi)`` with ``s[idx] >= q[j]``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if _cmp_row(s, mid, q, j) < 0:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _upper_bound(s, q, j, lo, hi):
    """First index in ``[lo, hi)`` with ``s[idx] > q[j]``."""
    return prefix_upper_bound(s, lo, hi, q, j, s.shape[1])


@kernel
def prefix_upper_bound(s, lo, hi, q, j, width):
    """First index in ``[lo, hi)`` with ``s[idx, :width] > q[j, :width]`` (sorted ``s``)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if _cmp_prefix(s, mid, q, j, width) <= 0:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _gallop_upper(s, q, j, lo, n):
    """First index in ``[lo, n)`` with ``s[idx] > q[j]``, given that no
    index below ``lo`` qualifies: galloping (1, 2, 4, ... steps) and then a
    binary search, so short runs of equal rows cost O(log run) local probes."""
    step = 1
    hi = n
    while True:
        probe = lo + step - 1
        if probe >= n:
            break
        if _cmp_row(s, probe, q, j) > 0:
            hi = probe
            break
        lo = probe + 1
        step *= 2
    return _upper_bound(s, q, j, lo, hi)


@kernel
def key_ranges(sorted_keys, query_keys, lo, hi):
    """Per query the half-open range ``[lo, hi)`` of equal sorted rows."""
    n = sorted_keys.shape[0]
    for j in range(query_keys.shape[0]):
        a = _lower_bound(sorted_keys, query_keys, j, 0, n)
        lo[j] = a
        hi[j] = _gallop_upper(sorted_keys, query_keys, j, a, n)


@kernel
def searchsorted_rows(sorted_rows, query_rows, right, out):
    """Lexicographic ``np.searchsorted`` (left or right side) into ``out``."""
    n = sorted_rows.shape[0]
    for j in range(query_rows.shape[0]):
        if right:
            out[j] = _upper_bound(sorted_rows, query_rows, j, 0, n)
        else:
            out[j] = _lower_bound(sorted_rows, query_rows, j, 0, n)


@kernel
def _run_end(a, i, n):
    """End of the run of rows equal to ``a[i]`` starting at ``i``."""
    j = i + 1
    while j < n and _cmp_row(a, i, a, j) == 0:
        j += 1
    return j


@kernel
def match_count(left, right):
    """Number of equal-key pairs between two sorted key arrays."""
    nl = left.shape[0]
    nr = right.shape[0]
    i = 0
    j = 0
    total = 0
    while i < nl and j < nr:
        c = _cmp_row(left, i, right, j)
        if c < 0:
            i += 1
        elif c > 0:
            j += 1
        else:
            i1 = _run_end(left, i, nl)
            j1 = _run_end(right, j, nr)
            total += (i1 - i) * (j1 - j)
            i = i1
            j = j1
    return total


@kernel
def merge_prefix_ranges(probe, batch, width, lo, hi):
    """For each row of ``probe`` the range ``[lo, hi)`` of the ``batch`` rows with the same
    first ``width`` columns (both sorted), in one merge pass."""
    n = batch.shape[0]
    j = 0
    for i in range(probe.shape[0]):
        if i > 0 and _cmp_prefix(probe, i, probe, i - 1, width) == 0:
            lo[i] = lo[i - 1]
            hi[i] = hi[i - 1]
            continue
        while j < n and _cmp_prefix(batch, j, probe, i, width) < 0:
            j += 1
        k = j
        while k < n and _cmp_prefix(batch, k, probe, i, width) == 0:
            k += 1
        lo[i] = j
        hi[i] = k
        j = k


@kernel
def match_fill(left, right, li, ri):
    """All equal-key pairs ``(i, j)``, ordered by i then j, into ``li, ri``
    (sized by ``match_count``)."""
    nl = left.shape[0]
    nr = right.shape[0]
    i = 0
    j = 0
    m = 0
    while i < nl and j < nr:
        c = _cmp_row(left, i, right, j)
        if c < 0:
            i += 1
        elif c > 0:
            j += 1
        else:
            i1 = _run_end(left, i, nl)
            j1 = _run_end(right, j, nr)
            for a in range(i, i1):
                for b in range(j, j1):
                    li[m] = a
                    ri[m] = b
                    m += 1
            i = i1
            j = j1


@kernel
def group_starts(sorted_rows, buf):
    """Start offsets of runs of equal rows, with ``n`` appended, written to
    ``buf`` (capacity ``n + 1``); returns the number of entries."""
    n = sorted_rows.shape[0]
    m = 0
    for i in range(n):
        if i == 0 or _cmp_row(sorted_rows, i - 1, sorted_rows, i) != 0:
            buf[m] = i
            m += 1
    buf[m] = n
    return m + 1


# --------------------------------------------------------------------------
# lookups: the updates of many keys in one sorted batch
#
# A binary search is a chain of dependent loads: each probe waits for the one before, and in a
# batch of millions of rows most probes miss the cache.  Sorted queries (the usual case: a
# step's keys, consolidated) are searched GROUP at a time in lockstep -- every query of a group
# takes its next probe before any takes the one after -- so the probes of a group are
# independent loads that the processor overlaps.  A group's range is bracketed by galloping
# from the previous group's answer to its last query, so sorted queries still cost
# O(m log(n / m)) probes.  (In this file: numba's cache does not notice changes to a kernel
# another file's kernel calls.)
# --------------------------------------------------------------------------
GROUP = 16  # queries searched in lockstep (enough loads in flight to hide most of a miss)


@kernel
def _sorted_run(queries, g0, g1, width):
    """Whether ``queries[g0:g1]`` is non-decreasing and not below ``queries[g0 - 1]``."""
    for j in range(max(g0, 1), g1):
        if _cmp_prefix(queries, j - 1, queries, j, width) > 0:
            return False
    return True


@kernel
def prefix_lower_bounds(rows, queries, width, out, base):
    """``out[j]``: the first index ``i`` with ``rows[i, :width] >= queries[j, :width]``.

    ``rows`` sorted lexicographically; queries in any order (a group that is not sorted
    after its predecessor is searched over the whole batch).  ``base``: ``GROUP`` int64 of
    scratch.
    """
    n = rows.shape[0]
    m = queries.shape[0]
    start = 0  # the previous group's last answer: a sorted group's answers are not below it
    for g0 in range(0, m, GROUP):
        g1 = min(g0 + GROUP, m)
        ordered = _sorted_run(queries, g0, g1, width)
        lo = start if ordered else 0
        # bracket: hi == n or rows[hi] >= the group's largest query (if ordered, its last)
        hi = lo if ordered else n
        step = 1
        while hi < n and _cmp_prefix(rows, hi, queries, g1 - 1, width) < 0:
            lo = hi + 1 if g1 - g0 == 1 else lo  # (a lone query may skip what it passed)
            hi = hi + step
            step *= 2
        if hi > n:
            hi = n
        # branchless lower bound in rows[lo:hi], every query of the group in lockstep
        for g in range(g1 - g0):
            base[g] = lo
        size = hi - lo
        while size > 1:
            half = size >> 1
            for g in range(g1 - g0):
                less = _cmp_prefix(rows, base[g] + half, queries, g0 + g, width) < 0
                base[g] += half * less
            size -= half
        for g in range(g1 - g0):
            b = base[g]
            if b < hi and _cmp_prefix(rows, b, queries, g0 + g, width) < 0:
                b += 1
            out[g0 + g] = b
        start = out[g1 - 1]


@kernel
def prefix_ranges(rows, queries, width, lo, hi, base):
    """Per query ``j``, ``[lo[j], hi[j])``: the rows whose first ``width`` columns equal it;
    returns the total.

    ``rows`` sorted lexicographically; queries in any order (sorted ones cost
    O(m log(n/m)) probes, see :func:`prefix_lower_bounds`).
    """
    n = rows.shape[0]
    m = queries.shape[0]
    prefix_lower_bounds(rows, queries, width, lo, base)
    total = 0
    for j in range(m):
        a = lo[j]
        step = 1  # gallop to the end of the (usually short) run of matches
        while a + step <= n and _cmp_prefix(rows, a + step - 1, queries, j, width) <= 0:
            a += step
            step *= 2
        hi[j] = prefix_upper_bound(rows, a, a + step - 1 if a + step - 1 < n else n, queries, j,
                                   width)
        total += hi[j] - lo[j]
    return total


@kernel
def gather_ranges(rows, times, diffs, lo, hi, out_q, out_r, out_t, out_d):
    """Copy the updates of every range ``[lo[j], hi[j])``, range by range, tagged ``j``
    (the outputs are sized by :func:`prefix_ranges`' total)."""
    w = rows.shape[1]
    d = times.shape[1]
    p = 0
    for j in range(lo.shape[0]):
        for i in range(lo[j], hi[j]):
            out_q[p] = j
            for k in range(w):
                out_r[p, k] = rows[i, k]
            for k in range(d):
                out_t[p, k] = times[i, k]
            out_d[p] = diffs[i]
            p += 1


@kernel
def add_range_sums(diffs, lo, hi, out):
    """``out[j] += sum(diffs[lo[j]:hi[j]])`` for every query ``j`` (exact int64 sums)."""
    for j in range(lo.shape[0]):
        s = 0
        for i in range(lo[j], hi[j]):
            s += diffs[i]
        out[j] += s
