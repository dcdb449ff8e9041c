"""``!`` before a group of body literals, by De Morgan's laws (as Soufflé's parser puts a body
in disjunctive normal form).

>>> from diffflow.datalog.syntax import ast
>>> lit = negated(ast.Comparison(1, 1, "<", ast.Var(1, 1, "x"), ast.Number(1, 5, 3)), 1, 1)
>>> lit.op
'>='
"""
from __future__ import annotations

from diffflow.datalog.syntax import ast

_OPPOSITE = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">",
             "contains": "!contains", "!contains": "contains", "match": "!match",
             "!match": "match"}


def negated(literal, line: int, column: int):
    """``!literal`` as a literal without ``!`` around a group (De Morgan, as Soufflé's parser
    puts a body in disjunctive normal form): ``!(a ; b)`` is ``!a, !b``, ``!(a, b)`` is
    ``!a ; !b``, ``!!a`` is ``a``, ``!x < 3`` is ``x >= 3``; a group becomes a
    :class:`~.ast.Disjunction` (one alternative for a conjunction).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.syntax.render import render_rule
    >>> (rule,) = parse("r(x) :- u(x), !(a(x) ; x < 3).").rules
    >>> render_rule(rule)
    'r(x) :- u(x), !a(x), x >= 3.'
    """
    if isinstance(literal, ast.Atom):
        return ast.Negation(line, column, literal)
    if isinstance(literal, ast.Negation):
        return literal.atom
    if isinstance(literal, ast.Comparison):
        return ast.Comparison(literal.line, literal.column, _OPPOSITE[literal.op], literal.left,
                              literal.right)
    if isinstance(literal, ast.Boolean):
        return ast.Boolean(literal.line, literal.column, not literal.value)
    if isinstance(literal, ast.Disjunction) and len(literal.alternatives) == 1:
        return negated(literal.alternatives[0], line, column)
    if isinstance(literal, ast.Conjunction) and len(literal.literals) == 1:
        return negated(literal.literals[0], line, column)
    if isinstance(literal, ast.Disjunction):  # !(c1 ; c2) = !c1, !c2
        return ast.Disjunction(line, column, [ast.Conjunction(line, column, [
            negated(c, line, column) for c in literal.alternatives])])
    if isinstance(literal, ast.Conjunction):  # !(l1, l2) = !l1 ; !l2
        return ast.Disjunction(line, column, [
            ast.Conjunction(line, column, [negated(l, line, column)])
            for l in literal.literals])
    raise AssertionError(literal)  # pragma: no cover - every literal kind is above
