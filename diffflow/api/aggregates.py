"""Aggregates: ``count``, ``sum``, ``min`` and ``max`` for :meth:`Collection.aggregate`.

An :class:`Aggregate` names what to compute per group; :func:`aggregate_reducer`
checks a set of named aggregates against the grouped columns and turns them into
the specs of the reducer that computes them.

>>> import diffflow as dd
>>> flow = dd.Dataflow(); sales = flow.input("sales", ["shop", "amount"])
>>> totals = sales.aggregate(by=["shop"], n=dd.count(), total=dd.sum("amount")).output()
>>> sales.insert([(1, 10), (1, 5), (2, 7)]); flow.advance()
>>> sorted(totals.snapshot())
[(1, 2, 15), (2, 1, 7)]
"""
from __future__ import annotations

from diffflow.common.errors import GraphError
from diffflow.common.fields import FrozenFields
from diffflow.common.schema import Schema
from diffflow.operators.reducers import AggregateReducer


class Aggregate(FrozenFields):
    """An aggregate for :meth:`Collection.aggregate`: ``count()``, ``sum(c)``, ``min(c)``, ``max(c)``."""

    _fields = ("kind", "column")

    def __init__(self, kind: str, column: str | None = None) -> None:
        self._freeze(kind=kind, column=column)


def count() -> Aggregate:
    """Number of rows in the group (the sum of multiplicities).

    >>> count()
    Aggregate(kind='count', column=None)
    """
    return Aggregate("count")


def sum(column: str) -> Aggregate:  # noqa: A001 - mirrors SQL and the DESIGN's public names
    """Multiplicity-weighted sum of an int or float column.

    >>> sum("v").kind
    'sum'
    """
    return Aggregate("sum", column)


def min(column: str) -> Aggregate:  # noqa: A001
    """Smallest value of a column among the group's rows.

    >>> min("v").column
    'v'
    """
    return Aggregate("min", column)


def max(column: str) -> Aggregate:  # noqa: A001
    """Largest value of a column among the group's rows.

    >>> max("v").column
    'v'
    """
    return Aggregate("max", column)



def aggregate_reducer(aggregates: dict, keys: list, arranged: Schema, columns: list):
    """``(reducer, output schema)`` of named ``aggregates`` grouped by ``keys``.

    ``arranged`` is the arrangement's schema (the ``keys`` first); ``columns``
    are the collection's own, named as the available ones in errors.

    >>> reducer, schema = aggregate_reducer({"n": count(), "hi": max("v")}, ["k"],
    ...                                      Schema.of(["k", "v"]), ["k", "v"])
    >>> schema.names
    ('k', 'n', 'hi')
    """
    if not aggregates:
        raise GraphError("aggregate needs at least one named aggregate, e.g. n=dd.count()")
    kk = len(keys)
    specs, names, types = [], list(keys), [arranged.types[i] for i in range(kk)]
    for out_name, agg in aggregates.items():
        if not isinstance(agg, Aggregate):
            raise TypeError(f"aggregate {out_name}=...: expected dd.count(), dd.sum(col), "
                            f"dd.min(col) or dd.max(col), got {agg!r}")
        if out_name in names:
            raise GraphError(f"aggregate output column {out_name!r} clashes with a group column")
        if agg.kind == "count":
            specs.append(("count", None, "int"))
            kind = "int"
        else:
            if agg.column not in arranged.names:
                raise GraphError(f"unknown column {agg.column!r} in aggregate {out_name}="
                                 f"{agg.kind}(...); available columns: {list(columns)}")
            position = arranged.names.index(agg.column)
            if position < kk:
                raise GraphError(f"aggregate {out_name}={agg.kind}({agg.column!r}): the column "
                                 f"is a group column; aggregate another column")
            kind = arranged.types[position]
            if agg.kind == "sum" and kind not in ("int", "float"):
                raise GraphError(f"sum({agg.column!r}) needs an int or float column, not {kind}")
            specs.append((agg.kind, position - kk, kind))
        names.append(out_name)
        types.append(kind)
    return AggregateReducer(specs), Schema(tuple(names), tuple(types))
