"""The greedy pass of a choice with several domains (numba; compiled on first use)."""
from __future__ import annotations

import numpy as np

from diffflow.common.jit import kernel


@kernel
def greedy_choice(ids, bounds):
    """Which rows a greedy pass keeps, group by group (``bounds``: group starts + end): a row
    is kept when none of its domain ids (``ids[i, d]``, dense per domain) is taken yet in
    its group.

    >>> greedy_choice(np.array([[0, 0], [0, 1], [1, 0], [1, 1]]), np.array([0, 4])).tolist()
    [True, False, False, True]
    """
    n, k = ids.shape
    size = 0
    for i in range(n):
        for d in range(k):
            size = max(size, ids[i, d] + 1)
    stamp = np.zeros((k, size), np.int64)  # the group (+1) that took each domain value
    keep = np.zeros(n, np.bool_)
    for g in range(len(bounds) - 1):
        for i in range(bounds[g], bounds[g + 1]):
            free = True
            for d in range(k):
                if stamp[d, ids[i, d]] == g + 1:
                    free = False
                    break
            if free:
                keep[i] = True
                for d in range(k):
                    stamp[d, ids[i, d]] = g + 1
    return keep
