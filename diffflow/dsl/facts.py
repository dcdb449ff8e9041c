"""Soufflé fact and output files: TAB-separated text, no header, no quoting.

Reading is columnar (pandas' C parser); a bad line is reported with its
file and line number.  Writing renders numbers as Soufflé does (floats in
the shortest ``%g``-like form).

>>> import tempfile, os
>>> from diffflow.dsl.analysis import Relation
>>> r = Relation("e", ["x", "s"], ["number", "symbol"], None)
>>> path = os.path.join(tempfile.mkdtemp(), "e.facts")
>>> _ = open(path, "w").write("1\\ta b\\n2\\tc\\n")
>>> read_facts(path, r).values.tolist()
[[1, 'a b'], [2, 'c']]
"""
from __future__ import annotations

import csv
import os
import time

import numpy as np

from .analysis import NUMBER_RANGE, UNSIGNED_RANGE
from .errors import DatalogError

_PROGRESS_BYTES = 8 << 20  # report files larger than this


def read_facts(path, relation, delimiter: str = "\t", headers: bool = False, progress=None):
    """Read a facts file into a DataFrame with columns ``c0, c1, ...`` (validated types)."""
    import pandas as pd

    started = time.perf_counter()
    size = os.path.getsize(path)
    if relation.arity == 0:
        with open(path, encoding="utf-8") as f:
            present = any(line.strip() for line in f)
        return [()] if present else []
    names = [f"c{i}" for i in range(relation.arity)]
    if size == 0:
        return pd.DataFrame({n: [] for n in names})
    try:
        frame = pd.read_csv(path, sep=delimiter, header=0 if headers else None, names=names,
                            dtype=str, quoting=csv.QUOTE_NONE, na_filter=False,
                            keep_default_na=False, engine="c", skip_blank_lines=True,
                            encoding="utf-8")
    except pd.errors.ParserError as exc:
        import re

        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if found:
            line, fields = int(found.group(2)), int(found.group(3))
            raise DatalogError(f"{relation.name} has {relation.arity} attribute(s) but this line "
                               f"has {fields} fields", filename=str(path), line=line,
                               hint=f"separate the attributes with {delimiter!r}") from None
        raise DatalogError(f"cannot read facts for {relation.name}: {exc}", filename=str(path),
                           hint=f"{relation.name} has {relation.arity} attribute(s); separate "
                                f"them with {delimiter!r}") from None
    out = {}
    first_line = 2 if headers else 1
    for j, (name, kind) in enumerate(zip(names, relation.types)):
        column = frame[name]
        if kind == "symbol":
            out[name] = column.to_numpy(dtype=object)
            continue
        numbers = pd.to_numeric(column, errors="coerce")
        bad = numbers.isna().to_numpy().copy()
        if kind != "float":
            bad |= ~np.isfinite(numbers.to_numpy(dtype=float, na_value=np.nan))
            if not bad.any():
                bad |= (numbers.to_numpy() != np.floor(numbers.to_numpy()))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DatalogError(
                f"{relation.name}: attribute {relation.attributes[j]!r} should be a {kind}, "
                f"got {column.iloc[i]!r}", filename=str(path), line=first_line + i,
                hint=f"is the file {delimiter!r}-separated with {relation.arity} column(s)?")
        values = numbers.to_numpy(dtype=np.float64 if kind == "float" else np.int64)
        if kind in ("number", "unsigned"):
            low, high = NUMBER_RANGE if kind == "number" else UNSIGNED_RANGE
            outside = (values < low) | (values > high)
            if outside.any():
                i = int(np.flatnonzero(outside)[0])
                raise DatalogError(
                    f"{relation.name}: attribute {relation.attributes[j]!r} = {column.iloc[i]} "
                    f"does not fit a 32-bit {kind}", filename=str(path), line=first_line + i,
                    hint="declare the attribute unsigned or float for larger values"
                    if kind == "number" else None)
        out[name] = values
    result = pd.DataFrame(out)
    elapsed = time.perf_counter() - started
    if progress is not None and (size > _PROGRESS_BYTES or elapsed > 1.0):
        progress(f"read {len(result):,} facts for {relation.name} from {path} "
                 f"({size / 1e6:.1f} MB, {elapsed:.1f} s)")
    return result


def format_value(value, kind: str) -> str:
    """A value as Soufflé prints it.

    >>> format_value(2.5, "float"), format_value(3.0, "float"), format_value(7, "number")
    ('2.5', '3', '7')
    """
    if kind == "float":
        return f"{value:g}"
    return str(value)


def format_rows(rows, types, delimiter: str = "\t") -> list:
    """Output lines (without newlines) for decoded rows of a relation."""
    if not types:
        return ["()"] if rows else []
    if "float" not in types:
        return [delimiter.join(map(str, row)) for row in rows]
    return [delimiter.join(format_value(v, k) for v, k in zip(row, types)) for row in rows]
