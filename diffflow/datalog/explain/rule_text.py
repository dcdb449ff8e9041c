"""Rules as Soufflé's provenance prints them (``rule``, ``explainnegation``'s list, the
``"rules"`` of a JSON proof): the head, then each body literal on a line of its own,
arguments joined by ``,`` and arithmetic in parentheses without spaces.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse('''.decl e(x: number, y: symbol)
... .decl r(x: number, y: symbol)
... r(x + 1, y) :- e(x, y), !e(x, "a"), x < 5.'''))
>>> print(clause_text(a.relations["r"].clauses[0]))
r((x+1),y) :- 
   e(x,y),
   !e(x,"a"),
   x < 5.
"""
from __future__ import annotations

import dataclasses

from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import CONSTRAINTS, GENERATORS, INFIX, PREFIX


def clause_text(clause) -> str:
    """A clause (head and flat body) as Soufflé prints it (see module doc), its aliases
    resolved as Soufflé resolves them before it runs: ``r(y) :- e(x), y = x + 1.`` is
    ``r((x+1)) :- e(x).``

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl r(x: number)\\n"
    ...                   "r(y) :- e(x, _), y = x + 1, x = z, e(z, 3 * x)."))
    >>> print(clause_text(a.relations["r"].clauses[0]))
    r((x+1)) :- 
       e(x,_),
       e(x,(3*x)).
    """
    head, literals = resolve_aliases(clause.head, clause.literals)
    if not literals:
        return atom_text(head) + "."
    return atom_text(head) + " :- \n   " + ",\n   ".join(literal_text(lit)
                                                        for lit in literals) + "."


def resolve_aliases(head, literals) -> tuple:
    """``(head, literals)`` with Soufflé's alias resolution: analysis' own names for an
    atom's expressions (``#e1``) put back, then each equality ``v = t`` -- between two
    variables, or naming a value no positive atom binds by ``t``'s bound variables -- is
    substituted into the clause and dropped (what is left as ``t = t`` goes)."""
    mapping: dict = {}
    for lit in literals:   # analysis' names of expressions in atoms: back in place
        if _equality(lit) and isinstance(lit.left, ast.Var) and lit.left.name.startswith("#e"):
            mapping[lit.left.name] = lit.right
    grounded = {a.name for lit in literals if isinstance(lit, ast.Atom) for a in lit.args
                if isinstance(a, ast.Var) and a.name not in mapping}
    pending = [lit for lit in literals if _equality(lit)]
    while pending:
        postponed = []
        for lit in pending:
            left, right = _substituted(lit.left, mapping), _substituted(lit.right, mapping)
            if term_text(left) == term_text(right):
                continue
            if isinstance(left, ast.Var) and isinstance(right, ast.Var):
                if left.name not in grounded and right.name in grounded:
                    mapping[left.name] = right
                else:
                    mapping[right.name] = left
                continue
            if not isinstance(left, ast.Var):
                left, right = right, left
            if not isinstance(left, ast.Var) or left.name in grounded or \
                    ast.term_aggregates(right) or _is_generator(right) or \
                    left.name in {v.name for v in ast.term_variables(right)}:
                continue
            if all(v.name in grounded for v in ast.term_variables(right)):
                mapping[left.name] = right
            else:
                postponed.append(lit)
        if len(postponed) == len(pending):
            break
        pending = postponed
    head = _substituted(head, mapping)
    kept = []
    for lit in literals:
        lit = _substituted(lit, mapping)
        if not (_equality(lit) and term_text(lit.left) == term_text(lit.right)):
            kept.append(lit)
    return head, kept


def _equality(lit) -> bool:
    return isinstance(lit, ast.Comparison) and lit.op == "="


def _is_generator(term) -> bool:
    return isinstance(term, ast.Functor) and term.name in GENERATORS


def _substituted(node, mapping: dict, depth: int = 0):
    """``node`` with the variables of ``mapping`` replaced (their values substituted too)."""
    if isinstance(node, ast.Var):
        if node.name in mapping and depth < 50:
            return _substituted(mapping[node.name], mapping, depth + 1)
        return node
    if isinstance(node, list):
        return [_substituted(item, mapping, depth) for item in node]
    if not isinstance(node, ast.Node) or isinstance(node, ast.AggregateTerm):
        return node
    changes = {}
    for f in dataclasses.fields(node):
        if f.name in ("line", "column") or not f.init:
            continue
        value = getattr(node, f.name)
        new = _substituted(value, mapping, depth)
        if new is not value:
            changes[f.name] = new
    return dataclasses.replace(node, **changes) if changes else node


def atom_text(atom) -> str:
    """``r(x,"a")``: an atom as Soufflé prints it."""
    return f"{atom.relation}({','.join(term_text(a) for a in atom.args)})"


def literal_text(lit) -> str:
    """A body literal as Soufflé prints it: ``!r(x)``, ``x < 5``, ``match("a.*",s)``."""
    if isinstance(lit, ast.Atom):
        return atom_text(lit)
    if isinstance(lit, ast.Negation):
        return "!" + atom_text(lit.atom)
    if isinstance(lit, ast.Comparison):
        if lit.op.lstrip("!") in CONSTRAINTS:
            name = "not_" + lit.op[1:] if lit.op.startswith("!") else lit.op
            return f"{name}({term_text(lit.left)}, {term_text(lit.right)})"
        return f"{term_text(lit.left)} {lit.op} {term_text(lit.right)}"
    if isinstance(lit, ast.Boolean):
        return "true" if lit.value else "false"
    from diffflow.datalog.syntax.render import render_literal
    return render_literal(lit)


def term_text(node) -> str:
    """A term as Soufflé prints it: ``(x+1)``, ``-(y)``, ``count : { e(_) }``.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse('r(x * -y, "a", to_string(z), 2.5).').rules
    >>> [term_text(a) for a in rule.head.args]
    ['(x*-(y))', '"a"', 'to_string(z)', '2.5']
    """
    if isinstance(node, ast.Var):  # (analysis names each ``_`` of an atom ``#wN``)
        return "_" if node.name.startswith("#w") else node.name
    if isinstance(node, ast.Wildcard):
        return "_"
    if isinstance(node, ast.Number):
        return f"{node.value}{'u' if node.unsigned else ''}"
    if isinstance(node, ast.Float):
        return repr(node.value)
    if isinstance(node, ast.String):
        return f'"{node.value}"'
    if isinstance(node, ast.BinaryOp):
        return f"({term_text(node.left)}{node.op}{term_text(node.right)})"
    if isinstance(node, ast.Negative):
        operand = node.operand
        if isinstance(operand, (ast.Number, ast.Float)):
            return "-" + term_text(operand)
        return f"-({term_text(operand)})"
    if isinstance(node, ast.Functor):
        args = [term_text(a) for a in node.args]
        if node.name == "as":
            return f"as({args[0]}, {node.type_name})"
        if node.name in INFIX:
            return f"({args[0]} {node.name} {args[1]})"
        name = node.name if node.name in PREFIX or not node.user else "@" + node.name
        return f"{name}({','.join(args)})"
    if isinstance(node, ast.AggregateTerm):
        target = "" if node.target is None else " " + term_text(node.target)
        return f"{node.function}{target} : {{ {','.join(literal_text(l) for l in node.body)} }}"
    if isinstance(node, ast.RecordTerm):
        return f"[{','.join(term_text(a) for a in node.args)}]"
    if isinstance(node, ast.BranchTerm):
        return f"${node.branch}({', '.join(term_text(a) for a in node.args)})"
    if isinstance(node, ast.Nil):
        return "nil"
    from diffflow.datalog.syntax.render import render_term
    return render_term(node)
