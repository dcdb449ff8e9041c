"""Records and ADT values matched in a rule body, written as field accesses.

``r([x, [y, _]])`` in a body matches the records of ``r``: analysis has made it
``r(#e1), #e1 = [x, [y, _]]``.  Where one side of ``=`` is a record or branch
term and the other side is bound first, the term is a *pattern*, taken apart
into comparisons the compiler already knows::

    #e1 is a record, x = #e1.0, #p2 = #e1.1, #p2 is a record, y = #p2.0

(an ADT branch ``$A(x)`` checks the branch: ``#e1 is $A, x = #e1.0``; the tests
are :class:`~diffflow.dsl.ast.FieldAccess` index -1, equal to 1).
Each ``x = field`` binds ``x`` or, when ``x`` is bound already, filters -- so a
pattern and a constructed record mean the same, as records are equal exactly
when their fields are.  Where the term's variables are bound first, it stays a
term: a record built from them (``p = [x, y]``).

>>> from diffflow.dsl.analysis import analyse
>>> from diffflow.dsl.parser import parse
>>> a = analyse(parse(".type P = [a: number, b: number]\\n.decl r(p: P)\\n.decl s(x: number)\\n"
...                   "s(x) :- r([x, _])."))
>>> [type(l).__name__ for l in a.relations["s"].clauses[0].literals]
['Atom', 'Comparison', 'Comparison']
"""
from __future__ import annotations

from . import ast

_STRUCTURES = (ast.RecordTerm, ast.BranchTerm)


def has_wildcard(term) -> bool:
    return any(isinstance(n, ast.Wildcard) for n in ast.walk_terms(term))


def take_apart(analyser, clause) -> None:
    """Rewrite the patterns among ``clause.literals`` into field accesses (in place)."""
    clause.literals = take_apart_literals(analyser, clause.literals)


def take_apart_literals(analyser, literals: list, outer=()) -> list:
    """``literals`` with their patterns written as field accesses; ``outer``: variables
    bound outside them (an aggregate body's correlation)."""
    if not any(isinstance(lit, ast.Comparison) and
               (isinstance(lit.left, _STRUCTURES) or isinstance(lit.right, _STRUCTURES))
               for lit in literals):
        return literals
    bound = set(outer) | {v.name for lit in literals if isinstance(lit, ast.Atom)
                          for v in ast.term_variables(*lit.args)}

    def ready(term):
        return not has_wildcard(term) and analyser.bindable(term, bound)

    literals = list(literals)
    changed = True
    while changed:
        changed = False
        for lit in list(literals):
            if not isinstance(lit, ast.Comparison) or lit.op != "=":
                continue
            for pattern, source in ((lit.right, lit.left), (lit.left, lit.right)):
                if isinstance(pattern, _STRUCTURES) and not ready(pattern) and ready(source):
                    at = literals.index(lit)
                    literals[at:at + 1] = _fields(analyser, pattern, source)
                    changed = True
                    break
                if isinstance(source, ast.Var) and source.name not in bound and ready(pattern):
                    bound.add(source.name)
                    changed = True
                    break
    return literals


def _fields(analyser, pattern, source) -> list:
    """The comparisons that match ``source`` (a bound term) against ``pattern``."""
    out = []
    if not isinstance(source, ast.Var):
        analyser.fresh += 1
        var = ast.Var(pattern.line, pattern.column, f"#p{analyser.fresh}")
        out.append(ast.Comparison(pattern.line, pattern.column, "=", var, source))
        source = var
    at = (pattern.line, pattern.column)
    width = len(pattern.args)
    branch, number = None, -1
    if isinstance(pattern, ast.BranchTerm):
        structure = analyser.owner(pattern)
        branch, number = pattern.branch, structure.branch_number(pattern.branch)
    test = ast.FieldAccess(*at, source, -1, width, branch, number)
    out.append(ast.Comparison(*at, "=", test, ast.Number(*at, 1)))
    for index, arg in enumerate(pattern.args):
        if isinstance(arg, ast.Wildcard):
            continue
        field = ast.FieldAccess(arg.line, arg.column, source, index, width, branch, number)
        out.append(ast.Comparison(arg.line, arg.column, "=", arg, field))
    return out
