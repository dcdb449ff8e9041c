"""Frontiers: antichains of product-order times.

An *antichain* is a set of mutually incomparable times.  Used as a
*frontier* it stands for the upward-closed set of times it *admits*: ``t``
is admitted when some element ``f`` has ``f <= t``.  Frontiers are ordered
by admission: ``F <= G`` iff every element of ``G`` is admitted by ``F``
(``F`` is "earlier").  The empty antichain admits nothing and is the top
frontier ("done").

Invariant of :class:`Antichain`: ``elements`` holds exactly the distinct
minimal elements inserted so far, as a read-only, lexicographically sorted
``(k, d)`` int64 array.  Since lexicographic order extends the product order,
the representation is canonical, so equality and hashing compare arrays.

"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from diffflow.lattice.times import _dominated, as_times, lex_order, minimal

__all__ = ["Antichain"]


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


class Antichain:
    """A frontier: the minimal elements of a set of times.

    ``Antichain(times=(), d=None)`` keeps only the minimal elements of
    ``times`` (anything :func:`~diffflow.lattice.times.as_times` accepts;
    a tuple is one time).  ``d`` is required when ``times`` is empty.
    Mutable only through :meth:`insert`, which swaps in a new array, so an
    ``elements`` array obtained earlier is a stable snapshot.  Do not
    mutate an antichain while it is a key in a dict or set.

    >>> a = Antichain([(1, 0), (0, 2), (1, 1)])
    >>> a
    Antichain([(0, 2), (1, 0)])
    >>> a.admits((1, 5)), a.admits((0, 1))
    (True, False)
    >>> Antichain(d=2)
    Antichain([], d=2)
    """

    __slots__ = ("_elements", "__weakref__")

    def __init__(self, times=(), d: int | None = None):
        self._elements = _readonly(minimal(times, d))

    @classmethod
    def from_array(cls, arr) -> Antichain:
        """Build from a 2-D ``(n, d)`` array (need not be minimal or sorted).

        Unlike the constructor it insists on 2-D input, so an empty
        ``(0, d)`` array carries its dimension.

        >>> Antichain.from_array(np.array([[3, 1], [2, 2], [3, 3]]))
        Antichain([(2, 2), (3, 1)])
        >>> len(Antichain.from_array(np.empty((0, 3), dtype=np.int64)))
        0
        """
        a = np.asarray(arr)
        if a.ndim != 2:
            raise ValueError(f"from_array needs a 2-D (n, d) array, got shape {a.shape}")
        return cls(a, d=a.shape[1] if a.shape[1] else None)

    @classmethod
    def _from_minimal(cls, elements: np.ndarray) -> Antichain:
        # Trusted fast path: `elements` already minimal, distinct, lex-sorted.
        obj = cls.__new__(cls)
        obj._elements = _readonly(np.ascontiguousarray(elements, dtype=np.int64))
        return obj

    @classmethod
    def minimum(cls, d: int) -> Antichain:
        """The bottom frontier ``{(0,)*d}``, which admits every time.

        >>> Antichain.minimum(3)
        Antichain([(0, 0, 0)])
        """
        return cls._from_minimal(np.zeros((1, int(d)), dtype=np.int64))

    @property
    def elements(self) -> np.ndarray:
        """The minimal elements, a read-only lex-sorted ``(k, d)`` int64 array.

        >>> Antichain([(2, 0), (0, 2)]).elements.tolist()
        [[0, 2], [2, 0]]
        """
        return self._elements

    @property
    def dim(self) -> int:
        """Number of coordinates ``d`` of the times.

        >>> Antichain(d=2).dim
        2
        """
        return self._elements.shape[1]

    def insert(self, t) -> bool:
        """Add the time ``t`` unless already admitted; return whether it changed.

        Elements ``>= t`` are removed, keeping the set minimal.

        >>> a = Antichain([(1, 1)])
        >>> a.insert((2, 2)), a.insert((0, 1)), a
        (False, True, Antichain([(0, 1)]))
        """
        tt = as_times(t, d=self.dim)
        if tt.shape[0] != 1:
            raise ValueError(f"insert takes a single time, got {tt.shape[0]}")
        e = self._elements
        if e.shape[0] and np.all(e <= tt, axis=1).any():
            return False
        kept = e[~np.all(tt <= e, axis=1)]
        merged = np.concatenate([kept, tt])
        self._elements = _readonly(np.ascontiguousarray(merged[lex_order(merged)]))
        return True

    def admits(self, times):
        """Whether some element is ``<=`` each time (vectorised).

        A single time (tuple or any 1-D array of length ``d``) gives a
        ``bool``; an ``(n, d)`` array gives a bool array of length ``n``.

        >>> a = Antichain([(0, 2), (1, 0)])
        >>> a.admits([(0, 3), (0, 1), (4, 0)]).tolist()
        [True, False, True]
        >>> Antichain(d=2).admits((0, 0))
        False
        """
        single = np.ndim(times) == 1
        # 1-D always means one time here, even for d == 1 (as_times would
        # read a 1-D list as a column of 1-dimensional times).
        tt = as_times(np.reshape(times, (1, -1)) if single else times, d=self.dim)
        out = _dominated(self._elements, tt)
        return bool(out[0]) if single else out

    def _check_dim(self, other):
        if isinstance(other, Antichain):
            if other.dim != self.dim:
                raise ValueError(f"dimension mismatch: {self.dim} vs {other.dim}")
            return other.elements
        return other

    def less_equal(self, other) -> bool:
        """Frontier order: ``self <= other`` iff self admits all of ``other``.

        ``other`` is an :class:`Antichain` or a set of times.

        >>> Antichain([(0, 1)]).less_equal(Antichain([(0, 2), (3, 1)]))
        True
        >>> Antichain([(0, 1)]).less_equal(Antichain([(1, 0)]))
        False
        >>> Antichain([(5, 5)]).less_equal(Antichain(d=2))
        True
        """
        other_elems = self._check_dim(other)
        tt = as_times(other_elems, d=self.dim)
        return bool(_dominated(self._elements, tt).all())

    def union(self, other) -> Antichain:
        """Minimal elements of both antichains (the meet of two frontiers).

        >>> Antichain([(0, 2)]).union(Antichain([(1, 0), (1, 3)]))
        Antichain([(0, 2), (1, 0)])
        """
        other_elems = self._check_dim(other)
        o = as_times(other_elems, d=self.dim)
        both = np.concatenate([self._elements, o])
        return Antichain._from_minimal(minimal(both, self.dim))

    def is_empty(self) -> bool:
        """True when the antichain has no elements (admits nothing).

        >>> Antichain(d=1).is_empty(), Antichain.minimum(1).is_empty()
        (True, False)
        """
        return self._elements.shape[0] == 0

    def to_list(self) -> list[tuple[int, ...]]:
        """Elements as a list of tuples of Python ints, lex-sorted.

        >>> Antichain([(1, 0), (0, 1)]).to_list()
        [(0, 1), (1, 0)]
        """
        return [tuple(row) for row in self._elements.tolist()]

    def copy(self) -> Antichain:
        """An independent antichain with the same elements.

        >>> a = Antichain([(1, 1)]); b = a.copy(); b.insert((0, 0))
        True
        >>> a, b
        (Antichain([(1, 1)]), Antichain([(0, 0)]))
        """
        # Sharing is safe: the array is read-only and insert replaces it.
        return Antichain._from_minimal(self._elements)

    def __len__(self) -> int:
        """Number of elements of the antichain."""
        return self._elements.shape[0]

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        """Iterate over the elements as tuples of ints, lex-sorted."""
        return iter(self.to_list())

    def __eq__(self, other) -> bool:
        """Equal iff same dimension and same elements (order-insensitive)."""
        if not isinstance(other, Antichain):
            return NotImplemented
        if self is other:
            return True
        a, b = self._elements, other._elements
        # canonical, contiguous int64 arrays: comparing bytes is exact and cheap
        return a.shape == b.shape and a.tobytes() == b.tobytes()

    def __hash__(self) -> int:
        """Hash of the canonical element array (consistent with ``==``)."""
        return hash((self._elements.shape, self._elements.tobytes()))

    def __repr__(self) -> str:
        if self.is_empty():
            return f"Antichain([], d={self.dim})"
        return f"Antichain({self.to_list()!r})"
