"""Reducer tactics: what ``reduce`` computes for each group, vectorised over groups.

Contract (every tactic)
-----------------------
``reduce(group, vals, mults)`` receives the accumulated input of many groups
at once, consolidated: ``group`` ``(n,)`` non-decreasing group ids, ``vals``
``(n, kv)`` int64 value columns, ``mults`` ``(n,)`` non-zero multiplicities,
no ``(group, vals)`` pair twice.  It returns ``(out_group, out_vals,
out_mults)`` in the same form: the output collection of each group.  A group
with no input rows has no output rows.  Tactics are pure functions of their
input: the reduce driver handles times, frontiers and traces.  The built-in
tactics are here; :mod:`.reduce_custom` wraps a user's function as one.
"""
from __future__ import annotations

import numpy as np

from diffflow.common.schema import decode_floats, encode_floats

_MAX = np.iinfo(np.int64).max
_MIN = np.iinfo(np.int64).min


def segment_starts(group: np.ndarray) -> np.ndarray:
    """Start offsets of runs of equal ``group`` values.

    >>> segment_starts(np.array([4, 4, 7, 9, 9])).tolist()
    [0, 2, 3]
    """
    if len(group) == 0:
        return np.zeros(0, np.int64)
    return np.concatenate([[0], np.flatnonzero(group[1:] != group[:-1]) + 1]).astype(np.int64)


class Reducer:
    """Base class of tactics; ``out_width`` is the number of output value columns."""

    out_width = 0
    # cheap and pure enough that the reduce driver may apply it to a group's previous input
    # to learn the group's previous output, instead of reading its output trace
    repeatable = False

    def reduce(self, group, vals, mults):
        raise NotImplementedError


class DistinctReducer(Reducer):
    """Output the group's key once when its total multiplicity is positive.

    >>> DistinctReducer().reduce(np.array([0, 1]), np.zeros((2, 0), np.int64), np.array([2, -1]))[0].tolist()
    [0]
    """

    repeatable = True

    def reduce(self, group, vals, mults):
        starts = segment_starts(group)
        if len(starts) == 0:
            return group, np.zeros((0, 0), np.int64), mults
        totals = np.add.reduceat(mults, starts)
        keep = totals > 0
        g = group[starts][keep]
        return g, np.zeros((len(g), 0), np.int64), np.ones(len(g), np.int64)

    def from_totals(self, totals):
        """Each key's output multiplicity from its total input multiplicity (0: no row).

        >>> DistinctReducer().from_totals(np.array([3, 0, -1])).tolist()
        [1, 0, 0]
        """
        return (totals > 0).astype(np.int64)


class ThresholdReducer(Reducer):
    """Output the key with multiplicity ``fn(total multiplicity)`` (``fn`` is vectorised).

    >>> ThresholdReducer(lambda m: m // 2).reduce(np.array([0, 1]), np.zeros((2, 0), np.int64),
    ...                                          np.array([5, 1]))[2].tolist()
    [2]
    """

    repeatable = True

    def __init__(self, fn):
        self.fn = fn

    def reduce(self, group, vals, mults):
        starts = segment_starts(group)
        if len(starts) == 0:
            return group, np.zeros((0, 0), np.int64), mults
        totals = np.add.reduceat(mults, starts)
        out = np.asarray(self.fn(totals))
        if out.shape != totals.shape or out.dtype.kind not in "iub":
            raise TypeError(
                f"threshold function must map an int64 array of {len(totals)} multiplicities "
                f"to an integer array of the same shape; got {out.dtype} {out.shape}")
        out = out.astype(np.int64)
        keep = out != 0
        g = group[starts][keep]
        return g, np.zeros((len(g), 0), np.int64), out[keep]

    def from_totals(self, totals):
        """Each key's output multiplicity from its total (keys of total 0 have no input rows).

        >>> ThresholdReducer(lambda m: m // 2).from_totals(np.array([5, 0, 1])).tolist()
        [2, 0, 0]
        """
        at = np.flatnonzero(totals)
        out = np.zeros(len(totals), np.int64)
        groups, _, mults = self.reduce(np.arange(len(at)), np.zeros((len(at), 0), np.int64),
                                       totals[at])
        out[at[groups]] = mults
        return out


class AggregateReducer(Reducer):
    """One output row per group with positive multiplicity somewhere: count/sum/min/max.

    ``aggs`` is a list of ``(kind, value_column, type)`` with ``kind`` in
    ``count``, ``sum``, ``min``, ``max``.  ``count`` is the total
    multiplicity, ``sum`` the multiplicity-weighted sum, ``min``/``max`` range
    over values with positive multiplicity (the usual SQL ``GROUP BY`` result
    for collections without negative multiplicities).

    >>> r = AggregateReducer([("count", None, "int"), ("max", 0, "int")])
    >>> g, v, m = r.reduce(np.array([0, 0, 1]), np.array([[5], [7], [1]]), np.array([1, 2, 1]))
    >>> g.tolist(), v.tolist(), m.tolist()
    ([0, 1], [[3, 7], [1, 1]], [1, 1])
    """

    repeatable = True

    def __init__(self, aggs):
        self.aggs = list(aggs)
        self.out_width = len(self.aggs)

    def reduce(self, group, vals, mults):
        starts = segment_starts(group)
        if len(starts) == 0:
            return group, np.zeros((0, self.out_width), np.int64), mults
        positive = mults > 0
        present = np.add.reduceat(positive.astype(np.int64), starts) > 0
        out = np.empty((len(starts), self.out_width), np.int64)
        for j, (kind, column, typ) in enumerate(self.aggs):
            if kind == "count":
                out[:, j] = np.add.reduceat(mults, starts)
            elif kind == "sum":
                v = vals[:, column]
                if typ == "float":
                    out[:, j] = encode_floats(np.add.reduceat(decode_floats(v) * mults, starts))
                else:
                    out[:, j] = np.add.reduceat(v * mults, starts)
            elif kind == "min":
                out[:, j] = np.minimum.reduceat(np.where(positive, vals[:, column], _MAX), starts)
            elif kind == "max":
                out[:, j] = np.maximum.reduceat(np.where(positive, vals[:, column], _MIN), starts)
            else:
                raise ValueError(f"unknown aggregate {kind!r}")
        g = group[starts][present]
        return g, np.ascontiguousarray(out[present]), np.ones(len(g), np.int64)
