"""The C preprocessor pass Soufflé runs before parsing: ``#include``, ``#define``, ``#if``...

Soufflé pipes every program through a C preprocessor (``mcpp`` or ``cpp``),
so programs share declarations with ``#include "types.dl"`` and configure
themselves with ``#define`` / ``#ifdef``.  diffflow does the same with pcpp, a
C99 preprocessor in pure Python, and keeps track of where each line of its
output came from, so errors name the original ``file:line:col`` and show the
original line.

* Only text with a directive line (a line starting with ``#``), or with
  macros given, is preprocessed; anything else is returned unchanged.
* ``#include "f"`` looks next to the including file first (the current
  directory for text that has no file), then in ``include_dirs`` (Soufflé's
  ``-I``; the current directory when none are given, as in Soufflé).
* ``macros={"NAME": "value"}`` is Soufflé's ``-M "NAME=value"``; a value of
  None defines the name as 1.  ``RAM_DOMAIN_SIZE`` is 32, as Soufflé defines it
  for its 32-bit numbers.
* Soufflé's own ``.include "f"`` works as ``#include "f"`` (without the C preprocessor
  too, as in Soufflé), and a file with a ``.once`` line is read once only (the
  program's own file counts); ``__LINE__`` and ``__FILE__`` are the line and file.
* ``#pragma`` lines are dropped (Soufflé's scanner ignores them), ``#warning``
  gives a :class:`~diffflow.datalog.syntax.errors.DatalogWarning`, ``#error``, a missing
  include, an unterminated ``#if`` and an unknown directive are
  :class:`~diffflow.datalog.syntax.errors.DatalogError` at the directive.

Comments are removed (as by cpp); strings keep ``//``, ``'`` and ``#``.

>>> text = preprocess('#define N 3\\n.decl e(x: number)\\ne(N). e(2 * N).\\n', "p.dl")
>>> print(text.strip())
.decl e(x: number)
e(3). e(2 * 3).
>>> text.origin(2, 11)  # line 2, column 11 of the output is the second N of line 3
('p.dl', 3, 11, 'e(N). e(2 * N).')
"""
from __future__ import annotations

import bisect
import io
import os
import re

from diffflow.datalog.syntax.errors import DatalogError, DatalogWarning

_DIRECTIVE = re.compile(r"^[ \t]*(#|\.include[ \t]|\.once\b)|__LINE__|__FILE__", re.MULTILINE)
# Soufflé's own directives: .include is as long as #include; .once is blanked (see _Runner)
_DOT_INCLUDE = re.compile(r"^([ \t]*)\.include(?=[ \t])", re.MULTILINE)
_DOT_ONCE = re.compile(r"^([ \t]*)\.once\b", re.MULTILINE)


def _souffle_directives(text: str) -> str:
    """``.include`` as ``#include`` and ``.once`` blanked, every other column in place.

    >>> _souffle_directives('.once\\n  .include "a.dl"\\n')
    '     \\n  #include "a.dl"\\n'
    """
    text = _DOT_INCLUDE.sub(r"\1#include", text)
    return _DOT_ONCE.sub(lambda m: " " * len(m.group(0)), text)


def needs_preprocessing(text: str, macros=None) -> bool:
    """Whether ``text`` has a directive line, or macros are given.

    >>> needs_preprocessing('e("#1").'), needs_preprocessing('#include "a.dl"')
    (False, True)
    >>> needs_preprocessing('.include "a.dl"'), needs_preprocessing('e(__LINE__).')
    (True, True)
    """
    return bool(macros) or _DIRECTIVE.search(text) is not None


def macros_from_option(option: str) -> dict:
    """Soufflé's ``-M "NAME=VALUE NAME2"`` as a ``macros`` dict (a bare name is defined as 1).

    >>> macros_from_option("SIZE=10 DEBUG  MODE=fast")
    {'SIZE': '10', 'DEBUG': None, 'MODE': 'fast'}
    >>> macros_from_option("=3")
    Traceback (most recent call last):
    ...
    ValueError: -M '=3': '' is not a macro name; write NAME, NAME=VALUE or NAME(ARGS)=BODY
    """
    macros = {}
    for item in option.split():
        name, equals, value = item.partition("=")
        if not _MACRO_NAME.match(name):
            raise ValueError(f"-M {option!r}: {name!r} is not a macro name; write NAME, "
                             f"NAME=VALUE or NAME(ARGS)=BODY")
        macros[name] = value if equals else None
    return macros


_MACRO_NAME = re.compile(r"^[A-Za-z_]\w*(\([A-Za-z_\w\s,.]*\))?$")


def preprocess(text: str, filename: str = "<program>", include_dirs=None, macros=None):
    """``text`` after the C preprocessor: a :class:`Preprocessed` string, or ``text``
    itself when it needs no preprocessing (see the module docstring).

    >>> preprocess("#if 0\\ne(1).\\n#else\\ne(2).\\n#endif\\n").strip()
    'e(2).'
    """
    if not needs_preprocessing(text, macros):
        return text
    for name in macros or {}:
        if not _MACRO_NAME.match(name):
            raise ValueError(f"macros: {name!r} is not a macro name (NAME or NAME(ARGS))")
    return _Runner(text, filename, include_dirs, macros).run()


class Preprocessed(str):
    """Preprocessed program text that maps its positions back to the files it came from.

    ``origin(line, column)`` gives ``(filename, line, column, original line text)``;
    ``warnings`` holds the ``#warning`` directives met.
    """

    def __new__(cls, text, lines, texts, warnings):
        self = super().__new__(cls, text)
        self._lines, self._texts, self.warnings = lines, texts, warnings
        return self

    def origin(self, line: int, column: int | None = None) -> tuple:
        """Where output ``line``:``column`` (1-based) was written."""
        if not self._lines:
            return "<program>", line, column, None
        label, original, segments = self._lines[max(0, min(line, len(self._lines)) - 1)]
        text = _line_of(self._texts.get(label), original)
        if column is None:
            return label, original, None, text
        mapped = None
        for start, source_column, length in segments:
            if start <= column < start + length:
                mapped = source_column + column - start
                break
            if start + length <= column:  # past this token: just after it
                mapped = source_column + length
        return label, original, mapped if mapped is not None else 1, text


def _line_of(text, line):
    if text is None:
        return None
    lines = text.splitlines()
    return lines[line - 1] if 1 <= line <= len(lines) else None


class _Runner:
    """One preprocessor run: pcpp's tokens regrouped into lines with their origins."""

    def __init__(self, text, filename, include_dirs, macros):
        self.text, self.filename = text, filename
        self.include_dirs = list(include_dirs) if include_dirs is not None else ["."]
        self.macros = dict(macros or {})
        self.texts = {filename: text}   # label -> file text
        self.labels = {}                # absolute path -> label
        self.starts = {}                # label -> offsets of line starts
        self.warnings = []
        self.once = set()  # absolute paths of the files with a .once line read so far

    def run(self) -> Preprocessed:
        processor = self.processor()
        if _DOT_ONCE.search(self.text):
            self.once.add(os.path.abspath(self.filename))
        processor.parse(_souffle_directives(self.text), self.filename)
        lines = []        # (label, line, segments)
        chunks = []       # output text, one entry per line
        parts, segments, key, column = [], [], None, 1

        def flush():
            nonlocal parts, segments, key, column
            if key is not None or parts:
                chunks.append("".join(parts))
                lines.append((*(key or (self.filename, 1)), segments))
            parts, segments, key, column = [], [], None, 1

        while True:
            try:
                token = processor.token()
            except RecursionError:  # pcpp nests a generator per #include
                directive = processor.lastdirective
                raise self.error(
                    "#include nested too deeply: do these files include each other?",
                    directive.source or self.filename, directive.lineno, 1,
                    hint="guard a file against repeated inclusion with #ifndef NAME / "
                         "#define NAME / ... / #endif") from None
            if token is None:
                break
            value = token.value
            if "\n" in value:
                flush()
                continue
            where = (getattr(token, "source", None) or self.filename, token.lineno)
            blank = not value.strip()
            if key is None and not blank:
                key = where
            elif key is not None and where != key and not blank:
                flush()
                key = where
            original = self.original_column(token, where)
            if original is not None and not blank:
                segments.append((column, original, len(value)))
            parts.append(value)
            column += len(value)
        flush()
        return Preprocessed("\n".join(chunks) + "\n", lines, self.texts, self.warnings)

    def original_column(self, token, where):
        """The token's column in its file, if it is the file's own text (not an expansion)."""
        label, line = where
        text = self.texts.get(label)
        position = getattr(token, "lexpos", None)
        if text is None or position is None or \
                text[position:position + len(token.value)] != token.value:
            return None
        starts = self.starts.get(label)
        if starts is None:
            starts = self.starts[label] = [0] + [m.end() for m in re.finditer("\n", text)]
        at = bisect.bisect_right(starts, position) - 1
        return position - starts[at] + 1 if at + 1 == line else None

    def error(self, message, label, line, column=None, hint=None):
        return DatalogError(message, self.texts.get(label), label, line, column, hint)

    def processor(self):
        from pcpp import Preprocessor  # imported lazily: importing diffflow stays cheap

        runner = self

        class _Pcpp(Preprocessor):
            def on_file_open(self, is_system_include, includepath):
                with open(includepath, encoding="utf-8") as f:
                    data = f.read()
                if _DOT_ONCE.search(data):
                    if os.path.abspath(includepath) in runner.once:
                        return io.StringIO("")  # (.once: read already)
                    runner.once.add(os.path.abspath(includepath))
                label = os.path.relpath(includepath)
                if label.startswith(".."):
                    label = includepath
                runner.labels[includepath] = label
                runner.texts[label] = data
                return io.StringIO(_souffle_directives(data))

            def parsegen(self, input, source=None, abssource=None):
                if abssource in runner.labels:
                    source = runner.labels[abssource]
                return super().parsegen(input, source, abssource)

            def on_include_not_found(self, is_malformed, is_system_include, curdir,
                                     includepath):
                directive = self.lastdirective
                label, line = directive.source or runner.filename, directive.lineno
                text = _line_of(runner.texts.get(label), line) or ""
                column = text.find(includepath) + 1 or None
                if is_malformed:
                    raise runner.error(f"malformed #include {includepath}", label, line, column,
                                       hint='write #include "file.dl"')
                here = os.path.dirname(label) or "the current directory"
                raise runner.error(
                    f"cannot find the include file {includepath!r}", label, line, column,
                    hint=f"looked in {', '.join([here, *runner.include_dirs])}; add its "
                         f"directory with -I DIR (Program: include_dirs=[...])")

            def on_directive_handle(self, directive, toks, ifpassthru, precedingtoks):
                self.lastdirective = directive
                if directive.value == "include" and not "".join(t.value for t in toks).strip():
                    raise runner.error("#include needs a file name", directive.source or
                                       runner.filename, directive.lineno, 1,
                                       hint='write #include "file.dl"')
                return True

            def on_error(self, file, line, msg):
                raise runner.error(msg.strip(), file or runner.filename, line, 1)

            def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
                name = directive.value
                label = directive.source or runner.filename
                text = "".join(t.value for t in toks).strip()
                if name == "pragma":
                    return True  # dropped, as Soufflé's scanner ignores them
                if name == "warning":
                    runner.warnings.append(DatalogWarning(
                        f"#warning {text}", runner.texts.get(label), label, directive.lineno, 1))
                    return True
                if name == "error":
                    raise runner.error(f"#error {text}", label, directive.lineno, 1)
                raise runner.error(f"invalid preprocessing directive #{name}", label,
                                   directive.lineno, 1,
                                   hint="the C preprocessor knows #include, #define, #undef, "
                                        "#if, #ifdef, #ifndef, #elif, #else, #endif, #error, "
                                        "#warning, #pragma")

        processor = _Pcpp()
        processor.line_directive = None
        for directory in self.include_dirs:
            processor.add_path(directory)
        processor.define("RAM_DOMAIN_SIZE 32")
        for name, value in self.macros.items():
            processor.define(f"{name} {1 if value is None else value}")
        return processor
