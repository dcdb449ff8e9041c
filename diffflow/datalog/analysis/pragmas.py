"""``.pragma "key" "value"``: Soufflé's command-line options written in the program.

Soufflé reads a pragma as if its key were given as a command-line option
(``.pragma "jobs" "4"`` is ``souffle --jobs=4``); an option given on the
command line wins over the pragma.  :func:`read_pragmas` checks a program's
pragmas and returns them as ``{key: value}`` (the last one wins, as in Soufflé,
which warns when a pragma overrides an earlier one):

* keys diffflow honours: ``fact-dir``, ``output-dir``, ``jobs``, ``no-warn``
  (read by the command line and :class:`~diffflow.datalog.program.Program`),
  ``max-rounds`` (diffflow's own: the iteration limit of recursive strata),
  ``inline-exclude`` (relations not to inline, as in Soufflé) and
  ``magic-transform`` / ``magic-transform-exclude`` (magic sets, as in Soufflé:
  :mod:`~diffflow.datalog.transform.magic`);
* Soufflé options that mean nothing to diffflow (code generation, profiling,
  ...) are accepted and get a note in the plan;
* any other key gets a :class:`~diffflow.datalog.syntax.errors.DatalogWarning`.

>>> from diffflow.datalog.syntax.parser import parse
>>> text = '.pragma "jobs" "4"\\n.pragma "profile" "p.log"\\n.pragma "jbos" "2"\\n'
>>> pragmas, warnings, notes = read_pragmas(parse(text).pragmas, text, "p.dl")
>>> pragmas
{'jobs': '4', 'profile': 'p.log', 'jbos': '2'}
>>> print(warnings[0])
p.dl:3:9: warning: unknown pragma 'jbos' (did you mean 'jobs'?); it is ignored
    .pragma "jbos" "2"
            ^
>>> notes
["pragma 'profile' has no effect in diffflow (profiling)"]
"""
from __future__ import annotations

from diffflow.datalog.syntax.errors import DatalogError, DatalogWarning, did_you_mean

# keys diffflow reads, with what their value must be
HONOURED = {
    "fact-dir": "a directory of input facts (the command line's -F)",
    "output-dir": "a directory for output relations (the command line's -D)",
    "jobs": "the number of worker processes (the command line's -j)",
    "no-warn": "no warnings are printed",
    "max-rounds": "the iteration limit of a recursive stratum",
    "inline-exclude": "relations not to inline, separated by ','",
    "magic-transform": "relations to compute only as far as outputs ask ('*': all), with "
                       "magic sets",
    "magic-transform-exclude": "relations magic sets must compute whole",
    "provenance": "proof heights and witnesses for Program.explain (any value; Soufflé's "
                  "\"explain\")",
}
# Soufflé's other options: accepted, with what they do in Soufflé
NO_EFFECT = {
    "auto-schedule": "profile-guided scheduling", "compile": "C++ compilation",
    "compile-many": "C++ compilation", "debug-report": "HTML debug report",
    "disable-transformers": "AST transformers", "dl-program": "C++ compilation",
    "emit-statistics": "auto-scheduler statistics", "generate": "C++ code generation",
    "generate-many": "C++ code generation", "generate-namespace": "C++ code generation",
    "help": "help text", "legacy": "legacy semantics", "libraries": "functor libraries",
    "library-dir": "functor libraries", "live-profile": "profiling",
    "parse-errors": "parse-only mode", "profile": "profiling",
    "profile-frequency": "profiling",
    "show": "debug output", "swig": "SWIG bindings", "verbose": "verbose output",
    "version": "version text", "warn": "warning selection", "wno": "warning selection",
    "suppress-warnings": "warning selection", "SIPS": "the join-order heuristic",
    "RamSIPS": "the join-order heuristic",
    # read before the program is parsed, so a pragma is too late for them
    "include-dir": "the preprocessor: pass include_dirs=[...] (the command line's -I)",
    "macro": "the preprocessor: pass macros={...} (the command line's -M)",
    "preprocessor": "the preprocessor", "no-preprocessor": "the preprocessor",
}
# keys Soufflé lets repeat (values accumulate) rather than override
_MULTIPLE = {"include-dir", "libraries", "library-dir", "warn", "wno"}


def read_pragmas(pragmas: list, source: str, filename: str) -> tuple:
    """``(pragmas dict, warnings, notes)`` for a program's :class:`~diffflow.datalog.syntax.ast.Pragma` nodes.

    Raises :class:`DatalogError` for a value diffflow cannot use (``jobs`` or
    ``max-rounds`` that is not a positive number).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> read_pragmas(parse('.pragma "max-rounds" "50"').pragmas, "", "p.dl")
    ({'max-rounds': '50'}, [], [])
    """
    values: dict = {}
    seen: dict = {}
    warnings, notes = [], []
    for p in pragmas:
        key, value = p.key, p.value
        if key in seen and key not in _MULTIPLE and seen[key].value != value:
            warnings.append(DatalogWarning(
                f"pragma {key!r} overrides the one at line {seen[key].line}", source, filename,
                p.line, p.column, hint=f"the last value, {value!r}, is used"))
        seen[key] = p
        if key in HONOURED:
            _check_value(p, source, filename)
        elif key in NO_EFFECT:
            note = f"pragma {key!r} has no effect in diffflow ({NO_EFFECT[key]})"
            if note not in notes:
                notes.append(note)
        else:
            warnings.append(DatalogWarning(
                f"unknown pragma {key!r}{did_you_mean(key, [*HONOURED, *NO_EFFECT])}; it is "
                f"ignored", source, filename, p.line, p.column))
        values[key] = value if key not in _MULTIPLE or key not in values \
            else f"{values[key]} {value}"
    return values, warnings, notes


def _check_value(p, source, filename):
    if p.key == "max-rounds" and not (p.value.isdigit() and int(p.value) > 0):
        raise DatalogError(f"pragma 'max-rounds' needs a positive whole number, not "
                           f"{p.value!r}", source, filename, p.line, p.column,
                           hint='e.g. .pragma "max-rounds" "100000"')
    if p.key == "jobs" and not (p.value == "auto" or p.value.isdigit() and int(p.value) > 0):
        raise DatalogError(f"pragma 'jobs' needs a positive whole number or \"auto\", not "
                           f"{p.value!r}", source, filename, p.line, p.column,
                           hint='e.g. .pragma "jobs" "4"')
    if p.key in ("fact-dir", "output-dir") and not p.value:
        raise DatalogError(f"pragma {p.key!r} needs a directory", source, filename, p.line,
                           p.column, hint=f'e.g. .pragma "{p.key}" "facts"')


def jobs_value(value: str | None) -> int | None:
    """The partition count a ``jobs`` pragma asks for (``"auto"``: this machine's cores).

    >>> jobs_value("4"), jobs_value(None), jobs_value("auto") >= 1
    (4, None, True)
    """
    if value is None:
        return None
    if value == "auto":
        import os

        return os.cpu_count() or 1
    return int(value)
