"""Record types and algebraic data types: their declarations, and their values in Python
and in text.

``.type P = [a: number, b: symbol]`` declares a record type; ``.type T = A {x:
number} | B {}`` an algebraic data type (ADT) with branches ``A`` and ``B``.  A
record or ADT type is its own base type: a term of it has the type's name as its
type (:mod:`.types`).  In columns a value is a record id (:mod:`diffflow.records`);
an ADT value is the record ``[branch number, fields...]``.

In Python a record is a tuple of its fields (``nil`` is None) and an ADT value
an :class:`AdtValue`; in fact files and output they are written as Soufflé
writes them: ``[1, 2, meow]``, ``nil``, ``$A(1)``, ``$B`` (:func:`format_value`,
:func:`parse_value`).

>>> from diffflow.dsl.parser import parse
>>> program = parse(".type L = [h: number, t: L]\\n.type T = A {x: L} | B {}")
>>> s = resolve_structures(program.types, {"L": "L", "T": "T"}, None)
>>> format_value((1, (2, None)), "L", s), format_value(AdtValue("A", ((3, None),)), "T", s)
('[1, [2, nil]]', '$A([3, nil])')
>>> parse_value("$A([1, nil])", "T", s)
AdtValue(branch='A', args=((1, None),))
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import records


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


def resolve_structures(declarations: list, types: dict, error) -> dict:
    """``{type name: Structure}`` for the record and ADT declarations; field types are
    resolved through ``types`` (``{name: base type}``, record and ADT names their own).

    >>> from diffflow.dsl.parser import parse
    >>> (t,) = parse(".type P = [a: Id, b: P]").types
    >>> resolve_structures([t], {"Id": "number", "P": "P"}, None)["P"].fields
    [('a', 'number'), ('b', 'P')]
    """
    from .types import base_type

    out: dict = {}
    owners: dict = {}
    for t in declarations:
        if t.base == "record":
            out[t.name] = Structure(t.name, fields=[
                (f.name, base_type(f.type, f, types, error)) for f in t.fields])
        elif t.base == "adt":
            branches = {}
            for b in t.branches:
                if b.name in owners:
                    raise error(f"branch {b.name!r} is already a branch of "
                                f"{owners[b.name]!r}", b,
                                hint="a branch name belongs to one algebraic data type")
                owners[b.name] = t.name
                branches[b.name] = [(f.name, base_type(f.type, f, types, error))
                                    for f in b.fields]
            out[t.name] = Structure(t.name, branches=branches)
    return out


def branch_owners(structures: dict) -> dict:
    """``{branch name: Structure}`` of every ADT branch."""
    return {b: s for s in structures.values() if not s.is_record for b in s.branches}


def row_order(row):
    """A sort key for rows that may hold records (``nil`` first) and ADT values.

    >>> sorted([((1, None),), (None,), ((0, (2, None)),)], key=row_order)
    [(None,), ((0, (2, None)),), ((1, None),)]
    """
    def key(value):
        if value is None:
            return (0,)
        if isinstance(value, tuple):
            return (1, tuple(key(v) for v in value))
        if isinstance(value, AdtValue):
            return (2, value.branch, tuple(key(v) for v in value.args))
        return (3, value)

    return tuple(key(v) for v in row)


# -- Python values <-> ids -----------------------------------------------------------------
def _component(value, kind, structures, symbols) -> int:
    if kind in structures:
        return encode_value(value, kind, structures, symbols)
    if kind == "symbol":
        return symbols.encode_one(value)
    if kind == "float":
        return int(np.float64(value).view(np.int64))
    return int(value)


def encode_value(value, kind: str, structures: dict, symbols) -> int:
    """The id of a Python record (tuple or None) or ADT value (:class:`AdtValue`) of type
    ``kind``, interning it and its parts.

    >>> from diffflow.schema import SymbolTable
    >>> s, table = {"P": Structure("P", fields=[("a", "number"), ("b", "symbol")])}, SymbolTable()
    >>> rid = encode_value((1, "x"), "P", s, table)
    >>> decode_value(rid, "P", s, table), encode_value(None, "P", s, table)
    ((1, 'x'), 0)
    """
    structure = structures[kind]
    if structure.is_record:
        if value is None:
            return records.NIL
        fields = structure.fields
        if not isinstance(value, tuple) or len(value) != len(fields):
            raise TypeError(f"{value!r} is not a {kind}: it has {len(fields)} field(s) "
                            f"({', '.join(n for n, _ in fields)})")
        parts = [_component(v, t, structures, symbols) for v, (_, t) in zip(value, fields)]
    else:
        if not isinstance(value, AdtValue) or value.branch not in structure.branches:
            raise TypeError(f"{value!r} is not a {kind}: its branches are "
                            f"{', '.join('$' + b for b in structure.branches)}")
        fields = structure.branches[value.branch]
        if len(value.args) != len(fields):
            raise TypeError(f"${value.branch} has {len(fields)} field(s), got "
                            f"{len(value.args)}")
        parts = [structure.branch_number(value.branch)] + [
            _component(v, t, structures, symbols) for v, (_, t) in zip(value.args, fields)]
    return int(records.pack(symbols, [np.array([p], np.int64) for p in parts])[0])


def _value(code: int, kind, structures, symbols):
    if kind in structures:
        return decode_value(code, kind, structures, symbols)
    if kind == "symbol":
        return symbols.decode(np.array([code]))[0]
    if kind == "float":
        return float(np.int64(code).view(np.float64))
    return int(code)


def decode_value(rid: int, kind: str, structures: dict, symbols):
    """The Python value of record id ``rid`` of type ``kind`` (see :func:`encode_value`)."""
    structure = structures[kind]
    parts = records.components(symbols, int(rid))
    if structure.is_record:
        if int(rid) == records.NIL:
            return None
        return tuple(_value(p, t, structures, symbols)
                     for p, (_, t) in zip(parts, structure.fields))
    branch = list(structure.branches)[parts[0]]
    return AdtValue(branch, tuple(_value(p, t, structures, symbols) for p, (_, t) in
                                  zip(parts[1:], structure.branches[branch])))


def decode_ids(ids, kind: str, structures: dict, symbols) -> list:
    """Python values of a column of ids, each distinct id decoded once."""
    ids = np.asarray(ids, np.int64)
    unique, inverse = np.unique(ids, return_inverse=True)
    values = [decode_value(i, kind, structures, symbols) for i in unique.tolist()]
    return [values[i] for i in inverse.ravel().tolist()]


# -- one value --------------------------------------------------------------------------------
def value(node, evaluate):
    """The Python value of a record, ``nil``, branch or field-access term, its parts
    evaluated by ``evaluate(part)`` (for evaluators that go row by row); a part without a
    value (``evaluate`` returns ``none``) makes the term's value ``none``.

    >>> from diffflow.dsl import ast
    >>> value(ast.RecordTerm(1, 1, [ast.Number(1, 2, 5), ast.Nil(1, 5)]), lambda n: n.value
    ...       if isinstance(n, ast.Number) else value(n, None))
    (5, None)
    """
    from . import ast

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
    from ..expr import Func

    return Func("record", _Pack(kinds), args, "int")


def field_column(node, record, kind: str):
    """The column expression of :class:`~diffflow.dsl.ast.FieldAccess` ``node`` (a field of
    type ``kind``) of the record column expression ``record``."""
    from ..expr import Func

    out = {"symbol": "str", "float": "float"}.get(kind, "int")
    if node.index < 0:
        return Func("is_record" if node.branch is None else f"is${node.branch}",
                    _IsBranch(node.number), [record], "int")
    component = node.index + (node.branch is not None)  # (an ADT's 0: its branch number)
    return Func(f"field{node.index}", _Field(component, kind), [record], out)


class _Pack:
    def __init__(self, kinds):
        self.kinds = list(kinds)

    def __call__(self, symbols, *values):
        parts = [np.asarray(v, np.float64).view(np.int64) if k == "float"
                 else np.asarray(v, np.int64) for v, k in zip(values, self.kinds)]
        return records.pack(symbols, parts)


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
def format_value(value, kind: str, structures: dict) -> str:
    """Soufflé's text of a record or ADT value: ``[1, [2, nil]]``, ``$A(x)``, ``$B``."""
    structure = structures[kind]

    from .facts import format_value as scalar

    def part(v, t):
        return format_value(v, t, structures) if t in structures else scalar(v, t)

    if structure.is_record:
        if value is None:
            return "nil"
        return "[" + ", ".join(part(v, t) for v, (_, t) in zip(value, structure.fields)) + "]"
    fields = structure.branches[value.branch]
    if not fields:
        return "$" + value.branch
    return f"${value.branch}(" + ", ".join(part(v, t) for v, (_, t) in
                                           zip(value.args, fields)) + ")"


class ValueSyntaxError(ValueError):
    """A record or ADT value's text is malformed; ``column`` is 0-based within it."""

    def __init__(self, message, column):
        super().__init__(message)
        self.column = column


def parse_value(text: str, kind: str, structures: dict):
    """The Python value of a record or ADT written as Soufflé writes it; symbols inside
    may be bare (up to ``,`` ``]`` ``)``) or in double quotes."""
    reader = _Reader(text, structures)
    value = reader.value(kind)
    reader.skip()
    if reader.pos != len(text):
        raise ValueSyntaxError(f"unexpected {text[reader.pos:]!r} after the value", reader.pos)
    return value


class _Reader:
    def __init__(self, text, structures):
        self.text, self.pos, self.structures = text, 0, structures

    def skip(self):
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def expect(self, char):
        self.skip()
        if not self.text.startswith(char, self.pos):
            found = self.text[self.pos:self.pos + 10] or "the end"
            raise ValueSyntaxError(f"expected {char!r}, found {found!r}", self.pos)
        self.pos += 1

    def value(self, kind):
        self.skip()
        if kind not in self.structures:
            return self.scalar(kind)
        structure = self.structures[kind]
        if structure.is_record:
            if self.text.startswith("nil", self.pos):
                self.pos += 3
                return None
            self.expect("[")
            out = []
            for i, (_, t) in enumerate(structure.fields):
                if i:
                    self.expect(",")
                out.append(self.value(t))
            self.expect("]")
            return tuple(out)
        self.expect("$")
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or
                                             self.text[self.pos] in "_?."):
            self.pos += 1
        branch = self.text[start:self.pos]
        if branch not in structure.branches:
            raise ValueSyntaxError(f"${branch} is not a branch of {kind} (its branches: "
                                   f"{', '.join('$' + b for b in structure.branches)})", start)
        fields = structure.branches[branch]
        self.skip()
        args = []
        if self.text.startswith("(", self.pos):
            self.pos += 1
            for i, (_, t) in enumerate(fields):
                if i:
                    self.expect(",")
                args.append(self.value(t))
            self.expect(")")
        elif fields:
            raise ValueSyntaxError(f"${branch} needs its {len(fields)} field(s) in ( )",
                                   self.pos)
        return AdtValue(branch, tuple(args))

    def scalar(self, kind):
        text, start = self.text, self.pos
        if kind == "symbol" and text.startswith('"', start):
            end = start + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            self.pos = end + 1
            return text[start + 1:end].replace('\\"', '"')
        end = start
        depth = 0
        while end < len(text) and not (depth == 0 and text[end] in ",])"):
            depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(text[end], 0)
            end += 1
        self.pos = end
        word = text[start:end].strip()
        if kind == "symbol":
            return word
        try:
            return float(word) if kind == "float" else int(word, 0)
        except ValueError:
            raise ValueSyntaxError(f"{word!r} is not a {kind}", start) from None
