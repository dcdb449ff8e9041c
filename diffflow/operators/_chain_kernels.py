"""Reduce rules over a chain of rounds, compiled (private; used by
:mod:`.reduce_extremum_times` and :mod:`.reduce_totals_times` once the kernels are loaded).

Inside a loop, once history is advanced by the frontier, a key's times are usually the
rounds of the one epoch in flight: a chain, where each time is its last coordinate.  There a
rule's interesting times and the output corrections need no pairwise closure and no
layer-by-layer accumulation: one sweep of each key's evidence in round order does them.

Per key, the interesting rounds are its evidence's rounds (new, history, output) raised to
its first new round; walking them upward while applying the evidence keeps what the rule
reads.  With ``D`` the desired output at a round and ``O`` the output there, ``E = D - O``
is what the corrections up to that round sum to (a chain: every earlier correction counts),
so the correction at a round is ``E`` minus the previous round's ``E``.

* :func:`chain_rule`, a lone min/max: the rule of :mod:`.reduce_extremum_times` (the
  changed rows' multiplicities after and before the delta, the output's values); a key
  whose rule fails at any round makes no corrections.
* :func:`chain_totals`, distinct and threshold: the key's total input and output
  multiplicities at each round (the driver applies the reducer and telescopes).

The drivers validate; these kernels assume C-contiguous int64 arrays, grouped by key (or
by changed row).
"""
import numpy as np

from diffflow.common.jit import kernel
from diffflow.operators._reduce_kernels import _stable_order

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


@kernel
def _better(a, b, is_min):
    if is_min:
        return a if a <= b else b
    return a if a >= b else b


@kernel
def _least(values, lo, hi):
    """The least of ``values[lo:hi]`` (not empty; a loop: numpy's ``min`` in a kernel makes
    its cached code need numba's array library, see :mod:`diffflow.common.jit`)."""
    least = values[lo]
    for i in range(lo + 1, hi):
        least = min(least, values[i])
    return least


@kernel
def _orders_into(ev_round, n_ev, new_round, lo, hi, r0, rounds, r_order, distinct, order,
                 work):
    """What :func:`_orders` returns, into scratch arrays (``rounds``, ``r_order``, ``distinct``, ``order``,
    ``work``: at least ``n_ev + hi - lo`` long); returns how many distinct rounds."""
    n_new = hi - lo
    n_all = n_ev + n_new
    for i in range(n_ev):
        rounds[i] = max(r0, ev_round[i])
    for i in range(n_new):
        rounds[n_ev + i] = max(r0, new_round[lo + i])
    _stable_order(rounds[:n_all], r_order[:n_all], work[:n_all])
    n = 0
    for j in range(n_all):
        r = rounds[r_order[j]]
        if n == 0 or r != distinct[n - 1]:
            distinct[n] = r
            n += 1
    _stable_order(ev_round[:n_ev], order[:n_ev], work[:n_ev])
    return n


@kernel
def _orders(ev_round, new_round, lo, hi, r0):
    """A key's interesting rounds, distinct and ascending (its evidence's and new rounds,
    raised to its first new round ``r0``), and the evidence's ascending order by round."""
    n_ev, n_all = ev_round.shape[0], ev_round.shape[0] + hi - lo
    distinct, order = np.empty(n_all, np.int64), np.empty(n_all, np.int64)
    n = _orders_into(ev_round, n_ev, new_round, lo, hi, r0, np.empty(n_all, np.int64),
                     np.empty(n_all, np.int64), distinct, order, np.empty(n_all, np.int64))
    return distinct[:n], order[:n_ev]


@kernel
def chain_rule(is_min, new_lo, new_round, row_lo, value, hist_lo, hist_round, hist_diff,
               delta_lo, delta_round, delta_diff, out_lo, out_value, out_round, out_diff):
    """Corrections of keys ``0..m-1`` by the min/max rule over rounds, and which keys fail.

    ``new_lo`` (``m + 1`` offsets) groups ``new_round`` by key; ``row_lo`` groups the
    changed rows (``value``: each one's aggregated value) by key; ``hist_lo`` and
    ``delta_lo`` group each changed row's history and this step's part of it; ``out_lo``
    groups the output's updates by key.  Returns ``(key, round, value, diff, fails)``:
    the corrections (any order) and a bool per key.
    """
    m = new_lo.shape[0] - 1
    worst = _MAX if is_min else _MIN
    bound = 4 * (new_round.shape[0] + hist_round.shape[0] + delta_round.shape[0]
                 + out_round.shape[0])
    c_key = np.empty(bound, np.int64)
    c_round = np.empty(bound, np.int64)
    c_value = np.empty(bound, np.int64)
    c_diff = np.empty(bound, np.int64)
    fails = np.zeros(m, np.bool_)
    vals = np.empty(4, np.int64)
    diffs = np.empty(4, np.int64)
    n = 0
    for k in range(m):
        start_n = n
        r0 = _least(new_round, new_lo[k], new_lo[k + 1])
        r_lo, r_hi = row_lo[k], row_lo[k + 1]
        # the key's evidence as events (round, kind, index, changed row): kinds 0 history,
        # 1 this step's delta, 2 output
        n_ev = out_lo[k + 1] - out_lo[k]
        for row in range(r_lo, r_hi):
            n_ev += hist_lo[row + 1] - hist_lo[row] + delta_lo[row + 1] - delta_lo[row]
        ev_round = np.empty(n_ev, np.int64)
        ev_kind = np.empty(n_ev, np.int64)
        ev_at = np.empty(n_ev, np.int64)
        ev_row = np.empty(n_ev, np.int64)
        e = 0
        for row in range(r_lo, r_hi):
            for i in range(hist_lo[row], hist_lo[row + 1]):
                ev_round[e], ev_kind[e], ev_at[e], ev_row[e] = hist_round[i], 0, i, row - r_lo
                e += 1
            for i in range(delta_lo[row], delta_lo[row + 1]):
                ev_round[e], ev_kind[e], ev_at[e], ev_row[e] = delta_round[i], 1, i, row - r_lo
                e += 1
        for i in range(out_lo[k], out_lo[k + 1]):
            ev_round[e], ev_kind[e], ev_at[e], ev_row[e] = out_round[i], 2, i, -1
            e += 1
        rounds, order = _orders(ev_round, new_round, new_lo[k], new_lo[k + 1], r0)

        n_rows = r_hi - r_lo
        after = np.zeros(n_rows, np.int64)      # each changed row's multiplicity
        in_delta = np.zeros(n_rows, np.int64)   # ... of which this step's delta
        n_out = out_lo[k + 1] - out_lo[k]
        o_val = np.empty(n_out, np.int64)       # the output's distinct values
        o_mult = np.zeros(n_out, np.int64)
        n_vals = 0
        # E = D - O at the previous round: at most one value gained and one lost
        prev_plus, prev_has_plus, prev_minus, prev_has_minus = 0, False, 0, False
        failed = False
        next_ev = 0
        for r in rounds:
            while next_ev < n_ev and ev_round[order[next_ev]] <= r:
                i = order[next_ev]
                at, kind = ev_at[i], ev_kind[i]
                if kind == 0:
                    after[ev_row[i]] += hist_diff[at]
                elif kind == 1:
                    in_delta[ev_row[i]] += delta_diff[at]
                else:
                    v = out_value[at]
                    slot = n_vals
                    for s in range(n_vals):
                        if o_val[s] == v:
                            slot = s
                            break
                    if slot == n_vals:
                        o_val[slot] = v
                        n_vals += 1
                    o_mult[slot] += out_diff[at]
                next_ev += 1
            # the output here: one value of multiplicity one, or none (else the rule fails)
            count, cur, odd = 0, worst, False
            for s in range(n_vals):
                if o_mult[s] != 0:
                    count += 1
                    cur = o_val[s]
                    odd = odd or o_mult[s] != 1
            if count > 1 or odd:
                failed = True
                break
            has_cur = count == 1
            best, has_best, vanished = worst, False, False
            for row in range(n_rows):
                v = value[r_lo + row]
                if after[row] > 0:
                    best = _better(best, v, is_min) if has_best else v
                    has_best = True
                elif has_cur and after[row] - in_delta[row] > 0 and v == cur:
                    vanished = True
            if vanished and not (has_best and (best < cur if is_min else best > cur)):
                failed = True  # the current value left with nothing better: needs the group
                break
            kept = has_cur and not vanished
            present = kept or has_best
            new = (_better(cur, best, is_min) if has_best else cur) if kept else best
            has_plus = present and not (has_cur and new == cur)
            has_minus = has_cur and not (present and new == cur)
            # the correction: E here minus E at the previous round, consolidated
            c = 0
            if has_plus:
                vals[c], diffs[c] = new, 1
                c += 1
            if prev_has_plus:
                vals[c], diffs[c] = prev_plus, -1
                c += 1
            if has_minus:
                vals[c], diffs[c] = cur, -1
                c += 1
            if prev_has_minus:
                vals[c], diffs[c] = prev_minus, 1
                c += 1
            for a in range(c):
                for b in range(a + 1, c):
                    if diffs[a] != 0 and vals[b] == vals[a]:
                        diffs[a] += diffs[b]
                        diffs[b] = 0
                if diffs[a] != 0:
                    c_key[n], c_round[n], c_value[n], c_diff[n] = k, r, vals[a], diffs[a]
                    n += 1
            prev_plus, prev_has_plus = new, has_plus
            prev_minus, prev_has_minus = cur, has_minus
        if failed:
            fails[k] = True
            n = start_n
    return c_key[:n], c_round[:n], c_value[:n], c_diff[:n], fails


@kernel
def chain_totals(new_lo, new_round, in_lo, in_round, in_diff, out_lo, out_round, out_diff):
    """Each key's total input and output multiplicity at each of its interesting rounds.

    ``new_lo`` (``m + 1`` offsets) groups ``new_round`` by key, ``in_lo`` and ``out_lo``
    group the key's input and output updates.  Returns ``(key, round, total_in,
    total_out)``, by key and then ascending round.  (Every per-key array is a slice of
    scratch sized once: an allocation per key cost as much as the sweep.)
    """
    m = new_lo.shape[0] - 1
    bound = new_round.shape[0] + in_round.shape[0] + out_round.shape[0]
    q_key = np.empty(bound, np.int64)
    q_round = np.empty(bound, np.int64)
    q_in = np.empty(bound, np.int64)
    q_out = np.empty(bound, np.int64)
    most = 1
    for k in range(m):
        most = max(most, in_lo[k + 1] - in_lo[k] + out_lo[k + 1] - out_lo[k]
                   + new_lo[k + 1] - new_lo[k])
    ev_round = np.empty(most, np.int64)
    ev_diff = np.empty(most, np.int64)
    ev_out = np.zeros(most, np.bool_)
    rounds = np.empty(most, np.int64)
    r_order = np.empty(most, np.int64)
    distinct = np.empty(most, np.int64)
    order = np.empty(most, np.int64)
    work = np.empty(most, np.int64)
    n = 0
    for k in range(m):
        r0 = _least(new_round, new_lo[k], new_lo[k + 1])
        n_in, n_out = in_lo[k + 1] - in_lo[k], out_lo[k + 1] - out_lo[k]
        n_ev = n_in + n_out
        for i in range(n_in):
            ev_round[i], ev_diff[i] = in_round[in_lo[k] + i], in_diff[in_lo[k] + i]
            ev_out[i] = False
        for i in range(n_out):
            e = n_in + i
            ev_round[e], ev_diff[e], ev_out[e] = out_round[out_lo[k] + i], out_diff[out_lo[k] + i], True
        n_rounds = _orders_into(ev_round, n_ev, new_round, new_lo[k], new_lo[k + 1], r0,
                                rounds, r_order, distinct, order, work)
        total_in, total_out, next_ev = 0, 0, 0
        for j in range(n_rounds):
            r = distinct[j]
            while next_ev < n_ev and ev_round[order[next_ev]] <= r:
                i = order[next_ev]
                if ev_out[i]:
                    total_out += ev_diff[i]
                else:
                    total_in += ev_diff[i]
                next_ev += 1
            q_key[n], q_round[n], q_in[n], q_out[n] = k, r, total_in, total_out
            n += 1
    return q_key[:n], q_round[:n], q_in[:n], q_out[:n]
