"""Times for the reduce driver: interesting-time closures, readiness, advancing history.

The plain-Python versions (``closure_groups_small``, ``ready_small``) serve a few times
without loading the kernels (:mod:`._reduce_kernels` holds the batched ones).
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.lattice.times import advance_by


def unique_pairs(keys: np.ndarray, times: np.ndarray):
    """Distinct (key, time) pairs, sorted by key then time."""
    k, t, _ = columnar.consolidate(np.ascontiguousarray(keys), np.ascontiguousarray(times),
                                   np.ones(len(keys), np.int64))
    return k, t


def join_closure(new_times: np.ndarray, history: np.ndarray) -> np.ndarray:
    """The closure of ``new_times`` under joining with ``history`` and itself.

    >>> join_closure(np.array([[1, 0]]), np.array([[0, 1], [0, 2]])).tolist()
    [[1, 0], [1, 1], [1, 2]]
    """
    found = {tuple(t) for t in new_times.tolist()}
    others = {tuple(t) for t in history.tolist()} | found
    todo = list(found)
    while todo:
        fresh = []
        for t in todo:
            for h in list(others):
                j = tuple(max(a, b) for a, b in zip(t, h))
                if j not in found:
                    found.add(j)
                    fresh.append(j)
        others.update(fresh)
        todo = fresh
    return np.array(sorted(found), dtype=np.int64).reshape(len(found), new_times.shape[1])


def closure_groups_small(new_t, new_starts, hist_t, hist_starts):
    """``join_closure_groups`` for a few times, without loading the kernels."""
    groups, times = [np.zeros(0, np.int64)], [np.zeros((0, new_t.shape[1]), np.int64)]
    for g in range(len(new_starts) - 1):
        closure = join_closure(new_t[new_starts[g]:new_starts[g + 1]],
                               hist_t[hist_starts[g]:hist_starts[g + 1]])
        groups.append(np.full(len(closure), g, np.int64))
        times.append(closure)
    return np.concatenate(groups), np.concatenate(times)


def ready_small(times, starts):
    """``ready_mask`` for a few times: no other time of the group is ``<=`` this one."""
    group = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    below = np.all(times[None, :, :] <= times[:, None, :], axis=2)  # [i, j]: t_j <= t_i
    below &= group[None, :] == group[:, None]
    np.fill_diagonal(below, False)
    return ~below.any(axis=1)


def advanced(times: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """``times`` advanced by the lower bound ``lower`` (only earlier epochs' times move)."""
    early = times[:, 0] < lower[:, 0].min()
    if not early.any():
        return times
    if early.all():  # (inside a loop, history is mostly earlier epochs': no masked copies)
        return advance_by(times, lower)
    return np.where(early[:, None], advance_by(times, lower), times)
