"""``distinct`` and ``threshold`` at partially ordered times, over a chain of rounds.

These reducers read a key's total input multiplicity alone (``from_totals``).  Inside a
loop an update's keys are rarely *simple* (their history holds later rounds than the
update), so the reduce driver would join the new times with each key's history, hold the
incomplete ones as pending times and correct them round by round, a step each.  When the
key's times are rounds of one outer time (:func:`.reduce_times.chain_prefix`, the common
case once history is advanced), one compiled sweep
(:func:`diffflow.operators._chain_kernels.chain_totals`) gives the key's input and output
totals at every interesting round, and the corrections follow by telescoping (a correction
at a round is what ``f(input) - output`` is there minus what it was at the round before).
Nothing can fail: no group is read beyond the key's own updates.

Corrections at rounds the frontier still admits wait in the driver's ``early`` updates,
as the min/max rule's do (:mod:`.reduce_extremum_times`): the key's output is the output
trace plus its early corrections, right at every time, and a key that leaves this path
(a pending time, times that are not a chain) turns them back into pending times.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar, small
from diffflow.arrangements.updates import Updates, concat
from diffflow.operators.reduce_extremum_times import gather_grouped, group_offsets, restricted
from diffflow.operators.reduce_times import chain_prefix
from diffflow.operators.reducers import segment_starts


def totals_corrections(reducer, in_spine, out_spine, keys, new_counts, new_t, early,
                       note_negatives=None):
    """The output corrections of ``keys`` (sorted, distinct) at every interesting round, or
    None when there are none; False when the times are not a chain of rounds.

    ``new_t`` holds each key's new times (grouped by key, ``new_counts`` of them each);
    ``early``: output corrections not yet in ``out_spine``; ``note_negatives`` is given the
    keys' input totals (each the multiplicity of the key's one row: the count shortcut of
    :mod:`.reduce_abelian` must learn of negative ones).
    """
    q_in, _, t_in, d_in = gather_grouped(in_spine, keys)
    q_out, _, t_out, d_out = gather_grouped(out_spine, keys, early)
    prefix = chain_prefix(new_t, t_in, t_out)
    if prefix is None:
        return False
    from diffflow.operators._chain_kernels import chain_totals

    m = len(keys)
    offsets = np.zeros(m + 1, np.int64)
    np.cumsum(new_counts, out=offsets[1:])
    key, rounds, total_in, total_out = chain_totals(
        offsets, np.ascontiguousarray(new_t[:, -1]),
        group_offsets(q_in, m), np.ascontiguousarray(t_in[:, -1]),
        np.ascontiguousarray(d_in),
        group_offsets(q_out, m), np.ascontiguousarray(t_out[:, -1]),
        np.ascontiguousarray(d_out))
    if note_negatives is not None:
        note_negatives(total_in)
    owed = reducer.from_totals(total_in) - total_out  # what the corrections so far sum to
    change = owed.copy()
    same = key[1:] == key[:-1]
    change[1:][same] -= owed[:-1][same]  # a chain: each round's correction is the step
    at = np.flatnonzero(change)
    if not len(at):
        return None
    times = np.empty((len(at), new_t.shape[1]), np.int64)
    times[:, :-1] = prefix
    times[:, -1] = rounds[at]
    return Updates(np.ascontiguousarray(keys[key[at]]), times, change[at])


def group_sums(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact int64 sums of ``values`` per ``group`` id in ``[0, n)``.

    >>> group_sums(np.array([0, 0, 2]), np.array([1, 2, 5]), 3).tolist()
    [3, 0, 5]
    """
    out = np.zeros(n, np.int64)
    if len(group) and np.all(group[1:] >= group[:-1]):  # grouped already: one pass
        starts = segment_starts(group)
        out[group[starts]] = np.add.reduceat(values, starts)
    else:
        np.add.at(out, group, values)  # exact (bincount would go through float64)
    return out


class TotalsAtTimes:
    """The reduce driver's use of :func:`totals_corrections` (a mixin of
    :class:`.reduce.ReduceOp`, beside :class:`.reduce_extremum_times.ExtremumAtTimes`,
    whose ``early`` corrections and their helpers it shares)."""

    def _by_totals(self, new_k, new_t, delta, frontier):
        """Settle the keys without pending times by :func:`totals_corrections` when their
        times are a chain of rounds; returns the other keys' ``(new_k, new_t, delta)``.
        With the kernels loaded only (before, the driver's general path costs less than
        loading them)."""
        kk = self.key_width
        starts, keys, has_early = self._keys_early(new_k)
        if not has_early.any() and (not small.loaded() or self._history_below(
                new_t.min(axis=0), self._lower(new_t))):
            return new_k, new_t, delta  # _simple's shortcut, or the general path
        ruled = np.full(len(keys), small.loaded())  # (not loaded: the early go back pending)
        if len(self.pending_keys):  # the output is not yet right at a key's pending times
            lo, hi = columnar.key_ranges(self.pending_keys, keys)
            ruled &= hi == lo
        made = None
        if ruled.any():
            pairs = np.repeat(ruled, np.diff(starts))
            made = totals_corrections(self.reducer, self.in_spine, self.out_spine, keys[ruled],
                                      np.diff(starts)[ruled], new_t[pairs], self.early,
                                      self._note_negatives)
            if made is False:  # not a chain: every key takes the general path
                ruled[:], made = False, None
        self._early_to_pending(keys[has_early & ~ruled])
        if made is not None:
            self.early = concat([self.early, made], self.out_spine.width,
                                self.ctx.dim).consolidated()
        at, _ = columnar.key_ranges(keys, np.ascontiguousarray(delta.rows[:, :kk]))
        rest = ~np.repeat(ruled, np.diff(starts))
        return new_k[rest], new_t[rest], restricted(delta, ~ruled[at])

    def _from_totals(self, q_in, d_in, q_out, d_out, keys, times, previous_input=False):
        """Corrections of a reducer of the key's total multiplicity (distinct, threshold).

        ``(q_out, d_out)`` are the output trace's rows or, with ``previous_input``, the
        input's rows before this step (whose totals give the previous output)."""
        n = len(keys)
        total_in, total_out = group_sums(q_in, d_in, n), group_sums(q_out, d_out, n)
        self._note_negatives(total_in)
        if previous_input:
            total_out = self.reducer.from_totals(total_out)
        change = self.reducer.from_totals(total_in) - total_out
        at = np.flatnonzero(change)
        if not len(at):
            return None
        return Updates(np.ascontiguousarray(keys[at]), np.ascontiguousarray(times[at]),
                       change[at])
