"""Rows grouped by the group their bin belongs to: a stable counting sort done a slice at a
time (what a rescaling step index builds ahead of the steps,
:mod:`diffflow.runtime.rescale.step_index`).

A batch's rows carry their bin (``bins[i]``); ``group_of_bin[b]`` names the group of bin
``b`` (a plan step), ``-1`` for none.  :func:`count_groups` counts rows per group over a
slice, :func:`scatter_rows_by_group` copies a slice's rows to their group's place.  Both call
the numba kernels of this package (compiled on first use).

>>> import numpy as np
>>> bins, group_of_bin = np.array([0, 1, 0, 2]), np.array([1, -1, 0])
>>> counts = np.zeros(3, np.int64); count_groups(bins, group_of_bin, 0, 4, counts)
>>> counts.tolist()       # [rows of no group, of group 0, of group 1]
[1, 1, 2]
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar


def count_groups(bins: np.ndarray, group_of_bin: np.ndarray, start: int, stop: int,
                 counts: np.ndarray) -> None:
    """Add to ``counts[g + 1]`` the rows ``start <= i < stop`` whose bin is in group ``g``
    (rows of no group count at ``counts[0]``)."""
    columnar._k().count_groups(bins, group_of_bin, start, stop, counts)


def scatter_rows_by_group(bins, group_of_bin, start: int, stop: int, cursor, rows, times,
                          diffs, out_rows, out_times, out_diffs, out_bins) -> None:
    """Copy the updates ``start <= i < stop`` whose bin is in a group ``g >= 0`` to
    ``cursor[g]`` (then advanced) in the ``out_`` arrays; rows of no group are skipped.

    >>> bins, group_of_bin = np.array([0, 1, 0]), np.array([0, 0])
    >>> rows, times, diffs = np.array([[5], [6], [7]]), np.zeros((3, 1), np.int64), np.ones(3, np.int64)
    >>> out = [np.zeros((3, 1), np.int64), np.zeros((3, 1), np.int64), np.zeros(3, np.int64),
    ...        np.zeros(3, np.int64)]
    >>> scatter_rows_by_group(bins, group_of_bin, 0, 3, np.zeros(1, np.int64), rows, times,
    ...                       diffs, *out)
    >>> out[0].ravel().tolist(), out[3].tolist()
    ([5, 6, 7], [0, 1, 0])
    """
    columnar._k().scatter_rows_by_group(bins, group_of_bin, start, stop, cursor, rows, times,
                                        diffs, out_rows, out_times, out_diffs, out_bins)
