"""Generator functors: ``range(begin, end[, step])`` makes many rows from one.

Analysis makes every call the side of an ``x = range(...)`` literal; the join plan then
expands each row into one row per value (:class:`RangeGenerator`, vectorised through
``Collection._expand``).

>>> rows, values = range_values(np.array([1]), np.array([4]), None, "number")
>>> values.tolist()
[1, 2, 3]
"""
from __future__ import annotations

import numpy as np

from diffflow.common import memory_budget
from diffflow.common.errors import ExpressionError
from diffflow.common.schema import encode_floats
from diffflow.dataflow.expr import as_expr
from diffflow.datalog.values.functors import wrap_array

MAX_GENERATED = 50_000_000  # values one range call may make in one batch

def range_values(start, end, step, kind: str, row_bytes: int = 0):
    """``range(start, end[, step])`` of each row: ``(row index, value)`` arrays, as Soufflé
    (like Python's slices): from ``start`` by ``step`` while before ``end``; the default
    step is the sign of ``end - start``; a step of 0 gives ``start`` once unless it equals
    ``end``; a step away from ``end`` gives nothing.  ``step`` is None for the default.
    ``row_bytes``: what the caller allocates per value besides, reserved with the values
    under the memory limit (:mod:`diffflow.common.memory_budget`) before anything is made.

    >>> rows, values = range_values(np.array([0, 5]), np.array([3, 3]), None, "number")
    >>> rows.tolist(), values.tolist()
    ([0, 0, 0, 1, 1], [0, 1, 2, 5, 4])
    >>> range_values(np.array([5.0]), np.array([3.75]), np.array([-0.5]), "float")[1].tolist()
    [5.0, 4.5, 4.0]
    """
    floats = kind == "float"
    dtype = np.float64 if floats else np.int64
    start, end = np.asarray(start, dtype), np.asarray(end, dtype)
    step = np.sign(end - start).astype(dtype) if step is None else np.asarray(step, dtype)
    span = end - start
    with np.errstate(divide="ignore", invalid="ignore"):
        moving = np.where(step != 0, span / np.where(step == 0, 1, step), 0)
    counts = np.where(step == 0, (start != end).astype(np.int64),
                      np.ceil(np.maximum(moving, 0)).astype(np.int64)) if floats else \
        np.where(step == 0, (start != end).astype(np.int64),
                 np.maximum(-(-span // np.where(step == 0, 1, step)), 0))
    counts = counts.astype(np.int64)
    total = int(counts.sum())
    # the row index, the offsets, the values (and numpy's temporaries), and the caller's
    memory_budget.reserve(total * (32 + row_bytes), "range(...) making {:,} values", total)
    if total > MAX_GENERATED:
        raise ExpressionError(f"range(...) would make {total:,} values in one batch (the "
                              f"limit is {MAX_GENERATED:,}); narrow the bounds or the step")
    rows = np.repeat(np.arange(len(counts)), counts)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    values = start[rows] + offsets * step[rows]
    return rows, (values if floats else wrap_array(values, kind))


class RangeGenerator:
    """The vectorised function of a ``range`` call for ``Collection._expand``: the bound
    argument expressions, evaluated on the input rows, give each row's values, appended as
    a last column (encoded).

    >>> from diffflow.dataflow.expr import col
    >>> from diffflow.common.schema import Schema
    >>> g = RangeGenerator([col("a"), 3], Schema.of(["a"]), "number")
    >>> source, rows = g(np.array([[1], [2]]), None)
    >>> source.tolist(), rows.tolist()
    ([0, 0, 1], [[1, 1], [1, 2], [2, 2]])
    """

    def __init__(self, args: list, schema, kind: str):
        self.args, self.schema, self.kind = [as_expr(a) for a in args], schema, kind

    def __call__(self, rows, symbols):
        n = len(rows)
        values = [np.broadcast_to(np.asarray(a._eval(rows, self.schema, symbols)), (n,))
                  for a in self.args]
        # (each value's output row, and the flat_map's times and diffs: about two columns)
        source, generated = range_values(values[0], values[1],
                                         values[2] if len(values) > 2 else None, self.kind,
                                         8 * (rows.shape[1] + 3))
        if self.kind == "float":
            generated = encode_floats(generated)
        out = np.empty((len(source), rows.shape[1] + 1), np.int64)
        out[:, :-1] = rows[source]
        out[:, -1] = generated
        return source, out
