"""Errors that point at the program text: ``file:line:col``, the line, a caret, a fix.

>>> source = "path(x, y) :- edg(x, y)."
>>> print(DatalogError("unknown relation 'edg'", source, "prog.dl", 1, 15,
...                    hint="declare it with .decl edg(...)"))
prog.dl:1:15: error: unknown relation 'edg'
    path(x, y) :- edg(x, y).
                  ^
  hint: declare it with .decl edg(...)
"""
from __future__ import annotations

import difflib


class DatalogError(ValueError):
    """A problem in a Datalog program or its facts, located in the source."""

    def __init__(self, message: str, source: str | None = None, filename: str = "<program>",
                 line: int | None = None, column: int | None = None, hint: str | None = None):
        self.message, self.filename, self.line, self.column, self.hint = \
            message, filename, line, column, hint
        self.source_line = None
        if source is not None and line is not None:
            lines = source.splitlines()
            if 1 <= line <= len(lines):
                self.source_line = lines[line - 1]
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.filename
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: error: {self.message}"
        if self.source_line is not None:
            shown = self.source_line.expandtabs(4)
            text += f"\n    {shown}"
            if self.column is not None:
                prefix = self.source_line[: self.column - 1].expandtabs(4)
                text += "\n    " + " " * len(prefix) + "^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


def did_you_mean(name: str, candidates) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string.

    >>> did_you_mean("edg", ["edge", "path"])
    " (did you mean 'edge'?)"
    """
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
