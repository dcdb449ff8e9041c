"""Soufflé's annotations, ``@[name ...]`` and ``@![name ...]``: read past, as comments are.

Soufflé 2.5 lets declarations, attributes, rules and components carry
annotations (``@[doc = "..."]``, or any tokens in balanced brackets); they
change nothing about what a program computes, so diffflow blanks them out
before parsing (newlines kept, so every position stays where it was).  Strings
and comments are skipped while looking for them, so an ``@[`` inside a string
or comment is no annotation.

>>> blank_annotations('@[doc = "a ]"]\\n.decl e(x: number)')
'              \\n.decl e(x: number)'
>>> blank_annotations('r(x) :- @![note(1)] e(x).  // @[not one]')
'r(x) :-             e(x).  // @[not one]'
"""
from __future__ import annotations

from diffflow.datalog.syntax.errors import DatalogError

_OPEN = {"[": "]", "(": ")", "{": "}"}


def blank_annotations(source: str, filename: str = "<program>") -> str:
    """``source`` with its annotations replaced by spaces (``source`` itself if it has none).

    An annotation whose brackets never close is a :class:`DatalogError` at its ``@``.

    >>> blank_annotations("@[open")
    Traceback (most recent call last):
    ...
    diffflow.common.errors.DatalogError: <program>:1:1: error: this annotation is never closed: '[' needs its ']'
    ...
    """
    if "@[" not in source and "@![" not in source:
        return source
    out, i, n = [], 0, len(source)
    while i < n:
        end = _skip(source, i)
        if end != i:
            out.append(source[i:end])
            i = end
            continue
        if source.startswith("@[", i) or source.startswith("@![", i):
            end = _annotation_end(source, i, filename)
            out.append("".join(c if c == "\n" else " " for c in source[i:end]))
            i = end
            continue
        out.append(source[i])
        i += 1
    return "".join(out)


def _skip(source: str, i: int) -> int:
    """The end of the string or comment starting at ``i`` (``i`` if none starts there)."""
    if source.startswith("//", i):
        end = source.find("\n", i)
        return len(source) if end < 0 else end
    if source.startswith("/*", i):
        end = source.find("*/", i + 2)
        return len(source) if end < 0 else end + 2
    if source.startswith('"', i):
        j = i + 1
        while j < len(source) and source[j] not in '"\n':
            j += 2 if source[j] == "\\" else 1
        return min(j + 1, len(source))
    return i


def _annotation_end(source: str, start: int, filename: str) -> int:
    """Just past the ``]`` closing the annotation at ``start`` (brackets balanced inside)."""
    i = source.index("[", start)
    stack = []
    while i < len(source):
        end = _skip(source, i)
        if end != i:
            i = end
            continue
        c = source[i]
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif c in _OPEN.values():
            if not stack or c != stack[-1]:
                break
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    line = source.count("\n", 0, start) + 1
    column = start - (source.rfind("\n", 0, start) + 1) + 1
    closer = stack[-1] if stack else "]"
    raise DatalogError(f"this annotation is never closed: "
                       f"'{dict(zip(_OPEN.values(), _OPEN))[closer]}' needs its '{closer}'",
                       source, filename, line, column,
                       hint="an annotation is @[name ...] with its brackets balanced")
