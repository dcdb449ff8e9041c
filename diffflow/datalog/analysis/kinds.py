"""The kinds of terms analysis infers besides declared types, and how messages name them.

A plain integer is a :data:`LITERAL` until what it meets gives it a type; ``[a, b]`` is a
:data:`RECORD` and ``nil`` a :data:`NIL` until their context names the record type.  (The
brackets keep them apart from any type a program can declare.)
"""
from __future__ import annotations

LITERAL = "[literal]"  # the inferred type of a plain integer: fits number, unsigned and float
RECORD = "[record]"  # the type of [a, b] until its context names the record type
NIL = "[nil]"  # the type of nil: it fits every record type


def kind_name(kind):
    """A type as messages and records name it (a plain integer is a ``number``).

    >>> kind_name(LITERAL), kind_name("float"), kind_name(NIL)
    ('number', 'float', 'record')
    """
    return {LITERAL: "number", RECORD: "record", NIL: "record"}.get(kind, kind)


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


class Unknown(Exception):
    """An expression's type depends on a variable whose type is not known yet."""
