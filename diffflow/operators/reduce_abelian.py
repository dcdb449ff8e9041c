"""``count`` and ``sum`` from the change alone: abelian aggregates in O(change).

A count or an integer sum of a group is a sum over the group's rows, so when
rows change the new value is the old value plus the change's sum -- whatever
the size of the group.  For a key whose one new time ``t`` lies at or above
its whole history (the reduce driver's *simple* keys: every epoch outside a
loop, the semi-naive rounds of a loop's first epoch), the old value is the
key's one row in the output trace, and the new one is

    count' = count + sum(diff)        sum' = sum + sum(value * diff)

over the key's changed input rows.  Nothing reads the group, as Differential
Dataflow's ``count_total`` reads no values.

Presence.  :class:`~.reducers.AggregateReducer` outputs a group while some
row of it has positive multiplicity.  While no row's multiplicity is
negative that is "the count is positive", which the totals give.  The driver
keeps a sticky flag, *negatives seen*, set whenever a path that reads whole
groups meets a negative multiplicity or this module finds a changed row whose
multiplicity went negative (only rows whose net change is negative are read,
by whole-row prefix of the input trace); once set, the operator reads groups
as before.  Without a ``count`` among the aggregates the old count is not in
the output row: a present key whose rows net-decrease may have emptied, and
reads its group.

``distinct`` is the same with no aggregates: a key is present while its total
multiplicity is positive, so a present key that gains rows stays, an absent
one that gains rows appears, and only a present key losing rows reads its
group.  In a semi-naive loop's first epoch (transitive closure and the like)
no key loses rows: a new fact costs one search of the output trace.

Floating-point sums are not abelian here (rounding depends on the order of
the additions, and the answer must equal a from-scratch sum), and ``min`` /
``max`` have their own shortcut (:mod:`.reduce_extremum`).
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.batch import Batch
from diffflow.arrangements.updates import Updates
from diffflow.operators.reducers import (
    AggregateReducer,
    DistinctReducer,
    segment_starts,
)


def abelian_of(reducer) -> tuple | None:
    """The aggregates as ``(kinds, value columns)`` when each is a count or an int sum.

    ``distinct`` is the case of no aggregates: a key's presence alone.

    >>> abelian_of(AggregateReducer([("count", None, "int"), ("sum", 1, "int")]))
    (('count', 'sum'), (None, 1))
    >>> abelian_of(AggregateReducer([("sum", 0, "float")])) is None
    True
    >>> abelian_of(DistinctReducer())
    ((), ())
    """
    if type(reducer) is DistinctReducer:
        return (), ()
    if not isinstance(reducer, AggregateReducer) or not reducer.aggs:
        return None
    if any(kind not in ("count", "sum") or typ != "int" for kind, _, typ in reducer.aggs):
        return None
    return tuple(a[0] for a in reducer.aggs), tuple(a[1] for a in reducer.aggs)


def key_index(keys: np.ndarray, row_keys: np.ndarray) -> np.ndarray:
    """Each of ``row_keys``' index in ``keys`` (sorted, distinct, holding every one of them);
    ``row_keys`` sorted.  When their distinct keys are all of ``keys`` they are counted, not
    searched.

    >>> key_index(np.array([[2], [5]]), np.array([[2], [2], [5]])).tolist()
    [0, 0, 1]
    """
    if len(row_keys):
        starts = columnar.group_starts(row_keys)
        if len(starts) - 1 == len(keys):
            return np.repeat(np.arange(len(keys)), np.diff(starts))
    return columnar.key_ranges(keys, row_keys)[0]


def rows_turned_negative(in_spine, rows: np.ndarray, diffs: np.ndarray, first=False) -> bool:
    """Whether a changed input row now has negative multiplicity in ``in_spine``.

    ``rows``/``diffs`` are the change, consolidated (one entry per distinct
    row); only rows whose net change is negative can have turned negative.
    With ``first`` the spine holds exactly the change.
    """
    falling = diffs < 0
    if first or not falling.any():
        return bool(falling.any())
    fall = np.ascontiguousarray(rows[falling])
    return bool((in_spine.multiplicities(fall, width=fall.shape[1]) < 0).any())


def abelian_corrections(abelian, in_spine, out_spine, key_width, keys, key_times, candidate,
                        delta, first=False):
    """Corrections for the ``candidate`` keys whose new counts and sums follow from the change.

    ``keys`` (sorted, distinct) with one new time each (``key_times``), every
    history time ``<=`` it; ``delta`` holds the new input updates (the input
    spine already contains them).  Returns ``(corrections or None, handled,
    negative)``: ``handled`` a bool mask over ``keys``; ``negative`` true when
    a changed row's multiplicity went negative, in which case nothing is
    handled and the caller must read groups from now on.  With ``first`` the
    input spine holds exactly ``delta`` (its first input).
    """
    kinds, columns = abelian
    handled = np.zeros(len(keys), dtype=bool)
    if isinstance(delta, Batch):  # sorted and consolidated; a candidate key has one time
        rows, diffs = delta.rows, delta.diffs
    else:
        rows, _, diffs = columnar.consolidate(delta.rows, np.zeros((len(delta), 1), np.int64),
                                              delta.diffs)
    at = key_index(keys, np.ascontiguousarray(rows[:, :key_width]))
    mine = candidate[at]
    if not mine.any():
        return None, handled, False
    rows, diffs, at = rows[mine], diffs[mine], at[mine]
    if rows_turned_negative(in_spine, rows, diffs, first):
        return None, handled, True
    seg = segment_starts(at)  # rows sorted by key: one segment per changed key
    seg_key = at[seg]
    n = len(seg)
    change = np.empty((n, len(kinds)), np.int64)
    for j, (kind, column) in enumerate(zip(kinds, columns)):
        weight = diffs if kind == "count" else rows[:, key_width + column] * diffs
        change[:, j] = np.add.reduceat(weight, seg)
    count_change = np.add.reduceat(diffs, seg)

    # each key's current output row (one row of multiplicity 1, or none)
    oq, orows, _, od = out_spine.gather(keys[seg_key])
    table, _, mult = columnar.consolidate(
        np.ascontiguousarray(np.column_stack([oq, orows[:, key_width:]])),
        np.zeros((len(oq), 1), np.int64), od)
    per_key = np.bincount(table[:, 0], minlength=n)
    odd = per_key > 1  # never for a correct output; such keys read their group
    odd[table[mult != 1, 0]] = True
    has_old = per_key == 1
    old = np.zeros((n, len(kinds)), np.int64)
    single = per_key[table[:, 0]] == 1
    old[table[single, 0]] = table[single, 1:]

    new = old + change
    if "count" in kinds:
        has_new = new[:, kinds.index("count")] > 0
        ok = ~odd
    else:  # the old count is unknown: a present key that lost rows may have emptied
        has_new = has_old | (count_change > 0)
        ok = ~odd & ~(has_old & (count_change < 0))
    differs = np.any(new != old, axis=1)
    changed = ok & ((has_old != has_new) | (has_old & has_new & differs))
    handled[seg_key[ok]] = True

    drop, add = changed & has_old, changed & has_new
    out_keys = np.concatenate([keys[seg_key[drop]], keys[seg_key[add]]])
    if not len(out_keys):
        return None, handled, False
    out_rows = np.empty((len(out_keys), key_width + len(kinds)), np.int64)
    out_rows[:, :key_width] = out_keys
    out_rows[:, key_width:] = np.concatenate([old[drop], new[add]])
    out_times = np.concatenate([key_times[seg_key[drop]], key_times[seg_key[add]]])
    out_diffs = np.concatenate([-np.ones(int(drop.sum()), np.int64),
                                np.ones(int(add.sum()), np.int64)])
    return Updates(out_rows, np.ascontiguousarray(out_times), out_diffs), handled, False
