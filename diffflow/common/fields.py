"""Light records: equality, hashing and ``repr`` from a class's named fields.

The few record classes a first query touches (schemas, graph nodes and scopes, operator
contexts, aggregates) use this instead of :mod:`dataclasses`, whose import (with
:mod:`inspect`) costs a fresh process ~10 ms of its start: the cold-start budget is
0.1 s, most of it numpy's own import.  A subclass names its fields in ``_fields``, in
constructor order, and writes its ``__init__``.

>>> class Point(Fields):
...     _fields = ("x", "y")
...     def __init__(self, x, y=0):
...         self.x, self.y = x, y
>>> Point(1), Point(1) == Point(1, 0), Point(1) == Point(2)
(Point(x=1, y=0), True, False)
"""
from __future__ import annotations


class Fields:
    """Compares and prints by ``_fields`` (as a dataclass does); unhashable, being mutable."""

    _fields: tuple = ()
    _hidden: tuple = ()  # fields left out of the repr

    def _values(self) -> tuple:
        """The fields' values, in ``_fields`` order."""
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields
                          if name not in self._hidden)
        return f"{type(self).__name__}({shown})"


class FrozenFields(Fields):
    """Immutable once built, hashable by value (a frozen dataclass).

    >>> class Pair(FrozenFields):
    ...     _fields = ("a", "b")
    ...     def __init__(self, a, b):
    ...         self._freeze(a=a, b=b)
    >>> p = Pair(1, 2); hash(p) == hash(Pair(1, 2)), p
    (True, Pair(a=1, b=2))
    >>> p.a = 3
    Traceback (most recent call last):
    AttributeError: Pair is immutable: build a new one
    """

    def _freeze(self, **values) -> None:
        """Set the fields once, from ``__init__``."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable: build a new one")

    def __delattr__(self, name):
        raise AttributeError(f"{type(self).__name__} is immutable: build a new one")

    def __hash__(self):
        return hash(self._values())
