"""Terms, literals and clauses as text, for the plan a compiled program shows.

>>> from diffflow.datalog.syntax.parser import parse
>>> (rule,) = parse("r(x) :- e(x, y), !f(y), y != x + 1.").rules
>>> ", ".join(render_literal(l) for l in rule.body[0].literals)
'e(x, y), !f(y), y != (x + 1)'
"""
from __future__ import annotations

from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import CONSTRAINTS, INFIX, PREFIX


def render_term(node) -> str:
    """A term as the plan shows it (arithmetic in parentheses).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse('r(x * -(y + 1), "a", 2u, count : { e(_) }).').rules
    >>> [render_term(a) for a in rule.head.args]
    ['(x * -(y + 1))', '"a"', '2u', 'count : { e(_) }']
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
        return '"' + node.value.replace('"', '\\"') + '"'
    if isinstance(node, ast.BinaryOp):
        return f"({render_term(node.left)} {node.op} {render_term(node.right)})"
    if isinstance(node, ast.Negative):
        return f"-{render_term(node.operand)}"
    if isinstance(node, ast.Functor):
        args = [render_term(a) for a in node.args]
        if node.name == "as":
            return f"as({args[0]}, {node.type_name})"
        if node.name in PREFIX:
            return f"({node.name} {args[0]})"
        if node.name in INFIX:  # x band y
            return f"({args[0]} {node.name} {args[1]})"
        return f"{node.name}({', '.join(args)})"
    if isinstance(node, ast.AggregateTerm):
        body = ", ".join(render_literal(l) for l in node.body)
        target = f" {render_term(node.target)}" if node.target is not None else ""
        return f"{node.function}{target} : {{ {body} }}"
    if isinstance(node, ast.RecordTerm):
        return f"[{', '.join(render_term(a) for a in node.args)}]"
    if isinstance(node, ast.BranchTerm):
        return f"${node.branch}({', '.join(render_term(a) for a in node.args)})"
    if isinstance(node, ast.Nil):
        return "nil"
    if isinstance(node, ast.FieldAccess):  # a matched pattern's field (see analysis.patterns)
        of = f".{node.branch}" if node.branch else ""
        return f"{render_term(node.record)}{of}.{node.index}"
    return "?"


def render_atom(atom) -> str:
    """An atom as the plan shows it.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> render_atom(parse("r(x, _, 1.5).").rules[0].head)
    'r(x, _, 1.5)'
    """
    return f"{atom.relation}({', '.join(render_term(a) for a in atom.args)})"


def render_literal(lit) -> str:
    """A body literal as the plan shows it.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> [render_literal(l) for l in parse("r(x) :- e(x), !f(x), x < 2, true.").rules[0]
    ...                                    .body[0].literals]
    ['e(x)', '!f(x)', 'x < 2', 'true']
    """
    if isinstance(lit, ast.Atom):
        return render_atom(lit)
    if isinstance(lit, ast.Negation):
        return "!" + render_atom(lit.atom)
    if isinstance(lit, ast.Comparison):
        test = lit.left
        if isinstance(test, ast.FieldAccess) and test.index == -1:  # a pattern's shape test
            shape = ", ".join(["_"] * test.width)
            shape = f"${test.branch}({shape})" if test.branch else f"[{shape}]"
            return f"{render_term(test.record)} is {shape}"
        if lit.op.lstrip("!") in CONSTRAINTS:
            return f"{lit.op}({render_term(lit.left)}, {render_term(lit.right)})"
        return f"{render_term(lit.left)} {lit.op} {render_term(lit.right)}"
    if isinstance(lit, ast.Boolean):
        return "true" if lit.value else "false"
    if isinstance(lit, ast.Disjunction):
        return f"({'; '.join(_conjunction(c) for c in lit.alternatives)})"
    return "?"


def _conjunction(conjunction) -> str:
    return ", ".join(render_literal(l) for l in conjunction.literals)


def render_rule(rule) -> str:
    """A rule as the user wrote it (its alternatives joined by ``;``), on one line.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> render_rule(parse("r(x) :-\\n  e(x, _) ; (f(x), !g(x)).").rules[0])
    'r(x) :- e(x, _); (f(x), !g(x)).'
    >>> render_rule(parse("r(a) <= r(b) :- a < b.").rules[0])
    'r(a) <= r(b) :- a < b.'
    """
    head = render_atom(rule.head)
    if rule.dominating is not None:
        head += f" <= {render_atom(rule.dominating)}"
    if not rule.body:
        return f"{head}."
    return f"{head} :- {'; '.join(_conjunction(c) for c in rule.body)}."


def render_clause(clause) -> str:
    """A clause (head and flat body) as the plan shows it.

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl e(x: number)\\n.decl r(x: number)\\nr(x + 1) :- e(x)."))
    >>> render_clause(a.relations["r"].clauses[0])
    'r((x + 1)) :- e(x).'
    """
    if not clause.literals:  # (a rule whose body is empty: magic sets' asked constants)
        return f"{render_atom(clause.head)}."
    return f"{render_atom(clause.head)} :- {', '.join(render_literal(l) for l in clause.literals)}."
