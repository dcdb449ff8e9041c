"""Custom reducers for :meth:`Collection.reduce`: checking them, and the per-group slow path.

:meth:`Collection.reduce <diffflow.Collection.reduce>` groups a collection
by key columns and applies a user's function to each group's rows; the
function's contract (segmented, vectorised over many groups, pure) is in
:mod:`diffflow.operators.reduce_custom`.  This module checks a reduce's
arguments against the collection's columns when the dataflow is built, and
offers :func:`per_group`, which turns a function of one group into the
segmented form -- simpler to write, slower (a Python call per group).

>>> import numpy as np, diffflow as dd
>>> flow = dd.Dataflow(); scores = flow.input("scores", ["team", ("s", float)])
>>> def median(cols, mults):                     # one group: sorted values, multiplicities
...     return float(np.median(np.repeat(cols[0], mults)))
>>> out = scores.reduce(dd.per_group(median), by="team", out={"med": float}).output()
>>> scores.insert([(1, 1.0), (1, 5.0), (1, 2.0), (2, 4.0)]); flow.advance()
>>> sorted(out.snapshot())
[(1, 2.0), (2, 4.0)]
"""
from __future__ import annotations

import numpy as np

from diffflow.common.errors import GraphError
from diffflow.common.schema import Schema
from diffflow.operators.reduce_custom import NEGATIVE, CustomReducer, function_name


class PerGroup:
    """A function of one group's rows, callable as a segmented custom reducer (:func:`per_group`)."""

    def __init__(self, fn):
        self.fn = fn

    def __repr__(self) -> str:
        return f"per_group({function_name(self.fn)})"

    def __call__(self, starts, cols, mults):
        """Call the wrapped function once per group; concatenate what it returns.

        >>> top = PerGroup(lambda cols, mults: cols[0][-1])
        >>> index, out = top(np.array([0, 2, 3]), (np.array([1, 4, 7]),), np.ones(3, np.int64))
        >>> index.tolist(), out[0].tolist()
        ([0, 1], [4, 7])
        """
        groups, columns, width = [], [], None
        for i in range(len(starts) - 1):
            s, e = starts[i], starts[i + 1]
            result = self.fn(tuple(c[s:e] for c in cols), mults[s:e])
            if result is None:
                continue
            if not isinstance(result, tuple):
                result = (result,)
            parts = [np.atleast_1d(np.asarray(v)) for v in result]
            lengths = {len(p) for p in parts if p.ndim == 1}
            if any(p.ndim != 1 for p in parts) or len(lengths) > 1:
                raise ValueError(
                    f"reduce function per_group({function_name(self.fn)}) returned columns of "
                    f"shapes {[p.shape for p in parts]} for one group; return one scalar or one "
                    f"1-D array per output column, all of the same length")
            if width is None:
                width = len(parts)
            elif width != len(parts):
                raise ValueError(
                    f"reduce function per_group({function_name(self.fn)}) returned {len(parts)} "
                    f"columns for one group and {width} for another; return one entry per "
                    f"output column every time")
            n = lengths.pop() if lengths else 0
            groups.append(np.full(n, i, np.int64))
            columns.append(parts)
        if not columns:
            return np.zeros(0, np.int64), ()
        return (np.concatenate(groups),
                tuple(np.concatenate([c[j] for c in columns]) for j in range(width)))


def per_group(fn) -> PerGroup:
    """Turn ``fn(cols, mults) -> out`` over ONE group into a custom reducer (the slow path).

    ``cols`` is a tuple with one array per value column (the group's rows,
    sorted), ``mults`` their multiplicities.  ``fn`` returns a tuple with one
    entry per output column -- a scalar (one row) or a 1-D array (that many
    rows) -- or a bare value when there is one output column, or ``None`` for
    no rows.  Python runs ``fn`` once per group and per change, so prefer the
    segmented form (one call for many groups, numba-friendly) for large inputs.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); c = flow.input("c", ["k", "v"])
    >>> top2 = c.reduce(per_group(lambda cols, mults: cols[0][-2:]), by="k", out=["v"]).output()
    >>> c.insert([(1, 5), (1, 7), (1, 6), (2, 1)]); flow.advance()
    >>> sorted(top2.snapshot())
    [(1, 6), (1, 7), (2, 1)]
    """
    if not callable(fn):
        raise TypeError(f"per_group needs a function of (cols, mults), got {fn!r}")
    return PerGroup(fn)


def custom_reducer(fn, keys: list, columns, out, negative: str, schema: Schema):
    """``(reducer, output schema, value column names)`` of a custom reduce, checked.

    ``schema`` is the collection's; ``columns`` the value columns (``None``:
    every non-key column).

    >>> r, s, cols = custom_reducer(len, ["k"], None, {"n": int}, "drop",
    ...                              Schema.of(["k", "v", ("w", float)]))
    >>> s.names, s.types, cols, r.in_types
    (('k', 'n'), ('int', 'int'), ['v', 'w'], ('int', 'float'))
    """
    if not callable(fn):
        raise TypeError(f"reduce needs a function fn(starts, cols, mults) -> (group_index, "
                        f"out_cols), or dd.per_group(f) of a per-group f; got {fn!r}")
    if negative not in NEGATIVE:
        raise GraphError(f"reduce(negative={negative!r}): choose one of {', '.join(NEGATIVE)}")
    available = list(schema.names)
    if columns is None:
        columns = [n for n in available if n not in keys]
    else:
        columns = [columns] if isinstance(columns, str) else list(columns)
        for n in columns:
            if n not in available:
                raise GraphError(f"unknown column {n!r} in reduce(columns=...); available "
                                 f"columns: {available}")
        if len(set(columns)) != len(columns):
            raise GraphError(f"reduce(columns={columns}) repeats a column")
    if not keys and not columns:
        raise GraphError("reduce with no by columns needs at least one value column in "
                         "columns=...; to count all rows use aggregate(n=dd.count())")
    out_schema = _out_schema(out)
    clash = [n for n in out_schema.names if n in keys]
    if clash:
        raise GraphError(f"reduce output column {clash[0]!r} clashes with a group column; "
                         f"the output is the by columns {keys} followed by the out columns, so "
                         f"name it differently")
    reducer = CustomReducer(fn, columns, [schema.type_of(n) for n in columns],
                            out_schema.names, out_schema.types, negative)
    names = tuple(keys) + out_schema.names
    types = tuple(schema.type_of(k) for k in keys) + out_schema.types
    return reducer, Schema(names, types), columns


def _out_schema(out) -> Schema:
    if out is None:
        raise GraphError("reduce needs out=...: the output columns after the by columns, as "
                         "{name: type} (e.g. out={'score': float}) or a list of names")
    spec = list(out.items()) if isinstance(out, dict) else (
        [out] if isinstance(out, str) else list(out))
    try:
        return Schema.of(spec)
    except (TypeError, ValueError) as exc:
        raise GraphError(f"reduce(out={out!r}): {exc}") from None
