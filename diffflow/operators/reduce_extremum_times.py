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

Corrections at times not yet complete.  The rule's closure reaches later
rounds than the frontier.  Rather than hold those times as pending (a pending
key's output is not yet right at them, so its next change would have to read
the group), the rule makes the corrections there at once and keeps them in
``early`` until the frontier passes their times: the key's output is the
output trace plus its early corrections, right at every time, and its next
change takes the rule again.  If the input changes below an early time, the
rule's closure holds that time (an output time) and amends it.  A key that
leaves the rule turns its early corrections back into pending times, which
the general path owes as before.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from diffflow.arrangements import columnar, small
from diffflow.arrangements.small import expand_ranges
from diffflow.arrangements.updates import Updates, concat
from diffflow.lattice.times import rows_less_equal
from diffflow.operators.reduce_abelian import key_index
from diffflow.operators.reduce_times import advanced, chain_prefix, unique_pairs

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


def gather_evidence(column, in_spine, out_spine, key_width, keys, delta, early) -> Evidence:
    """The :class:`Evidence` for ``keys`` (sorted, distinct) of ``delta``'s updates.

    ``column`` is the aggregated value column (after the key); every key of
    ``keys`` has updates in ``delta``, and ``delta`` only those.  ``early``:
    output updates not yet in ``out_spine`` (consolidated; any keys).
    """
    rows = np.ascontiguousarray(delta.rows)
    changed, _, _ = columnar.consolidate(rows, np.zeros((len(rows), 1), np.int64),
                                         np.ones(len(rows), np.int64))
    key = key_index(keys, np.ascontiguousarray(changed[:, :key_width]))
    d_row, _ = columnar.key_ranges(changed, rows)
    d_row, d_times, d_diffs = _grouped(d_row, delta.times, delta.diffs)
    h_row, _, h_times, h_diffs = in_spine.gather(changed, width=changed.shape[1])
    h_row, h_times, h_diffs = _grouped(h_row, h_times, h_diffs)
    o_key, o_rows, o_times, o_diffs = gather_grouped(out_spine, keys, early)
    return Evidence(key, changed[:, key_width + column], h_row, h_times, h_diffs,
                    d_row, d_times, d_diffs, o_key, o_rows[:, key_width], o_times, o_diffs)


def gather_grouped(spine, keys, early=None):
    """``spine.gather(keys)`` with ``early``'s updates of those keys added (updates not yet
    in the spine; any keys, or None), grouped by key: ``(key index, rows, times, diffs)``."""
    q, rows, times, diffs = spine.gather(keys)
    if early is not None and len(early):
        lo, hi = columnar.key_ranges(np.ascontiguousarray(early.rows[:, :keys.shape[1]]), keys)
        eq, pos = expand_ranges(lo, hi)
        q, rows = np.concatenate([q, eq]), np.concatenate([rows, early.rows[pos]])
        times = np.concatenate([times, early.times[pos]])
        diffs = np.concatenate([diffs, early.diffs[pos]])
    return _grouped(q, rows, times, diffs)


def _ranges(group, n):
    """Start and end offsets of each of ``n`` groups in a non-decreasing ``group``."""
    offsets = group_offsets(group, n)
    return offsets[:-1], offsets[1:]


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


def chain_rule(kind, ev: Evidence, keys, new_counts, new_t):
    """The rule and its corrections by one kernel: ``(bad, corrections or None)``, ``bad`` a
    bool per key of ``keys`` (the keys of ``ev``), when the new times are rounds of one
    outer time (an epoch) and every other time lies at or below it; else None
    (:func:`extremum_at` serves).

    ``new_counts``: how many of ``new_t`` (grouped by key) each key has.  The compiled sweep
    is :func:`diffflow.operators._chain_kernels.chain_rule`; :func:`extremum_at` with
    the driver's closure and corrections is its reference (the tests run both).
    """
    prefix = chain_prefix(new_t, ev.hist_times, ev.delta_times, ev.out_times)
    if prefix is None:
        return None
    from diffflow.operators._chain_kernels import chain_rule as kernel

    m, n_rows = len(keys), len(ev.value)
    offsets = np.zeros(m + 1, np.int64)
    np.cumsum(new_counts, out=offsets[1:])
    last = [np.ascontiguousarray(t[:, -1])
            for t in (new_t, ev.hist_times, ev.delta_times, ev.out_times)]
    c_key, c_round, c_value, c_diff, bad = kernel(
        kind == "min", offsets, last[0], group_offsets(ev.key, m), np.ascontiguousarray(ev.value),
        group_offsets(ev.hist_row, n_rows), last[1], np.ascontiguousarray(ev.hist_diffs),
        group_offsets(ev.delta_row, n_rows), last[2], np.ascontiguousarray(ev.delta_diffs),
        group_offsets(ev.out_key, m), np.ascontiguousarray(ev.out_value), last[3],
        np.ascontiguousarray(ev.out_diffs))
    if not len(c_key):
        return bad, None
    kk = keys.shape[1]
    rows = np.empty((len(c_key), kk + 1), np.int64)
    rows[:, :kk] = keys[c_key]
    rows[:, kk] = c_value
    times = np.empty((len(c_key), new_t.shape[1]), np.int64)
    times[:, :-1] = prefix
    times[:, -1] = c_round
    return bad, Updates(rows, times, c_diff)


def group_offsets(group, n):
    """``n + 1`` offsets of each of ``n`` groups in a non-decreasing ``group`` (int64, for
    the kernels)."""
    return np.searchsorted(group, np.arange(n + 1)).astype(np.int64)


def restricted(delta, mask) -> Updates:
    """The updates of ``delta`` (an ``Updates`` or a ``Batch``) that ``mask`` selects."""
    return Updates(delta.rows[mask], delta.times[mask], delta.diffs[mask])


# the rule is tried while a moving average of the share of keys it settled is at least
# RULE_WORTH; each step it is not tried the average rises by RULE_RETRY (so it is tried again)
RULE_WORTH = 0.3
RULE_RETRY = 0.05
# ... and while the input holds at least this many rows per output row: with smaller groups
# (grids ~4, chains ~3; R-MAT graphs ~20) the general path's reads cost less than the rule's
RULE_GROUP_ROWS = 8


class ExtremumAtTimes:
    """The reduce driver's use of the rule (a mixin of :class:`.reduce.ReduceOp`, whose
    ``extremum``, ``early``, pending times, traces and time helpers it uses)."""

    rule_odds = 1.0  # the moving average of the share of keys the rule settled

    def _by_rule(self, new_k, new_t, delta, frontier):
        """Settle the keys whose min/max follows from the change at all their interesting
        times, when the history is not all below the new times (else ``_simple`` does).

        Returns the other keys' ``(new_k, new_t, delta)``; the settled keys'
        corrections join :attr:`early` (``_early_due`` emits them when their times are
        complete).  Keys the rule gives up leave their early corrections as pending
        times.
        """
        kk = self.key_width
        starts, keys, has_early = self._keys_early(new_k)
        lower = self._lower(new_t)
        if not has_early.any() and self._history_below(new_t.min(axis=0), lower):
            return new_k, new_t, delta  # every key simple: _simple's shortcut
        ruled = np.ones(len(keys), dtype=bool)
        if self.rule_odds < RULE_WORTH:  # the rule failed for most keys lately (cuts of
            ruled[:] = False             # deep chains): don't pay for trying, for a while
            self.rule_odds += RULE_RETRY
        elif len(self.in_spine) < RULE_GROUP_ROWS * len(self.out_spine):
            ruled[:] = False  # small groups (grids, chains): reading them costs less
        if len(self.pending_keys):  # the output is not yet right at a key's pending times
            lo, hi = columnar.key_ranges(self.pending_keys, keys)
            ruled &= hi == lo
        at, _ = columnar.key_ranges(keys, np.ascontiguousarray(delta.rows[:, :kk]))
        found = made = None
        if ruled.any():
            rk = keys[ruled]
            pairs = np.repeat(ruled, np.diff(starts))
            ev = gather_evidence(self.extremum[1], self.in_spine, self.out_spine, kk, rk,
                                 restricted(delta, ruled[at]), self.early)
            compiled = chain_rule(self.extremum[0], ev, rk, np.diff(starts)[ruled],
                                  new_t[pairs]) if small.loaded() else None
            if compiled is not None:  # a chain of rounds: the rule and corrections at once
                bad, made = compiled
            else:
                hq, ht = ev.history()
                qk, qt = self._interesting(new_k[pairs], new_t[pairs],
                                           (hq, advanced(ht, lower)))
                q_key = key_index(rk, qk)
                present, values, fails = extremum_at(self.extremum[0], ev, len(rk), q_key, qt)
                bad = np.zeros(len(rk), dtype=bool)
                bad[q_key[fails]] = True
                good = ~bad[q_key]
                if good.any():
                    found = (qk[good], qt[good], present[good], values[good])
            self.rule_odds = 0.5 * self.rule_odds + 0.5 * (1 - bad.mean())
            ruled[np.flatnonzero(ruled)[bad]] = False
        self._early_to_pending(keys[has_early & ~ruled])
        if found is not None:  # corrections at every interesting time, complete or not
            base = self.early
            if len(base):  # (only the settled keys' early corrections matter to them)
                lo, hi = columnar.key_ranges(rk[~bad], np.ascontiguousarray(base.rows[:, :kk]))
                base = base.take(hi > lo)
            made = self._corrections(found[0], found[1], known=found[2:], base=base)
        if made is not None:
            self.early = concat([self.early, made], self.out_spine.width,
                                self.ctx.dim).consolidated()
        rest = ~np.repeat(ruled, np.diff(starts))
        return new_k[rest], new_t[rest], restricted(delta, ~ruled[at])

    def _keys_early(self, new_k):
        """``(starts, keys, has_early)`` of sorted ``new_k``: its groups' starts, distinct
        keys, and which of them have early corrections."""
        starts = columnar.group_starts(new_k)
        keys = new_k[starts[:-1]]
        has_early = np.zeros(len(keys), dtype=bool)
        if len(self.early):
            lo, hi = columnar.key_ranges(
                np.ascontiguousarray(self.early.rows[:, :self.key_width]), keys)
            has_early = hi > lo
        return starts, keys, has_early

    def _early_to_pending(self, keys) -> None:
        """Turn the early corrections of ``keys`` into pending times (the general path's)."""
        if not len(keys) or not len(self.early):
            return
        kk = self.key_width
        lo, hi = columnar.key_ranges(keys, np.ascontiguousarray(self.early.rows[:, :kk]))
        mine = hi > lo
        if not mine.any():
            return
        self.pending_keys, self.pending_times = unique_pairs(
            np.concatenate([self.pending_keys, self.early.rows[mine, :kk]]),
            np.concatenate([self.pending_times, self.early.times[mine]]))
        self.early = self.early.take(~mine)

    def _early_due(self, frontier):
        """The early corrections the frontier has passed (taken out of :attr:`early`), or
        None."""
        due = np.ones(len(self.early), dtype=bool) if frontier.is_empty() else \
            ~frontier.admits(self.early.times)
        if not due.any():
            return None
        out = self.early.take(due)
        self.early = self.early.take(~due)
        return out
