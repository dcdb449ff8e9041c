"""Which variables a body binds: an atom's own, and those its equalities compute.

An equality ``v = t`` with ``v`` unbound computes ``v`` once ``t``'s variables are bound, so
the variables a set of atoms binds grow through a body's equalities (:func:`derivable`).
The join planner (:mod:`~diffflow.datalog.lower.join_order`) and magic sets
(:mod:`~diffflow.datalog.transform.magic`) both follow bindings this way.

>>> from diffflow.datalog.syntax.parser import parse
>>> body = parse("r(x) :- a(x), b(y), x = y + 1.").rules[0].body[0].literals
>>> sorted(derivable({"y"}, body[2:]))
['x', 'y']
"""
from __future__ import annotations

from diffflow.datalog.syntax import ast, intrinsics


def atom_vars(atom) -> list:
    """The variables an atom binds, in argument order, once each."""
    seen = []
    for a in atom.args:
        if isinstance(a, ast.Var) and a.name not in seen:
            seen.append(a.name)
    return seen


def comparison_vars(c) -> set:
    return {v.name for v in ast.term_variables(c.left, c.right)}


def movable(item) -> bool:
    """A comparison an atom may apply on its own: no aggregate, no generator (one row in,
    one row or none out)."""
    if not isinstance(item, ast.Comparison):
        return False
    if ast.term_aggregates(item.left, item.right):
        return False
    return not any(isinstance(side, ast.Functor) and side.name in intrinsics.GENERATORS
                   for side in (item.left, item.right))


def assignment(c, bound):
    """``(variable, term)`` when ``c`` is ``v = term`` with ``v`` unbound and the term's
    variables all in ``bound``; else ``None``."""
    if c.op != "=":
        return None
    for target, expr in ((c.left, c.right), (c.right, c.left)):
        if isinstance(target, ast.Var) and target.name not in bound and \
                all(v.name in bound for v in ast.term_variables(expr)):
            return target.name, expr
    return None


def derivable(bound, comparisons) -> set:
    """``bound`` and every variable its equalities compute from it, transitively."""
    bound = set(bound)
    changed = True
    while changed:
        changed = False
        for c in comparisons:
            if movable(c):
                found = assignment(c, bound)
                if found is not None:
                    bound.add(found[0])
                    changed = True
    return bound
