"""Kernel calls as the columnar wrappers make them, for tests that compare with the kernels
whatever tactic the wrappers would take."""
import numpy as np


def kernel_gather(K, rows, times, diffs, width, queries):
    """``columnar.gather_prefix`` as its kernels (``K``, the kernel module) do it."""
    lo, hi = np.empty(len(queries), np.int64), np.empty(len(queries), np.int64)
    total = K.prefix_ranges(rows, queries, width, lo, hi, np.empty(K.GROUP, np.int64))
    out = (np.empty(total, np.int64), np.empty((total, rows.shape[1]), np.int64),
           np.empty((total, times.shape[1]), np.int64), np.empty(total, np.int64))
    K.gather_ranges(rows, times, diffs, lo, hi, *out)
    return out
