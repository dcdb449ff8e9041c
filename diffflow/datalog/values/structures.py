"""Record types and algebraic data types: their declarations, and their values in Python
and in text.

``.type P = [a: number, b: symbol]`` declares a record type; ``.type T = A {x:
number} | B {}`` an algebraic data type (ADT) with branches ``A`` and ``B``
(:mod:`diffflow.datalog.analysis.structures` resolves the declarations).  A
record or ADT type is its own base type: a term of it has the type's name as its
type (:mod:`~diffflow.datalog.analysis.types`).  In columns a value is a record id (:mod:`diffflow.common.records`);
an ADT value is the record ``[branch number, fields...]``.

In Python a record is a tuple of its fields (``nil`` is None) and an ADT value
an :class:`AdtValue`; in fact files and output they are written as Soufflé
writes them: ``[1, 2, meow]``, ``nil``, ``$A(1)``, ``$B`` (:mod:`.record_text`).

>>> s = {"P": Structure("P", fields=[("a", "number"), ("b", "symbol")])}
>>> from diffflow.common.schema import SymbolTable
>>> table = SymbolTable(); decode_value(encode_value((1, "x"), "P", s, table), "P", s, table)
(1, 'x')
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from diffflow.common import records
from diffflow.dataflow.expr import Func
from diffflow.datalog.syntax import ast


@dataclass(frozen=True, order=True)
class AdtValue:
    """A value of an algebraic data type: its branch's name and its fields' values.

    >>> AdtValue("Node", (AdtValue("Empty", ()), 1))
    AdtValue(branch='Node', args=(AdtValue(branch='Empty', args=()), 1))
    """
    branch: str
    args: tuple = ()


@dataclass
class Structure:
    """A record type (``fields``) or an ADT (``branches``: name -> field types, in order;
    a branch's number is its position)."""
    name: str
    fields: list | None = None  # [(name, type)] of a record type
    branches: dict | None = None  # ADT: branch name -> [(name, type)]

    @property
    def is_record(self) -> bool:
        return self.fields is not None

    def branch_number(self, branch: str) -> int:
        return list(self.branches).index(branch)


def branch_owners(structures: dict) -> dict:
    """``{branch name: Structure}`` of every ADT branch."""
    return {b: s for s in structures.values() if not s.is_record for b in s.branches}


def row_order(row):
    """A sort key for rows that may hold records (``nil`` first) and ADT values: each
    value flattened in pre-order (no recursion, so lists of any length sort).

    >>> sorted([((1, None),), (None,), ((0, (2, None)),)], key=row_order)
    [(None,), ((0, (2, None)),), ((1, None),)]
    """
    out = []
    stack = list(reversed(row))
    while stack:
        value = stack.pop()
        if value is None:
            out.append((0,))
        elif isinstance(value, tuple):
            out.append((1, len(value)))
            stack.extend(reversed(value))
        elif isinstance(value, AdtValue):
            out.append((2, value.branch, len(value.args)))
            stack.extend(reversed(value.args))
        else:
            out.append((3, value))
    return tuple(out)


# -- Python values <-> ids -----------------------------------------------------------------
_LIMITS = {"number": (-2**31, 2**31 - 1), "unsigned": (0, 2**32 - 1)}


def _scalar_code(value, kind: str, symbols) -> int:
    """A field's value as a record stores it, checked as a column's value is."""
    if kind == "symbol":
        if not isinstance(value, str):
            raise TypeError(f"{value!r} is not a symbol (a str)")
        return symbols.encode_one(value)
    if kind == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                              np.floating)):
            raise TypeError(f"{value!r} is not a float")
        value = float(value) + 0.0  # (-0.0 is 0.0, as in float columns)
        return int(np.float64(math.nan if value != value else value).view(np.int64))
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{value!r} is not a {kind} (an int)")
    low, high = _LIMITS[kind]
    if not low <= int(value) <= high:
        raise ValueError(f"{value} does not fit a 32-bit {kind}")
    return int(value)


def _children(value, kind: str, structures: dict) -> list:
    """``[(field value, field type)]`` of a record or ADT value, its shape checked."""
    structure = structures[kind]
    if structure.is_record:
        fields = structure.fields
        if not isinstance(value, tuple) or len(value) != len(fields):
            raise TypeError(f"{value!r} is not a {kind}: a tuple of {len(fields)} field(s) "
                            f"({', '.join(n for n, _ in fields)}), or None for nil")
        return list(zip(value, (t for _, t in fields)))
    if not isinstance(value, AdtValue) or value.branch not in structure.branches:
        raise TypeError(f"{value!r} is not a {kind}: its branches are "
                        f"{', '.join('$' + b for b in structure.branches)}")
    fields = structure.branches[value.branch]
    if not isinstance(value.args, tuple) or len(value.args) != len(fields):
        raise TypeError(f"${value.branch} has {len(fields)} field(s): give AdtValue("
                        f"{value.branch!r}, (...)) a tuple of {len(fields)}")
    return list(zip(value.args, (t for _, t in fields)))


def encode_value(value, kind: str, structures: dict, symbols) -> int:
    """The id of a Python record (tuple or None) or ADT value (:class:`AdtValue`) of type
    ``kind``, interning it and its parts; a value of the wrong shape or type raises
    ``TypeError`` or ``ValueError`` (its strings may stay interned; nothing else changes).

    >>> from diffflow.common.schema import SymbolTable
    >>> s, table = {"P": Structure("P", fields=[("a", "number"), ("b", "symbol")])}, SymbolTable()
    >>> rid = encode_value((1, "x"), "P", s, table)
    >>> decode_value(rid, "P", s, table), encode_value(None, "P", s, table)
    ((1, 'x'), 0)
    """
    codes: list = []
    stack = [(value, kind, False)]  # (post-order without recursion: lists of any length)
    while stack:
        v, k, built = stack.pop()
        if k not in structures:
            codes.append(_scalar_code(v, k, symbols))
            continue
        structure = structures[k]
        if not built:
            if v is None and structure.is_record:
                codes.append(records.NIL)
                continue
            children = _children(v, k, structures)
            stack.append((v, k, True))
            stack.extend((cv, ck, False) for cv, ck in reversed(children))
            continue
        width = len(v) if structure.is_record else len(v.args)
        parts = codes[len(codes) - width:]
        del codes[len(codes) - width:]
        if not structure.is_record:
            parts.insert(0, structure.branch_number(v.branch))
        codes.append(int(records.pack(symbols, [np.array([p], np.int64) for p in parts])[0]))
    return codes[0]


def encode_flat_records(values: list, kind: str, structures: dict, symbols):
    """The ids of a column of Python records of a record type whose fields are all
    numbers, floats or symbols (``None``: nil), interned in one batch; ``None`` when
    ``kind`` is not such a type.  A bad value raises :class:`BadValue` (its index, and
    the error :func:`encode_value` would raise).

    >>> from diffflow.common.schema import SymbolTable
    >>> s, table = {"P": Structure("P", fields=[("a", "number"), ("b", "symbol")])}, SymbolTable()
    >>> ids = encode_flat_records([(1, "x"), None, (1, "x")], "P", s, table)
    >>> ids = ids.tolist(); ids[1], ids[0] == ids[2] == encode_value((1, "x"), "P", s, table)
    (0, True)
    """
    structure = structures.get(kind)
    if structure is None or not structure.is_record or \
            any(t in structures for _, t in structure.fields):
        return None
    fields = structure.fields
    ids = np.zeros(len(values), np.int64)
    present = [i for i, v in enumerate(values) if v is not None]
    columns = [np.empty(len(present), np.int64) for _ in fields]
    for at, i in enumerate(present):
        value = values[i]
        try:
            if not isinstance(value, tuple) or len(value) != len(fields):
                _children(value, kind, structures)  # (raises, worded as one value)
            for column, field, (_, field_kind) in zip(columns, value, fields):
                column[at] = _scalar_code(field, field_kind, symbols)
        except (TypeError, ValueError) as exc:
            raise BadValue(i, exc) from None
    if present:
        ids[present] = records.pack(symbols, columns)
    return ids


class BadValue(Exception):
    """Value ``index`` of a column could not be encoded: ``error`` says why."""

    def __init__(self, index: int, error: Exception):
        super().__init__(str(error))
        self.index, self.error = index, error


def decode_value(rid: int, kind: str, structures: dict, symbols):
    """The Python value of record id ``rid`` of type ``kind`` (see :func:`encode_value`)."""
    return decode_ids(np.array([rid], np.int64), kind, structures, symbols)[0]


def decode_ids(ids, kind: str, structures: dict, symbols) -> list:
    """Python values of a column of ids: the components of each level of nesting read in
    one batch, the values built without recursion (lists of any length)."""
    ids = np.asarray(ids, np.int64)
    parts: dict = {}  # (type, id) -> components
    frontier = {kind: ids}
    while frontier:
        following: dict = {}
        for k, codes in frontier.items():
            codes = np.unique(codes)
            codes = codes[[(k, c) not in parts for c in codes.tolist()]] if parts else codes
            codes = codes[codes != records.NIL] if structures[k].is_record else codes
            if not len(codes):
                continue
            found, arity, rows = records.find_components(symbols, codes)
            structure = structures[k]
            for code, width, row in zip(codes.tolist(), arity.tolist(), rows.tolist()):
                row = row[:width]
                parts[(k, code)] = row
                if structure.is_record:
                    fields = [t for _, t in structure.fields]
                else:
                    fields = [None] + [t for _, t in
                                       structure.branches[list(structure.branches)[row[0]]]]
                for part, t in zip(row, fields):
                    if t in structures:
                        following.setdefault(t, []).append(part)
        frontier = {k: np.array(v, np.int64) for k, v in following.items()}
    values: dict = {}

    def scalar(code, t):
        if t == "symbol":
            return symbols.decode(np.array([code]))[0]
        if t == "float":
            return float(np.int64(code).view(np.float64))
        return int(code)

    out = []
    for top in ids.tolist():
        stack = [(kind, top, False)]
        while stack:
            k, code, ready = stack.pop()
            key = (k, code)
            if key in values:
                continue
            structure = structures[k]
            if structure.is_record and code == records.NIL:
                values[key] = None
                continue
            row = parts[key]
            if structure.is_record:
                fields, branch, own = [t for _, t in structure.fields], None, row
            else:
                branch = list(structure.branches)[row[0]]
                fields, own = [t for _, t in structure.branches[branch]], row[1:]
            if not ready:
                stack.append((k, code, True))
                stack.extend((t, c, False) for c, t in zip(own, fields) if t in structures)
                continue
            args = tuple(values[(t, c)] if t in structures else scalar(c, t)
                         for c, t in zip(own, fields))
            values[key] = args if branch is None else AdtValue(branch, args)
        out.append(values[(kind, top)])
    return out


# -- one value --------------------------------------------------------------------------------
def value(node, evaluate):
    """The Python value of a record, ``nil``, branch or field-access term, its parts
    evaluated by ``evaluate(part)`` (for evaluators that go row by row); a part without a
    value (``evaluate`` returns ``none``) makes the term's value ``none``.

    >>> from diffflow.datalog.syntax import ast
    >>> value(ast.RecordTerm(1, 1, [ast.Number(1, 2, 5), ast.Nil(1, 5)]), lambda n: n.value
    ...       if isinstance(n, ast.Number) else value(n, None))
    (5, None)
    """
    if isinstance(node, ast.Nil):
        return None
    parts = [evaluate(a) for a in node.args] if not isinstance(node, ast.FieldAccess) else \
        [evaluate(node.record)]
    if isinstance(node, ast.RecordTerm):
        return tuple(parts)
    if isinstance(node, ast.BranchTerm):
        return AdtValue(node.branch, tuple(parts))
    (record,) = parts
    if node.branch is None:
        fields = record  # (None for nil)
    else:
        fields = record.args if isinstance(record, AdtValue) and record.branch == node.branch \
            else None
    if node.index < 0:
        return int(fields is not None)
    return fields[node.index] if fields is not None else 0


# -- whole columns ---------------------------------------------------------------------------
def pack_column(args: list, kinds: list):
    """The column expression of a record (or ADT value) built from ``args`` of types
    ``kinds``: record ids, interned through the dataflow's symbol table."""
    return Func("record", _Pack(kinds), args, "int")


def field_column(node, record, kind: str):
    """The column expression of :class:`~diffflow.datalog.syntax.ast.FieldAccess` ``node`` (a field of
    type ``kind``) of the record column expression ``record``."""
    out = {"symbol": "str", "float": "float"}.get(kind, "int")
    if node.index < 0:
        return Func("is_record" if node.branch is None else f"is${node.branch}",
                    _IsBranch(node.number), [record], "int")
    component = node.index + (node.branch is not None)  # (an ADT's 0: its branch number)
    return Func(f"field{node.index}", _Field(component, kind), [record], out)


class _Pack:
    def __init__(self, kinds):
        self.kinds = list(kinds)

    def __call__(self, symbols, *values, rows=0):  # (rows: the count of ``[]`` records)
        parts = [_float_bits(v) if k == "float" else np.asarray(v, np.int64)
                 for v, k in zip(values, self.kinds)]
        return records.pack(symbols, parts, rows)


def _float_bits(values) -> np.ndarray:
    """Floats as records hold them: -0.0 as 0.0 and one NaN, as float columns have them."""
    values = np.asarray(values, np.float64) + 0.0
    return np.where(np.isnan(values), np.nan, values).view(np.int64)


class _Field:
    def __init__(self, component, kind):
        self.component, self.kind = component, kind

    def __call__(self, symbols, ids):
        values = records.unpack(symbols, ids, self.component + 1)[:, self.component]
        return values.view(np.float64) if self.kind == "float" else values


class _IsBranch:
    """1 where a value is a record (``number`` -1: not nil) or of ADT branch ``number``."""

    def __init__(self, number):
        self.number = number

    def __call__(self, symbols, ids):
        ids = np.asarray(ids, np.int64)
        if self.number < 0:
            return (ids != records.NIL).astype(np.int64)
        tags = records.unpack(symbols, ids, 1)[:, 0]
        return (tags == self.number).astype(np.int64)


# -- text ------------------------------------------------------------------------------------
