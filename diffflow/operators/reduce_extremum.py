"""A ``min`` / ``max`` aggregate's new value from the change alone, when that suffices.

The reduce driver (:mod:`.reduce`) recomputes ``f`` over a key's whole group
at each interesting time.  For a single ``min`` (or ``max``) aggregate at a
key whose one new time ``t`` lies at or above its whole history, most keys do
not need the group: with ``c`` the current output value,

* values whose multiplicity turns positive at ``t`` can only lower the min;
* values whose multiplicity stops being positive only matter if ``c`` is one
  of them -- and then any newly present value below ``c`` is the new min,
  since every other remaining value was already ``>= c``.

So the new value is ``min(c, best new value)`` unless ``c`` vanished with no
newly present value below it; only those keys read their group (the driver's
general path).  The multiplicities of the changed ``(key, value)`` rows are
read from the input trace by whole-row prefix, which costs what changed.
Label propagation (components, shortest paths) changes a few values of
large groups every round: this is its common case.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.batch import Batch
from diffflow.arrangements.updates import Updates
from diffflow.operators.reduce_abelian import key_index
from diffflow.operators.reducers import AggregateReducer

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


def extremum_of(reducer) -> tuple | None:
    """``(kind, value column)`` when ``reducer`` is one ``min`` or ``max`` aggregate.

    >>> extremum_of(AggregateReducer([("min", 0, "int")]))
    ('min', 0)
    >>> extremum_of(AggregateReducer([("min", 0, "int"), ("count", None, "int")])) is None
    True
    """
    if isinstance(reducer, AggregateReducer) and len(reducer.aggs) == 1:
        kind, column, _ = reducer.aggs[0]
        if kind in ("min", "max"):
            return kind, column
    return None


def extremum_corrections(extremum, in_spine, out_spine, key_width, keys, key_times, candidate,
                         delta, first=False):
    """Corrections for the ``candidate`` keys whose new min/max follows from the change.

    ``keys`` (sorted, distinct) with one new time each (``key_times``), every
    history time ``<=`` it; ``delta`` holds the new input updates (each key's
    at its time; the input spine already contains them).  Returns
    ``(corrections or None, handled)``, ``handled`` a bool mask over ``keys``.
    With ``first`` the input spine holds exactly ``delta`` (its first input), so
    the changed rows' multiplicities are the delta's: nothing is searched.
    """
    kind, column = extremum
    handled = np.zeros(len(keys), dtype=bool)
    if isinstance(delta, Batch):  # sorted and consolidated already
        rows, diffs = delta.rows, delta.diffs
    else:
        rows, _, diffs = columnar.consolidate(delta.rows, delta.times, delta.diffs)
    at = key_index(keys, np.ascontiguousarray(rows[:, :key_width]))
    mine = candidate[at]
    if not mine.any():
        return None, handled
    rows, diffs, at = rows[mine], diffs[mine], at[mine]
    # each changed (key, value) row's multiplicity now: all its history counts at the new time
    if first:
        after = diffs
    else:
        after = in_spine.multiplicities(rows, width=rows.shape[1])
    before = after - diffs
    value = rows[:, key_width + column]
    worst = _MAX if kind == "min" else _MIN
    better = np.minimum if kind == "min" else np.maximum

    seg = columnar.group_starts(at[:, None])[:-1]  # one segment of changed rows per key
    seg_key = at[seg]
    best = better.reduceat(np.where(after > 0, value, worst), seg)
    # presence from multiplicities: a real value may equal the placeholder (int64 extremes)
    has_best = np.add.reduceat((after > 0).astype(np.int64), seg) > 0

    # the current output value of each key (one row of multiplicity 1, or none)
    oq, orows, _, od = out_spine.gather(keys[seg_key])
    table, _, mult = columnar.consolidate(
        np.ascontiguousarray(np.column_stack([oq, orows[:, key_width:]])),
        np.zeros((len(oq), 1), np.int64), od)
    count = np.bincount(table[:, 0], minlength=len(seg))
    odd = count > 1  # never for a correct output; such keys take the general path
    odd[table[mult != 1, 0]] = True
    has_cur = count == 1
    cur = np.full(len(seg), worst, np.int64)
    single = count[table[:, 0]] == 1
    cur[table[single, 0]] = table[single, 1]

    row_seg = np.repeat(np.arange(len(seg)), np.diff(np.append(seg, len(at))))
    vanished = (before > 0) & (after <= 0) & (value == cur[row_seg])
    cur_gone = np.zeros(len(seg), dtype=bool)
    cur_gone[row_seg[vanished]] = True
    strictly = best < cur if kind == "min" else best > cur
    ok = ~odd & (~has_cur | ~cur_gone | (has_best & strictly))
    new = np.where(has_cur & ~cur_gone, better(cur, best), best)
    has_new = has_cur | has_best
    changed = ok & (has_cur != has_new) | (ok & has_cur & has_new & (new != cur))
    handled[seg_key[ok]] = True

    drop = changed & has_cur
    add = changed & has_new
    out_keys = np.concatenate([keys[seg_key[drop]], keys[seg_key[add]]])
    out_vals = np.concatenate([cur[drop], new[add]])
    if not len(out_vals):
        return None, handled
    out_rows = np.empty((len(out_vals), key_width + 1), np.int64)
    out_rows[:, :key_width] = out_keys
    out_rows[:, key_width] = out_vals
    out_times = np.concatenate([key_times[seg_key[drop]], key_times[seg_key[add]]])
    out_diffs = np.concatenate([-np.ones(int(drop.sum()), np.int64),
                                np.ones(int(add.sum()), np.int64)])
    return Updates(out_rows, out_times, out_diffs), handled
