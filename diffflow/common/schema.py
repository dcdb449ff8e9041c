"""Column types, schemas and the int64 encoding every kernel sees.

Kernels only ever see int64 arrays.  Each user-facing column type has an
order-preserving, injective encoding to int64:

* ``int``   -- the value itself (must fit in int64);
* ``float`` -- the IEEE-754 bits reinterpreted as int64, with the low 63 bits
  flipped for negative numbers, so integer order equals float order
  (``-0.0`` is normalised to ``0.0`` and every NaN to one canonical NaN);
* ``bool``  -- 0 or 1;
* ``str``   -- a 64-bit content hash of the UTF-8 text (a *symbol*).  The hash
  is the same in every process, so any partition worker can encode a string
  without asking anyone; a :class:`SymbolTable` owned by the dataflow decodes
  ids back to text and detects (astronomically unlikely) hash collisions.
  Symbol order is therefore arbitrary but fixed, like Soufflé's ordinals.

Invariant: ``decode(encode(x)) == x`` for every supported value.
"""
from __future__ import annotations

import sys
import time
from typing import Iterable, Sequence

import numpy as np

from diffflow.common import string_hash
from diffflow.common.fields import FrozenFields

COLUMN_TYPES = {"int": int, "float": float, "bool": bool, "str": str}
_TYPE_NAMES = {int: "int", float: "float", bool: "bool", str: "str"}
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)


def type_name(kind) -> str:
    """Canonical name of a column type given as a Python type or a string.

    >>> type_name(int), type_name("str"), type_name("symbol")
    ('int', 'str', 'str')
    """
    if isinstance(kind, str):
        aliases = {"int": "int", "number": "int", "unsigned": "int", "float": "float",
                   "bool": "bool", "str": "str", "symbol": "str"}
        if kind in aliases:
            return aliases[kind]
    elif kind in _TYPE_NAMES:
        return _TYPE_NAMES[kind]
    raise TypeError(f"unsupported column type {kind!r}: use int, float, bool or str")


class Schema(FrozenFields):
    """Ordered column names with their types.

    >>> s = Schema.of(["a", ("name", str)])
    >>> s.names, s.types
    (('a', 'name'), ('int', 'str'))
    """

    _fields = ("names", "types")

    def __init__(self, names: tuple, types: tuple) -> None:
        self._freeze(names=names, types=types)

    @staticmethod
    def of(columns: Sequence) -> "Schema":
        """Build a schema from names (int columns) or ``(name, type)`` pairs."""
        names, types = [], []
        for column in columns:
            if isinstance(column, str):
                name, kind = column, "int"
            else:
                try:
                    name, kind = column
                except (TypeError, ValueError):
                    raise TypeError(
                        f"column spec {column!r} must be a name or a (name, type) pair") from None
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"column name {name!r} must be a Python identifier")
            if name in names:
                raise ValueError(f"column {name!r} appears twice in {list(columns)!r}")
            names.append(name)
            types.append(type_name(kind))
        return Schema(tuple(names), tuple(types))

    @property
    def width(self) -> int:
        return len(self.names)

    def index(self, name: str, where: str = "") -> int:
        """Position of column ``name``; a clear error lists the available ones."""
        try:
            return self.names.index(name)
        except ValueError:
            place = f" in {where}" if where else ""
            raise KeyError(
                f"unknown column {name!r}{place}; available columns: {list(self.names)}") from None

    def type_of(self, name: str) -> str:
        return self.types[self.index(name)]

    def subset(self, names: Iterable[str]) -> "Schema":
        names = tuple(names)
        return Schema(names, tuple(self.type_of(n) for n in names))

    def __repr__(self) -> str:
        cols = ", ".join(f"{n}: {t}" for n, t in zip(self.names, self.types))
        return f"Schema({cols})"


def encode_floats(values: np.ndarray) -> np.ndarray:
    """Order-preserving float64 -> int64 encoding.

    >>> encode_floats(np.array([-1.5, 0.0, 2.0])).argsort().tolist()
    [0, 1, 2]
    """
    values = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 + 0.0 == 0.0
    values = np.where(np.isnan(values), np.nan, values)
    bits = values.view(np.int64)
    return np.where(bits < 0, bits ^ _FLIP, bits)


def decode_floats(codes: np.ndarray) -> np.ndarray:
    """Inverse of :func:`encode_floats`.

    >>> decode_floats(encode_floats(np.array([-1.5, 3.25]))).tolist()
    [-1.5, 3.25]
    """
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes < 0, codes ^ _FLIP, codes).view(np.float64)


def hash_strings(values: np.ndarray) -> np.ndarray:
    """The int64 id of each string: the same in every process and on every worker.

    >>> bool(hash_strings(np.array(["a"], dtype=object))[0] == SymbolTable().encode(["a"])[0])
    True
    """
    global _hashed_without_pandas
    values = values.astype(object)
    if _hashed_without_pandas < PANDAS_IMPORT_SECONDS and "pandas" not in sys.modules:
        # Rent or buy: numpy pays no import but is slower per string, so it serves until
        # its hashing has cost about what importing pandas costs.
        started = time.perf_counter()
        ids = string_hash.hash_small_batch(values)
        _hashed_without_pandas += time.perf_counter() - started
        if ids is not None:
            return ids.view(np.int64)
    import pandas as pd  # vectorised, process-independent SipHash with a fixed key

    return pd.util.hash_array(values, categorize=False).view(np.int64)


# what hashing strings without pandas has cost this process (seconds), against its import
_hashed_without_pandas = 0.0
PANDAS_IMPORT_SECONDS = 0.3


class SymbolTable:
    """Maps strings to stable int64 ids (content hashes) and back.

    >>> table = SymbolTable()
    >>> ids = table.encode(["a", "b", "a"])
    >>> bool(ids[0] == ids[2]), table.decode(ids)
    (True, ['a', 'b', 'a'])
    """

    def __init__(self):
        self._text: dict[int, str] = {}

    def encode(self, values) -> np.ndarray:
        """Intern strings, returning their ids (collisions raise)."""
        values = np.asarray(list(values) if not isinstance(values, np.ndarray) else values,
                            dtype=object)
        if len(values) == 0:
            return np.zeros(0, dtype=np.int64)
        ids = hash_strings(values)
        unique_ids, first = np.unique(ids, return_index=True)
        text = self._text
        for sid, pos in zip(unique_ids.tolist(), first.tolist()):
            value = values[pos]
            known = text.get(sid)
            if known is None:
                text[sid] = value
            elif known != value:
                raise RuntimeError(f"symbol hash collision between {known!r} and {value!r}")
        return ids

    def encode_one(self, value: str) -> int:
        return int(self.encode([value])[0])

    def decode(self, ids: np.ndarray) -> list:
        text = self._text
        return [text[i] for i in np.asarray(ids, dtype=np.int64).tolist()]

    def __len__(self) -> int:
        return len(self._text)


def encode_column(values, kind: str, symbols: SymbolTable, where: str) -> np.ndarray:
    """Validate and encode one column of user values to int64.

    ``where`` names the input and column for error messages.

    >>> encode_column([1, 2], "int", SymbolTable(), "t.a").tolist()
    [1, 2]
    """
    if isinstance(values, np.ndarray) and values.dtype != object:
        arr = values
        if kind == "int":
            if arr.dtype.kind not in "iub":
                raise TypeError(f"{where}: expected int values, got an array of {arr.dtype}")
            return arr.astype(np.int64, copy=False)
        if kind == "float":
            if arr.dtype.kind not in "iufb":
                raise TypeError(f"{where}: expected float values, got an array of {arr.dtype}")
            return encode_floats(arr)
        if kind == "bool":
            if arr.dtype.kind != "b":
                raise TypeError(f"{where}: expected bool values, got an array of {arr.dtype}")
            return arr.astype(np.int64)
        if arr.dtype.kind not in "US":
            raise TypeError(f"{where}: expected str values, got an array of {arr.dtype}")
        return _encode_text(arr.astype(object), symbols, where)
    values = list(values)
    checkers = {
        "int": lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool),
        "float": lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, (bool, np.bool_)),
        "str": lambda v: isinstance(v, str),
    }
    ok = checkers[kind]
    for i, v in enumerate(values):
        if not ok(v):
            raise TypeError(f"{where}: row {i} has {v!r} ({type(v).__name__}); expected {kind}")
    if kind == "str":
        return _encode_text(values, symbols, where)
    if kind == "float":
        return encode_floats(np.array(values, dtype=np.float64))
    try:
        return np.array(values, dtype=np.int64).reshape(len(values))
    except OverflowError:
        bad = next(i for i, v in enumerate(values) if not -2**63 <= int(v) < 2**63)
        raise ValueError(f"{where}: row {bad} value {values[bad]!r} does not fit in int64") from None


def _encode_text(values, symbols: SymbolTable, where: str) -> np.ndarray:
    """``symbols.encode(values)``, with text UTF-8 cannot hold named by its row."""
    try:
        return symbols.encode(values)
    except UnicodeEncodeError:
        for i, value in enumerate(values):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(
                    f"{where}: row {i} value {value!r} is not text UTF-8 can hold: "
                    f"{exc.object[exc.start:exc.end]!r} at position {exc.start} ({exc.reason}); "
                    "a lone surrogate usually comes from bytes decoded with "
                    "errors='surrogateescape': decode them with their real encoding, or with "
                    "errors='replace'") from None
        raise


def decode_column(codes: np.ndarray, kind: str, symbols: SymbolTable) -> list:
    """Decode an int64 column to a list of Python values of the column type.

    >>> decode_column(np.array([0, 1]), "bool", SymbolTable())
    [False, True]
    """
    if kind == "int":
        return codes.tolist()
    if kind == "float":
        return decode_floats(codes).tolist()
    if kind == "bool":
        return (codes != 0).tolist()
    return symbols.decode(codes)


def text_ranks(ids: np.ndarray, symbols: SymbolTable) -> np.ndarray:
    """Each symbol id's rank among the distinct texts of ``ids`` in text order (code
    point order, which is UTF-8's): a sort key where the ids, hashes, order nothing.

    >>> table = SymbolTable(); ids = table.encode(["b", "a", "b"])
    >>> text_ranks(ids, table).tolist()
    [1, 0, 1]
    """
    distinct, where = np.unique(ids, return_inverse=True)
    texts = np.array(symbols.decode(distinct), dtype=object)
    ranks = np.empty(len(distinct), np.int64)
    ranks[np.argsort(texts, kind="stable")] = np.arange(len(distinct))
    return ranks[where.reshape(-1)]


def decode_array(codes: np.ndarray, kind: str, symbols: SymbolTable) -> np.ndarray:
    """Decode an int64 column to a numpy array (object array for ``str``)."""
    if kind == "int":
        return codes
    if kind == "float":
        return decode_floats(codes)
    if kind == "bool":
        return codes != 0
    return np.array(symbols.decode(codes), dtype=object)


def decode_rows(rows: np.ndarray, schema: Schema, symbols: SymbolTable) -> list:
    """Decode an ``(n, w)`` int64 row array to a list of Python tuples."""
    if rows.shape[1] == 0:
        return [()] * rows.shape[0]
    columns = [decode_column(rows[:, j], kind, symbols) for j, kind in enumerate(schema.types)]
    return list(zip(*columns))
