"""Soufflé's intrinsic functors: their types, and their values on whole columns and on one row.

A functor call is an :class:`~diffflow.datalog.syntax.ast.Functor` node: ``cat(a, b)``,
``strlen(s)``, ``x band y``, ``bnot x``, ``min(a, b, c)``, ``as(x, T)``...;
``contains(sub, s)`` and ``match(regex, s)`` are constraints (comparisons with
those ops).  Each has a signature
(:data:`~diffflow.datalog.syntax.intrinsics.SIGNATURES`): fixed parameter and result types, or ``"T"`` -- the numeric type of the expression the call is in,
as for ``+`` -- and two implementations with one meaning:

* :func:`column` builds the column expression the engine evaluates on whole
  columns: numbers with numpy (32-bit wrapping as Soufflé's ``number`` and
  ``unsigned``), strings once per distinct value (a symbol column holds ids;
  new strings are interned as symbols, so they reach every partition worker);
* :func:`scalar` computes one value, for constant facts and the small
  replays of explanations.

Strings are measured and cut in UTF-8 bytes, as Soufflé does (``strlen("é")``
is 2).  ``ord(s)`` is, as in Soufflé, a number that tells symbols apart and
means nothing else (here: from the symbol's hash; of a record or ADT value, from its id --
Soufflé's is its table index, so the numbers differ).  Errors follow Soufflé:
``to_number`` of text that does not start with a number stops the run;
``substr`` with a start outside the string gives ``""``; a bad ``match``
pattern matches nothing (and ``!match`` of it does not hold either).

>>> scalar("cat", ["ab", "c"], "symbol"), scalar("bshru", [-1, 28], "number")
('abc', 15)
>>> scalar("substr", ["hello", 1, 3], "symbol"), scalar("strlen", ["héllo"], "number")
('ell', 6)
"""
from __future__ import annotations

import functools
import re

import numpy as np

from diffflow.common.errors import ExpressionError
from diffflow.common.schema import hash_strings
from diffflow.dataflow.expr import Expr, Func
from diffflow.datalog.syntax.intrinsics import (COUNTERS, NUMERIC_CONVERSIONS, NUMERIC_FUNCTORS,
                                             SIGNATURES)
from diffflow.datalog.values.structures import decode_value, encode_value

_2_31, _2_32 = 1 << 31, 1 << 32


# -- one value ------------------------------------------------------------------------------
def _wrap(value: int, kind: str) -> int:
    if kind == "number":
        return (value + _2_31) % _2_32 - _2_31
    if kind == "unsigned":
        return value % _2_32
    return value


def _bytes_cut(text: str, start: int, length: int) -> str:
    data = text.encode()
    if start < 0 or start > len(data):  # (std::string::substr throws: Soufflé gives "")
        return ""
    end = len(data) if length < 0 else start + length
    return data[start:end].decode(errors="replace")


_INT_PREFIX = {10: re.compile(r"\s*([+-]?)([0-9]+)"), 2: re.compile(r"\s*([+-]?)([01]+)"),
               16: re.compile(r"\s*([+-]?)(?:0[xX])?([0-9a-fA-F]+)")}
_FLOAT_PREFIX = re.compile(r"\s*([+-]?([0-9]+\.?[0-9]*([eE][+-]?[0-9]+)?|\.[0-9]+([eE][+-]?[0-9]+)?"
                           r"|inf|nan))", re.IGNORECASE)


def _to_number(text: str, kind: str):
    """Soufflé's to_number / to_unsigned / to_float of text: the number the text starts with,
    as C's stoi / stoul / stod read it (leading blanks allowed), with Soufflé's prefixes
    ``0x`` (hexadecimal) and ``0b`` (binary), ``-0x`` and ``-0b`` for a number; text that
    does not start with a number, or one out of the 32-bit range, stops the run.

    >>> [_to_number(t, "number") for t in ("12ab", " -7", "0x1F", "-0xff", "0b101", "-0b11")]
    [12, -7, 31, -255, 5, -3]
    >>> _to_number("0xffffffff", "unsigned"), _to_number("2.5e1", "float")
    (4294967295, 25.0)
    """
    if kind == "float":
        found = _FLOAT_PREFIX.match(text)
        if found is None:
            raise _not_a_number(text, kind)
        return float(found.group(1))
    base, body = 10, text
    if kind == "unsigned" and text.startswith("-"):
        raise ExpressionError(f"to_unsigned({text!r}): an unsigned number can't start with "
                              f"a minus")
    if text.startswith(("0b", "-0b")):  # (stoi reads no 0b: Soufflé drops it)
        base, body = 2, ("-" + text[3:] if text.startswith("-") else text[2:])
    elif text.startswith(("0x", "-0x")):
        base = 16
    found = _INT_PREFIX[base].match(body)
    if found is None:
        raise _not_a_number(text, kind)
    value = int(found.group(1) + found.group(2), base)
    if kind == "unsigned" and value < 0:  # (stoul wraps " -5" to 64 bits: out of range)
        value %= 2**64
    if kind == "number" and not -_2_31 <= value < _2_31 or \
            kind == "unsigned" and not value < _2_32:  # (std::stoi / stoul range)
        raise ExpressionError(f"to_{kind}({text!r}): out of the 32-bit {kind} range")
    return value


def _not_a_number(text: str, kind: str) -> ExpressionError:
    return ExpressionError(f"to_{'float' if kind == 'float' else kind}({text!r}): the string "
                           f"does not start with a number")


def _to_string(value, kind: str) -> str:
    return f"{value:f}" if kind == "float" else str(int(value))  # (std::to_string)


_QUANTIFIER = re.compile(r"\{[0-9]+(,[0-9]*)?\}")
_CLASS_NAME = re.compile(r"\[:([a-z]+):\]")
# std::regex's character class names (inside [...]), as Python's class contents
_CLASS_NAMES = {"alnum": "0-9A-Za-z", "alpha": "A-Za-z", "blank": " \\t",
                "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "d": "0-9",
                "graph": "\\x21-\\x7e", "lower": "a-z", "print": "\\x20-\\x7e",
                "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
                "space": " \\t\\n\\r\\f\\v", "s": " \\t\\n\\r\\f\\v", "upper": "A-Z",
                "w": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f"}


@functools.lru_cache(maxsize=256)
def regex(pattern: str):
    """The compiled pattern, or None when it is not a valid regex in Soufflé's grammar
    (C++'s ``std::regex``, ECMAScript): a ``{`` that starts no ``{n}``, ``{n,}``, ``{n,m}``
    or a group ``(?`` other than ``(?:``, ``(?=``, ``(?!`` is invalid there (Python's re
    would read them); class names such as ``[[:digit:]]`` are read as std::regex does.

    >>> regex("fo{2}b.*") is not None, regex("fo{x}b.*"), regex("(?P<a>x)"), regex("a(")
    (True, None, None, None)
    >>> regex("[[:digit:]]+#").fullmatch("12#") is not None
    True
    """
    out, at, in_class = [], 0, False
    while at < len(pattern):
        c = pattern[at]
        if c == "\\":
            out.append(pattern[at:at + 2])
            at += 2
            continue
        name = _CLASS_NAME.match(pattern, at) if in_class else None
        if name is not None:
            if name.group(1) not in _CLASS_NAMES:
                return None
            out.append(_CLASS_NAMES[name.group(1)])
            at = name.end()
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "{" and not _QUANTIFIER.match(pattern, at):
            return None
        elif c == "(" and pattern[at + 1:at + 2] == "?" and pattern[at + 2:at + 3] not in \
                (":", "=", "!"):
            return None
        out.append(c)
        at += 1
    try:
        return re.compile("".join(out))
    except re.error:
        return None


def _matches(pattern: str, text: str, negated: bool = False) -> bool:
    compiled = regex(pattern)
    if compiled is None:  # Soufflé warns, and neither match nor !match holds
        return False
    return (compiled.fullmatch(text) is None) == negated


def _ord(value, kind: str) -> int:
    """``ord`` of one value of type ``kind``: what :class:`_Ord` computes on its column."""
    if kind == "symbol":  # (the symbol's id, folded to a number)
        return _wrap(int(hash_strings(np.array([value], dtype=object))[0]), "number")
    if kind in ("number", "unsigned", "float"):
        return int(_Ord(kind)(None, np.asarray([value]))[0])
    if value is None:
        return 0  # (nil)
    raise ExpressionError("ord of a record or ADT value is computed by rules only (a fact "
                          "or an explanation cannot compute it: records are identified by "
                          "hash in diffflow, so the number differs from Soufflé's anyway)")


class _Ord:
    """``ord`` on a column: a number's own value, an unsigned's or a float's bits (of a
    32-bit float, as Soufflé's), a symbol's or a record's id folded to 32 bits -- a number
    telling values apart; for symbols and records not Soufflé's (its table index)."""

    def __init__(self, kind: str):
        self.kind = kind

    def __call__(self, symbols, values):
        if self.kind == "float":
            bits = np.asarray(values, np.float64).astype(np.float32).view(np.int32)
            return bits.astype(np.int64)
        return wrap_array(np.asarray(values, np.int64), "number")


def scalar(name: str, args: list, kind: str, arg_kinds: list | None = None):
    """``name(*args)`` for one row, in type ``kind`` (the call's); ``arg_kinds`` are the
    arguments' types (``to_string`` needs it).

    >>> scalar("max", [3, 9, 4], "number"), scalar("bnot", [0], "unsigned")
    (9, 4294967295)
    """
    if name == "cat":
        return "".join(args)
    if name in COUNTERS:
        raise ValueError("autoinc() numbers a rule's rows; it has no value of its own")
    if name == "strlen":
        return len(args[0].encode())
    if name == "substr":
        return _bytes_cut(*args)
    if name == "ord":
        return _ord(args[0], (arg_kinds or ["symbol"])[0])
    if name in ("to_number", "to_unsigned", "to_float"):
        arg_kind = (arg_kinds or ["symbol"])[0]
        if arg_kind != "symbol":  # a numeric value converted, as Soufflé does
            conversion = NUMERIC_CONVERSIONS[name, arg_kind]
            return args[0] if conversion is None else scalar(conversion, args, kind, arg_kinds)
        return _to_number(args[0], SIGNATURES[name][1])
    if name == "to_string":
        arg_kind = (arg_kinds or ["number"])[0]
        return args[0] if arg_kind == "symbol" else _to_string(args[0], arg_kind)
    if name in NUMERIC_FUNCTORS and kind != "symbol":  # the column kernel, on one row
        out = _Numeric(name, kind)(None, *(np.asarray([a]) for a in args))
        return out[0].item()
    return min(args) if name == "min" else max(args)  # (of symbols: by text)


def holds(op: str, left: str, right: str) -> bool:
    """Whether ``contains(left, right)`` (``left`` occurs in ``right``) or
    ``match(left, right)`` (regex ``left`` matches all of ``right``) holds, or their negation
    (``!contains``, ``!match``: an invalid regex makes both ``match`` and ``!match`` false,
    as in Soufflé).

    >>> holds("contains", "ell", "hello"), holds("match", "h.*o", "hello")
    (True, True)
    >>> holds("!match", "h.*o", "hello"), holds("!match", "h{x}", "hello")
    (False, False)
    """
    if op == "contains":
        return left in right
    if op == "!contains":
        return left not in right
    if op in ("match", "!match"):
        return _matches(left, right, negated=op == "!match")
    # symbols in text order: code points, which is UTF-8 byte order, as Soufflé compares them
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


# -- whole columns ----------------------------------------------------------------------------
def column(name: str, args: list, kind: str, arg_kinds: list) -> Expr:
    """The column expression of ``name(*args)`` (``args``: column expressions), in type
    ``kind``; ``arg_kinds``: the arguments' types.

    >>> from diffflow.dataflow.expr import col
    >>> column("band", [col("v_x"), col("v_y")], "number", ["number", "number"])
    band(col('v_x'), col('v_y'))
    """
    out = {"symbol": "str", "float": "float"}.get(kind, "int")
    if (name, arg_kinds[0] if arg_kinds else "symbol") in NUMERIC_CONVERSIONS:
        conversion = NUMERIC_CONVERSIONS[name, arg_kinds[0]]  # to_float(x) of a number: itof
        if conversion is None:
            return args[0]
        name = conversion
    if name in NUMERIC_FUNCTORS and kind != "symbol":
        return Func(name, _Numeric(name, kind), args, out)
    if name == "ord":  # (of any value: its column, symbols and records as their ids)
        return Func(name, _Ord(arg_kinds[0]), args, out)
    return Func(name, _PerValue(name, kind, arg_kinds), args, out)  # (min, max of symbols: text)


def constraint(op: str, left: Expr, right: Expr) -> Expr:
    """The filter predicate of ``contains(left, right)`` / ``match(left, right)`` (negated:
    ``!contains``, ``!match``), or of an order comparison (``<`` ...) of symbols, by their
    text."""
    return Func(op, _PerValue(op, "bool", ["symbol", "symbol"]), [left, right], "bool")


class _Numeric:
    """A numeric functor on numpy columns (int64 holding 32-bit values, or floats)."""

    def __init__(self, name: str, kind: str):
        self.name, self.kind = name, kind

    def __call__(self, symbols, *values):
        name, kind = self.name, self.kind
        if name in ("min", "max"):
            return (np.minimum if name == "min" else np.maximum).reduce(np.stack(values))
        if name in ("itof", "utof"):
            return values[0].astype(np.float64)
        if name in ("ftoi", "ftou"):
            v = np.asarray(values[0], np.float64)
            v = np.where(np.isfinite(v) & (np.abs(v) < 2.0 ** 63), np.trunc(v), 0.0)
            return wrap_array(v.astype(np.int64), SIGNATURES[name][1])
        if name in ("itou", "utoi"):
            return wrap_array(values[0].astype(np.int64), SIGNATURES[name][1])
        if name == "abs":
            return np.abs(values[0]) if kind == "float" else wrap_array(np.abs(values[0]), kind)
        a = values[0].astype(np.int64)
        b = values[1].astype(np.int64) if len(values) > 1 else None
        if name in ("land", "lor", "lxor", "lnot"):
            x = a != 0
            y = None if b is None else b != 0
            value = {"land": lambda: x & y, "lor": lambda: x | y, "lxor": lambda: x ^ y,
                     "lnot": lambda: ~x}[name]()
            return value.astype(np.int64)
        if name == "bnot":
            return wrap_array(~a, kind)
        shift = None if b is None else b & 31
        value = {"band": lambda: a & b, "bor": lambda: a | b, "bxor": lambda: a ^ b,
                 "bshl": lambda: a << shift, "bshr": lambda: a >> shift,
                 "bshru": lambda: (a % _2_32) >> shift}[name]()
        return wrap_array(value, kind)


def wrap_array(values: np.ndarray, kind: str) -> np.ndarray:
    """Integers wrapped to ``kind`` (``number``: 32-bit signed, ``unsigned``: 32-bit)."""
    if kind == "number":
        return (values + _2_31) % _2_32 - _2_31
    if kind == "unsigned":
        return values % _2_32
    return values


class _PerValue:
    """A functor of strings (or one yielding them): computed once per distinct combination
    of argument values, symbols decoded and results interned through the symbol table."""

    def __init__(self, name: str, kind: str, arg_kinds: list, compute=None):
        self.name, self.kind, self.arg_kinds = name, kind, list(arg_kinds)
        self.compute = compute or (lambda row: scalar(name, row, kind, self.arg_kinds))

    def __call__(self, symbols, *values):
        n = len(values[0])
        if n == 0:
            return np.zeros(0, np.float64 if self.kind == "float" else np.int64)
        # (one int64 matrix: floats by their bits, so 64-bit symbol ids stay exact)
        stacked = np.stack([np.asarray(v, np.float64).view(np.int64) if k == "float"
                            else np.asarray(v, np.int64)
                            for v, k in zip(values, self.arg_kinds)], axis=1)
        distinct, inverse = np.unique(stacked, axis=0, return_inverse=True)
        columns = []
        for j, k in enumerate(self.arg_kinds):
            part = np.ascontiguousarray(distinct[:, j])
            if k == "symbol":
                columns.append(symbols.decode(part))
            elif k == "float":
                columns.append(part.view(np.float64).tolist())
            else:
                columns.append(part.tolist())
        if self.kind == "bool":
            results = [holds(self.name, *row) for row in zip(*columns)]
            return np.asarray(results, bool)[inverse.ravel()]
        results = [self.compute(list(row)) for row in zip(*columns)]
        if self.kind == "symbol":
            ids = symbols.encode(results)
        else:
            ids = np.asarray(results, np.float64 if self.kind == "float" else np.int64)
        return ids[inverse.ravel()]


# -- user-defined functors ------------------------------------------------------------------
class UserFunctor:
    """A ``.functor`` declaration bound to a Python callable (``Program(functors=...)``).

    The callable gets one value per argument (``int``, ``float``, ``str``, a record as a
    tuple or ``None``, an ADT value as an :class:`~diffflow.datalog.values.structures.AdtValue`) and
    returns the result, called once per distinct combination of arguments; marked with
    :func:`vectorized`, it gets whole numpy arrays (symbols as arrays of ``str``) and
    returns an array.  Results are converted to the declared type as Soufflé's C++ would:
    ``number`` wraps to 32 bits, ``unsigned`` too.  (Soufflé's ``stateful`` functors are
    C++ given the symbol and record tables; a Python functor gets and returns values, so
    ``stateful`` changes nothing here.)
    """

    def __init__(self, decl, params: list, result: str, fn, structures=None):
        self.decl, self.params, self.result, self.fn = decl, params, result, fn
        self.name = decl.name
        self.structures = structures or {}
        self.structured = any(k in self.structures for k in (*params, result))

    def convert(self, value):
        if self.result in self.structures:  # (checked when it is encoded)
            return value
        if self.result == "symbol":
            if not isinstance(value, str):
                raise ExpressionError(f"functor @{self.name} returned {value!r}, not a str "
                                      f"(it is declared to return a symbol)")
            return value
        if self.result == "float":
            if isinstance(value, (str, bytes)):
                raise ExpressionError(f"functor @{self.name} returned {value!r}, not a number "
                                      f"(it is declared to return a float)")
            return float(value)
        if isinstance(value, (str, bytes, float)) and not (
                isinstance(value, float) and value.is_integer()) or int(value) != value:
            raise ExpressionError(f"functor @{self.name} returned {value!r}, not an integer "
                                  f"(it is declared to return a {self.result})")
        return _wrap(int(value), self.result)

    def scalar(self, args: list):
        try:
            value = self.fn(*args)
        except Exception as e:
            raise ExpressionError(f"functor @{self.name}({', '.join(map(repr, args))}) "
                                  f"failed: {type(e).__name__}: {e}") from e
        try:
            return self.convert(value)
        except ExpressionError:
            raise
        except Exception as e:  # (None, nan, complex...: not of the declared type)
            raise ExpressionError(f"functor @{self.name} returned {value!r}, not a "
                                  f"{self.result}") from e

    def __call__(self, symbols, *values, rows: int | None = None):
        if not values:  # @f(): one call, the value for every row
            value = self.scalar([])
            if self.result == "symbol":
                value = symbols.encode_one(value)
            return np.full(rows or 0, value, np.float64 if self.result == "float" else np.int64)
        if self.structured:  # records and ADT values in and out, one combination at a time
            kind = "number" if self.result in self.structures else self.result
            return _PerValue("@" + self.name, kind, self.params,
                             lambda row: self._with_records(symbols, row))(symbols, *values)
        if getattr(self.fn, "diffflow_vectorized", False):
            return self._whole(symbols, values)
        return _PerValue("@" + self.name, self.result, self.params, self.scalar)(symbols,
                                                                                 *values)

    def _with_records(self, symbols, row: list):
        args = [decode_value(v, k, self.structures, symbols) if k in self.structures else v
                for v, k in zip(row, self.params)]
        value = self.scalar(args)
        if self.result not in self.structures:
            return value
        try:
            return encode_value(value, self.result, self.structures, symbols)
        except (TypeError, ValueError, IndexError) as e:
            raise ExpressionError(f"functor @{self.name} returned {value!r}, not a "
                                  f"{self.result}: {e}") from None

    def _whole(self, symbols, values):
        args = []
        for v, kind in zip(values, self.params):
            if kind == "symbol":
                args.append(np.asarray(symbols.decode(np.asarray(v, np.int64)), dtype=object))
            else:
                args.append(np.asarray(v))
        try:
            out = np.asarray(self.fn(*args))
        except Exception as e:
            raise ExpressionError(f"functor @{self.name} (vectorized) failed: "
                                  f"{type(e).__name__}: {e}") from e
        if out.shape != (len(values[0]),):
            raise ExpressionError(f"functor @{self.name} (vectorized) returned shape "
                                  f"{out.shape} for {len(values[0])} rows")
        if self.result == "symbol":
            return symbols.encode([self.convert(x) for x in out.tolist()])
        if self.result == "float":
            return out.astype(np.float64)
        if out.dtype.kind == "f" and not np.all(np.isfinite(out) & (out == np.trunc(out))):
            bad = out[~(np.isfinite(out) & (out == np.trunc(out)))][0]
            raise ExpressionError(f"functor @{self.name} (vectorized) returned {bad!r}, not "
                                  f"an integer (it is declared to return a {self.result})")
        return wrap_array(out.astype(np.int64), self.result)


def vectorized(fn):
    """Mark a user-defined functor's callable as taking whole columns: numpy arrays in (a
    symbol argument as an array of ``str``), an array out.

    >>> import diffflow as dd
    >>> p = dd.Program(".functor twice(x: number): number\\n.decl r(x: number)\\n"
    ...                "r(@twice(21)).", functors={"twice": dd.vectorized(lambda x: x * 2)})
    >>> p.commit(); p.relation("r")
    {(42,)}
    """
    fn.diffflow_vectorized = True
    return fn
