"""Why is this fact derived: proof trees of minimal height and the input facts they rest on.

A :class:`Program` compiled with provenance (``Program(..., provenance=True)`` or
``.pragma "provenance" "explain"``) keeps every fact's minimal proof height and a witness
query per clause (:mod:`.provenance`).  :func:`explain` asks for the target fact, takes one
witness of each requested fact (the smallest rule number, then the lowest body heights --
a witness row's variables sort the ``#h`` heights first -- then the smallest values), and asks for the witness's body facts in the next commit: one commit per level of the proof.
The tree's input leaves are the explanation: running the program on them alone derives the
fact again (:meth:`Explanation.check` does exactly that).

>>> from diffflow.dsl.program import Program
>>> p = Program('''.decl edge(x: symbol, y: symbol)
... .decl path(x: symbol, y: symbol)
... path(x, y) :- edge(x, y).
... path(x, z) :- edge(x, y), path(y, z).''', provenance=True)
>>> _ = p.insert("edge", [("a", "b"), ("b", "c"), ("c", "d"), ("a", "c")]); p.commit()
>>> ex = p.explain("path", ("a", "d"))
>>> sorted(ex.inputs["edge"])
[('a', 'c'), ('c', 'd')]
>>> print(ex.tree)
               edge("c", "d")  
               -----------(R1) 
edge("a", "c") path("c", "d")  
---------------------------(R2)
        path("a", "d")         
>>> ex.check()
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from . import ast
from .provenance import HEIGHTS


class ExplainError(ValueError):
    """A fact that cannot be explained: not derived, unknown relation, wrong arity, or a
    program compiled without provenance."""


# -- trees ---------------------------------------------------------------------------------

def format_fact(relation: str, fact: tuple) -> str:
    """A fact as Soufflé prints it in proofs.

    >>> format_fact("edge", ("a", 1, 2.5))
    'edge("a", 1, 2.5)'
    """
    return f"{relation}({', '.join(_value(v) for v in fact)})"


def _value(v) -> str:
    return json.dumps(v) if isinstance(v, str) else repr(v)


@dataclass
class Leaf:
    """A proof leaf that is not a fact: a negated atom or a constraint, with its values."""
    text: str

    def _layout(self) -> _Box:
        return _Box([self.text])

    def _json(self, depth: int) -> str:
        return "\t" * depth + '{ "axiom": ' + json.dumps(self.text) + "}"


@dataclass(eq=False)
class ProofTree:
    """A fact and how it is derived: ``rule`` (Soufflé's number, ``None`` for an input fact),
    ``height`` (0 for an input fact), ``children`` (proof trees and :class:`Leaf` s, in the
    rule's body order).  ``str()`` is Soufflé's text layout, :meth:`to_json` its JSON."""
    relation: str
    fact: tuple
    height: int
    rule: int | None = None
    children: list = field(default_factory=list)

    @property
    def text(self) -> str:
        return format_fact(self.relation, self.fact)

    def __str__(self) -> str:
        return "\n".join(self._layout().lines)

    def _layout(self) -> _Box:
        if self.rule is None:
            return _Box([self.text])
        boxes = [child._layout() for child in self.children]
        label = f"(R{self.rule})"
        width = sum(b.width + 1 for b in boxes)
        width = max(width, len(self.text))
        above = max((len(b.lines) for b in boxes), default=0)
        rows = [""] * above
        for b in boxes:  # children side by side, bottoms aligned, one space after each
            padded = [" " * b.width] * (above - len(b.lines)) + b.lines
            rows = [r + line + " " for r, line in zip(rows, padded)]
        rows = [r.ljust(width) for r in rows]
        bar = "-" * (width - len(label)) + label
        left = (width - len(self.text)) // 2
        head = (" " * left + self.text).ljust(width)
        return _Box(rows + [bar, head])

    def to_json(self, rules: dict | None = None) -> str:
        """Soufflé's JSON proof (``format json``); ``rules`` (relation -> {number: text}, a
        program's ``rules``) adds the rules the proof uses."""
        text = '{ "proof":\n' + self._json(1)
        if rules:
            used = sorted({(n.relation, n.rule) for n in self.nodes() if n.rule is not None})
            listed = ",\n".join(f'\t{{ "rule-number": "(R{n})", '
                                f'"rule": {json.dumps(rules[rel][n])}}}' for rel, n in used)
            text += ',"rules": [\n' + listed + "\n]"
        return text + "\n}"

    def _json(self, depth: int) -> str:
        tab = "\t" * depth
        if self.rule is None:
            return tab + '{ "axiom": ' + json.dumps(self.text) + "}"
        children = ",\n".join(child._json(depth + 1) for child in self.children)
        return (f'{tab}{{ "premises": {json.dumps(self.text)},\n'
                f'{tab}  "rule-number": "(R{self.rule})",\n'
                f'{tab}  "children": [\n{children}{tab}]\n{tab}}}')

    def nodes(self):
        """Every fact node of the tree, each shared subproof once."""
        seen, stack = set(), [self]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            yield node
            stack.extend(c for c in node.children if isinstance(c, ProofTree))

    def size(self) -> int:
        """Nodes of the tree as printed (a subproof used twice counts twice)."""
        return 1 + sum(c.size() if isinstance(c, ProofTree) else 1 for c in self.children)


@dataclass
class _Box:
    lines: list

    @property
    def width(self) -> int:
        return max(len(line) for line in self.lines)


# -- explanations ---------------------------------------------------------------------------

@dataclass
class Explanation:
    """Why ``relation(fact)`` holds: the proof ``tree`` and the input facts under it
    (``inputs``: relation -> set of facts, a subset of the program's current input)."""
    relation: str
    fact: tuple
    tree: ProofTree
    inputs: dict
    program: object = field(repr=False)
    commits: int = 0   # engine commits the search took (one per proof level, plus one)

    @property
    def size(self) -> int:
        """Input facts in the explanation."""
        return sum(len(facts) for facts in self.inputs.values())

    def check(self) -> None:
        """Run the program from scratch on :attr:`inputs` alone; raise
        :class:`ExplainError` unless it derives the fact (facts written in the program text
        count as input: those not in the explanation are left out)."""
        replay = self.program._replica()
        for name, relation in replay.relations.items():
            if relation.facts:
                text = [tuple(a.value for a in rule.head.args) for rule in relation.facts]
                keep = self.inputs.get(name, set())
                replay.remove(name, [f for f in text if f not in keep])
        for name, facts in self.inputs.items():
            replay.insert(name, sorted(facts))
        replay.commit()
        if self.fact not in replay.relation(self.relation):
            raise ExplainError(f"the explanation of {format_fact(self.relation, self.fact)} "
                               f"does not reproduce it: the program on its "
                               f"{self.size} input facts alone does not derive it")


def explain(program, relation: str, fact) -> Explanation:
    """The explanation of one fact of ``program`` as of its last commit (see module doc)."""
    compiled = _provenance_of(program)
    fact = _target(program, relation, fact)
    search = _Search(program, compiled)
    try:
        root = search.run(relation, fact)
    finally:
        search.finish()
    if root is None:
        raise ExplainError(f"{format_fact(relation, fact)} is not in {relation} as of the last "
                           f"commit: check its values and that its inputs were committed")
    inputs: dict = {}
    for node in root.nodes():
        if node.rule is None:
            inputs.setdefault(node.relation, set()).add(node.fact)
    return Explanation(relation, fact, root, inputs, program, search.commits)


def _provenance_of(program):
    compiled = program._compiled
    if not hasattr(compiled, "witnesses"):
        raise ExplainError("this program was compiled without provenance: build it with "
                           "Program(..., provenance=True) or add .pragma \"provenance\" "
                           "\"explain\" to its text")
    staged = [name for name, inp in compiled.inputs.items() if inp._staged]
    if staged:
        raise ExplainError(f"{', '.join(sorted(staged))} changed since the last commit; "
                           f"explanations are of committed facts: commit() first")
    return compiled


def _target(program, relation: str, fact) -> tuple:
    try:
        rel = program._relation(relation)
    except KeyError as exc:
        raise ExplainError(exc.args[0]) from None
    except ValueError as exc:
        raise ExplainError(str(exc)) from None
    fact = tuple(fact) if isinstance(fact, (tuple, list)) else (fact,)
    try:
        program._check_python_rows(rel, [fact])
    except ValueError as exc:
        raise ExplainError(str(exc)) from None
    return tuple(float(v) if t == "float" else v for v, t in zip(fact, rel.types))


class _Search:
    """Breadth-first over proof levels: each commit asks for every fact of one level."""

    def __init__(self, program, compiled):
        self.program, self.compiled = program, compiled
        self.flow = program.flow
        self.asked: dict = {}   # relation -> facts whose requests are in the flow
        self.nodes: dict = {}   # (relation, fact) -> ProofTree
        self.smallest: dict = {}
        self.commits = 0

    def run(self, relation, fact):
        level = [(relation, fact)]
        while level:
            self._ask(level)
            found = self._present(level)
            self.smallest = {}  # id(witness) -> {fact: its smallest row} at this level
            if (relation, fact) not in self.nodes and (relation, fact) not in found:
                return None
            following = []
            for key in level:
                height = found[key]
                node = self.nodes[key] = ProofTree(key[0], key[1], height)
                if height > 0:
                    following.extend(self._derive(node))
            level = list(dict.fromkeys(k for k in following if k not in self.nodes))
        for node in self.nodes.values():  # children were keys until every node existed
            node.children = [self.nodes[c] if isinstance(c, tuple) else c
                             for c in node.children]
        return self.nodes[(relation, fact)]

    def finish(self) -> None:
        """Take the last requests back (the program is as before, one epoch later)."""
        if any(self.asked.values()):
            self._ask([])

    def _ask(self, level) -> None:
        wanted: dict = {}
        for rel, fact in level:
            wanted.setdefault(rel, []).append(fact)
        for rel in set(self.asked) | set(wanted):
            request = self.compiled.requests[rel]
            old, new = self.asked.get(rel, []), wanted.get(rel, [])
            if old:
                request.remove(_rows(old))
            if new:
                request.insert(_rows(new))
            self.asked[rel] = new
        self.flow.advance()
        self.commits += 1

    def _present(self, level) -> dict:
        """``(relation, fact) -> height`` of the level's facts that hold."""
        found = {}
        for rel in {r for r, _ in level}:
            arity = self.program.relations[rel].arity
            for row in self.compiled.asked[rel].snapshot():
                fact = () if arity == 0 else tuple(row[:arity])
                found[(rel, fact)] = int(row[-1])
        return found

    def _smallest(self, witness) -> dict:
        """The smallest witness row of each fact asked at this level (read once per level)."""
        rows = self.smallest.get(id(witness))
        if rows is None:
            rows = self.smallest[id(witness)] = {}
            for row in witness.output.snapshot():
                fact = _head(witness, row)
                if fact not in rows or row < rows[fact]:
                    rows[fact] = row
        return rows

    def _derive(self, node):
        """Pick the node's witness; return the body facts still to explain."""
        best = None
        for witness in self.compiled.witnesses[node.relation]:
            row = self._smallest(witness).get(node.fact)
            if row is not None:
                best = (witness, row)
                break  # witnesses are in rule-number order
        if best is None:
            raise AssertionError(f"no witness for {node.text} of height {node.height}")
        witness, row = best
        values = dict(zip(witness.variables, row))
        node.rule = witness.rule
        wanted = []
        for lit in witness.body:
            if isinstance(lit, ast.Atom):
                rel = lit.relation.removeprefix(HEIGHTS)
                fact = tuple(_arg(a, values) for a in lit.args[:-1])
                node.children.append((rel, fact))
                wanted.append((rel, fact))
            elif isinstance(lit, ast.Negation):
                args = ", ".join("_" if isinstance(a, ast.Wildcard) else _value(_arg(a, values))
                                 for a in lit.atom.args)
                node.children.append(Leaf(f"!{lit.atom.relation}({args})"))
            elif isinstance(lit, ast.Comparison) and not _synthetic(lit):
                node.children.append(Leaf(f"{_term(lit.left, values)} {lit.op} "
                                          f"{_term(lit.right, values)}"))
        return wanted


def _rows(facts) -> list:
    return [f if f else (0,) for f in facts]


def _head(witness, row) -> tuple:
    values = dict(zip(witness.variables, row))
    return tuple(values[v] for v in witness.head)


def _arg(arg, values):
    if isinstance(arg, ast.Var):
        return values[arg.name]
    return arg.value


def _synthetic(lit) -> bool:
    """Analysis names an atom's expressions ``#...`` with an equality; not the user's."""
    return any(v.name.startswith("#") for v in ast.term_variables(lit.left, lit.right))


def _term(node, values) -> str:
    if isinstance(node, ast.Var):
        return _value(values[node.name]) if node.name in values else node.name
    if isinstance(node, (ast.Number, ast.Float, ast.String)):
        return _value(node.value)
    if isinstance(node, ast.BinaryOp):
        return f"{_term(node.left, values)} {node.op} {_term(node.right, values)}"
    if isinstance(node, ast.Negative):
        return f"-{_term(node.operand, values)}"
    from .render import render_term
    return render_term(node)
