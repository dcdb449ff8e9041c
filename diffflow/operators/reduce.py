"""``reduce``: per-key reductions that are correct for partially ordered times.

Mathematics
-----------
For each key, the output collection must satisfy ``O(t) = f(I(t))`` at every
time ``t``, where ``I(t)`` accumulates the input updates at times ``<= t``.
When input changes at new times ``N``, ``I`` changes only at times ``>= n``
for some ``n`` in ``N``, and ``f(I(t)) - O(t)`` can only change value at
joins of a new time with times already in the key's history (input times,
output times, pending times).  These *interesting times* are the closure of
``N`` under joining with the history.  At each interesting time ``t`` (in an
order that extends the product order) the driver emits the correction
``f(I(t)) - O(t)``, where ``O(t)`` includes the corrections just made at
earlier times.  Interesting times that the input frontier still admits are
not complete -- more input may arrive at or below them -- so they are held as
capabilities and processed once the frontier passes them.

With totally ordered times (``d == 1``) the closure adds nothing: the new
times are the interesting times, and the driver skips computing it.

Driver and tactic
-----------------
This module is the driver: traces, frontiers, interesting times, pending
capabilities.  What ``f`` computes is a tactic from :mod:`.reducers` (or a
user's function, :mod:`.reduce_custom`), applied to many (key, time) queries
at once; the driver relies on it being a pure function of each group's input.  :mod:`.reduce_reference` is a plain
per-key implementation of the same mathematics, kept for tests.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar, small
from diffflow.arrangements.batch import Batch
from diffflow.arrangements.small import expand_ranges
from diffflow.arrangements.spine import Spine
from diffflow.arrangements.updates import Updates, concat
from diffflow.lattice.times import minimal, rows_less_equal
from diffflow.operators.base import Operator
from diffflow.operators.reduce_abelian import abelian_corrections, abelian_of
from diffflow.operators.reduce_extremum import extremum_corrections, extremum_of
from diffflow.operators.reduce_extremum_times import ExtremumAtTimes
from diffflow.operators.reduce_kept import KeptStates
from diffflow.operators.reduce_totals_times import TotalsAtTimes, group_sums
from diffflow.operators.reduce_times import advanced as _advanced
from diffflow.operators.reduce_times import (
    closure_groups,
    join_closure,  # noqa: F401 (a public name here)
    ready_pairs,
)
from diffflow.operators.reduce_times import (
    closure_groups_small as _closure_groups_small,
)
from diffflow.operators.reduce_times import ready_small as _ready_small
from diffflow.operators.reduce_times import unique_pairs as _unique_pairs

_KERNELS = None


def _kernels():
    """The numba kernels, imported (and compiled) on first use."""
    global _KERNELS
    if _KERNELS is None:
        from diffflow.operators import _reduce_kernels
        _KERNELS = _reduce_kernels
    return _KERNELS


class ReduceOp(ExtremumAtTimes, TotalsAtTimes, Operator):
    """Maintain ``f(input)`` per key in an output trace; emit its changes."""

    kind = "reduce"
    frontier_blind = True
    compaction = "input"

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.key_width = kk = node.params["key_width"]
        self.reducer = node.params["reducer"]
        if hasattr(self.reducer, "bind_symbols"):  # a tactic comparing symbols by text
            self.reducer = self.reducer.bind_symbols(ctx.symbols)
        self.extremum = extremum_of(self.reducer)  # a lone min/max: O(change) shortcut
        # counts, int sums and distinct: O(change) shortcut
        self.abelian = abelian_of(self.reducer)
        # a graph tactic's state per key between epochs (components, reachability): O(change)
        kept = getattr(self.reducer, "kept", None)
        self.kept = KeptStates(kept) if kept is not None else None
        # whether a row of negative multiplicity was ever met: the count/sum shortcut then
        # cannot tell a group's presence from its count (see reduce_abelian)
        self.negatives_seen = False
        # corrections made at times not yet complete (reduce_extremum_times, _totals_times)
        self.early = Updates.empty(kk + self.reducer.out_width, ctx.dim)
        # a function of each key's total multiplicity alone, with no value columns
        self.by_totals = hasattr(self.reducer, "from_totals") and self.reducer.out_width == 0
        self.in_spine = ctx.peer(node.inputs[0]).spine
        self.out_spine = Spine(kk + self.reducer.out_width, kk, ctx.dim)
        self.pending_keys = np.zeros((0, kk), np.int64)
        self.pending_times = np.zeros((0, ctx.dim), np.int64)
        self.fed = False  # whether any input arrived yet (before: the input trace is empty)

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "early" not in state:  # pickled before the extremum rule at partial orders
            self.early = Updates.empty(self.out_spine.width, self.out_spine.dim)
        if "abelian" not in state:  # pickled before the count/sum shortcut existed
            self.abelian = abelian_of(self.reducer)
            self.negatives_seen = True  # the rows it met were not watched: read groups
        if "kept" not in state:
            self.kept = None

    def capabilities(self):
        if len(self.early):
            return np.concatenate([self.pending_times, self.early.times])
        return self.pending_times if len(self.pending_times) else None

    def traces(self) -> list:
        return [self.out_spine]

    def compact(self, frontier) -> None:
        self.out_spine.set_compaction(frontier)

    def imported(self) -> None:
        self.fed = True  # the input trace now holds more than the first delta
        if self.kept is not None:  # states describe the rows held before
            self.kept.forget()
        if self.abelian is not None:  # rows that arrived before this operator: look once
            every = self.in_spine.to_updates()
            _, _, mults = columnar.consolidate(every.rows, np.zeros((len(every), 1), np.int64),
                                               every.diffs)
            self._note_negatives(mults)

    def _note_negatives(self, mults) -> None:
        """Remember a negative multiplicity among a group's accumulated rows."""
        if self.abelian is not None and len(mults) and mults.min() < 0:
            self.negatives_seen = True

    def step(self, inputs, frontiers):
        frontier = frontiers[0]
        kk, dim = self.key_width, self.ctx.dim
        delta = self.port_chunks(inputs, 0)
        cand_k, cand_t = self.pending_keys, self.pending_times
        made = None
        if len(delta):
            new_k, new_t = _unique_pairs(delta.rows[:, :kk], delta.times,
                                         sorted_keys=isinstance(delta, Batch))
            if self.extremum is not None and dim > 1 and self.fed:
                new_k, new_t, delta = self._by_rule(new_k, new_t, delta, frontier)
                cand_k, cand_t = self.pending_keys, self.pending_times  # (+ given-up keys')
            elif self.by_totals and dim > 1 and self.fed:
                new_k, new_t, delta = self._by_totals(new_k, new_t, delta, frontier)
                cand_k, cand_t = self.pending_keys, self.pending_times  # (+ given-up keys')
            if len(new_k):
                made, new_k, new_t, history = self._simple(new_k, new_t, frontier, delta)
                if dim > 1 and len(new_k):
                    new_k, new_t = self._interesting(new_k, new_t, history)
            if len(cand_k):
                new_k, new_t = _unique_pairs(np.concatenate([cand_k, new_k]),
                                             np.concatenate([cand_t, new_t]))
            cand_k, cand_t = new_k, new_t
        corrections = None
        if len(cand_k):
            if frontier.is_empty():
                complete = np.ones(len(cand_k), dtype=bool)
            else:
                complete = ~frontier.admits(cand_t)
            self.pending_keys, self.pending_times = cand_k[~complete], cand_t[~complete]
            if complete.any():
                corrections = self._corrections(cand_k[complete], cand_t[complete])
        due = self._early_due(frontier) if len(self.early) else None  # the rule's
        parts = [c for c in (made, corrections, due) if c is not None]
        if self.kept is not None and len(delta):
            self.kept.settle(delta.rows[:, :kk])
        if not parts and frontier == self.out_spine.upper:
            return []
        corrections = concat(parts, self.out_spine.width, dim) if parts else None
        self._seal(corrections, frontier)
        return [corrections] if corrections is not None and len(corrections) else []

    def _seal(self, corrections, frontier):
        if corrections is None or not len(corrections):
            if frontier == self.out_spine.upper:
                return
            corrections = Updates.empty(self.out_spine.width, self.ctx.dim)
        self.out_spine.insert_updates(corrections, frontier)

    # -- keys with one new time above their history --------------------------
    def _simple(self, new_k, new_t, frontier, delta):
        """Make the corrections of the keys whose interesting times need no closure.

        A key whose only new time ``t`` is complete, has no pending times and
        is ``>=`` every time of its (advanced) history has ``t`` as its one
        interesting time, and every update of its history counts at ``t``: the
        correction is ``f(all input) - all output``.  Semi-naive rounds of a
        loop's first epoch are all like this.  When every batch of both traces
        lies below the new times (their ``max_time``), no key's history times
        need reading; a min/max aggregate then reads only the changed values
        (:mod:`.reduce_extremum`), counts and int sums only the change and the
        key's output row (:mod:`.reduce_abelian`), and another built-in tactic
        learns a key's previous output by applying itself to the key's input
        without this delta, so the output trace is not read.  Returns ``(corrections or None, other keys' new
        (key, time) pairs, their history as (query, times))``; the history is
        read once, for both.
        """
        starts = columnar.group_starts(new_k)
        keys = new_k[starts[:-1]]
        first_t = new_t[starts[:-1]]
        lower = self._lower(new_t)
        simple = np.diff(starts) == 1
        if len(self.pending_keys):
            lo, hi = columnar.key_ranges(self.pending_keys, keys)
            simple &= hi == lo
        if not frontier.is_empty():
            simple &= ~frontier.admits(first_t)
        below = self._history_below(new_t.min(axis=0), lower)
        made = []
        todo = None  # every key, unless the extremum shortcut handles some
        sub_keys, sub_t = keys, first_t
        if below and simple.any():
            fast, handled = self._shortcut(keys, first_t, simple, delta)
            if fast is not None:
                made.append(fast)
            if handled.any():
                todo = np.flatnonzero(~handled)
                sub_keys, sub_t, simple = keys[todo], first_t[todo], simple[todo]
        # a repeatable tactic's previous output is f(previous input): the output trace needs
        # reading only for the keys that are not simple (their history times)
        derive = below and self.fed and getattr(self.reducer, "repeatable", False)
        if self.fed:
            got_in = self.in_spine.gather(sub_keys)
            got_out = self._gather_out(sub_keys, ~simple) if derive else \
                self.out_spine.gather(sub_keys)
        else:  # the first input ever: the input trace holds exactly this delta, no output yet
            got_in, got_out = self._first_delta(delta, keys, todo), self.out_spine.gather(keys[:0])
        self.fed = True
        if not below or not simple.all():
            t_in, t_out = _advanced(got_in[2], lower), _advanced(got_out[2], lower)
        if not below:
            for q, t in ((got_in[0], t_in), (got_out[0], t_out)):
                simple[q[~rows_less_equal(t, sub_t[q])]] = False
        if simple.any():
            sel_in = simple[got_in[0]]
            q_in, rows_in, d_in = got_in[0][sel_in], got_in[1][sel_in], got_in[3][sel_in]
            if derive:  # the previous input: the input trace without this delta
                q_was, rows_was, d_was = self._without_delta(q_in, rows_in, d_in, delta,
                                                             sub_keys, simple)
            else:
                sel_out = simple[got_out[0]]
                q_was, rows_was, d_was = got_out[0][sel_out], got_out[1][sel_out], \
                    got_out[3][sel_out]
            if below and self.by_totals:  # every history row counts: sum, no consolidation
                found = self._from_totals(q_in, d_in, q_was, d_was, sub_keys, sub_t,
                                          previous_input=derive)
            else:
                grouped = self._groups(q_in, rows_in, d_in)
                self._note_negatives(grouped[2])
                desired = self.reducer.reduce(*grouped)
                current = self._groups(q_was, rows_was, d_was)
                if derive:
                    current = self.reducer.reduce(*current)
                found = self._difference(desired, current, sub_keys, sub_t)
            if found is not None:
                made.append(found)
        made = concat(made, self.out_spine.width, self.ctx.dim) if made else None
        rest = ~simple
        if not rest.any():
            return made, new_k[:0], new_t[:0], None
        index = np.cumsum(rest) - 1  # index among todo -> index among the other keys
        keep_in, keep_out = rest[got_in[0]], rest[got_out[0]]
        history = (index[np.concatenate([got_in[0][keep_in], got_out[0][keep_out]])],
                   np.concatenate([t_in[keep_in], t_out[keep_out]]))
        is_rest = np.zeros(len(keys), dtype=bool)
        is_rest[rest if todo is None else todo[rest]] = True
        pairs = np.repeat(is_rest, np.diff(starts))
        return made, new_k[pairs], new_t[pairs], history

    def _shortcut(self, keys, times, simple, delta):
        """``(corrections or None, handled)`` of an O(change) shortcut for the simple keys:
        a lone min/max (:mod:`.reduce_extremum`), counts and int sums (:mod:`.reduce_abelian`),
        graph tactics' kept states (:mod:`.reduce_kept`)."""
        first = not self.fed  # the input trace holds exactly this delta
        if self.kept is not None:
            return self.kept.corrections(self.in_spine, self.out_spine, self.key_width,
                                               keys, times, simple, delta)
        if self.extremum is not None:
            return extremum_corrections(self.extremum, self.in_spine, self.out_spine,
                                        self.key_width, keys, times, simple, delta, first=first)
        if self.abelian is not None and not self.negatives_seen:
            fast, handled, negative = abelian_corrections(
                self.abelian, self.in_spine, self.out_spine, self.key_width, keys, times,
                simple, delta, first=first)
            self.negatives_seen = negative
            return fast, handled
        return None, np.zeros(len(keys), dtype=bool)

    def _first_delta(self, delta, keys, todo):
        """``delta`` as ``Spine.gather`` of ``keys[todo]`` (all keys if None) would read it."""
        delta_keys = np.ascontiguousarray(delta.rows[:, :self.key_width])
        if isinstance(delta, Batch):  # sorted by key: each row's key index by counting
            starts = columnar.group_starts(delta_keys)
            at = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
        else:
            at, _ = columnar.key_ranges(keys, delta_keys)
        if todo is None:
            return at, delta.rows, delta.times, delta.diffs
        index = np.full(len(keys), -1, np.int64)
        index[todo] = np.arange(len(todo))
        q = index[at]
        mine = q >= 0
        return q[mine], delta.rows[mine], delta.times[mine], delta.diffs[mine]

    def _gather_out(self, keys, wanted):
        """``out_spine.gather(keys[wanted])`` with query indices into ``keys``."""
        at = np.flatnonzero(wanted)
        q, rows, times, diffs = self.out_spine.gather(keys[at])
        return at[q], rows, times, diffs

    def _without_delta(self, q, rows, diffs, delta, keys, simple):
        """Gathered input rows ``(q, rows, diffs)`` with ``delta``'s rows of the simple
        ``keys`` taken away: each such key's input before this step (``q`` indexes ``keys``)."""
        lo, hi = columnar.key_ranges(keys, np.ascontiguousarray(delta.rows[:, :self.key_width]))
        mine = hi > lo
        mine[mine] = simple[lo[mine]]
        return (np.concatenate([q, lo[mine]]), np.concatenate([rows, delta.rows[mine]]),
                np.concatenate([diffs, -delta.diffs[mine]]))

    def _history_below(self, bound, lower) -> bool:
        """Whether every time in both traces, advanced by ``lower``, is ``<= bound``."""
        tops = [b.max_time for spine in (self.in_spine, self.out_spine)
                for b in spine.batches if len(b)]
        if not tops:
            return True
        # advancing is monotone: the coordinate-wise max of the batches bounds every time
        # (plain Python: a few batches of a few coordinates)
        top = [max(column) for column in zip(*(t.tolist() for t in tops))]
        limit = bound.tolist()
        # advance_by(top, lower): the meet over lower's elements of their joins with top
        advanced = [min(column) for column in zip(*([max(a, b) for a, b in zip(top, f)]
                                                    for f in lower.tolist()))] or top
        return all(a <= b for a, b in zip(advanced, limit))

    def _lower(self, new_t):
        """A lower bound ``F`` of every time handled from now on.

        The frontier the output was last sealed at, with the meets of the new
        and of the pending times (cheap lower bounds of each).  For a time
        ``t`` that ``F`` admits, ``h <= t`` iff ``advance_by(h, F) <= t``, so
        history read advanced by ``F`` gives the same accumulations there with
        fewer distinct times: inside a loop every earlier epoch's rounds fall
        onto the current epoch, and a key's times become a chain.
        """
        bounds = [self.out_spine.upper.elements, new_t.min(axis=0)[None, :]]
        if len(self.pending_times):
            bounds.append(self.pending_times.min(axis=0)[None, :])
        return minimal(np.concatenate(bounds))

    # -- interesting times -------------------------------------------------
    def _interesting(self, new_k, new_t, history):
        """Add joins of the new times with each key's history (partial orders only).

        ``history`` is ``(query, times)``: the keys' input and output times,
        advanced by :meth:`_lower`, ``query`` indexing the distinct keys of ``new_k``.
        """
        starts = columnar.group_starts(new_k)
        keys = new_k[starts[:-1]]
        hq, ht = history
        if len(self.pending_keys):
            lo, hi = columnar.key_ranges(self.pending_keys, keys)
            q, pos = expand_ranges(lo, hi)
            hq = np.concatenate([hq, q])
            ht = np.concatenate([ht, self.pending_times[pos]])
        # distinct (key, time) history pairs, grouped by key
        hq, ht, _ = columnar.consolidate(hq[:, None], ht, np.ones(len(hq), np.int64))
        bounds = np.searchsorted(hq[:, 0], np.arange(len(keys) + 1))
        size, found = len(new_t) * max(1, len(ht)), None
        if small.prefer(size, 64, len(new_t) + len(ht)):  # a few times: plain Python
            found = (_closure_groups_small(new_t, starts, ht, bounds) if size <= 64 else
                     closure_groups(new_t, starts, ht, bounds))
        group, times = found or _kernels().join_closure_groups(new_t, starts, ht, bounds)
        return _unique_pairs(keys[group], times)

    # -- corrections ---------------------------------------------------------
    def _corrections(self, qk, qt, known=None, base=None):
        """Emit ``f(I(t)) - O(t)`` at every complete interesting (key, time); ``known``:
        ``(present, values)`` of every query, the extremum rule's desired outputs
        (:meth:`_by_rule`), ``base``: output not yet in the output trace (:attr:`early`)."""
        made = []
        while len(qk):
            ready = self._ready(qk, qt)
            rk, rt = qk[ready], qt[ready]
            earlier = concat(made + ([base] if base is not None else []), self.out_spine.width,
                             self.ctx.dim).consolidated() if made or base is not None else None
            if known is not None:  # one row (or none) per query, in query order
                group = np.flatnonzero(known[0][ready])
                desired = (group, known[1][ready][group][:, None], np.ones(len(group), np.int64))
                known = (known[0][~ready], known[1][~ready])
            elif self.by_totals:  # distinct, threshold: sums of multiplicities, no consolidation
                n = len(rk)
                q_in, _, d_in = self._visible([self.in_spine], None, rk, rt)
                q_out, _, d_out = self._visible([self.out_spine], earlier, rk, rt)
                total_in = group_sums(q_in, d_in, n)  # (each key's one row's multiplicity)
                self._note_negatives(total_in)
                change = self.reducer.from_totals(total_in) - group_sums(q_out, d_out, n)
                at = np.flatnonzero(change)
                if len(at):
                    made.append(Updates(np.ascontiguousarray(rk[at]),
                                        np.ascontiguousarray(rt[at]), change[at]))
                qk, qt = qk[~ready], qt[~ready]
                continue
            else:
                g_in, v_in, m_in = self._accumulate([self.in_spine], None, rk, rt)
                self._note_negatives(m_in)
                desired = self.reducer.reduce(g_in, v_in, m_in)
            current = self._accumulate([self.out_spine], earlier, rk, rt)
            delta = self._difference(desired, current, rk, rt)
            if delta is not None:
                made.append(delta)
            qk, qt = qk[~ready], qt[~ready]
        if not made:
            return None
        return concat(made, self.out_spine.width, self.ctx.dim)

    def _ready(self, qk, qt):
        """Queries with no strictly earlier query of the same key (sorted input)."""
        first = np.ones(len(qk), dtype=bool)
        if len(qk) > 1:
            first[1:] = np.any(qk[1:] != qk[:-1], axis=1)
        if self.ctx.dim == 1 or first.all():
            return first
        starts = np.append(np.flatnonzero(first), len(qk)).astype(np.int64)
        ready = None
        if small.prefer(len(qt) ** 2, small.SMALL_PAIRS, len(qt)):
            ready = (_ready_small(qt, starts) if len(qt) ** 2 <= small.SMALL_PAIRS else
                     ready_pairs(qt, starts))
        if ready is None:
            ready = _kernels().ready_mask(np.ascontiguousarray(qt), starts)
        return ready

    def _accumulate(self, spines, extra, qk, qt):
        """Consolidated ``(group, vals, mults)`` of each query's collection at its time."""
        return self._groups(*self._visible(spines, extra, qk, qt))

    def _visible(self, spines, extra, qk, qt):
        """``(query, rows, diffs)`` of the updates each query's collection holds at its time."""
        kk = self.key_width
        parts = [s.gather(qk) for s in spines]
        if extra is not None and len(extra):
            lo, hi = columnar.key_ranges(np.ascontiguousarray(extra.rows[:, :kk]), qk)
            q, pos = expand_ranges(lo, hi)
            parts.append((q, extra.rows[pos], extra.times[pos], extra.diffs[pos]))
        q = np.concatenate([p[0] for p in parts])
        rows = np.concatenate([p[1] for p in parts])
        times = np.concatenate([p[2] for p in parts])
        diffs = np.concatenate([p[3] for p in parts])
        visible = rows_less_equal(times, qt[q])
        return q[visible], rows[visible], diffs[visible]

    def _groups(self, q, rows, diffs):
        """Consolidated ``(group, vals, mults)`` of gathered rows, ``q`` their group."""
        table = np.empty((len(q), 1 + rows.shape[1] - self.key_width), np.int64)
        table[:, 0] = q
        table[:, 1:] = rows[:, self.key_width:]
        table, _, mults = columnar.consolidate(table, np.zeros((len(table), 1), np.int64), diffs)
        return table[:, 0], np.ascontiguousarray(table[:, 1:]), mults

    def _difference(self, desired, current, qk, qt):
        """``desired - current`` as output updates at each query's time."""
        want = _table(desired)
        have = _table(current)
        n = len(want) + len(have)
        if small.prefer(n, small.SMALL) or not columnar.is_consolidated(
                want, np.zeros((len(want), 1), np.int64), desired[2]):  # a tactic's own order
            table, _, diffs = columnar.consolidate(
                np.concatenate([want, have]), np.zeros((n, 1), np.int64),
                np.concatenate([desired[2], -current[2]]))
        else:  # both sides consolidated: one merge, no sort
            table, _, diffs = columnar.merge_consolidated(
                want, np.zeros((len(want), 1), np.int64), desired[2],
                have, np.zeros((len(have), 1), np.int64), -current[2])
        if not len(diffs):
            return None
        group = table[:, 0]
        rows = np.concatenate([qk[group], table[:, 1:]], axis=1)
        return Updates(np.ascontiguousarray(rows), np.ascontiguousarray(qt[group]), diffs)


def _table(groups) -> np.ndarray:
    """A ``(group, vals, mults)`` triple's group and value columns as one int64 table."""
    table = np.empty((len(groups[0]), 1 + groups[1].shape[1]), np.int64)
    table[:, 0] = groups[0]
    table[:, 1:] = groups[1]
    return table
