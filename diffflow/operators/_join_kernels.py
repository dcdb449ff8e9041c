"""Numba kernel for the join operator (private).

Imported lazily by :mod:`diffflow.operators.join` only.  The operator
validates; the kernel assumes C-contiguous int64 arrays.
"""
from diffflow.common.jit import kernel


@kernel(inline="always")  # (a call per pair, with 13 array arguments, would cost ~5x)
def _emit(lrows, ltimes, ldiffs, i, rrows, rtimes, rdiffs, j, source, rows, times, diffs, o):
    """Write the join of left row ``i`` and right row ``j`` into output row ``o``."""
    lw = lrows.shape[1]
    for c in range(source.shape[0]):
        s = source[c]
        if s < lw:
            rows[o, c] = lrows[i, s]
        else:
            rows[o, c] = rrows[j, s - lw]
    for c in range(times.shape[1]):
        a = ltimes[i, c]
        b = rtimes[j, c]
        times[o, c] = a if a > b else b
    diffs[o] = ldiffs[i] * rdiffs[j]


@kernel
def emit_pairs(lrows, ltimes, ldiffs, rrows, rtimes, rdiffs, li, ri, source, rows, times, diffs):
    """Write the joined update of each matched pair ``(li[o], ri[o])`` into row ``o``.

    Output column ``c`` is column ``source[c]`` of the left row followed by
    the right row (``source[c] >= left width`` reads the right row); the
    time is the two times' join (elementwise max), the diff their product.
    One pass, instead of a gather per input column and a permutation copy.
    """
    for o in range(li.shape[0]):
        _emit(lrows, ltimes, ldiffs, li[o], rrows, rtimes, rdiffs, ri[o], source, rows, times,
              diffs, o)


@kernel
def emit_ranges(prows, ptimes, pdiffs, brows, btimes, bdiffs, lo, hi, probe_is_left, source,
                rows, times, diffs):
    """:func:`emit_pairs` for every probe row ``p`` with each batch row of ``[lo[p], hi[p])``
    (no pair arrays: the join writes its output straight from the ranges).  The left
    input is the probe side when ``probe_is_left``, else the batch side."""
    o = 0
    for p in range(lo.shape[0]):
        for q in range(lo[p], hi[p]):
            if probe_is_left:
                _emit(prows, ptimes, pdiffs, p, brows, btimes, bdiffs, q, source, rows, times,
                      diffs, o)
            else:
                _emit(brows, btimes, bdiffs, q, prows, ptimes, pdiffs, p, source, rows, times,
                      diffs, o)
            o += 1
