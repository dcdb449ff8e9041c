"""Custom reducers: a user's vectorised function as a ``reduce`` tactic.

The user's function sees many groups at once, in segmented form, so a numba
kernel can loop over groups and rows without Python in between::

    fn(starts, cols, mults) -> (group_index, out_cols)            # or
    fn(starts, cols, mults) -> (group_index, out_cols, out_mults)

* ``starts`` -- int64 ``(g + 1,)``: the rows of group ``i`` are
  ``starts[i]:starts[i + 1]``, sorted by the value columns (in the order
  given; floats by value, ``str`` columns by their symbol id);
* ``cols`` -- a tuple of 1-D arrays, one per value column: ``int64`` for int,
  ``float64`` for float, ``bool`` for bool, the int64 symbol ids for ``str``;
* ``mults`` -- int64, each row's accumulated multiplicity (positive unless
  ``negative="keep"``); no row appears twice within a group;
* ``group_index`` -- int64 ``(m,)`` in ``[0, g)``: the group of each output row;
* ``out_cols`` -- a tuple of ``(m,)`` arrays, one per output column (a single
  output column may also be returned as a bare array); ``str`` outputs must be
  symbol ids the function received;
* ``out_mults`` -- optional int64 ``(m,)``; without it every row counts once.
  Equal output rows of a group add up; rows whose total is zero vanish.

Contract: the function is pure and deterministic -- its output for a group
depends only on that group's rows and multiplicities, never on other groups,
on the call, or on state kept between calls -- and leaves its input arrays
unchanged.  The reduce driver
(:mod:`.reduce`) calls it at every time where a group's input may have
changed -- including the joins of partially ordered times inside loops --
with whatever set of groups is due, and trusts that recomputing a group gives
the same answer.  Groups whose accumulated input is empty are never passed.

Accumulated multiplicities are positive for a collection that is a multiset.
A row can accumulate a negative multiplicity when more copies are removed
than were inserted; ``negative`` says what the function then sees:
``"drop"`` (the default, as the built-in ``min``/``max``) leaves such rows
out, ``"error"`` raises, ``"keep"`` passes them on.

>>> import numpy as np
>>> def spread(starts, cols, mults):  # max - min of each group
...     v = cols[0]
...     return np.arange(len(starts) - 1), (v[starts[1:] - 1] - v[starts[:-1]],)
>>> r = CustomReducer(spread, ("v",), ("int",), ("d",), ("int",))
>>> g, vals, m = r.reduce(np.array([3, 3, 5]), np.array([[1], [9], [4]]), np.array([1, 1, 2]))
>>> g.tolist(), vals.tolist(), m.tolist()
([3, 5], [[8], [0]], [1, 1])
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.common.schema import decode_floats, encode_floats
from diffflow.operators.reducers import Reducer, segment_starts

NEGATIVE = ("drop", "error", "keep")


def function_name(fn) -> str:
    """A readable name for a user's function (numba dispatchers and ``per_group`` included).

    >>> function_name(len), function_name(lambda s, c, m: None)
    ('len', '<lambda>')
    """
    inner = getattr(fn, "fn", None)  # a PerGroup wrapper
    if inner is not None and fn is not inner:
        return f"per_group({function_name(inner)})"
    return getattr(fn, "__name__", None) or type(fn).__name__


class CustomReducer(Reducer):
    """The tactic of :meth:`Collection.reduce`: decode, call the user's function, check, encode.

    ``in_names``/``in_types`` describe the value columns the tactic receives
    (all of them, in order), ``out_names``/``out_types`` the output columns.

    >>> first = lambda starts, cols, mults: (np.arange(len(starts) - 1), (cols[0][starts[:-1]],))
    >>> r = CustomReducer(first, ("x",), ("float",), ("lo",), ("float",))
    >>> from diffflow.common.schema import encode_floats, decode_floats
    >>> g, vals, m = r.reduce(np.array([0, 0]), encode_floats(np.array([[-1.5], [2.0]])),
    ...                       np.array([1, 1]))
    >>> decode_floats(vals).tolist()
    [[-1.5]]
    """

    def __init__(self, fn, in_names, in_types, out_names, out_types, negative: str = "drop"):
        if negative not in NEGATIVE:
            raise ValueError(f"negative={negative!r}: choose one of {', '.join(NEGATIVE)}")
        self.fn, self.negative = fn, negative
        self.in_names, self.in_types = tuple(in_names), tuple(in_types)
        self.out_names, self.out_types = tuple(out_names), tuple(out_types)
        self.out_width = len(self.out_names)
        self.name = function_name(fn)

    def __repr__(self) -> str:
        return f"CustomReducer({self.name}: {list(self.in_names)} -> {list(self.out_names)})"

    def reduce(self, group, vals, mults):
        if self.negative != "keep" and len(mults) and mults.min() < 0:
            if self.negative == "error":
                raise ValueError(self._negative_message(vals, mults))
            keep = mults > 0
            group, vals, mults = group[keep], vals[keep], mults[keep]
        starts = segment_starts(group)
        if not len(starts):
            return (np.zeros(0, np.int64), np.zeros((0, self.out_width), np.int64),
                    np.zeros(0, np.int64))
        ids = group[starts]
        starts = np.append(starts, len(group)).astype(np.int64)
        cols = tuple(_decode(vals[:, j], kind) for j, kind in enumerate(self.in_types))
        result = self.fn(starts, cols, np.ascontiguousarray(mults, dtype=np.int64))
        index, out, out_mults = self._checked(result, len(ids))
        table = np.empty((len(index), 1 + self.out_width), np.int64)
        table[:, 0] = ids[index]
        table[:, 1:] = out
        table, _, out_mults = columnar.consolidate(
            table, np.zeros((len(table), 1), np.int64), out_mults)
        return table[:, 0], np.ascontiguousarray(table[:, 1:]), out_mults

    # -- checking what the user's function returned --------------------------------------
    def _fail(self, what: str, exc=TypeError):
        outs = ", ".join(f"{n}: {t}" for n, t in zip(self.out_names, self.out_types))
        return exc(f"reduce function {self.name!r} returned {what}. It must return "
                   f"(group_index, out_cols) or (group_index, out_cols, out_mults): "
                   f"group_index an int array of the output rows' groups (0 <= i < number "
                   f"of groups), out_cols a tuple of {self.out_width} arrays as long as "
                   f"group_index ({outs or 'no columns'})")

    def _checked(self, result, groups: int):
        """``(group_index, encoded (m, w) table, out_mults)`` from the function's result."""
        if not isinstance(result, (tuple, list)) or len(result) not in (2, 3):
            raise self._fail(f"{_describe(result)}")
        index = _int_array(result[0])
        if index is None:
            raise self._fail(f"a group_index of {_describe(result[0])}")
        m = len(index)
        cols = result[1]
        if isinstance(cols, np.ndarray) and self.out_width == 1:
            cols = (cols,)
        if not isinstance(cols, (tuple, list)) or len(cols) != self.out_width:
            raise self._fail(f"out_cols of {_describe(cols)}")
        out = np.empty((m, self.out_width), np.int64)
        for j, (column, name, kind) in enumerate(zip(cols, self.out_names, self.out_types)):
            out[:, j] = self._encode(column, name, kind, m)
        if len(result) == 3:
            out_mults = _int_array(result[2])
            if out_mults is None or len(out_mults) != m:
                raise self._fail(f"out_mults of {_describe(result[2])} for {m} rows")
        else:
            out_mults = np.ones(m, np.int64)
        if m and (index.min() < 0 or index.max() >= groups):
            bad = index[(index < 0) | (index >= groups)][0]
            raise self._fail(f"group_index {bad} for a call with {groups} groups "
                             f"(starts has {groups + 1} entries)", IndexError)
        return index, out, out_mults

    def _encode(self, column, name: str, kind: str, m: int) -> np.ndarray:
        arr = np.asarray(column)
        if arr.ndim != 1 or len(arr) != m:
            raise self._fail(f"output column {name!r} of {_describe(column)}, but "
                             f"group_index has {m} rows", ValueError)
        if m == 0:
            return np.zeros(0, np.int64)
        accepted = {"int": "iu", "float": "iuf", "bool": "biu", "str": "iu"}[kind]
        if arr.dtype.kind not in accepted:
            hint = {"int": "cast it with .astype(np.int64) or declare the column float",
                    "float": "return numbers", "bool": "return a bool array",
                    "str": "return symbol ids taken from a str input column"}[kind]
            raise self._fail(f"output column {name!r} (declared {kind}) as an array of "
                             f"{arr.dtype}; {hint}")
        if kind == "float":
            return encode_floats(arr.astype(np.float64))
        if kind == "bool":
            return (arr != 0).astype(np.int64)
        return arr.astype(np.int64)

    def _negative_message(self, vals, mults) -> str:
        at = int(np.flatnonzero(mults < 0)[0])
        row = ", ".join(f"{n}={_decode(vals[at:at + 1, j], k).tolist()[0]!r}"
                        for j, (n, k) in enumerate(zip(self.in_names, self.in_types)))
        return (f"reduce function {self.name!r}: a group's row ({row}) has accumulated "
                f"multiplicity {int(mults[at])}, i.e. it was removed more often than "
                f"inserted (or comes from negate()/antijoin). Remove only rows that are "
                f"present, or build the reduce with negative='drop' to leave such rows out "
                f"(as min/max do) or negative='keep' to pass them to the function")


def _decode(codes: np.ndarray, kind: str) -> np.ndarray:
    """An int64 column as the function sees it (float64, bool, or int64 itself)."""
    if kind == "float":
        return np.ascontiguousarray(decode_floats(codes))
    if kind == "bool":
        return np.ascontiguousarray(codes != 0)
    return np.ascontiguousarray(codes, dtype=np.int64)


def _int_array(value):
    """``value`` as a 1-D int64 array, or None when it is not one-dimensional integers."""
    arr = np.asarray(value)
    if arr.ndim != 1 or (arr.dtype.kind not in "iu" and len(arr)):
        return None
    return arr.astype(np.int64)


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype} with shape {value.shape}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"{type(value).__name__} {value!r}"[:120]
