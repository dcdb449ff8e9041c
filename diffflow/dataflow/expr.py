"""Column expressions: the vectorised fast path for ``select`` and ``filter``.

``dd.col("a") + 1`` builds a small expression tree.  It is type-checked
against a schema when the operator is built (so unknown columns fail at
graph-construction time, naming the available ones) and evaluated on whole
columns with numpy when data flows -- never row by row.

Typing follows Python: ``int op int`` is ``int`` (``//`` and ``%`` floor like
Python), any ``float`` operand makes ``float``, ``/`` is always ``float``,
comparisons and ``& | ~`` give ``bool``.  ``str`` columns support only
``==`` and ``!=`` (symbols are stored as hashes, so they have no useful order).
"""
from __future__ import annotations

import numpy as np

from diffflow.common.errors import ExpressionError
from diffflow.common.schema import Schema, SymbolTable, decode_floats, encode_floats

_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
          "//": np.floor_divide, "%": np.mod, "**": np.power,
          "max": np.maximum, "min": np.minimum}
_COMPARE = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
            ">": np.greater, ">=": np.greater_equal}
_LOGIC = {"&": np.logical_and, "|": np.logical_or}


class Expr:
    """Base class of column expressions; combine them with Python operators."""

    def _bin(self, op, other, swap=False):
        other = other if isinstance(other, Expr) else Lit(other)
        return BinOp(op, other, self) if swap else BinOp(op, self, other)

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __truediv__(self, o): return self._bin("/", o)
    def __rtruediv__(self, o): return self._bin("/", o, True)
    def __floordiv__(self, o): return self._bin("//", o)
    def __rfloordiv__(self, o): return self._bin("//", o, True)
    def __mod__(self, o): return self._bin("%", o)
    def __rmod__(self, o): return self._bin("%", o, True)
    def __pow__(self, o): return self._bin("**", o)
    def __eq__(self, o): return self._bin("==", o)  # type: ignore[override]
    def __ne__(self, o): return self._bin("!=", o)  # type: ignore[override]
    def __lt__(self, o): return self._bin("<", o)
    def __le__(self, o): return self._bin("<=", o)
    def __gt__(self, o): return self._bin(">", o)
    def __ge__(self, o): return self._bin(">=", o)
    def __and__(self, o): return self._bin("&", o)
    def __rand__(self, o): return self._bin("&", o, True)
    def __or__(self, o): return self._bin("|", o)
    def __ror__(self, o): return self._bin("|", o, True)
    def __neg__(self): return UnOp("-", self)
    def __invert__(self): return UnOp("~", self)
    def __abs__(self): return UnOp("abs", self)
    __hash__ = object.__hash__

    def __bool__(self):
        raise TypeError("a column expression has no truth value; use & | ~ instead of and/or/not")

    def columns(self) -> set:
        """Names of the columns the expression reads."""
        raise NotImplementedError

    def infer(self, schema: Schema) -> str:
        """Result type (``int``/``float``/``bool``/``str``); raises on misuse."""
        raise NotImplementedError

    def evaluate(self, rows: np.ndarray, schema: Schema, symbols: SymbolTable) -> np.ndarray:
        """Evaluate on encoded ``(n, w)`` rows; returns the *encoded* int64 column."""
        kind = self.infer(schema)
        values = self._eval(rows, schema, symbols)
        return _encode_result(values, kind, len(rows))

    def _eval(self, rows, schema, symbols):
        raise NotImplementedError


class Col(Expr):
    """A reference to a column by name.

    >>> col("a").columns()
    {'a'}
    """

    def __init__(self, name: str):
        self.name = name

    def columns(self):
        return {self.name}

    def infer(self, schema):
        return schema.type_of(self.name)

    def _eval(self, rows, schema, symbols):
        j = schema.index(self.name)
        kind = schema.types[j]
        column = rows[:, j]
        if kind == "float":
            return decode_floats(column)
        if kind == "bool":
            return column != 0
        return column  # int, or str as symbol ids

    def __repr__(self):
        return f"col({self.name!r})"


class Lit(Expr):
    """A constant (int, float, bool or str)."""

    def __init__(self, value):
        if not isinstance(value, (bool, int, float, str, np.integer, np.floating, np.bool_)):
            raise ExpressionError(f"unsupported constant {value!r} in a column expression")
        self.value = value

    def columns(self):
        return set()

    def infer(self, schema):
        v = self.value
        if isinstance(v, (bool, np.bool_)):
            return "bool"
        if isinstance(v, (int, np.integer)):
            return "int"
        if isinstance(v, (float, np.floating)):
            return "float"
        return "str"

    def _eval(self, rows, schema, symbols):
        if isinstance(self.value, str):
            return np.int64(symbols.encode_one(self.value))
        return self.value

    def __repr__(self):
        return repr(self.value)


class BinOp(Expr):
    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right

    def columns(self):
        return self.left.columns() | self.right.columns()

    def infer(self, schema):
        a, b = self.left.infer(schema), self.right.infer(schema)
        op = self.op
        if "str" in (a, b):
            if op in ("==", "!=") and a == b:
                return "bool"
            raise ExpressionError(
                f"{self!r}: str columns support only == and != with other strings")
        if op in _COMPARE:
            return "bool"
        if op in _LOGIC:
            if a != "bool" or b != "bool":
                raise ExpressionError(f"{self!r}: & and | need bool operands, got {a} and {b}")
            return "bool"
        if op == "/":
            return "float"
        return "float" if "float" in (a, b) else "int"


    def _eval(self, rows, schema, symbols):
        a = self.left._eval(rows, schema, symbols)
        b = self.right._eval(rows, schema, symbols)
        op = self.op
        if op in _COMPARE:
            return _COMPARE[op](a, b)
        if op in _LOGIC:
            return _LOGIC[op](a, b)
        if op in ("//", "%", "tdiv", "tmod") and self.infer(schema) == "int" \
                and np.any(np.asarray(b) == 0):
            raise ZeroDivisionError(f"integer division by zero in {self!r}")
        if op in ("tdiv", "tmod"):
            return _truncating(op, a, b, self.infer(schema))
        if op == "ipow":
            return _integer_power(a, b) if self.infer(schema) == "int" else _ARITH["**"](a, b)
        if op == "**" and self.infer(schema) == "int" and np.any(np.asarray(b) < 0):
            raise ExpressionError(f"{self!r}: negative integer exponent; use a float base")
        with np.errstate(divide="ignore", invalid="ignore"):
            return _ARITH[op](a, b)

    def __repr__(self):
        return f"({self.left!r} {self.op} {self.right!r})"


class UnOp(Expr):
    def __init__(self, op, operand):
        self.op, self.operand = op, operand

    def columns(self):
        return self.operand.columns()

    def infer(self, schema):
        kind = self.operand.infer(schema)
        if self.op == "~":
            if kind != "bool":
                raise ExpressionError(f"{self!r}: ~ needs a bool operand, got {kind}")
            return "bool"
        if kind in ("str", "bool"):
            raise ExpressionError(f"{self!r}: {self.op} needs a number, got {kind}")
        if self.op in ("wrap32", "wrapu32") and kind != "int":
            raise ExpressionError(f"{self!r}: {self.op} needs an int, got {kind}")
        return kind

    def _eval(self, rows, schema, symbols):
        v = self.operand._eval(rows, schema, symbols)
        if self.op == "~":
            return np.logical_not(v)
        if self.op == "abs":
            return np.abs(v)
        if self.op == "wrap32":
            return (np.asarray(v, dtype=np.int64) + _2_31) % _2_32 - _2_31
        if self.op == "wrapu32":
            return np.asarray(v, dtype=np.int64) % _2_32
        return np.negative(v)

    def __repr__(self):
        if self.op in ("-", "~"):
            return f"{self.op}{self.operand!r}"
        return f"{self.op}({self.operand!r})"


class Func(Expr):
    """A function of whole columns: ``fn(symbols, *values)`` gives the values of type
    ``kind`` (``"int"``, ``"float"``, ``"str"`` as symbol ids, ``"bool"``) for the
    arguments' values, constants broadcast to columns; Datalog's functors are these
    (:mod:`diffflow.datalog.values.functors`).

    >>> import numpy as np; from diffflow.common.schema import Schema
    >>> twice = Func("twice", lambda symbols, v: v * 2, [col("a")], "int")
    >>> twice._eval(np.array([[1], [5]]), Schema.of(["a"]), None).tolist(), twice
    ([2, 10], twice(col('a')))
    """

    def __init__(self, name: str, fn, args: list, kind: str):
        self.name, self.fn, self.args, self.kind = name, fn, [as_expr(a) for a in args], kind

    def columns(self):
        return set().union(*(a.columns() for a in self.args))

    def infer(self, schema):
        for a in self.args:
            a.infer(schema)
        return self.kind

    def _eval(self, rows, schema, symbols):
        n = len(rows)
        values = [np.broadcast_to(np.asarray(a._eval(rows, schema, symbols)), (n,))
                  for a in self.args]
        return self.fn(symbols, *values) if values else self.fn(symbols, rows=n)

    def __repr__(self):
        return f"{self.name}({', '.join(repr(a) for a in self.args)})"


def col(name: str) -> Col:
    """Refer to a column by name in a ``select`` or ``filter`` expression.

    >>> (col("a") + 1 < col("b"))
    ((col('a') + 1) < col('b'))
    """
    if not isinstance(name, str):
        raise TypeError(f"col() takes a column name, got {name!r}")
    return Col(name)


def lit(value) -> Lit:
    """A constant column.

    >>> lit(3)
    3
    """
    return Lit(value)


def greatest(a, b) -> Expr:
    """The larger of two numbers, row by row (one numpy pass).

    >>> import numpy as np; from diffflow.common.schema import Schema
    >>> greatest(col("a"), col("b"))._eval(np.array([[1, 5], [7, 2]]), Schema.of(["a", "b"]),
    ...                                    None).tolist()
    [5, 7]
    """
    return as_expr(a)._bin("max", b)


def least(a, b) -> Expr:
    """The smaller of two numbers, row by row.

    >>> import numpy as np; from diffflow.common.schema import Schema
    >>> least(col("a"), 3)._eval(np.array([[1], [7]]), Schema.of(["a"]), None).tolist()
    [1, 3]
    """
    return as_expr(a)._bin("min", b)


def trunc_div(a, b) -> Expr:
    """Division rounding toward zero, as in C and Soufflé (``/`` on ints).

    >>> import numpy as np; from diffflow.common.schema import Schema
    >>> e = trunc_div(col("a"), 2)
    >>> e._eval(np.array([[-7], [7]]), Schema.of(["a"]), None).tolist()
    [-3, 3]
    """
    return as_expr(a)._bin("tdiv", b)


def trunc_mod(a, b) -> Expr:
    """Remainder with the sign of the dividend, as in C and Soufflé (``%`` on ints).

    >>> import numpy as np; from diffflow.common.schema import Schema
    >>> trunc_mod(col("a"), 3)._eval(np.array([[-7], [7]]), Schema.of(["a"]), None).tolist()
    [-1, 1]
    """
    return as_expr(a)._bin("tmod", b)


def int_power(a, b) -> Expr:
    """``a`` to the power ``b`` as Soufflé's ``^`` on integers: exact for ``b >= 0`` (then
    wrapped by the caller), and for a negative ``b`` what C's ``pow`` through a double gives
    once truncated: 0 when ``|a| >= 2``, ``1`` for ``a = 1``, ``±1`` for ``a = -1`` and, for
    ``a = 0`` (an infinite power), the least 32-bit integer, as x86 converts infinity.

    >>> import numpy as np; from diffflow.common.schema import Schema
    >>> rows = np.array([[2, 10], [2, -3], [1, -3], [-1, -3], [-1, -2], [0, -1]])
    >>> int_power(col("a"), col("b"))._eval(rows, Schema.of(["a", "b"]), None).tolist()
    [1024, 0, 1, -1, 1, -2147483648]
    """
    return as_expr(a)._bin("ipow", b)


def _integer_power(a, b):
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    exact = np.power(a, np.maximum(b, 0))
    if not np.any(b < 0):
        return exact
    negative = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1),
                                            np.where(a == 0, -_2_31, 0)))
    return np.where(b < 0, negative, exact)


def wrap_int32(e) -> Expr:
    """Wrap an int expression into the signed 32-bit range (two's complement overflow).

    >>> import numpy as np; from diffflow.common.schema import Schema
    >>> wrap_int32(col("a") + 1)._eval(np.array([[2**31 - 1]]), Schema.of(["a"]), None).tolist()
    [-2147483648]
    """
    return UnOp("wrap32", as_expr(e))


def wrap_uint32(e) -> Expr:
    """Wrap an int expression into the unsigned 32-bit range.

    >>> import numpy as np; from diffflow.common.schema import Schema
    >>> wrap_uint32(col("a") - 1)._eval(np.array([[0]]), Schema.of(["a"]), None).tolist()
    [4294967295]
    """
    return UnOp("wrapu32", as_expr(e))


_2_31, _2_32 = np.int64(2**31), np.int64(2**32)


def as_expr(value) -> Expr:
    """``value`` as an expression: itself if it is one, else a literal.

    >>> as_expr(3), as_expr(col("a"))
    (3, col('a'))
    """
    return value if isinstance(value, Expr) else Lit(value)


def _truncating(op, a, b, kind):
    if kind == "float":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.trunc(np.divide(a, b)) if op == "tdiv" else np.fmod(a, b)
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    quotient = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
    return quotient if op == "tdiv" else a - b * quotient


def _encode_result(values, kind: str, n: int) -> np.ndarray:
    values = np.broadcast_to(np.asarray(values), (n,))
    if kind == "float":
        return encode_floats(values.astype(np.float64))
    return values.astype(np.int64)
