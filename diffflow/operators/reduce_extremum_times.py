"""A lone ``min`` / ``max`` at partially ordered times, from the change and the output.

Inside a loop, an update's keys are rarely *simple* (:mod:`.reduce_extremum`
covers those): a key's history holds later rounds than the update's, so the
reduce driver joins the new times with the key's whole history and evaluates
the group at every interesting time.  For label propagation that is the
in-neighbourhood of every touched node, at every time: hubs make each update
read hundreds of rows per key.  This module does without the group.

Let ``C`` be the key's changed rows (this step's delta) and ``c(t)`` its
current output value at ``t`` (the output trace, correct at every time while
the key has no pending times).  At any time ``t`` the rule of
:mod:`.reduce_extremum` gives the new value from ``c(t)`` and the
multiplicities of ``C`` before and after the delta at ``t`` -- unless ``c(t)``
vanished with no better value of ``C`` present, where the group is needed.
Both inputs of the rule change only at the output's times and at ``C``'s
history times, so when the rule holds at every join of the new times with
*those* times, the output's corrections are needed at those joins alone: any
other time sees the same inputs as the greatest such join below it.  Keys
where the rule fails anywhere (complete or not) take the driver's general path
with their whole history.  Reads: the output trace of the key and the
changed rows' histories (by whole-row prefix), never the group.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.small import expand_ranges
from diffflow.lattice.times import rows_less_equal

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


class Evidence(NamedTuple):
    """What the rule reads for keys ``0..m-1``: the changed rows (sorted, ``key``: their
    key's index, ``value``: their aggregated column), their whole histories
    (``hist_*``, grouped by changed row) and this step's part of them (``delta_*``), and
    the keys' output histories (``out_*``, grouped by key)."""

    key: np.ndarray
    value: np.ndarray
    hist_row: np.ndarray
    hist_times: np.ndarray
    hist_diffs: np.ndarray
    delta_row: np.ndarray
    delta_times: np.ndarray
    delta_diffs: np.ndarray
    out_key: np.ndarray
    out_value: np.ndarray
    out_times: np.ndarray
    out_diffs: np.ndarray

    def history(self):
        """``(key index, times)`` of every time the rule depends on (unadvanced)."""
        return (np.concatenate([self.key[self.hist_row], self.out_key]),
                np.concatenate([self.hist_times, self.out_times]))


def _grouped(index, *arrays):
    """``arrays`` reordered so that ``index`` is non-decreasing (stable)."""
    if len(index) < 2 or np.all(index[1:] >= index[:-1]):
        return (index,) + arrays
    order = np.argsort(index, kind="stable")
    return (index[order],) + tuple(a[order] for a in arrays)


def gather_evidence(column, in_spine, out_spine, key_width, keys, delta) -> Evidence:
    """The :class:`Evidence` for ``keys`` (sorted, distinct) of ``delta``'s updates.

    ``column`` is the aggregated value column (after the key); every key of
    ``keys`` has updates in ``delta``, and ``delta`` only those.
    """
    rows = np.ascontiguousarray(delta.rows)
    changed, _, _ = columnar.consolidate(rows, np.zeros((len(rows), 1), np.int64),
                                         np.ones(len(rows), np.int64))
    key, _ = columnar.key_ranges(keys, np.ascontiguousarray(changed[:, :key_width]))
    d_row, _ = columnar.key_ranges(changed, rows)
    d_row, d_times, d_diffs = _grouped(d_row, delta.times, delta.diffs)
    h_row, _, h_times, h_diffs = in_spine.gather(changed, width=changed.shape[1])
    h_row, h_times, h_diffs = _grouped(h_row, h_times, h_diffs)
    o_key, o_rows, o_times, o_diffs = out_spine.gather(keys)
    o_key, o_value, o_times, o_diffs = _grouped(o_key, o_rows[:, key_width], o_times, o_diffs)
    return Evidence(key, changed[:, key_width + column], h_row, h_times, h_diffs,
                    d_row, d_times, d_diffs, o_key, o_value, o_times, o_diffs)


def _ranges(group, n):
    """Start and end offsets of each of ``n`` groups in a non-decreasing ``group``."""
    bounds = np.searchsorted(group, np.arange(n + 1))
    return bounds[:-1], bounds[1:]


def _sums_at(entry_group, entry_times, entry_diffs, n_groups, q_group, q_times):
    """For each query (a group and a time): the sum of its group's diffs at times ``<=``."""
    lo, hi = _ranges(entry_group, n_groups)
    q, pos = expand_ranges(lo[q_group], hi[q_group])
    seen = rows_less_equal(entry_times[pos], q_times[q])
    out = np.zeros(len(q_group), np.int64)
    np.add.at(out, q[seen], entry_diffs[pos[seen]])  # exact int64 sums
    return out


def extremum_at(kind, ev: Evidence, n_keys: int, pair_key, pair_times):
    """The rule at each ``(key index, time)`` pair: ``(present, value, fails)`` arrays.

    ``pair_key`` must be non-decreasing.  ``fails`` marks pairs whose value
    needs the group (the current extremum vanished with nothing better, or an
    output that is not one row of multiplicity one).
    """
    n = len(pair_key)
    worst = _MAX if kind == "min" else _MIN
    better = np.minimum if kind == "min" else np.maximum
    # the current output at each pair's time: one row of multiplicity 1, or none
    lo, hi = _ranges(ev.out_key, n_keys)
    q, pos = expand_ranges(lo[pair_key], hi[pair_key])
    seen = rows_less_equal(ev.out_times[pos], pair_times[q])
    table, _, mult = columnar.consolidate(
        np.ascontiguousarray(np.column_stack([q[seen], ev.out_value[pos[seen]]])),
        np.zeros((int(seen.sum()), 1), np.int64), ev.out_diffs[pos[seen]])
    count = np.bincount(table[:, 0], minlength=n)
    fails = count > 1
    fails[table[mult != 1, 0]] = True
    has_cur = count == 1
    cur = np.full(n, worst, np.int64)
    single = count[table[:, 0]] == 1
    cur[table[single, 0]] = table[single, 1]

    # every changed row of each pair's key, with its multiplicity after and before the delta
    c_lo, c_hi = _ranges(ev.key, n_keys)
    pair, row = expand_ranges(c_lo[pair_key], c_hi[pair_key])
    n_rows = len(ev.value)
    after = _sums_at(ev.hist_row, ev.hist_times, ev.hist_diffs, n_rows, row, pair_times[pair])
    before = after - _sums_at(ev.delta_row, ev.delta_times, ev.delta_diffs, n_rows, row,
                              pair_times[pair])
    value = ev.value[row]
    best = np.full(n, worst, np.int64)
    better.at(best, pair, np.where(after > 0, value, worst))
    has_best = np.zeros(n, dtype=bool)
    has_best[pair[after > 0]] = True  # (a real value may equal the placeholder)
    vanished = np.zeros(n, dtype=bool)
    vanished[pair[(before > 0) & (after <= 0) & (value == cur[pair])]] = True
    vanished &= has_cur

    strictly = best < cur if kind == "min" else best > cur
    fails |= vanished & ~(has_best & strictly)
    kept = has_cur & ~vanished
    present = kept | has_best
    new = np.where(kept, np.where(has_best, better(cur, best), cur), best)
    return present, new, fails
