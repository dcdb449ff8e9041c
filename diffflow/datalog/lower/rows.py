"""A relation's facts between Python and its input collection's columns: checked, encoded
(records and ADT values as ids, numbers range-checked as Soufflé's 32-bit types), and decoded
back.  What :meth:`Program.insert <diffflow.datalog.program.Program.insert>` and ``remove``
take and :meth:`Program.relation <diffflow.datalog.program.Program.relation>` gives.

>>> import diffflow as dd
>>> p = dd.Program(".decl e(x: number, s: symbol)")
>>> p.encode("e", [(1, "a")]).shape
(1, 2)
>>> p.encode("e", [(2**40, "a")])
Traceback (most recent call last):
ValueError: e: row 0 attribute 'x' = 1099511627776 does not fit a 32-bit number
"""
from __future__ import annotations

import numpy as np

from diffflow.datalog.lower.columns import relation_columns
from diffflow.datalog.syntax.intrinsics import NUMBER_RANGE, UNSIGNED_RANGE
from diffflow.datalog.values.structures import (BadValue, decode_ids, encode_flat_records,
                                                 encode_value)


def encode_facts(relation, rows, inp, structures: dict, symbols) -> np.ndarray:
    """``rows`` of ``relation`` (tuples, a 2-D array, a DataFrame) encoded for its input
    collection ``inp``; raises, changing nothing."""
    name = relation.name
    if relation.arity == 0:
        rows = list(rows)
        for row in rows:
            if tuple(row) != ():
                raise ValueError(f"{name} is nullary; its only fact is (), got {row!r}")
        return np.zeros((len(rows), 1), np.int64)
    if structured_positions(relation, structures):
        rows = record_ids(relation, rows, structures, symbols)
    if isinstance(rows, np.ndarray) and rows.ndim == 2 and rows.dtype.kind in "iu" and \
            "symbol" not in relation.types and "float" not in relation.types:
        if rows.shape[1] != relation.arity:
            raise ValueError(f"{name} has {relation.arity} attributes, got rows of width "
                             f"{rows.shape[1]}")
        encoded = rows.astype(np.int64, copy=False)
    else:
        if type(rows).__module__.split(".")[0] == "pandas" and hasattr(rows, "columns"):
            if len(rows.columns) != relation.arity:
                raise ValueError(f"{name} has {relation.arity} attributes, got a DataFrame "
                                 f"with {len(rows.columns)} columns")
            rows = rows.set_axis([c for c, _ in relation_columns(relation)], axis=1)
        if isinstance(rows, (list, tuple)):
            check_python_rows(relation, rows)
        encoded = inp._encode(rows, [f"{name}: attribute {a!r}" for a in relation.attributes],
                              ieee=True)  # (NaN is a float in Soufflé)
    for j, kind in enumerate(relation.types):
        if kind in ("number", "unsigned"):
            low, high = NUMBER_RANGE if kind == "number" else UNSIGNED_RANGE
            column = encoded[:, j]
            bad = (column < low) | (column > high)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"{name}: row {i} attribute {relation.attributes[j]!r} = "
                                 f"{int(column[i])} does not fit a 32-bit {kind}")
    return encoded


def structured_positions(relation, structures: dict) -> list:
    """The positions of a relation's record and ADT attributes."""
    return [j for j, kind in enumerate(relation.types) if kind in structures]


def record_ids(relation, rows, structures: dict, symbols) -> list:
    """Python rows with their records (tuples, None for nil) and ADT values
    (:class:`~diffflow.datalog.values.structures.AdtValue`) as ids; raises, changing nothing."""
    if not isinstance(rows, (list, tuple)):
        raise ValueError(f"{relation.name} has record or ADT attributes: give its facts as "
                         f"a list of tuples (records as tuples, ADT values as AdtValue)")
    out = [list(row) if isinstance(row, (tuple, list)) else [row] for row in rows]
    for j in structured_positions(relation, structures):
        kind = relation.types[j]
        where = f"{relation.name}: row {{}} attribute {relation.attributes[j]!r}: {{}}"
        if all(j < len(row) for row in out):  # records of scalars: one batch (rows checked later)
            try:
                ids = encode_flat_records([row[j] for row in out], kind, structures, symbols)
            except BadValue as bad:
                raise ValueError(where.format(bad.index, bad.error)) from None
            if ids is not None:
                for row, rid in zip(out, ids.tolist()):
                    row[j] = rid
                continue
        for i, row in enumerate(out):
            if j < len(row):
                try:
                    row[j] = encode_value(row[j], kind, structures, symbols)
                except (TypeError, ValueError, IndexError) as exc:
                    raise ValueError(where.format(i, exc)) from None
    return [tuple(row) for row in out]


def record_values(relation, rows, structures: dict, symbols) -> list:
    """Decoded rows with their record and ADT ids as Python values."""
    places = structured_positions(relation, structures)
    if not places or not rows:
        return rows
    columns = [list(c) for c in zip(*rows)]
    for j in places:
        columns[j] = decode_ids(columns[j], relation.types[j], structures, symbols)
    return list(zip(*columns))


def check_python_rows(relation, rows) -> None:
    """A clear error unless every Python row has the relation's arity and types."""
    checks = {"number": (int,), "unsigned": (int,), "float": (int, float), "symbol": (str,)}
    for i, row in enumerate(rows):
        if not isinstance(row, (tuple, list)):
            if relation.arity == 1:
                row = (row,)
            else:
                raise ValueError(f"{relation.name}: row {i} is {row!r}, not a tuple of "
                                 f"{relation.arity} values")
        if len(row) != relation.arity:
            raise ValueError(f"{relation.name} has {relation.arity} attributes, but row {i} "
                             f"{tuple(row)!r} has {len(row)}")
        for value, kind, attr in zip(row, relation.types, relation.attributes):
            if kind not in checks:
                continue  # (a record or ADT id)
            if isinstance(value, bool) or not isinstance(value, checks[kind]) and \
                    not (kind != "symbol" and isinstance(value, np.integer)):
                raise ValueError(f"{relation.name}: row {i} attribute {attr!r} should be a "
                                 f"{kind}, got {value!r}")
