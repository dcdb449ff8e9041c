"""The Datalog front end's error helpers; its errors themselves live in :mod:`diffflow.common.errors`.

:class:`DatalogError` and :class:`DatalogWarning` (re-exported here) point at
the program text: ``file:line:col``, the line, a caret.

When the text went through the C preprocessor, ``source`` is a
:class:`~diffflow.datalog.syntax.preprocess.Preprocessed` string that knows where each of
its lines came from; the message then names the original file, line and
column and shows the original line.
"""
from __future__ import annotations

import difflib

from diffflow.common.errors import DatalogError, DatalogWarning, locate  # noqa: F401


def decode_utf8(data: bytes, path: str, what: str, first_line: int = 1) -> str:
    """``data`` as text, or a DatalogError at the line and column of the first bad byte.

    >>> decode_utf8(b"ok\\n\\xff", "f.dl", "the program")
    Traceback (most recent call last):
    ...
    diffflow.common.errors.DatalogError: f.dl:2:1: error: the program is not UTF-8 text (invalid start byte)
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
