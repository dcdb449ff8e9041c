"""Custom reducers for the tests, each with a plain-Python oracle of one group.

Every ``seg_*`` function has the segmented signature of ``Collection.reduce``
and is written with numpy over all groups at once; every ``py_*`` function
computes the same thing for one group from scratch, as a dict
``{value tuple: multiplicity}`` of the group's rows (positive multiplicities
unless stated) to a dict ``{output row: multiplicity}``.  The oracles share
no code with the reducers (or with diffflow).

The module is pickled by value so that worker processes (the ``processes``
runtime) need not import it.
"""
from __future__ import annotations

import sys
from collections import Counter

import cloudpickle
import numpy as np

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _groups(starts):
    return np.arange(len(starts) - 1, dtype=np.int64)


# -- lower weighted median of one column ---------------------------------------------------
def seg_median(starts, cols, mults):
    v = cols[0]
    cum = np.cumsum(mults)  # strictly increasing: multiplicities are positive
    first = starts[:-1]
    before = cum[first] - mults[first]
    total = np.add.reduceat(mults, first)
    at = np.searchsorted(cum, before + (total + 1) // 2, side="left")
    return _groups(starts), (v[at],)


def py_median(group):
    values = sorted(v[0] for v, m in group.items() for _ in range(m))
    return {(values[(len(values) - 1) // 2],): 1}


def one_median(cols, mults):
    """The per-group form (for ``dd.per_group``)."""
    values = np.repeat(cols[0], mults)
    return values[(len(values) - 1) // 2]


# -- the two largest rows (by all value columns) --------------------------------------------
def seg_top2(starts, cols, mults):
    sizes = np.diff(starts)
    last = starts[1:] - 1
    two = sizes >= 2
    at = np.concatenate([last, last[two] - 1])
    groups = np.concatenate([_groups(starts), _groups(starts)[two]])
    return groups, tuple(c[at] for c in cols)


def py_top2(group):
    return {row: 1 for row in sorted(group)[-2:]}


# -- weighted mean of a float column, and the spread (float outputs) -------------------------
def seg_mean(starts, cols, mults):
    x = cols[0]
    first = starts[:-1]
    mean = np.add.reduceat(x * mults, first) / np.add.reduceat(mults, first)
    spread = x[starts[1:] - 1] - x[first]
    return _groups(starts), (mean, spread)


def py_mean(group):
    xs = sorted(group)
    total = sum(x[0] * m for x, m in group.items())
    return {(total / sum(group.values()), xs[-1][0] - xs[0][0]): 1}


# -- each distinct value strictly above the group's weighted mean (0..n-1 rows) --------------
def seg_above_mean(starts, cols, mults):
    v = cols[0]
    first = starts[:-1]
    total = np.add.reduceat(mults, first)
    sums = np.add.reduceat(v * mults, first)
    group = np.repeat(_groups(starts), np.diff(starts))
    keep = v * total[group] > sums[group]
    return group[keep], (v[keep],)


def py_above_mean(group):
    total = sum(group.values())
    sums = sum(v[0] * m for v, m in group.items())
    return {v: 1 for v in group if v[0] * total > sums}


# -- every value, with its multiplicity capped at 2 (returns out_mults) ----------------------
def seg_capped(starts, cols, mults):
    group = np.repeat(_groups(starts), np.diff(starts))
    return group, (cols[0],), np.minimum(mults, 2)


def py_capped(group):
    out = Counter()
    for v, m in group.items():
        out[v[:1]] += min(m, 2)
    return dict(out)


# -- the total multiplicity, negative rows included (negative="keep") ------------------------
def seg_total(starts, cols, mults):
    return _groups(starts), (np.add.reduceat(mults, starts[:-1]),)


def py_total(group):
    """``group`` here holds every non-zero multiplicity, negative ones too."""
    return {(sum(group.values()),): 1}


# -- the smallest value (a custom min, for loops) --------------------------------------------
def seg_first(starts, cols, mults):
    return _groups(starts), tuple(c[starts[:-1]] for c in cols)


def seg_two_smallest(starts, cols, mults):
    sizes = np.diff(starts)
    two = sizes >= 2
    at = np.concatenate([starts[:-1], starts[:-1][two] + 1])
    return np.concatenate([_groups(starts), _groups(starts)[two]]), (cols[0][at],)


# -- broken reducers, for the error tests -----------------------------------------------------
def bad_not_a_tuple(starts, cols, mults):
    return cols[0]


def bad_group_index(starts, cols, mults):
    return _groups(starts) + 1, (cols[0][starts[:-1]],)


def bad_length(starts, cols, mults):
    return _groups(starts), (cols[0],)


def bad_float_for_int(starts, cols, mults):
    return _groups(starts), (cols[0][starts[:-1]] / 2,)


def numba_kernels():
    """numba versions (built here, so cloudpickle ships them by value)."""
    import numba

    @numba.njit
    def nb_first(starts, cols, mults):
        g = len(starts) - 1
        out = np.empty(g, np.int64)
        for i in range(g):
            out[i] = cols[0][starts[i]]
        return np.arange(g), (out,)

    @numba.njit
    def nb_median(starts, cols, mults):
        g = len(starts) - 1
        out = np.empty(g, cols[0].dtype)
        for i in range(g):
            total = 0
            for r in range(starts[i], starts[i + 1]):
                total += mults[r]
            need, seen = (total + 1) // 2, 0
            for r in range(starts[i], starts[i + 1]):
                seen += mults[r]
                if seen >= need:
                    out[i] = cols[0][r]
                    break
        return np.arange(g), (out,)

    return nb_first, nb_median
