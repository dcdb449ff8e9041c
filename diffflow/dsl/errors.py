"""Errors and warnings that point at the program text: ``file:line:col``, the line, a caret.

>>> source = "path(x, y) :- edg(x, y)."
>>> print(DatalogError("unknown relation 'edg'", source, "prog.dl", 1, 15,
...                    hint="declare it with .decl edg(...)"))
prog.dl:1:15: error: unknown relation 'edg'
    path(x, y) :- edg(x, y).
                  ^
  hint: declare it with .decl edg(...)

When the text went through the C preprocessor, ``source`` is a
:class:`~diffflow.dsl.preprocess.Preprocessed` string that knows where each of
its lines came from; the message then names the original file, line and
column and shows the original line.
"""
from __future__ import annotations

import difflib


def locate(source, filename: str, line: int | None, column: int | None = None):
    """``(filename, line, column, source line)`` in the text the user wrote.

    >>> locate("a.\\nb(1).", "p.dl", 2, 3)
    ('p.dl', 2, 3, 'b(1).')
    """
    origin = getattr(source, "origin", None)
    if origin is not None and line is not None:
        return origin(line, column)
    text = None
    if source is not None and line is not None:
        lines = source.splitlines()
        if 1 <= line <= len(lines):
            text = lines[line - 1]
    return filename, line, column, text


class _Located:
    """The shared ``file:line:col: <kind>: message`` formatting of errors and warnings."""
    kind = "error"

    def _locate(self, message, source, filename, line, column, hint):
        self.message, self.hint = message, hint
        self._where = (source, filename, line, column)  # as raised, for rebuilt()
        self.filename, self.line, self.column, self.source_line = \
            locate(source, filename, line, column)

    def rebuilt(self, message: str | None = None, hint: str | None = None):
        """The same report with another message or hint (same place).

        >>> e = DatalogError("bad", "p(1).", "p.dl", 1, 3)
        >>> e.rebuilt(hint="try q").hint, e.rebuilt("worse").message
        ('try q', 'worse')
        """
        source, filename, line, column = self._where
        return type(self)(self.message if message is None else message, source, filename,
                          line, column, self.hint if hint is None else hint)

    def _format(self) -> str:
        where = self.filename
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: {self.kind}: {self.message}"
        if self.source_line is not None:
            shown = self.source_line.expandtabs(4)
            text += f"\n    {shown}"
            if self.column is not None:
                prefix = self.source_line[: self.column - 1].expandtabs(4)
                text += "\n    " + " " * len(prefix) + "^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class DatalogError(_Located, ValueError):
    """A problem in a Datalog program or its facts, located in the source."""

    def __init__(self, message: str, source: str | None = None, filename: str = "<program>",
                 line: int | None = None, column: int | None = None, hint: str | None = None):
        self._locate(message, source, filename, line, column, hint)
        super().__init__(self._format())


class DatalogWarning(_Located, UserWarning):
    """Something in a Datalog program that is accepted but probably not what was meant.

    >>> print(DatalogWarning("unknown pragma 'jbos'", '.pragma "jbos" "2"', "p.dl", 1, 9,
    ...                      hint="did you mean 'jobs'?"))
    p.dl:1:9: warning: unknown pragma 'jbos'
        .pragma "jbos" "2"
                ^
      hint: did you mean 'jobs'?
    """
    kind = "warning"

    def __init__(self, message: str, source: str | None = None, filename: str = "<program>",
                 line: int | None = None, column: int | None = None, hint: str | None = None):
        self._locate(message, source, filename, line, column, hint)
        super().__init__(self._format())


def decode_utf8(data: bytes, path: str, what: str, first_line: int = 1) -> str:
    """``data`` as text, or a DatalogError at the line and column of the first bad byte.

    >>> decode_utf8(b"ok\\n\\xff", "f.dl", "the program")
    Traceback (most recent call last):
    ...
    diffflow.dsl.errors.DatalogError: f.dl:2:1: error: the program is not UTF-8 text (invalid start byte)
      hint: save it as UTF-8
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DatalogError(f"{what} is not UTF-8 text ({exc.reason})", None, str(path), line,
                           column, hint="save it as UTF-8") from None


def did_you_mean(name: str, candidates) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string.

    >>> did_you_mean("edg", ["edge", "path"])
    " (did you mean 'edge'?)"
    """
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
