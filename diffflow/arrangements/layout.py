"""Bit layout of packed sort keys (see :mod:`.columnar`'s sorting strategy).

A row ``(rows | times)`` is packed into one uint64 word as ``key << low |
payload``: each varying column, offset by its minimum, takes the bits of its
range (first column most significant; constant columns take none), and the
payload is the row index or the diff.  These helpers compute that layout;
:mod:`.columnar` (one array) and :mod:`.chunked` (a list of chunks, packed
into slices of one words array) share them.  Pure Python on ``O(w + d)``
values, except :func:`minmax`, which takes the kernel module as argument
so that importing this module loads no numba.
"""
from __future__ import annotations

import numpy as np


def minmax(K, chunks, ncols: int):
    """Per-column ``(mins, maxs)`` of ``rows | times`` over non-empty chunks.

    ``chunks`` is a list of ``(rows, times, ...)`` tuples of validated
    arrays; ``K`` is the kernel module (``columnar._k()``).

    >>> from diffflow.arrangements.columnar import _k
    >>> a, b = (np.array([[3]]), np.array([[0]])), (np.array([[-1]]), np.array([[7]]))
    >>> lo, hi = minmax(_k(), [a, b], 2)
    >>> lo.tolist(), hi.tolist()
    ([-1, 0], [3, 7])
    """
    mins = np.empty(ncols, dtype=np.int64)
    maxs = np.empty(ncols, dtype=np.int64)
    K.col_minmax(chunks[0][0], chunks[0][1], mins, maxs)
    if len(chunks) > 1:
        lo = np.empty(ncols, dtype=np.int64)
        hi = np.empty(ncols, dtype=np.int64)
        for c in chunks[1:]:
            K.col_minmax(c[0], c[1], lo, hi)
            np.minimum(mins, lo, out=mins)
            np.maximum(maxs, hi, out=maxs)
    return mins, maxs


def key_bits(mins: np.ndarray, maxs: np.ndarray):
    """``[(column, bits)]`` of the varying columns (constant ones need none), and the total.

    >>> key_bits(np.array([0, 5, -1]), np.array([6, 5, 0]))
    ([(0, 3), (2, 1)], 4)
    """
    cols = []
    for c in range(len(mins)):
        b = (int(maxs[c]) - int(mins[c])).bit_length()  # Python ints: full int64 ranges fit
        if b:
            cols.append((c, b))
    return cols, sum(b for _, b in cols)


def payload(ib: int, total: int, dmin=None, dmax=None):
    """``(mode, low)``: the diff itself as payload (mode 2) when its range is
    known and fits beside the ``total`` key bits, else the ``ib``-bit row index (mode 1).

    >>> payload(20, 30, -1, 1), payload(20, 63, -1, 1), payload(20, 30)
    ((2, 2), (1, 20), (1, 20))
    """
    if dmin is not None:
        dbits = (int(dmax) - int(dmin)).bit_length()
        if total + dbits <= 64:
            return 2, dbits
    return 1, ib


def fields(cols, total: int, low: int, ncols: int):
    """Single-word layout ``(c_sh, c_mask, p_col)`` of ``key_bits``'s columns above ``low``.

    >>> sh, mask, p = fields([(0, 3), (2, 1)], 4, 2, 3)
    >>> sh.tolist(), mask.tolist(), p.tolist()
    ([3, 0, 2], [7, 0, 1], [0, 2])
    """
    c_sh = np.zeros(ncols, dtype=np.uint64)
    c_mask = np.zeros(ncols, dtype=np.uint64)
    off = low + total
    for c, b in cols:
        off -= b
        c_sh[c] = off
        c_mask[c] = (1 << b) - 1
    return c_sh, c_mask, np.array([c for c, _ in cols], dtype=np.int64)
