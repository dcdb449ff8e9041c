"""Product-order timestamps as vectorised int64 arrays.

A *time* is a tuple of ``d`` non-negative integers: coordinate 0 is the
epoch and every enclosing loop adds one round coordinate.  Times are
partially ordered by the *product order*::

    s <= t   iff   s[i] <= t[i] for every coordinate i

which is a lattice: ``join`` (least upper bound) is the coordinate-wise
maximum and ``meet`` (greatest lower bound) the coordinate-wise minimum.
Lexicographic order is a linear extension of it (``s <= t`` implies
``s`` sorts no later than ``t``), which is what lets sorted arrays stand in
for partially ordered sets.

Sets of times are ``(n, d)`` C-contiguous int64 arrays.  The element-wise
functions (:func:`less_equal`, :func:`less_than`, :func:`join`,
:func:`meet`) also take a single time as a ``(d,)`` array or tuple and
broadcast with the usual numpy rules, so ``(n, d)`` against ``(d,)``
compares every row with one time.

:func:`advance_by` implements differential dataflow's time compaction.  Its
invariant: for every ``t2`` admitted by the frontier ``F``,
``t <= t2`` iff ``advance_by(t, F) <= t2``; moreover
``advance_by(t, F) >= t`` and advancing twice equals advancing once.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "as_times",
    "less_equal",
    "rows_less_equal",
    "less_than",
    "join",
    "meet",
    "advance_by",
    "minimal",
    "lex_order",
]

# Upper bound on the elements of the temporary (n, k, d) arrays built by the
# pairwise operations; keeps peak memory around 32 MB whatever the inputs.
_PAIRWISE_LIMIT = 1 << 22

# Rows per block in the general-dimension `minimal`; bounds the quadratic
# within-block comparison while keeping numpy calls coarse.
_MINIMAL_BLOCK = 256

_INT64_MAX = np.iinfo(np.int64).max


def _coerce(x) -> np.ndarray:
    """Convert ``x`` to an int64 array of any shape, rejecting non-integers."""
    if isinstance(x, np.ndarray) and x.dtype == np.int64:
        return x
    elements = getattr(x, "elements", None)
    if isinstance(elements, np.ndarray):
        # Duck-typed Antichain; importing the class here would be circular.
        return elements
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(
            f"times must be a rectangular array of integers "
            f"(equal number of coordinates per time): {exc}"
        ) from None
    kind = arr.dtype.kind
    if arr.size == 0:
        # np.asarray(()) is float64; an empty input carries no values to check.
        return arr.astype(np.int64)
    if kind == "i":
        return arr.astype(np.int64, copy=False)
    if kind == "u":
        if arr.max() > _INT64_MAX:
            raise ValueError("time coordinates must fit in int64")
        return arr.astype(np.int64)
    if kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError("time coordinates must be integers")
        if np.abs(arr).max() > _INT64_MAX:
            raise ValueError("time coordinates must fit in int64")
        return arr.astype(np.int64)
    if kind == "O":
        raise ValueError(
            "times must be a rectangular array of integers (got ragged or "
            "non-numeric input)"
        )
    raise ValueError(f"time coordinates must be integers, got dtype {arr.dtype}")


def as_times(x, d: int | None = None) -> np.ndarray:
    """Convert ``x`` to a C-contiguous int64 ``(n, d)`` array of times.

    Accepts a sequence of tuples, a 2-D array, or (duck-typed) an
    ``Antichain``.  Raises :class:`ValueError` for negative coordinates,
    non-integer values, ragged input, a dimension different from ``d``, or
    an empty input whose dimension cannot be inferred.

    Rule for 1-D input of length ``L``:

    * a ``tuple`` is always ONE time (``(1, L)``); ``L`` must equal ``d``
      when ``d`` is given;
    * otherwise (list, array), if ``d`` is given and ``L == d`` it is ONE
      time; if ``d == 1`` (or ``d`` is omitted) it is a column of ``L``
      one-dimensional times; any other ``d`` is an error.

    The result may share memory with ``x`` when ``x`` already is a
    C-contiguous int64 array.

    >>> as_times([(0, 1), (2, 3)]).tolist()
    [[0, 1], [2, 3]]
    >>> as_times((4, 5)).shape, as_times([4, 5]).shape, as_times([4, 5], d=2).shape
    ((1, 2), (2, 1), (1, 2))
    >>> as_times([], d=3).shape
    (0, 3)
    >>> as_times([(0, -1)])
    Traceback (most recent call last):
    ...
    ValueError: time coordinates must be non-negative, got -1
    """
    if d is not None:
        d = int(d)
        if d < 1:
            raise ValueError(f"dimension d must be >= 1, got {d}")
    arr = _coerce(x)
    if arr.ndim == 0:
        raise ValueError("a time needs at least one coordinate; got a scalar")
    if arr.ndim == 1:
        length = arr.shape[0]
        if length == 0:
            if d is None:
                raise ValueError("cannot infer the dimension d of an empty set of times")
            arr = arr.reshape(0, d)
        elif isinstance(x, tuple):
            if d is not None and length != d:
                raise ValueError(f"time {x!r} has {length} coordinates, expected {d}")
            arr = arr.reshape(1, length)
        elif d is not None and length == d:
            arr = arr.reshape(1, d)
        elif d is None or d == 1:
            arr = arr.reshape(length, 1)
        else:
            raise ValueError(
                f"1-D input of length {length} is neither one time of dimension "
                f"{d} nor a column of 1-dimensional times"
            )
    elif arr.ndim == 2:
        if arr.shape == (0, 0) and d is not None:
            arr = arr.reshape(0, d)
        elif arr.shape[1] == 0:
            raise ValueError("times need at least one coordinate (got shape (n, 0))")
        elif d is not None and arr.shape[1] != d:
            raise ValueError(f"times have {arr.shape[1]} coordinates, expected {d}")
    else:
        raise ValueError(f"times must be 1-D or 2-D, got shape {arr.shape}")
    if arr.size and arr.min() < 0:
        raise ValueError(f"time coordinates must be non-negative, got {arr.min()}")
    return np.ascontiguousarray(arr)


def _pair(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = _coerce(a)
    b = _coerce(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("times need at least one coordinate; got a scalar")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"dimension mismatch: {a.shape[-1]} vs {b.shape[-1]} coordinates"
        )
    return a, b


def _bool_result(r: np.ndarray):
    # A comparison of two single times reads best as a plain Python bool.
    return bool(r) if r.ndim == 0 else r


def less_equal(a, b):
    """Product order ``a <= b`` (every coordinate), broadcast over leading axes.

    Returns a bool array, or a Python ``bool`` when both are single times.

    >>> less_equal((1, 2), (1, 3)), less_equal((1, 2), (0, 3))
    (True, False)
    >>> less_equal([[0, 0], [2, 0], [0, 9]], (1, 1)).tolist()
    [True, False, False]
    """
    a, b = _pair(a, b)
    return _bool_result(np.all(a <= b, axis=-1))


def rows_less_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a[i] <= b[i]`` in the product order for each row of two ``(n, d)`` int arrays.

    The same as ``less_equal`` on equal shapes, column by column: several
    times faster than reducing over a short last axis.

    >>> rows_less_equal(np.array([[0, 1], [2, 0]]), np.array([[1, 1], [1, 5]])).tolist()
    [True, False]
    """
    out = a[:, 0] <= b[:, 0]
    for c in range(1, a.shape[1]):
        out &= a[:, c] <= b[:, c]
    return out


def less_than(a, b):
    """Strict product order: ``a <= b`` and ``a != b``, broadcast.

    >>> less_than((1, 2), (1, 3)), less_than((1, 2), (1, 2))
    (True, False)
    """
    a, b = _pair(a, b)
    return _bool_result(np.all(a <= b, axis=-1) & np.any(a != b, axis=-1))


def join(a, b) -> np.ndarray:
    """Least upper bound: coordinate-wise maximum, broadcast.

    >>> join((1, 4), (3, 2)).tolist()
    [3, 4]
    """
    a, b = _pair(a, b)
    return np.maximum(a, b)


def meet(a, b) -> np.ndarray:
    """Greatest lower bound: coordinate-wise minimum, broadcast.

    >>> meet((1, 4), (3, 2)).tolist()
    [1, 2]
    """
    a, b = _pair(a, b)
    return np.minimum(a, b)


def _chunk_rows(k: int, d: int) -> int:
    return max(1, _PAIRWISE_LIMIT // max(1, k * d))


def _dominated(frontier: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each row t of ``times``: is some row f of ``frontier`` <= t?"""
    n, d = times.shape
    k = frontier.shape[0]
    out = np.zeros(n, dtype=bool)
    if k == 0 or n == 0:
        return out
    if k <= 4:  # the common case (a loop's frontier): a few comparisons per time
        for f in frontier:
            # column by column: np.all(..., axis=1) over d = 2 columns is several times slower
            above = times[:, 0] >= f[0]
            for c in range(1, d):
                above &= times[:, c] >= f[c]
            out |= above
        return out
    step = _chunk_rows(k, d)
    for s in range(0, n, step):
        blk = times[s : s + step]
        out[s : s + step] = np.all(frontier[None, :, :] <= blk[:, None, :], axis=2).any(
            axis=1
        )
    return out


def advance_by(times, frontier) -> np.ndarray:
    """Advance times by a frontier: meet over ``f`` in ``F`` of ``join(t, f)``.

    ``times`` is ``(n, d)`` or a single ``(d,)`` time (the result has the
    same shape); ``frontier`` is an ``Antichain`` or anything
    :func:`as_times` accepts.  An empty frontier leaves times unchanged.
    Non-minimal frontier elements do not change the result.

    >>> advance_by((1, 0), [(0, 2), (3, 1)]).tolist()
    [1, 1]
    >>> advance_by([(0, 0), (5, 5)], [(2, 2)]).tolist()
    [[2, 2], [5, 5]]
    >>> advance_by((1, 0), np.empty((0, 2), dtype=np.int64)).tolist()
    [1, 0]
    """
    t = _coerce(times)
    if t.ndim not in (1, 2):
        raise ValueError(f"times must be 1-D or 2-D, got shape {t.shape}")
    single = t.ndim == 1
    t2 = t.reshape(1, -1) if single else t
    d = t2.shape[1]
    f = as_times(frontier, d=d)
    if f.shape[0] == 0:
        out = t2.copy()
    elif f.shape[0] == 1:  # the common case: one frontier element, a plain join
        out = np.maximum(t2, f[0])
    else:  # one elementwise pass per frontier element (no (n, k, d) temporary)
        out = np.maximum(t2, f[0])
        joined = np.empty_like(out)
        for e in f[1:]:
            np.maximum(t2, e, out=joined)
            np.minimum(out, joined, out=out)
    return out[0] if single else out


def lex_order(times) -> np.ndarray:
    """Permutation that sorts times lexicographically (stable).

    >>> lex_order([(1, 0), (0, 2), (0, 1)]).tolist()
    [2, 1, 0]
    """
    t = as_times(times)
    # np.lexsort treats its LAST key as primary, hence the reversed columns.
    return np.lexsort(t.T[::-1])


_MINIMAL_PLAIN = 8  # up to this many times, minimal() compares them in Python


def minimal_tuples(points) -> tuple:
    """The minimal elements of some times (tuples), lexicographically sorted.

    Plain Python: for the few times a frontier holds it beats numpy's call overhead.

    >>> minimal_tuples([(2,), (1,), (1,)])
    ((1,),)
    """
    kept: list = []
    for p in sorted(set(points)):  # lexicographic: only an earlier point can dominate p
        if not any(all(a <= b for a, b in zip(k, p)) for k in kept):
            kept.append(p)
    return tuple(kept)


def minimal(times, d: int | None = None) -> np.ndarray:
    """Distinct minimal elements of a set of times, sorted lexicographically.

    ``d`` is only needed to give an empty input its dimension.

    >>> minimal([(2, 0), (1, 1), (2, 2), (1, 1), (0, 3)]).tolist()
    [[0, 3], [1, 1], [2, 0]]
    >>> minimal([], d=2).shape
    (0, 2)
    """
    t = as_times(times, d)
    n, d = t.shape
    if n <= 1:
        return t.copy()
    if n <= _MINIMAL_PLAIN:  # a few times (frontiers and their bounds): plain Python
        keep = minimal_tuples(map(tuple, t.tolist()))
        return np.array(keep, dtype=np.int64).reshape(len(keep), d)
    s = t[lex_order(t)]
    distinct = np.ones(n, dtype=bool)
    distinct[1:] = np.any(s[1:] != s[:-1], axis=1)
    u = s[distinct]
    # Lex order extends the product order, so a time can only be dominated
    # by times sorted before it: one forward sweep suffices.
    if d == 1:
        return u[:1].copy()
    if d == 2:
        # Earlier rows have first coordinate <=, so only the second decides.
        y = u[:, 1]
        keep = np.ones(len(u), dtype=bool)
        keep[1:] = y[1:] < np.minimum.accumulate(y)[:-1]
        return np.ascontiguousarray(u[keep])
    found = np.empty((0, d), dtype=np.int64)
    for s0 in range(0, len(u), _MINIMAL_BLOCK):
        blk = u[s0 : s0 + _MINIMAL_BLOCK]
        dominated = _dominated(found, blk)
        # le[j, i]: blk[j] <= blk[i]; only j < i (upper triangle) can dominate.
        le = np.all(blk[:, None, :] <= blk[None, :, :], axis=2)
        dominated |= np.triu(le, k=1).any(axis=0)
        found = np.concatenate([found, blk[~dominated]])
    return np.ascontiguousarray(found)
