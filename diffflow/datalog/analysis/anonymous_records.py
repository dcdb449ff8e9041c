"""Records no declared type names: comparisons of record terms taken apart, as Soufflé types
them with anonymous record types.

``[a, b] = [1, x]`` holds when ``a = 1`` and ``b = x``; a variable that only ever stands for
a record term -- ``r = [x, y], s = r, s = [v, w]``: ``r`` and ``s`` appear in no atom and no
head, so nothing declares their type -- is replaced by the record term it is equal to, and
the comparisons left are taken apart the same way.  ``[a, 1] != [b, 1]`` is ``a != b``
(a difference of constants decides it; a comparison of records differing in two variables
is left as it was, and analysis asks for a record type).  ``_ = [1]`` holds.

>>> from diffflow.datalog.syntax.parser import parse
>>> from diffflow.datalog.syntax.render import render_literal
>>> (rule,) = parse("r(z) :- a(x, y), r = [x, y], s = r, s = [v, w], w = z.").rules
>>> [render_literal(l) for l in take_apart_anonymous(rule.head, rule.body[0].literals)]
['a(x, y)', 'x = v', 'y = w', 'w = z']
"""
from __future__ import annotations

from diffflow.datalog.syntax import ast

_CONSTANTS = (ast.Number, ast.Float, ast.String)


def take_apart_anonymous(head: ast.Atom, literals: list) -> list:
    """The literals of a clause with anonymous records replaced and taken apart (the same
    list when there is nothing to do).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.syntax.render import render_literal
    >>> (rule,) = parse('r(a) :- [a, "x"] = [1, "x"], [2, a] != [2, 3].').rules
    >>> [render_literal(l) for l in take_apart_anonymous(rule.head, rule.body[0].literals)]
    ['a = 1', 'a != 3']
    """
    if not any(isinstance(l, ast.Comparison) and l.op in ("=", "!=") and
               (_recordish(l.left) or _recordish(l.right)) for l in literals):
        return literals
    candidates = _record_only_variables(head, literals)
    bindings = _unify(literals, candidates)
    if bindings is None:
        return literals  # (a record defined through itself: left for analysis)
    out = []
    for lit in literals:
        if isinstance(lit, ast.Comparison) and lit.op in ("=", "!="):
            out += _compare(lit, _resolve(lit.left, bindings), _resolve(lit.right, bindings))
        else:
            out.append(lit)
    return out


def _recordish(term) -> bool:
    return isinstance(term, ast.RecordTerm)


def _record_only_variables(head, literals) -> set:
    """The variables that appear only in ``=`` and ``!=`` comparisons, as a side or inside a
    record term that is one: nothing else (an atom, the head) gives them a type."""
    uses: dict = {}
    for term in [*head.args, *(t for l in literals for t in ast.literal_terms(l))]:
        for node in ast.walk_terms(term, aggregates=True):
            if isinstance(node, ast.Var):
                uses[node.name] = uses.get(node.name, 0) + 1
    inside: dict = {}
    stack = [side for l in literals if isinstance(l, ast.Comparison) and l.op in ("=", "!=")
             for side in (l.left, l.right)]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Var):
            inside[node.name] = inside.get(node.name, 0) + 1
        elif isinstance(node, ast.RecordTerm):
            stack += node.args
    return {v for v, n in inside.items() if n == uses[v]}


def _unify(literals, candidates: set):
    """``{variable: record term}`` for the candidates equal to a record term (directly, or
    through one another); None when one is defined through itself."""
    bindings: dict = {}
    equations = [(l.left, l.right) for l in literals
                 if isinstance(l, ast.Comparison) and l.op == "="]
    progress = True
    while progress:
        progress = False
        for left, right in equations:
            for a, b in _pairs_resolved(left, right, bindings):
                for var, other in ((a, b), (b, a)):
                    if isinstance(var, ast.Var) and var.name in candidates and \
                            var.name not in bindings and isinstance(other, ast.RecordTerm):
                        if var.name in {v.name for v in ast.term_variables(other)}:
                            return None
                        bindings[var.name] = other
                        progress = True
                        break
    return bindings


def _pairs_resolved(left, right, bindings) -> list:
    left, right = _resolve(left, bindings), _resolve(right, bindings)
    if isinstance(left, ast.RecordTerm) and isinstance(right, ast.RecordTerm):
        return _pairs(left, right) if len(left.args) == len(right.args) else []
    return [(left, right)]


def _resolve(term, bindings: dict, seen=()):
    """``term`` with the bound candidates replaced by their record terms."""
    if isinstance(term, ast.Var) and term.name in bindings and term.name not in seen:
        return _resolve(bindings[term.name], bindings, (*seen, term.name))
    if isinstance(term, ast.RecordTerm):
        args = [_resolve(a, bindings, seen) for a in term.args]
        if all(a is b for a, b in zip(args, term.args)):
            return term
        return ast.RecordTerm(term.line, term.column, args)
    return term


def _compare(lit: ast.Comparison, left, right) -> list:
    """``left op right`` as literals: record terms taken apart element by element."""
    if lit.op == "=" and {type(left), type(right)} == {ast.Wildcard, ast.RecordTerm}:
        return []  # (_ = [1]: holds)
    if not (isinstance(left, ast.RecordTerm) and isinstance(right, ast.RecordTerm)) or \
            len(left.args) != len(right.args):
        if left is lit.left and right is lit.right:
            return [lit]
        return [ast.Comparison(lit.line, lit.column, lit.op, left, right)]
    pairs = _pairs(left, right)
    if lit.op == "=":  # (pairs that hold anyway left out: [x, 1] = [x, 1])
        return [ast.Comparison(lit.line, lit.column, "=", a, b) for a, b in pairs
                if not (isinstance(a, ast.Wildcard) or isinstance(b, ast.Wildcard) or
                        _identical(a, b))]
    if any(isinstance(a, ast.Wildcard) or isinstance(b, ast.Wildcard) for a, b in pairs):
        return [ast.Comparison(lit.line, lit.column, lit.op, left, right)]
    constant = [(a, b) for a, b in pairs if _constant(a) and _constant(b)]
    if any(not _same(a, b) for a, b in constant):
        return []  # (two constants differ: the records do)
    open_pairs = [(a, b) for a, b in pairs if not (_constant(a) and _constant(b))]
    if not open_pairs:
        return [ast.Boolean(lit.line, lit.column, False)]
    if len(open_pairs) == 1:
        (a, b), = open_pairs
        return [ast.Comparison(lit.line, lit.column, "!=", a, b)]
    return [ast.Comparison(lit.line, lit.column, lit.op, left, right)]


def _pairs(left: ast.RecordTerm, right: ast.RecordTerm) -> list:
    """The element pairs of two record terms, nested records of one size taken apart."""
    out = []
    for a, b in zip(left.args, right.args):
        if isinstance(a, ast.RecordTerm) and isinstance(b, ast.RecordTerm) and \
                len(a.args) == len(b.args):
            out += _pairs(a, b)
        else:
            out.append((a, b))
    return out


def _identical(a, b) -> bool:
    if isinstance(a, ast.Var) and isinstance(b, ast.Var):
        return a.name == b.name
    return _constant(a) and _constant(b) and _same(a, b)


def _constant(term) -> bool:
    return isinstance(term, _CONSTANTS)


def _same(a, b) -> bool:
    return type(a) is type(b) and a.value == b.value and \
        getattr(a, "unsigned", False) == getattr(b, "unsigned", False)
