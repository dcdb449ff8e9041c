"""Records and ADT values matched in a rule body, written as field accesses.

``r([x, [y, _]])`` in a body matches the records of ``r``: analysis has made it
``r(#e1), #e1 = [x, [y, _]]``.  Where one side of ``=`` is a record or branch
term and the other side is bound first, the term is a *pattern*, taken apart
into comparisons the compiler already knows::

    #e1 is a record, x = #e1.0, #p2 = #e1.1, #p2 is a record, y = #p2.0

(an ADT branch ``$A(x)`` checks the branch: ``#e1 is $A, x = #e1.0``; the tests
are :class:`~diffflow.datalog.syntax.ast.FieldAccess` index -1, equal to 1).
Each ``x = field`` binds ``x`` or, when ``x`` is bound already, filters -- so a
pattern and a constructed record mean the same, as records are equal exactly
when their fields are.  Where the term's variables are bound first, it stays a
term: a record built from them (``p = [x, y]``).

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".type P = [a: number, b: number]\\n.decl r(p: P)\\n.decl s(x: number)\\n"
...                   "s(x) :- r([x, _])."))
>>> [type(l).__name__ for l in a.relations["s"].clauses[0].literals]
['Atom', 'Comparison', 'Comparison']
"""
from __future__ import annotations

from diffflow.datalog.analysis.analysed import Relation
from diffflow.datalog.syntax import ast

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


def negated_patterns(analyser, literals: list) -> list:
    """``!r([x, _])`` -- no row of ``r`` matches the pattern -- as the negation of a helper
    relation of the pattern's variables: ``!r#not1(x)`` with ``r#not1(x) :- r([x, _]).``
    (a record with ``_`` inside cannot be built, so it cannot be looked up)."""
    out = []
    for lit in literals:
        if isinstance(lit, ast.Negation) and any(
                isinstance(a, _STRUCTURES) and has_wildcard(a) for a in lit.atom.args):
            lit = _helper(analyser, lit)
        out.append(lit)
    for lit in out:  # (and in aggregate bodies)
        for agg in ast.term_aggregates(*ast.literal_terms(lit)):
            agg.body = negated_patterns(analyser, agg.body)
    return out


def _helper(analyser, negation):
    atom = negation.atom
    relation = analyser.check_atom(atom)
    names, kinds = [], []

    def visit(term, kind):
        if isinstance(term, ast.Var):
            if term.name not in names:
                names.append(term.name)
                kinds.append(kind)
        elif isinstance(term, _STRUCTURES):
            structure = analyser.structures.get(kind)
            if isinstance(term, ast.BranchTerm):
                fields = analyser.owner(term).branches.get(term.branch, [])
            elif structure is not None and structure.is_record:
                fields = structure.fields
            else:
                fields = []
            if len(fields) != len(term.args):  # (the helper's rule reports it, located)
                return
            for arg, (_, field) in zip(term.args, fields):
                visit(arg, field)
        elif not isinstance(term, (ast.Wildcard, ast.Nil, ast.Number, ast.Float, ast.String)):
            raise analyser.error("an expression inside a record matched in a negation", term,
                                 hint="bind it to a variable first: x = ..., !r([x, _])")

    for arg, kind in zip(atom.args, relation.types):
        visit(arg, kind)
    analyser.fresh += 1
    name = f"{atom.relation}#not{analyser.fresh}"
    at = (atom.line, atom.column)
    attributes = [ast.Attribute(*at, f"a{i}", kind) for i, kind in enumerate(kinds)]
    analyser.relations[name] = Relation(name, [a.name for a in attributes], list(kinds),
                                        ast.Declaration(*at, name, attributes))
    variables = [ast.Var(*at, n) for n in names]
    analyser.add_rule(ast.Rule(*at, ast.Atom(*at, name, variables),
                               [ast.Conjunction(*at, [atom])]))
    return ast.Negation(negation.line, negation.column, ast.Atom(*at, name, variables))
