"""A plain, per-key reference implementation of ``reduce`` over partially ordered times.

Written straight from the definition (see :mod:`.reduce`) with Python
dictionaries, for tests only: it must agree with the vectorised driver, and
both must agree with recomputing ``f`` from scratch at every time.
:func:`tactic_as_dict` runs any tactic of :mod:`.reducers` -- a custom
reducer included -- one group at a time, in the form the reference takes.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np


def _join(a, b):
    return tuple(max(x, y) for x, y in zip(a, b))


def _leq(a, b):
    return all(x <= y for x, y in zip(a, b))


def reduce_reference(updates, reducer):
    """Output updates ``(key, out_val, time, diff)`` of ``reducer`` over input updates.

    ``updates`` are ``(key, val, time, diff)`` tuples; ``reducer`` maps a dict
    ``{val: multiplicity}`` (non-zero entries) to a dict ``{out_val: multiplicity}``.

    >>> count = lambda group: {(sum(group.values()),): 1} if group else {}
    >>> sorted(reduce_reference([(1, (), (0, 1), 1), (1, (), (1, 0), 1)], count))
    [(1, (1,), (0, 1), 1), (1, (1,), (1, 0), 1), (1, (1,), (1, 1), -2), (1, (2,), (1, 1), 1)]
    """
    by_key = defaultdict(list)
    for key, val, time, diff in updates:
        by_key[key].append((val, tuple(time), diff))
    out = []
    for key, history in by_key.items():
        times = {t for _, t, _ in history}
        frontier = set(times)
        while frontier:  # close the time set under join
            fresh = {_join(a, b) for a in frontier for b in times} - times
            times |= fresh
            frontier = fresh
        emitted = []
        for t in sorted(times):
            group = defaultdict(int)
            for val, s, diff in history:
                if _leq(s, t):
                    group[val] += diff
            desired = defaultdict(int, reducer({v: m for v, m in group.items() if m}))
            for val, s, diff in emitted:
                if _leq(s, t):
                    desired[val] -= diff
            for val, diff in desired.items():
                if diff:
                    emitted.append((val, t, diff))
                    out.append((key, val, t, diff))
    return out


def tactic_as_dict(reducer):
    """``reducer`` (a tactic) as a function of one group's ``{val: multiplicity}`` dict.

    The result is the ``{out_val: multiplicity}`` dict that
    :func:`reduce_reference` takes; values are int64 codes, as tactics see them.

    >>> from diffflow.operators.reducers import AggregateReducer
    >>> tactic_as_dict(AggregateReducer([("count", None, "int"), ("max", 0, "int")]))(
    ...     {(5,): 2, (7,): 1})
    {(3, 7): 1}
    """
    def one_group(group):
        if not group:
            return {}
        vals = sorted(group)
        width = len(vals[0])
        _, out, mults = reducer.reduce(np.zeros(len(vals), np.int64),
                                       np.array(vals, np.int64).reshape(len(vals), width),
                                       np.array([group[v] for v in vals], np.int64))
        return {tuple(row): m for row, m in zip(out.tolist(), mults.tolist())}

    return one_group
