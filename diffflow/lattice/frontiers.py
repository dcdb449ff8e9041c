"""Frontiers as sorted tuples of tuples, path summaries, and the one conversion to Antichain.

:class:`~diffflow.lattice.Antichain` is the canonical frontier: operators
receive one per input port and compare, admit and advance with it.  Progress
tracking, though, builds, compares and hashes thousands of frontiers per run,
each holding a handful of times; for that it uses a faster internal form, the
*tuple frontier*: the minimal times as a lexicographically sorted tuple of
int tuples (``((0, 3), (1, 2))``).  It is canonical too (same frontier, same
tuple), so ``==`` and hashing are exact.  The scheduler converts at the edge,
with :func:`antichain_of`, only when it hands a frontier to an operator.

A *path summary* says how times change along a path through an operator:
:data:`IDENTITY` for most, :data:`ENTER` (append round 0) into a loop,
:data:`LEAVE` (drop the round) out of it, :data:`ADVANCE` (round + 1) on a
loop's feedback edge.

>>> minimal_tuples([(1, 2), (0, 3), (2, 0), (1, 3)])
((0, 3), (1, 2), (2, 0))
>>> ADVANCE.apply(((3, 1),)), LEAVE.apply(((0, 2), (1, 0)))
(((3, 2),), ((0,),))
>>> antichain_of(((0, 3), (1, 2)), 2)
Antichain([(0, 3), (1, 2)])
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from diffflow.lattice.antichain import Antichain
from diffflow.lattice.times import minimal, minimal_tuples


def times_frontier(times) -> tuple:
    """The tuple frontier (minimal times) of a ``(n, d)`` array; ``None`` or empty gives ``()``.

    >>> times_frontier(np.array([[1, 2], [0, 5], [1, 0], [0, 5]]))
    ((0, 5), (1, 0))
    """
    if times is None or len(times) == 0:
        return ()
    if times.shape[1] == 1:
        return ((int(times[:, 0].min()),),)
    if len(times) > 16:
        times = minimal(times)
    return minimal_tuples(map(tuple, times.tolist()))


class _SharedAntichain(Antichain):
    """An antichain handed to many operators from the cache: it cannot change."""

    __slots__ = ()

    def insert(self, t) -> bool:
        raise TypeError("this frontier is shared by every operator reading it and cannot "
                        "change; insert into a copy() instead")


@lru_cache(maxsize=4096)
def antichain_of(frontier: tuple, dim: int) -> Antichain:
    """The :class:`Antichain` of a tuple frontier (cached: the same few frontiers recur).

    The result is shared, so it is frozen: ``insert`` into a ``copy()``.

    >>> antichain_of((), 2)
    Antichain([], d=2)
    >>> antichain_of(((1,),), 1).copy().insert((0,))
    True
    """
    arr = np.array(frontier, dtype=np.int64).reshape(len(frontier), dim)
    return _SharedAntichain._from_minimal(arr)


class Summary:
    """How times change along a path through an operator: the identity unless overridden.

    ``apply`` carries a tuple frontier from the input to the output;
    ``input_dim`` is the input's number of time coordinates given the output's.

    >>> IDENTITY.apply(((1, 0),)), ENTER.input_dim(2)
    (((1, 0),), 1)
    """

    name = "identity"

    def apply(self, frontier: tuple) -> tuple:
        return frontier

    def input_dim(self, dim: int) -> int:
        return dim

    def __repr__(self) -> str:
        return self.name.upper()


class _Enter(Summary):
    name = "enter"

    def apply(self, frontier):
        return tuple(t + (0,) for t in frontier)

    def input_dim(self, dim):
        return dim - 1


class _Leave(Summary):
    name = "leave"

    def apply(self, frontier):
        return minimal_tuples(t[:-1] for t in frontier)

    def input_dim(self, dim):
        return dim + 1


class _Advance(Summary):
    name = "advance"

    def apply(self, frontier):
        return tuple(t[:-1] + (t[-1] + 1,) for t in frontier)


IDENTITY, ENTER, LEAVE, ADVANCE = Summary(), _Enter(), _Leave(), _Advance()
