"""Small fact files read in plain Python, so that a short ``diffflow run`` needs no pyarrow.

:func:`.facts.read_facts` reads with pyarrow's CSV reader and compute kernels, which pays off
on large files but costs a fresh process ~0.25 s on the first file: importing pyarrow and
``pyarrow.compute``, and pandas, which pyarrow imports the first time it builds an array.
:func:`read_fact_rows` reads a small, plain file here instead -- at most :data:`SMALL_BYTES`,
attributes ``number``, ``unsigned`` and ``symbol`` only, UTF-8 without ``\\r``, every line
with the relation's field count and every number a plain decimal integer (``-?[0-9]+``) in its
32-bit range -- and hands anything else to ``read_facts``: floats, records, RFC 4180, blanks
or a ``+`` before a number, hexadecimal, and every error, which therefore have one
implementation.  Both give the same facts: ``encode_facts`` encodes the rows returned here
exactly as it encodes ``read_facts``' table (the tests compare them).
"""
from __future__ import annotations

import os
import re

import numpy as np

from diffflow.datalog.syntax.intrinsics import NUMBER_RANGE, UNSIGNED_RANGE

# Files up to this size are read here (~10k facts of a few fields: ~10 ms of Python).
SMALL_BYTES = 1 << 18
_PLAIN = re.compile(r"-?[0-9]+\Z", re.ASCII)
_KINDS = {"number": NUMBER_RANGE, "unsigned": UNSIGNED_RANGE, "symbol": None}


def read_fact_rows(path, relation, delimiter: str = "\t", headers: bool = False,
                   progress=None, rfc4180: bool = False, structures=None):
    """A fact file's rows as ``encode_facts`` takes them: read here when small and plain (a
    2-D int64 array, or tuples when a symbol is among the attributes), else
    :func:`.facts.read_facts`' table (same arguments, same errors).

    >>> import tempfile
    >>> from diffflow.datalog.analysis.analysed import Relation
    >>> path = os.path.join(tempfile.mkdtemp(), "e.facts")
    >>> _ = open(path, "w").write("1\\t2\\n-3\\t4\\n")
    >>> read_fact_rows(path, Relation("e", ["x", "y"], ["number", "number"], None)).tolist()
    [[1, 2], [-3, 4]]
    """
    rows = None
    if not rfc4180 and relation.arity and all(k in _KINDS for k in relation.types):
        rows = _plain_rows(path, relation, delimiter, headers)
    if rows is not None:
        return rows
    from diffflow.datalog.values.facts import read_facts

    return read_facts(path, relation, delimiter, headers, progress, rfc4180, structures)


def _plain_rows(path, relation, delimiter, headers):
    """The rows of a small plain file (see the module docstring), or None."""
    try:
        if os.path.getsize(path) > SMALL_BYTES:
            return None
        from diffflow.datalog.values.facts import read_bytes

        data = read_bytes(path)
    except OSError:
        return None  # read_facts raises the error
    if headers:  # Soufflé skips the first line, whatever it holds
        cut = data.find(b"\n")
        data = data[cut + 1:] if cut >= 0 else b""
    if len(data) > SMALL_BYTES or b"\r" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines[-1] == "":  # what follows the last newline is not a line
        lines.pop()
    fields = [line.split(delimiter) for line in lines]
    arity = relation.arity
    if any(len(f) != arity for f in fields):
        return None
    columns = []
    for j, kind in enumerate(relation.types):
        column = [f[j] for f in fields]
        if kind != "symbol":
            if not all(_PLAIN.match(v) for v in column):
                return None
            low, high = _KINDS[kind]
            column = [int(v) for v in column]
            if column and not (low <= min(column) and max(column) <= high):
                return None
        columns.append(column)
    if "symbol" not in relation.types:
        return np.array(columns, dtype=np.int64).reshape(arity, len(lines)).T.copy()
    return list(zip(*columns))


class Parts(list):
    """The rows of a relation read from several files (one ``.input`` each): a list of
    what each file gave, to be encoded one by one and united."""


def read_input_files(files: dict, relations: dict, structures, program_file: str,
                     progress=None, missing_ok: bool = False) -> dict:
    """``{relation: rows}`` of every input file (``files``: ``{relation: [(path, delimiter,
    headers, rfc4180, io), ...]}``, one per ``.input``; a relation with several gives
    :class:`Parts`), all read before any is used; a file that cannot be opened is a
    :class:`DatalogError` naming the ``.input`` that reads it, unless it is missing and
    ``missing_ok`` (then it reads as no facts)."""
    from diffflow.datalog.syntax.errors import DatalogError

    missing = {}
    for name, listed in files.items():
        for path, *_options in listed:
            if not os.path.exists(path):
                missing.setdefault(name, path)
    if missing and not missing_ok and (len(missing) > 1 or not os.path.isdir(
            os.path.dirname(next(iter(missing.values()))) or ".")):
        _raise_missing(missing, relations, program_file)
    loaded = {}
    for name, listed in files.items():
        parts = []
        for number, (path, delimiter, headers, rfc4180, io) in enumerate(listed):
            if missing_ok and not os.path.exists(path):
                parts.append([])
                continue
            try:
                if io == "jsonfile":
                    from diffflow.datalog.values.json_io import read_json_facts

                    parts.append(read_json_facts(path, relations[name], structures))
                else:
                    parts.append(read_fact_rows(path, relations[name], delimiter, headers,
                                                progress, rfc4180, structures))
            except OSError as exc:
                absent = isinstance(exc, FileNotFoundError)
                if missing_ok and absent:
                    parts.append([])
                    continue
                directive = relations[name].inputs[number]
                fix = ("create the file (it may be empty), point -F at the folder holding it, "
                       "or read missing files as empty relations (diffflow run -w; "
                       "load_facts(..., missing_ok=True))" if absent else
                       "make it a readable file of facts")
                raise DatalogError(
                    f"cannot open fact file {os.path.basename(path)} for input relation "
                    f"{name!r}: {exc.strerror or exc}", filename=str(path),
                    hint=f"the program reads it for .input {name} ({program_file}:"
                         f"{directive.line}); {fix}") from None
        loaded[name] = parts[0] if len(parts) == 1 else Parts(parts)
    return loaded


def _raise_missing(paths: dict, relations: dict, program_file: str):
    """One error naming every missing fact file (``paths``: ``{relation: path}``), or the
    folder they should be in when it does not exist."""
    from diffflow.datalog.syntax.errors import DatalogError

    def reads(name):
        return (f"{os.path.basename(paths[name])} (.input {name}, "
                f"{program_file}:{relations[name].inputs[0].line})")

    folders = {os.path.dirname(path) or "." for path in paths.values()}
    absent = sorted(folder for folder in folders if not os.path.isdir(folder))
    if len(folders) == 1 and absent:
        raise DatalogError(
            f"the fact folder does not exist; the program reads "
            f"{', '.join(reads(name) for name in paths)} from it", filename=absent[0],
            hint="point -F at the folder holding the fact files, or read missing files as "
                 "empty relations (diffflow run -w; load_facts(..., missing_ok=True))") from None
    where = folders.pop() if len(folders) == 1 else None
    listed = ", ".join(reads(name) if where else f"{paths[name]} (.input {name})"
                       for name in paths)
    also = f"; the folder{'s' if len(absent) > 1 else ''} {', '.join(absent)} do" \
           f"{'' if len(absent) > 1 else 'es'} not exist" if absent else ""
    raise DatalogError(
        f"{len(paths)} fact files are missing: {listed}{also}", filename=where or program_file,
        hint="create the files (they may be empty), point -F at the folder holding them, or "
             "read missing files as empty relations (diffflow run -w; "
             "load_facts(..., missing_ok=True))") from None
