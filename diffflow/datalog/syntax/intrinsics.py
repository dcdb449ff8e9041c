"""The language's intrinsic types and functors, as every stage of the front end knows them.

The parser reads the functor table (which names are infix, which are constraints written
as atoms), analysis types calls with it, the values stage evaluates them
(:mod:`diffflow.datalog.values.functors`), and the explanations print them.

>>> parameters("cat", 3), parameters("strlen", 2), arity_text("min")
(['symbol', 'symbol', 'symbol'], None, 'at least 2 arguments')
>>> NUMBER_RANGE
(-2147483648, 2147483647)
"""
from __future__ import annotations

from diffflow.datalog.syntax import ast

#: the base types; ``.type`` declarations resolve to one of these (or to a record or ADT)
BASE_TYPES = ("number", "unsigned", "float", "symbol")
#: the values a ``number`` and an ``unsigned`` hold (32 bits, as Soufflé's default build)
NUMBER_RANGE = (-(2**31), 2**31 - 1)
UNSIGNED_RANGE = (0, 2**32 - 1)
NUMERIC = ("number", "unsigned", "float")
INTEGRAL = ("number", "unsigned")

# name -> (parameter types, result type); "T": the numeric type the call is evaluated in
# (its arguments too); "numeric": any numeric argument; "scalar": a symbol (text to parse) or
# any numeric value (converted, see NUMERIC_CONVERSIONS); "any": a value of any type, records
# and ADT values too (ord's); a trailing "..." repeats the last
SIGNATURES = {
    "cat": (("symbol", "symbol", "..."), "symbol"),
    "strlen": (("symbol",), "number"),
    "substr": (("symbol", "number", "number"), "symbol"),
    "ord": (("any",), "number"),
    "to_number": (("scalar",), "number"),
    "to_unsigned": (("scalar",), "unsigned"),
    "to_float": (("scalar",), "float"),
    "to_string": (("scalar",), "symbol"),
    "itou": (("number",), "unsigned"),
    "itof": (("number",), "float"),
    "utoi": (("unsigned",), "number"),
    "utof": (("unsigned",), "float"),
    "ftoi": (("float",), "number"),
    "ftou": (("float",), "unsigned"),
    "min": (("T", "T", "..."), "T"),
    "max": (("T", "T", "..."), "T"),
    "abs": (("T",), "T"),
    "band": (("T", "T"), "T"), "bor": (("T", "T"), "T"), "bxor": (("T", "T"), "T"),
    "bshl": (("T", "T"), "T"), "bshr": (("T", "T"), "T"), "bshru": (("T", "T"), "T"),
    "bnot": (("T",), "T"),
    "land": (("T", "T"), "T"), "lor": (("T", "T"), "T"), "lxor": (("T", "T"), "T"),
    "lnot": (("T",), "T"),
    "range": (("T", "T", "..."), "T"),  # 2 or 3 arguments (analysis checks); a generator
    "autoinc": ((), "number"),
}
INFIX = {"band", "bor", "bxor", "bshl", "bshr", "bshru", "land", "lor", "lxor"}  # x band y
PREFIX = {"bnot", "lnot"}  # bnot x
BITWISE = INFIX | PREFIX
NUMERIC_FUNCTORS = BITWISE | {"min", "max", "abs", "itou", "utoi", "ftoi", "ftou", "itof",
                              "utof"}  # (computed by numpy, on columns or on one row)
#: to_number, to_unsigned and to_float of a numeric value (and to_string of a symbol), as
#: Soufflé converts it: the conversion functor computing it (None: the value is already of
#: that type)
NUMERIC_CONVERSIONS = {
    ("to_number", "number"): None, ("to_number", "unsigned"): "utoi",
    ("to_number", "float"): "ftoi",
    ("to_unsigned", "unsigned"): None, ("to_unsigned", "number"): "itou",
    ("to_unsigned", "float"): "ftou",
    ("to_float", "float"): None, ("to_float", "number"): "itof", ("to_float", "unsigned"): "utof",
    ("to_string", "symbol"): None,  # (to_string of a symbol: itself, as in Soufflé)
}
CONSTRAINTS = ("contains", "match")  # (sub, text) and (regex, text): literals, not terms
# named in the grammar but not built yet: a located error names the feature
NOT_YET: dict = {}
COUNTERS = ("autoinc",)  # numbers the rows of its rule (a head argument; see .counters)
GENERATORS = ("range",)  # one row in, many out (.generators): bodies bind them
#: Soufflé's ``recursive_iteration_cnt()``: rewritten away before analysis (transform.iterations)
ITERATION_COUNTER = "recursive_iteration_cnt"


def parameters(name: str, count: int) -> list:
    """The parameter types of ``name`` called with ``count`` arguments, or None when it
    takes another number.

    >>> parameters("cat", 3), parameters("strlen", 2)
    (['symbol', 'symbol', 'symbol'], None)
    """
    params, _ = SIGNATURES[name]
    if params and params[-1] == "...":
        fixed = list(params[:-1])
        return fixed + [fixed[-1]] * (count - len(fixed)) if count >= len(fixed) else None
    return list(params) if count == len(params) else None


def arity_text(name: str) -> str:
    """How many arguments ``name`` takes, for messages.

    >>> arity_text("min"), arity_text("substr")
    ('at least 2 arguments', '3 arguments')
    """
    params, _ = SIGNATURES[name]
    if params and params[-1] == "...":
        return f"at least {len(params) - 1} arguments"
    return f"{len(params)} argument{'s' * (len(params) != 1)}"


def is_counter(node) -> bool:
    """Whether a term is a counter call (``autoinc()``: :mod:`~diffflow.datalog.transform.counters`)."""
    return isinstance(node, ast.Functor) and node.name in COUNTERS
