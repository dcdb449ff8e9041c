"""What a front end compiled a graph node from, and the name that node goes by.

A front end (the Datalog compiler) sets :attr:`Graph.origin
<diffflow.dataflow.graph.Graph.origin>` while it builds the nodes of one rule or
one relation; every node added meanwhile keeps that :class:`Origin`.  Traces,
activity graphs and runtime errors then name the node after its source rather
than the compiler's columns::

    /work/tc.dl:5: path(x, z) :- path(x, y), edge(y, z). [join edge(y, z)]
    /work/tc.dl:2: relation path [distinct]

that is ``file:line: what [operator]``, where ``what`` is the rule's text (one
line, shortened past :data:`MAX_RULE`) or ``relation NAME``, and ``operator``
the node's operation with, when known, the part of the rule it computes.
:func:`parse_name` reads such a name back (a profiler groups steps by rule).
Names are computed when asked (trace names once per run), never per row.

>>> o = Origin("relation path", "path", "tc.dl:2")
>>> o.name("distinct")
'tc.dl:2: relation path [distinct]'
>>> parse_name(o.name("distinct"))
('tc.dl:2', 'relation path', 'distinct')
"""
from __future__ import annotations

import re

from diffflow.common.fields import Fields

MAX_RULE = 120  # characters of a rule's text kept in a name

_NAME = re.compile(r"^(?P<location>.+?:\d+): (?P<what>.*) \[(?P<operator>[^\[\]]*)\]$")


def one_line(text: str, limit: int = MAX_RULE) -> str:
    """``text`` on one line (runs of white space as one space), cut to ``limit`` characters
    with an ellipsis.

    >>> one_line("path(x, z) :-\\n    path(x, y),\\n    edge(y, z).")
    'path(x, z) :- path(x, y), edge(y, z).'
    >>> one_line("r(x) :- " + ", ".join(f"e{i}(x)" for i in range(40)) + ".", 30)
    'r(x) :- e0(x), e1(x), e2(x), …'
    """
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[:limit - 2].rstrip() + " …"


class Origin(Fields):
    """The source of a node: ``what`` (a rule's text, or ``relation NAME``), the
    ``relation`` it derives, its ``location`` (``file:line``), ``rule`` (whether ``what``
    is a rule) and ``part`` (what of the rule the node computes, e.g. ``edge(y, z)``).

    >>> Origin("path(x, z) :- path(x, y), edge(y, z).", "path", "tc.dl:5", rule=True,
    ...        part="edge(y, z)").name("join")
    'tc.dl:5: path(x, z) :- path(x, y), edge(y, z). [join edge(y, z)]'
    """

    _fields = ("what", "relation", "location", "rule", "part")

    def __init__(self, what: str, relation: str, location: str, rule: bool = False,
                 part: str | None = None):
        self.what, self.relation, self.location = what, relation, location
        self.rule, self.part = rule, part

    def with_part(self, part: str) -> "Origin":
        """The same origin naming the part of the rule a node computes.

        >>> Origin("r(x) :- e(x).", "r", "a.dl:1", True).with_part("e(x)").part
        'e(x)'
        """
        return Origin(self.what, self.relation, self.location, self.rule, part)

    def operator(self, word: str) -> str:
        """``word`` (the node's operation) with the part of the rule, when it has one and it
        keeps the name readable back (no brackets).

        >>> Origin("r(x) :- e(x).", "r", "a.dl:1", True, "e(x)").operator("join")
        'join e(x)'
        """
        part = self.part
        if not part or "[" in part or "]" in part:
            return word
        return f"{word} {one_line(part, MAX_RULE // 2)}"

    def name(self, word: str) -> str:
        """The node's name, ``file:line: what [operator]`` (see the module docstring)."""
        return f"{self.location}: {self.what} [{self.operator(word)}]"


def operator_word(kind: str, label: str) -> str:
    """A node's operation in one or two words, without column names.

    >>> operator_word("reduce", "aggregate ['v__ha1'] by ['_unit']"), operator_word("join", "join on")
    ('aggregate', 'join')
    >>> operator_word("concat", "variable of loop 'stratum path' (built at tc.dl:4)")
    'loop variable'
    """
    if kind == "reduce":
        return label.split(" ", 1)[0] or kind
    if kind == "concat" and label.startswith("variable of"):
        return "loop variable"
    return kind


def parse_name(name: str):
    """``(location, what, operator)`` of a name made by :meth:`Origin.name`, else ``None``
    (an operator of the collection API, named by its label).

    >>> parse_name("tc.dl:5: path(x, z) :- path(x, y), edge(y, z). [join edge(y, z)]")
    ('tc.dl:5', 'path(x, z) :- path(x, y), edge(y, z).', 'join edge(y, z)')
    >>> parse_name("join on ['c1']=['c0']") is None
    True
    """
    match = _NAME.match(name)
    return None if match is None else (match["location"], match["what"], match["operator"])
