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
