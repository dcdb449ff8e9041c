"""Facts whose arguments are constant expressions, evaluated as Soufflé evaluates them.

``r(1 + 2, "a").``, ``r(2 ^ 10).``, ``r(-(3)).``, ``r(count : { true }).`` and
``r(sum 3 : { 1 < 2 }).`` are facts: every argument is built from constants,
arithmetic and aggregates whose bodies hold no atom (only ``true``, ``false`` and
comparisons of constants).  Such a body holds once or not at all, so ``count``
is 1 or 0, ``sum`` is its target or 0, and ``min`` / ``max`` are the target or
nothing -- a fact with an empty ``min`` or ``max`` is not derived.

Arithmetic follows the attribute's type, as in rules: ``number`` wraps to
32-bit signed and ``unsigned`` to 32-bit unsigned after every operation, ``/``
and ``%`` truncate toward zero, and a constant integer takes the type of the
attribute (``r(7 / 2)`` is 3 for a number and 3.5 for a float).  Which type
each part of a term is evaluated in is what analysis records (:mod:`~diffflow.datalog.analysis.types`).

>>> from diffflow.datalog.syntax.parser import parse
>>> from diffflow.datalog.analysis.types import TermTyping
>>> typing = TermTyping()
>>> (rule,) = parse("r(2 ^ 31 + 1 - 2).").rules
>>> [evaluate(rule.head.args[0], typing.term_types(rule.head.args[0], kind))
...  for kind in ("number", "unsigned")]
[2147483647, 2147483647]
>>> (rule,) = parse("r(-7 / 2, 0u - 1u, max 4 : { 1 > 2 }).").rules
>>> [evaluate(a, typing.term_types(a, k))
...  for a, k in zip(rule.head.args, ["number", "unsigned", "number"])]
[-3, 4294967295, None]
"""
from __future__ import annotations

import operator

from diffflow.datalog.analysis.types import kind_name
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.intrinsics import CONSTRAINTS
from diffflow.datalog.values.functors import holds, scalar

EMPTY = None  # the value of min / max over a body that does not hold
_CONSTANTS = (ast.Number, ast.Float, ast.String)


def non_constant_part(node):
    """The first variable, wildcard or atom in a term (None if the term is constant).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(1 + x).").rules
    >>> non_constant_part(rule.head.args[0]).name
    'x'
    """
    for part in ast.walk_terms(node, aggregates=True):
        if isinstance(part, (ast.Var, ast.Wildcard, ast.Atom, ast.Negation, ast.Disjunction)):
            return part
    return None


def evaluate(node, types: dict):
    """The value of a constant term; ``types`` is its record of term types (:mod:`~diffflow.datalog.analysis.types`).

    Returns :data:`EMPTY` (None) for ``min`` / ``max`` over a body that does not
    hold.  Raises :class:`ArithmeticError` for an integer division by zero (the caller
    turns it into a located error).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.analysis.types import TermTyping
    >>> (rule,) = parse("r(7 / 2, 7 % -2, 2.5 * 2).").rules
    >>> [evaluate(a, TermTyping().term_types(a, "float")) for a in rule.head.args]
    [3.5, 1.0, 5.0]
    """
    kind = types[id(node)]
    if isinstance(node, ast.Number):
        return float(node.value) if kind == "float" else node.value
    if isinstance(node, (ast.Float, ast.String)):
        return node.value
    if isinstance(node, ast.Negative):
        value = evaluate(node.operand, types)
        return None if value is None else wrap(-value, kind)
    if isinstance(node, ast.AggregateTerm):
        return _aggregate(node, types)
    if isinstance(node, ast.Functor):
        args = [evaluate(a, types) for a in node.args]
        return None if any(a is None for a in args) else \
            functor(node, args, kind, [types[id(a)] for a in node.args])
    left, right = evaluate(node.left, types), evaluate(node.right, types)
    if left is None or right is None:
        return None
    return arithmetic(node.op, left, right, kind)


def comparison_holds(c: ast.Comparison, types: dict) -> bool:
    """Whether a comparison of constant terms holds (not if a side is :data:`EMPTY`).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.analysis.types import TermTyping
    >>> cs = parse("r(1) :- 0u - 1u > 0u, -1 > 0.").rules[0].body[0].literals
    >>> [comparison_holds(c, TermTyping().comparison_term_types(c)) for c in cs]
    [True, False]
    """
    left, right = evaluate(c.left, types), evaluate(c.right, types)
    if left is None or right is None:
        return False
    return compare(c.op, left, right)


def functor(node: ast.Functor, args: list, kind: str, arg_kinds: list):
    """The value of a functor call on argument values (:func:`~diffflow.datalog.values.functors.scalar`).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse('r(cat("a", "b")).').rules
    >>> functor(rule.head.args[0], ["a", "b"], "symbol", ["symbol", "symbol"])
    'ab'
    """
    if node.name == "as":
        return wrap(args[0], kind)
    if node.user is not None:  # @f
        return node.user.scalar(args)
    return scalar(node.name, args, kind, arg_kinds)


def compare(op: str, left, right) -> bool:
    """A Datalog comparison of two values (``contains`` and ``match`` too).

    >>> compare("<=", 2, 3), compare("!=", "a", "a"), compare("!contains", "b", "abc")
    (True, False, False)
    """
    if op.lstrip("!") in CONSTRAINTS:
        return holds(op, left, right)
    return _ORDER[op](left, right)  # (records and ADT values only meet = and !=)


_ORDER = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
          ">": operator.gt, ">=": operator.ge}


def arithmetic(op: str, a, b, kind: str):
    """``a op b`` as Soufflé computes it in type ``kind``: ``number`` wraps to 32-bit signed,
    ``unsigned`` to 32-bit unsigned, ``/`` and ``%`` truncate toward zero; ``+`` of symbols
    joins them.

    >>> arithmetic("/", -7, 2, "number"), arithmetic("-", 0, 1, "unsigned")
    (-3, 4294967295)
    >>> arithmetic("+", "ab", "c", "symbol")
    'abc'
    """
    if kind == "float":
        return _float_arithmetic(op, a, b)
    if kind == "symbol":  # (+ of symbols: concatenation; analysis allows no other)
        return a + b
    if op in ("/", "%"):
        if b == 0:
            raise ArithmeticError("integer division by zero")
        quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return wrap(quotient if op == "/" else a - b * quotient, kind)
    if op == "^":
        if b < 0:  # Soufflé's pow through a double, truncated (int_power's note)
            return wrap(1 if a == 1 else (-1) ** b if a == -1 else -2**31 if a == 0 else 0,
                        kind)
        return wrap(pow(a, b, 2**32), kind)
    return wrap({"+": a + b, "-": a - b, "*": a * b}[op], kind)


def _float_arithmetic(op, a, b):
    """IEEE results as numpy gives them at run time: x / 0 is ±inf, 0 / 0 and x % 0 are nan."""
    import numpy as np

    with np.errstate(all="ignore"):
        a, b = np.float64(a), np.float64(b)
        value = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
                 "%": np.fmod, "^": np.power}[op](a, b)
    return float(value)


def wrap(value, kind: str):
    """An integer wrapped into ``kind``'s 32-bit range (other kinds unchanged).

    >>> wrap(2**31, "number"), wrap(-1, "unsigned")
    (-2147483648, 4294967295)
    """
    if kind == "number":
        return (value + 2**31) % 2**32 - 2**31
    if kind == "unsigned":
        return value % 2**32
    return value


def _aggregate(agg, types):
    holds = all(lit.value if isinstance(lit, ast.Boolean) else comparison_holds(lit, types)
                for lit in agg.body)
    if agg.function == "count":
        return 1 if holds else 0
    if agg.function == "sum" and not holds:
        return 0.0 if types[id(agg)] == "float" else 0
    if agg.function == "mean" and holds:
        return float(evaluate(agg.target, types))
    return evaluate(agg.target, types) if holds else EMPTY


def fold_fact(analyser, rule: ast.Rule, relation):
    """A fact with every argument evaluated to a constant node, or None if it derives nothing.

    ``analyser`` supplies the type checks and located errors of the analysis.

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl r(x: number)\\nr(6 * 7). r(min 1 : { false })."))
    >>> [f.head.args[0].value for f in a.relations["r"].facts]
    [42]
    """
    args = []
    for arg, kind, name in zip(rule.head.args, relation.types, relation.attributes):
        if isinstance(arg, _CONSTANTS):
            analyser.check_constant(arg, kind)
            args.append(arg)
            continue
        # a variable outside the aggregates first (with none, an aggregate over atoms made
        # the fact a rule: see Analyser.add_rule)
        bad = next((n for n in ast.walk_terms(arg) if isinstance(n, (ast.Var, ast.Wildcard))),
                   None) or non_constant_part(arg)
        if bad is not None:
            raise _not_constant(analyser, rule, arg, bad)
        _check_types(analyser, arg, kind, name, relation)
        try:
            value = evaluate(arg, analyser.term_types(arg, kind))
        except ArithmeticError as e:
            raise analyser.error(f"{e} in a fact of {relation.name}", arg) from None
        if value is EMPTY:
            return None
        args.append(_constant(arg, value, kind))
    head = ast.Atom(rule.head.line, rule.head.column, rule.head.relation, args)
    return ast.Rule(rule.line, rule.column, head, [])


def _check_types(analyser, arg, kind, name, relation):
    for agg in [n for n in ast.walk_terms(arg, aggregates=True)
                if isinstance(n, ast.AggregateTerm)]:
        for lit in agg.body:
            if isinstance(lit, ast.Comparison):
                left = analyser.expr_type(lit.left, {})
                right = analyser.expr_type(lit.right, {})
                analyser.check_comparison(lit, left, right)
        if agg.target is not None and analyser.expr_type(agg.target, {}) == "symbol":
            raise analyser.error(f"{agg.function} of a symbol is not supported", agg.target)
    got = analyser.expr_type(arg, {})
    if not analyser.fits(got, kind):
        raise analyser.error(f"type clash: attribute {name!r} of {relation.name} is a {kind}, "
                             f"but this is a {kind_name(got)}", arg)
    analyser.check_literal_ranges(arg, kind)


def _constant(node, value, kind):
    if kind == "float":
        return ast.Float(node.line, node.column, float(value))
    if kind == "symbol":
        return ast.String(node.line, node.column, value)
    return ast.Number(node.line, node.column, int(value), kind == "unsigned")


def _not_constant(analyser, rule, arg, bad) -> DatalogError:
    relation = rule.head.relation
    if isinstance(bad, (ast.Atom, ast.Negation, ast.Disjunction)):
        atom = bad.atom if isinstance(bad, ast.Negation) else bad
        what = f"an atom of {atom.relation}" if isinstance(atom, ast.Atom) else "a disjunction"
        return analyser.error(f"the aggregate in this fact of {relation} has {what}; a fact can "
                              f"only aggregate over constant conditions", bad,
                              hint=f"write a rule, e.g. {relation}(n) :- n = ... .")
    what = "'_'" if isinstance(bad, ast.Wildcard) else "a variable"
    return analyser.error(f"a fact has only constants, but {relation} has {what}", bad,
                          hint="write a rule with a body to derive facts from others")
