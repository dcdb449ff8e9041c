"""numpy tactics for the reduce driver's partially ordered times, before the kernels load.

Over partially ordered times the driver (:mod:`.reduce`) needs each key's *interesting
times* -- the closure of its new times under join with its history -- and, among its
queries, those with no strictly earlier query of their key.  The numba kernels
(``_reduce_kernels``) compute both for any input; a fresh process computes them here, with
numpy, while :mod:`diffflow.arrangements.small`'s account says numpy should serve and the
input is one numpy handles in a few passes.  Otherwise these return None and the driver calls
the kernels (loading them):

* :func:`closure_groups`, when the pairs of times to join are few enough (a key whose times
  form a chain -- inside a loop, history advanced by the frontier often holds just the rounds
  of the one epoch in flight -- costs a sort, as in the kernels);
* :func:`ready_pairs`, when the pairs of queries within keys are few enough to compare all.

Both give the kernels' answers (the tests compare them): the closure as a set (the driver
consolidates it), readiness exactly.  The plain-Python ``closure_groups_small`` and
``ready_small`` serve a few times; ``advanced`` and ``unique_pairs`` are the driver's
history and query helpers.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.small import expand_ranges
from diffflow.lattice.times import advance_by

# Pairs of queries within keys up to which ready_pairs compares them all (~0.1 s of numpy).
READY_PAIRS = 1 << 22


def closure_groups(new_t, new_starts, hist_t, hist_starts):
    """``(group, times)`` of every key's closure, as ``_reduce_kernels.join_closure_groups``
    gives them (as a set: here with repeats), or None when the pairs to join exceed
    :data:`READY_PAIRS`.

    A key whose new and history times form a chain takes the kernels' shortcut: the join of
    two times is the larger one, so the closure is every time at or after the smallest new
    time.  The other keys' closures are built in ``d`` rounds (``d`` coordinates), each
    joining every time found so far with every time of its key: the join of any set of times
    is the join of at most ``d`` of them (one reaching the maximum in each coordinate), so
    the closure is ``{n | x1 | ... | xd}`` over new times ``n`` and times ``x`` of the key.

    >>> g, t = closure_groups(np.array([[1, 0]]), np.array([0, 1]),
    ...                       np.array([[0, 1], [0, 2]]), np.array([0, 2]))
    >>> sorted(map(tuple, t.tolist()))
    [(1, 0), (1, 1), (1, 2)]
    """
    groups = len(new_starts) - 1
    times = np.concatenate([new_t, hist_t])
    group = np.concatenate([np.repeat(np.arange(groups), np.diff(new_starts)),
                            np.repeat(np.arange(groups), np.diff(hist_starts))])
    fresh = np.zeros(len(times), dtype=bool)
    fresh[:len(new_t)] = True
    # by group, then by the sum of the coordinates (a linear extension of the product order)
    order = np.lexsort((times.sum(axis=1), group))
    times, group, fresh = times[order], group[order], fresh[order]
    chain = np.ones(groups, dtype=bool)
    if len(times) > 1:
        chain[group[1:][np.any(times[:-1] > times[1:], axis=1) & (group[1:] == group[:-1])]] = False
    at = np.arange(len(times))
    first_fresh = np.zeros(groups, np.int64)  # per group, where its smallest new time sits
    present, first = np.unique(group[fresh], return_index=True)
    first_fresh[present] = at[fresh][first]
    keep = chain[group] & (at >= first_fresh[group])
    found = [(group[keep], times[keep])]
    if not chain.all():
        rest = _rounds(times[~chain[group]], group[~chain[group]], fresh[~chain[group]])
        if rest is None:
            return None
        found.append(rest)
    return (np.concatenate([g for g, _ in found]),
            np.concatenate([t for _, t in found]).reshape(-1, new_t.shape[1]))


def _rounds(times, group, fresh):
    """The closures of keys whose times are not a chain (``times`` grouped by ``group``):
    ``d`` rounds of joining what was found with every time of the key, or None."""
    starts = np.searchsorted(group, np.unique(group))
    ends = np.append(starts[1:], len(group))
    slot = np.searchsorted(group[starts], group)  # each time's key, as an index of starts
    found_key, found = slot[fresh], times[fresh]
    for _ in range(times.shape[1]):
        lo, hi = starts[found_key], ends[found_key]
        if int((hi - lo).sum()) > READY_PAIRS:
            return None
        which, other = expand_ranges(lo, hi)
        joined = np.maximum(found[which], times[other])
        keys = np.concatenate([found_key, found_key[which]])
        both = np.concatenate([found, joined])
        rows = np.concatenate([keys[:, None], both], axis=1)
        distinct = np.unique(rows, axis=0)
        if len(distinct) == len(found):
            break  # nothing new: closed
        found_key, found = distinct[:, 0], np.ascontiguousarray(distinct[:, 1:])
    return group[starts][found_key], found


def ready_pairs(times, starts):
    """``_reduce_kernels.ready_mask``: True for a time with no other time ``<=`` it in its
    group (``times[starts[g]:starts[g + 1]]``), comparing every pair within groups; None when
    there are more than :data:`READY_PAIRS` pairs.

    >>> ready_pairs(np.array([[0, 1], [1, 0], [1, 1], [5, 5]]), np.array([0, 3, 4])).tolist()
    [True, True, False, True]
    """
    sizes = np.diff(starts)
    if int((sizes * sizes).sum()) > READY_PAIRS:
        return None
    query, other = expand_ranges(np.repeat(starts[:-1], sizes), np.repeat(starts[1:], sizes))
    below = np.all(times[other] <= times[query], axis=1)
    below &= other != query
    return np.bincount(query[below], minlength=len(times)) == 0


def unique_pairs(keys: np.ndarray, times: np.ndarray, sorted_keys: bool = False):
    """Distinct (key, time) pairs, sorted by key then time.  ``sorted_keys``: the keys are
    sorted (a batch's rows); then when every time is the same (a loop round's batch) the
    distinct keys are found by one pass, without the sort (and its copies) of a
    consolidation.

    >>> k, t = unique_pairs(np.array([[1], [1], [2]]), np.array([[0, 3]] * 3), sorted_keys=True)
    >>> k.tolist(), t.tolist()
    ([[1], [2]], [[0, 3], [0, 3]])
    """
    if sorted_keys and len(keys) > 1 and (times == times[0]).all():
        starts = columnar.group_starts(np.ascontiguousarray(keys))[:-1]
        return (np.ascontiguousarray(keys[starts]),
                np.ascontiguousarray(np.broadcast_to(times[0], (len(starts), times.shape[1]))))
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


def chain_prefix(new_t: np.ndarray, *others) -> np.ndarray | None:
    """``P`` when every new time is ``(P, round)`` for one ``P`` and every time of
    ``others`` is ``(P', round)`` with ``P' <= P``, else None.

    Then each interesting time (a join with a new time) is ``(P, round)`` too, and a time
    of ``others`` counts there by its round alone: the rules of :mod:`._chain_kernels`
    hold.  Unadvanced times serve: at the times ``lower`` admits a time and its advanced
    form count alike, and the rounds they differ at hold no change.

    >>> chain_prefix(np.array([[2, 1], [2, 3]]), np.array([[1, 5], [2, 0]])).tolist()
    [2]
    >>> chain_prefix(np.array([[2, 1], [3, 0]])) is None
    True
    """
    prefix = new_t[0, :-1]
    if not (new_t[:, :-1] == prefix).all():
        return None
    for t in others:
        if len(t) and not (t[:, :-1] <= prefix).all():
            return None
    return prefix
