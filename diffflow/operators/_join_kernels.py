"""Numba kernel for the join operator (private).

Imported lazily by :mod:`diffflow.operators.join` only.  The operator
validates; the kernel assumes C-contiguous int64 arrays.
"""
from diffflow.common.jit import kernel


@kernel
def emit_pairs(lrows, ltimes, ldiffs, rrows, rtimes, rdiffs, li, ri, source, rows, times, diffs):
    """Write the joined update of each matched pair ``(li[o], ri[o])`` into row ``o``.

    Output column ``c`` is column ``source[c]`` of the left row followed by
    the right row (``source[c] >= left width`` reads the right row); the
    time is the two times' join (elementwise max), the diff their product.
    One pass, instead of a gather per input column and a permutation copy.
    """
    lw = lrows.shape[1]
    w = source.shape[0]
    d = times.shape[1]
    for o in range(li.shape[0]):
        i = li[o]
        j = ri[o]
        for c in range(w):
            s = source[c]
            if s < lw:
                rows[o, c] = lrows[i, s]
            else:
                rows[o, c] = rrows[j, s - lw]
        for c in range(d):
            a = ltimes[i, c]
            b = rtimes[j, c]
            times[o, c] = a if a > b else b
        diffs[o] = ldiffs[i] * rdiffs[j]


@kernel
def _key_cmp(a, i, b, j, width):
    """Compare ``a[i, :width]`` with ``b[j, :width]``: -1, 0 or 1."""
    for c in range(width):
        x = a[i, c]
        y = b[j, c]
        if x < y:
            return -1
        if x > y:
            return 1
    return 0


@kernel
def merge_ranges(probe, batch, width, lo, hi):
    """For each row of ``probe`` the range ``[lo, hi)`` of the ``batch`` rows with the same
    first ``width`` columns (both sorted), in one merge pass; returns the total."""
    n = batch.shape[0]
    j = 0
    total = 0
    for i in range(probe.shape[0]):
        if i > 0 and _key_cmp(probe, i, probe, i - 1, width) == 0:
            lo[i] = lo[i - 1]
            hi[i] = hi[i - 1]
        else:
            while j < n and _key_cmp(batch, j, probe, i, width) < 0:
                j += 1
            k = j
            while k < n and _key_cmp(batch, k, probe, i, width) == 0:
                k += 1
            lo[i] = j
            hi[i] = k
            j = k
        total += hi[i] - lo[i]
    return total


@kernel
def emit_ranges(prows, ptimes, pdiffs, brows, btimes, bdiffs, lo, hi, probe_is_left, source,
                rows, times, diffs):
    """:func:`emit_pairs` for every probe row ``p`` with each batch row of ``[lo[p], hi[p])``
    (no pair arrays: the join writes its output straight from the ranges).  The left
    input is the probe side when ``probe_is_left``, else the batch side."""
    lw = prows.shape[1] if probe_is_left else brows.shape[1]
    w = source.shape[0]
    d = times.shape[1]
    o = 0
    for p in range(lo.shape[0]):
        for q in range(lo[p], hi[p]):
            if probe_is_left:
                i = p
                j = q
                lr, lt, ld, rr, rt, rd = prows, ptimes, pdiffs, brows, btimes, bdiffs
            else:
                i = q
                j = p
                lr, lt, ld, rr, rt, rd = brows, btimes, bdiffs, prows, ptimes, pdiffs
            for c in range(w):
                s = source[c]
                if s < lw:
                    rows[o, c] = lr[i, s]
                else:
                    rows[o, c] = rr[j, s - lw]
            for c in range(d):
                a = lt[i, c]
                b = rt[j, c]
                times[o, c] = a if a > b else b
            diffs[o] = ld[i] * rd[j]
            o += 1
