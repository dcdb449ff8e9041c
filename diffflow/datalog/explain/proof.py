"""Proof trees as Soufflé prints them: the text layout of ``-t explain`` and its JSON.

A :class:`ProofTree` node is a fact: an input fact is a leaf (``rule`` is ``None``), a derived
fact has the rule that derives it and the rule's body as children, in body order: facts
(proof trees), :class:`Leaf` s for negated atoms and constraints, and a :class:`GroupNode` per
aggregate, whose children are the members the aggregate's value rests on.

>>> tree = ProofTree("path", ("a", "c"), 2, rule=2, children=[
...     ProofTree("edge", ("a", "b"), 0),
...     ProofTree("path", ("b", "c"), 1, rule=1, children=[ProofTree("edge", ("b", "c"), 0)])])
>>> print(tree)
               edge("b", "c")  
               -----------(R1) 
edge("a", "b") path("b", "c")  
---------------------------(R2)
        path("a", "c")         
>>> tree.size(), sorted(n.text for n in tree.nodes() if n.rule is None)
(4, ['edge("a", "b")', 'edge("b", "c")'])
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import CONSTRAINTS, INFIX, PREFIX
from diffflow.datalog.syntax.render import render_term


def format_fact(relation: str, fact: tuple) -> str:
    """A fact as Soufflé prints it in proofs.

    >>> format_fact("edge", ("a", 1, 2.5))
    'edge("a", 1, 2.500000)'
    """
    return f"{relation}({', '.join(format_value(v) for v in fact)})"


def format_value(v) -> str:
    """A value as Soufflé prints it in proofs: symbols quoted (as they are), floats with six
    decimals.

    >>> format_value("a"), format_value(3), format_value(1.1)
    ('"a"', '3', '1.100000')
    """
    if isinstance(v, str):
        return f'"{v}"'
    return "%f" % v if isinstance(v, float) else repr(v)


@dataclass
class Leaf:
    """A proof leaf that is not a fact: a negated atom or a constraint, with its values;
    ``negated`` is a negated atom's ``(relation, pattern)``, ``None`` in the pattern for a
    wildcard."""
    text: str
    negated: tuple | None = None

    def _layout(self) -> _Box:
        return _Box([self.text])

    def _json(self, depth: int) -> str:
        return "\t" * depth + '{ "axiom": ' + _quoted(self.text) + "}"

    def size(self) -> int:
        return 1


class _Inner:
    """Layout shared by the nodes that have children: children side by side over a bar."""
    text: str
    children: list

    @property
    def label(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return "\n".join(self._layout().lines)

    def _layout(self) -> _Box:
        if self.label is None:
            return _Box([self.text])
        # widths in UTF-8 bytes, as Soufflé measures them: a ✓ takes three columns
        boxes = [child._layout() for child in self.children]
        width = max(sum(b.width + 1 for b in boxes), _width(self.text))
        above = max((len(b.lines) for b in boxes), default=0)
        rows = [""] * above
        for b in boxes:  # children side by side, bottoms aligned, one space after each
            padded = [" " * b.width] * (above - len(b.lines)) + b.lines
            rows = [r + _pad(line, b.width) + " " for r, line in zip(rows, padded)]
        rows = [_pad(r, width) for r in rows]
        bar = "-" * (width - len(self.label)) + self.label
        left = (width - _width(self.text)) // 2
        head = _pad(" " * left + self.text, width)
        return _Box(rows + [bar, head])

    def _json(self, depth: int) -> str:
        tab = "\t" * depth
        if self.label is None:
            return tab + '{ "axiom": ' + _quoted(self.text) + "}"
        children = ",\n".join(child._json(depth + 1) for child in self.children)
        return (f'{tab}{{ "premises": {_quoted(self.text)},\n'
                f'{tab}  "rule-number": "{self.label}",\n'
                f'{tab}  "children": [\n{children}{tab}]\n{tab}}}')

    def size(self) -> int:
        """Nodes as printed (a subproof used twice counts twice)."""
        return 1 + sum(c.size() for c in self.children)


@dataclass(eq=False)
class ProofTree(_Inner):
    """A fact and how it is derived: ``rule`` (Soufflé's number, ``None`` for an input fact),
    ``height`` (0 for an input fact), ``children`` (proof trees, :class:`Leaf` s and
    :class:`GroupNode` s, in the rule's body order).  ``str()`` is Soufflé's text layout,
    :meth:`to_json` its JSON."""
    relation: str
    fact: tuple
    height: int
    rule: int | None = None
    children: list = field(default_factory=list)

    @property
    def text(self) -> str:
        return format_fact(self.relation, self.fact)

    @property
    def label(self) -> str | None:
        return None if self.rule is None else f"(R{self.rule})"

    def to_json(self, rules: dict | None = None) -> str:
        """Soufflé's JSON proof (``format json``); ``rules`` (relation -> {number: text}, a
        program's ``rules``) adds every rule of the program, as Soufflé does."""
        return proof_json(self, rules)

    def nodes(self):
        """Every fact node of the tree (group members included), each shared subproof once."""
        seen, stack = set(), [self]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, ProofTree):
                yield node
            stack.extend(c for c in node.children if not isinstance(c, Leaf))


@dataclass(eq=False)
class GroupNode(_Inner):
    """An aggregate in a proof, ``count : { e(1, _) } = 2``: its children are what the value
    rests on -- every member's facts and leaves for ``count`` and ``sum``, one winning
    member's for ``min`` and ``max``."""
    function: str
    text: str
    children: list = field(default_factory=list)
    patterns: list = field(default_factory=list)  # (relation, pattern) per body atom

    @property
    def label(self) -> str:
        return f"({self.function})"


@dataclass
class _Box:
    lines: list

    @property
    def width(self) -> int:
        return max(_width(line) for line in self.lines)


def proof_json(node, rules: dict | None = None) -> str:
    """Soufflé's JSON of a proof (a :class:`ProofTree`, a :class:`Leaf`, a rule's verdict
    on an absent fact), with every rule of ``rules`` (relation -> {number: text}).

    >>> print(proof_json(Leaf("subproof r(0)"), {"r": {1: "r(x) :- \\n   e(x)."}}))
    ... # doctest: +NORMALIZE_WHITESPACE
    { "proof":
        { "axiom": "subproof r(0)"},"rules": [
        { "rule-number": "(R1)", "rule": "r(x) :- \\n   e(x)."}
    ]
    }
    """
    text = '{ "proof":\n' + node._json(1)
    if rules is not None:
        listed = ",\n".join(f'\t{{ "rule-number": "(R{n})", "rule": {_quoted(rules[rel][n])}}}'
                            for rel in sorted(rules) for n in sorted(rules[rel]))
        text += ',"rules": [\n' + listed + "\n]"
    return text + "\n}"


def _quoted(text: str) -> str:
    """A JSON string, UTF-8 as Soufflé writes it."""
    return json.dumps(text, ensure_ascii=False)


def _width(text: str) -> int:
    """Columns as Soufflé counts them: UTF-8 bytes."""
    return len(text.encode("utf-8"))


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


def show(node, values) -> str:
    """A term, literal or aggregate with the values of bound variables (others by name).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(x) :- e(x, y, _), !f(y), n = count : { g(x, z) }, x < y + 1.").rules
    >>> [show(lit, {"x": 1, "y": "a"}) for lit in rule.body[0].literals]
    ['e(1, "a", _)', '!f("a")', 'n = count : { g(1, z) }', '1 < "a" + 1']
    """
    if isinstance(node, ast.Var):
        return format_value(values[node.name]) if node.name in values else node.name
    if isinstance(node, ast.Wildcard):
        return "_"
    if isinstance(node, (ast.Number, ast.Float, ast.String)):
        return format_value(node.value)
    if isinstance(node, ast.BinaryOp):
        return f"{show(node.left, values)} {node.op} {show(node.right, values)}"
    if isinstance(node, ast.Negative):
        return f"-{show(node.operand, values)}"
    if isinstance(node, ast.Functor):
        args = [show(a, values) for a in node.args]
        if node.name == "as":
            return f"as({args[0]}, {node.type_name})"
        if node.name in PREFIX:
            return f"{node.name} {args[0]}"
        if node.name in INFIX:
            return f"{args[0]} {node.name} {args[1]}"
        return f"{node.name}({', '.join(args)})"
    if isinstance(node, ast.Atom):
        return f"{node.relation}({', '.join(show(a, values) for a in node.args)})"
    if isinstance(node, ast.Negation):
        return "!" + show(node.atom, values)
    if isinstance(node, ast.Comparison):
        if node.op.lstrip("!") in CONSTRAINTS:
            return f"{node.op}({show(node.left, values)}, {show(node.right, values)})"
        return f"{show(node.left, values)} {node.op} {show(node.right, values)}"
    if isinstance(node, ast.AggregateTerm):
        target = "" if node.target is None else " " + show(node.target, values)
        body = ", ".join(show(lit, values) for lit in node.body)
        return f"{node.function}{target} : {{ {body} }}"
    return render_term(node)
