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
attribute (``r(7 / 2)`` is 3 for a number and 3.5 for a float).

>>> from diffflow.dsl.parser import parse
>>> (rule,) = parse("r(2 ^ 31 + 1 - 2).").rules
>>> evaluate(rule.head.args[0], "number"), evaluate(rule.head.args[0], "unsigned")
(2147483647, 2147483647)
>>> (rule,) = parse("r(-7 / 2, 0u - 1u, max 4 : { 1 > 2 }).").rules
>>> [evaluate(a, k) for a, k in zip(rule.head.args, ["number", "unsigned", "number"])]
[-3, 4294967295, None]
"""
from __future__ import annotations

from . import ast
from .errors import DatalogError

EMPTY = None  # the value of min / max over a body that does not hold
_CONSTANTS = (ast.Number, ast.Float, ast.String)


def non_constant_part(node):
    """The first variable, wildcard or atom in a term (None if the term is constant).

    >>> from diffflow.dsl.parser import parse
    >>> (rule,) = parse("r(1 + x).").rules
    >>> non_constant_part(rule.head.args[0]).name
    'x'
    """
    if isinstance(node, (ast.Var, ast.Wildcard)):
        return node
    if isinstance(node, ast.BinaryOp):
        return non_constant_part(node.left) or non_constant_part(node.right)
    if isinstance(node, ast.Negative):
        return non_constant_part(node.operand)
    if isinstance(node, ast.AggregateTerm):
        if node.target is not None and non_constant_part(node.target) is not None:
            return non_constant_part(node.target)
        for lit in node.body:
            if isinstance(lit, (ast.Atom, ast.Negation, ast.Disjunction)):
                return lit
            if isinstance(lit, ast.Comparison):
                found = non_constant_part(lit.left) or non_constant_part(lit.right)
                if found is not None:
                    return found
    return None


def evaluate(node, kind: str):
    """The value of a constant term whose result has base type ``kind``.

    Returns :data:`EMPTY` (None) for ``min`` / ``max`` over a body that does not
    hold.  Raises :class:`ArithmeticError` for an integer division by zero or a
    negative integer exponent (the caller turns it into a located error).

    >>> from diffflow.dsl.parser import parse
    >>> (rule,) = parse("r(7 / 2, 7 % -2, 2.5 * 2).").rules
    >>> [evaluate(a, "float") for a in rule.head.args]
    [3.5, 1.0, 5.0]
    """
    if isinstance(node, ast.Number):
        return float(node.value) if kind == "float" else node.value
    if isinstance(node, (ast.Float, ast.String)):
        return node.value
    if isinstance(node, ast.Negative):
        value = evaluate(node.operand, kind)
        return None if value is None else _wrap(-value, kind)
    if isinstance(node, ast.AggregateTerm):
        return _aggregate(node, kind)
    left, right = evaluate(node.left, kind), evaluate(node.right, kind)
    if left is None or right is None:
        return None
    return _arithmetic(node.op, left, right, kind)


def _arithmetic(op, a, b, kind):
    if kind == "float":
        return _float_arithmetic(op, a, b)
    if op in ("/", "%"):
        if b == 0:
            raise ArithmeticError("integer division by zero")
        quotient = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return _wrap(quotient if op == "/" else a - b * quotient, kind)
    if op == "^":
        if b < 0:
            raise ArithmeticError("negative integer exponent")
        return _wrap(pow(a, b, 2**32), kind)
    return _wrap({"+": a + b, "-": a - b, "*": a * b}[op], kind)


def _float_arithmetic(op, a, b):
    """IEEE results as numpy gives them at run time: x / 0 is ±inf, 0 / 0 and x % 0 are nan."""
    import numpy as np

    with np.errstate(all="ignore"):
        a, b = np.float64(a), np.float64(b)
        value = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
                 "%": np.fmod, "^": np.power}[op](a, b)
    return float(value)


def _wrap(value, kind):
    if kind == "number":
        return (value + 2**31) % 2**32 - 2**31
    if kind == "unsigned":
        return value % 2**32
    return value


def _aggregate(agg, kind):
    holds = all(_holds(lit) for lit in agg.body)
    if agg.function == "count":
        return 1 if holds else 0
    if agg.function == "sum" and not holds:
        return 0.0 if kind == "float" else 0
    return evaluate(agg.target, kind) if holds else EMPTY


def _holds(lit) -> bool:
    if isinstance(lit, ast.Boolean):
        return lit.value
    kind = comparison_kind(lit)
    left, right = evaluate(lit.left, kind), evaluate(lit.right, kind)
    if left is None or right is None:
        return False
    return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
            ">": left > right, ">=": left >= right}[lit.op]


def comparison_kind(c, types=None) -> str:
    """The type a comparison is evaluated in (a plain integer is a number).

    ``types`` gives the variables' types, when the comparison has variables.

    >>> from diffflow.dsl.parser import parse
    >>> [comparison_kind(c) for c in parse("r(1) :- 1 < 2, 1 < 2u, 1.5 > 1.").rules[0]
    ...                                     .body[0].literals]
    ['number', 'unsigned', 'float']
    """
    for side in (c.left, c.right):
        kind = known_kind(side, types)
        if kind is not None:
            return kind
    return "number"


def known_kind(node, types=None):
    """The base type a term certainly has, or None (a plain integer fits several).

    >>> from diffflow.dsl import ast
    >>> known_kind(ast.Number(1, 1, 3)), known_kind(ast.Var(1, 1, "x"), {"x": "float"})
    (None, 'float')
    """
    if isinstance(node, ast.Var):
        return (types or {}).get(node.name)
    if isinstance(node, ast.Float):
        return "float"
    if isinstance(node, ast.String):
        return "symbol"
    if isinstance(node, ast.Number):
        return "unsigned" if node.unsigned else None
    if isinstance(node, ast.Negative):
        return known_kind(node.operand, types)
    if isinstance(node, ast.BinaryOp):
        return known_kind(node.left, types) or known_kind(node.right, types)
    if isinstance(node, ast.AggregateTerm):
        return "number" if node.function == "count" else known_kind(node.target, types)
    return None


def fold_fact(analyser, rule: ast.Rule, relation):
    """A fact with every argument evaluated to a constant node, or None if it derives nothing.

    ``analyser`` supplies the type checks and located errors of the analysis.

    >>> from diffflow.dsl.analysis import analyse
    >>> from diffflow.dsl.parser import parse
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
        bad = non_constant_part(arg)
        if bad is not None:
            raise _not_constant(analyser, rule, arg, bad)
        _check_types(analyser, arg, kind, name, relation)
        try:
            value = evaluate(arg, kind)
        except ArithmeticError as e:
            raise analyser.error(f"{e} in a fact of {relation.name}", arg) from None
        if value is EMPTY:
            return None
        args.append(_constant(arg, value, kind))
    head = ast.Atom(rule.head.line, rule.head.column, rule.head.relation, args)
    return ast.Rule(rule.line, rule.column, head, [])


def _check_types(analyser, arg, kind, name, relation):
    for agg in _aggregates_in(arg):
        for lit in agg.body:
            if isinstance(lit, ast.Comparison):
                left = analyser.expr_type(lit.left, {})
                right = analyser.expr_type(lit.right, {})
                analyser.check_comparison(lit, left, right)
        if agg.target is not None and analyser.expr_type(agg.target, {}) == "symbol":
            raise analyser.error(f"{agg.function} of a symbol is not supported", agg.target)
    got = analyser.expr_type(arg, {})
    if got != kind and not (got == "literal" and kind != "symbol"):
        raise analyser.error(f"type clash: attribute {name!r} of {relation.name} is a {kind}, "
                             f"but this is a {'number' if got == 'literal' else got}", arg)
    analyser.check_literal_ranges(arg, kind)


def _aggregates_in(node):
    if isinstance(node, ast.AggregateTerm):
        found = [node]
        for lit in node.body:
            if isinstance(lit, ast.Comparison):
                found += _aggregates_in(lit.left) + _aggregates_in(lit.right)
        return found + (_aggregates_in(node.target) if node.target is not None else [])
    if isinstance(node, ast.BinaryOp):
        return _aggregates_in(node.left) + _aggregates_in(node.right)
    if isinstance(node, ast.Negative):
        return _aggregates_in(node.operand)
    return []


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
