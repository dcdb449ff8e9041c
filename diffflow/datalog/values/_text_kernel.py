"""Output text of integer rows (numba; compiled on first use): what a relation of numbers
writes, without a Python string per value."""
from __future__ import annotations

import numpy as np

from diffflow.common.jit import kernel


@kernel
def int_rows_text(rows, delimiter):
    """The bytes of ``rows`` (``(n, w)`` int64) as text: values in decimal, ``delimiter``
    (uint8 bytes) between them, a newline after each row.

    >>> bytes(int_rows_text(np.array([[1, -20], [305, 0]]), np.frombuffer(b"\\t", np.uint8)))
    b'1\\t-20\\n305\\t0\\n'
    """
    n, w = rows.shape
    size = 0
    for i in range(n):
        for j in range(w):
            size += _width(rows[i, j])
    size += n * (max(w - 1, 0) * len(delimiter) + 1)
    out = np.empty(size, np.uint8)
    at = 0
    for i in range(n):
        for j in range(w):
            if j > 0:
                for b in delimiter:
                    out[at] = b
                    at += 1
            value = rows[i, j]
            end = at + _width(value)
            magnitude = _magnitude(value)
            if value < 0:
                out[at] = 45  # '-'
            k = end
            while True:
                k -= 1
                out[k] = 48 + np.uint8(magnitude % np.uint64(10))
                magnitude //= np.uint64(10)
                if magnitude == 0:
                    break
            at = end
        out[at] = 10  # '\n'
        at += 1
    return out


@kernel
def _width(value):
    """Characters of ``value`` in decimal, its sign included."""
    magnitude = _magnitude(value)
    width = 1 if value >= 0 else 2
    while magnitude >= np.uint64(10):
        magnitude //= np.uint64(10)
        width += 1
    return width


@kernel
def _magnitude(value):
    """``|value|`` as uint64, int64's least value too (-(v + 1) + 1 never overflows)."""
    if value >= 0:
        return np.uint64(value)
    return np.uint64(-(value + 1)) + np.uint64(1)
