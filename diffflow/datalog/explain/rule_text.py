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

from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import CONSTRAINTS, INFIX, PREFIX


def clause_text(clause) -> str:
    """A clause (head and flat body) as Soufflé prints it (see module doc)."""
    head = atom_text(clause.head)
    if not clause.literals:
        return head + "."
    return head + " :- \n   " + ",\n   ".join(literal_text(lit) for lit in clause.literals) + "."


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
