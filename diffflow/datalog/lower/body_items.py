"""The parts of a rule body's items the join compiler reads: their variables, their
aggregates and generators, and which pending assignment binds what.

>>> from diffflow.datalog.syntax import ast
>>> _item_vars(ast.Comparison(1, 1, "=", ast.Var(1, 1, "y"), ast.Var(1, 5, "z")))
['y', 'z']
"""
from __future__ import annotations

from diffflow.datalog.lower.aggregates import aggregate_variables
from diffflow.datalog.syntax import ast, intrinsics


def _aggregates_of(item) -> list:
    """Aggregates inside a pending literal's terms (comparisons only: analysis names the
    expressions of atoms)."""
    if isinstance(item, ast.Comparison):
        return ast.term_aggregates(item.left, item.right)
    return []


def _generator_side(c):
    """The side of a comparison that is a generator call (``range(...)``), if any."""
    for side in (c.left, c.right):
        if isinstance(side, ast.Functor) and side.name in intrinsics.GENERATORS:
            return side
    return None


def _atom_vars(atom):
    return [a.name for a in atom.args if isinstance(a, ast.Var)]


def _cmp_vars(c):
    return [v.name for v in ast.term_variables(c.left, c.right)]


def _item_vars(item):
    if isinstance(item, ast.Negation):
        return _atom_vars(item.atom)
    if isinstance(item, ast.Comparison):
        return _cmp_vars(item)
    if isinstance(item, ast.AggregateTerm):
        return sorted(aggregate_variables(item))
    return []


def _assigned_later(pending, agg, names) -> bool:
    """Whether a pending ``v = term`` other than one holding ``agg`` may bind one of
    ``names``."""
    return any(isinstance(item, ast.Comparison) and item.op == "=" and
               any(isinstance(side, ast.Var) and side.name in names
                   for side in (item.left, item.right)) and
               not any(a is agg for a in ast.walk_terms(item.left, item.right, aggregates=True))
               for item in pending)


def _all_vars_of(pending, atoms, exclude):
    names = {v for a in atoms for v in _atom_vars(a)}
    for item in pending:
        if item is not exclude and not isinstance(item, ast.AggregateTerm):
            names |= set(_item_vars(item))
    return names
