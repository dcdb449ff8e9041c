"""The names of the nodes a Datalog program compiles to: its rules and relations.

Every node the compiler builds for a clause keeps the clause's rule as its
:class:`~diffflow.dataflow.origin.Origin`: the rule's text on one line, the relation
it derives and the rule's ``file:line`` in the file the user wrote (through
``#include`` and the preprocessor's line mapping).  Inside a rule each node also
names the part it computes (the atom it joins, the negation, the comparison, the
aggregate, the head); the nodes of a relation itself (its input, the distinct
union of its rules, its loop variable, its output) are named ``relation NAME``
at the declaration's line.  Traces, activity graphs and runtime errors show these
names (:attr:`~diffflow.dataflow.graph.Node.name`); they are computed once, when
the program is compiled.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.lower.compiler import compile_program
>>> from diffflow.datalog.syntax.parser import parse
>>> source = ".decl e(x: number)\\n.decl r(x: number)\\nr(x) :-\\n  e(x), x < 3."
>>> graph = compile_program(analyse(parse(source, "p.dl"), source)).flow.graph
>>> for name in sorted({node.name for node in graph.nodes}):
...     print(name)
p.dl:1: relation e [input]
p.dl:1: relation e [output]
p.dl:2: relation r [arrange]
p.dl:2: relation r [distinct]
p.dl:2: relation r [output]
p.dl:3: r(x) :- e(x), x < 3. [filter x < 3]
p.dl:3: r(x) :- e(x), x < 3. [select r(x)]
p.dl:3: r(x) :- e(x), x < 3. [select x < 3]
"""
from __future__ import annotations

import contextlib
import re

from diffflow.common.errors import DatalogError, DiffflowError
from diffflow.dataflow.origin import Origin, one_line
from diffflow.datalog.syntax.render import render_rule

_COMPILER_VARIABLE = re.compile(r"(?<![\w#])#")  # (#h1, not tc#bf)


def rule_origin(clause, location: str) -> Origin:
    """The origin of the nodes of ``clause``: its rule as the user wrote it (before inline
    relations or magic sets changed it), the relation that rule derives.

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl e(x: number)\\n.decl r(x: number)\\nr(x + 1) :- e(x)."))
    >>> rule_origin(a.relations["r"].clauses[0], "p.dl:3")
    Origin(what='r((x + 1)) :- e(x).', relation='r', location='p.dl:3', rule=True, part=None)
    """
    rule = clause.rule
    return Origin(one_line(render_rule(rule)), rule.head.relation, location, rule=True)


def relation_origin(relation, location: str) -> Origin:
    """The origin of a relation's own nodes (not of one rule).

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> relation_origin(analyse(parse(".decl e(x: number)")).relations["e"], "p.dl:1").name("input")
    'p.dl:1: relation e [input]'
    """
    return Origin(f"relation {relation.name}", relation.name, location)


class Naming:
    """What a compiler mixes in to name its nodes: :meth:`building` a rule or a relation,
    :meth:`tag` the part of a rule just built.  ``where(line)`` gives ``file:line``."""

    _untagged = 0  # the first node no part of its rule has named yet

    def where(self, line: int) -> str:
        """A program line as the plan names it."""
        return f"line {line}"

    @contextlib.contextmanager
    def located(self, line: int, origin: Origin | None = None):
        """Nodes built inside are reported at this program line (runtime errors, loops) and
        keep ``origin``."""
        graph = self.flow.graph
        outer = graph.location_override, graph.origin
        graph.location_override, graph.origin = self.where(line), origin
        try:
            yield
        except DiffflowError:
            raise
        except Exception as exc:  # (a bug in the compiler, not the program's: said so)
            analysed = getattr(self, "analysed", None)
            raise DatalogError(f"internal error (a bug in diffflow; please report it) compiling "
                               f"this rule: {type(exc).__name__}: {exc}",
                               getattr(analysed, "source", None),
                               analysed.program.filename if analysed else "<program>", line,
                               None) from exc
        finally:
            graph.location_override, graph.origin = outer

    def building(self, thing):
        """Build the nodes of a clause (named by its rule) or of a relation (named by it)."""
        if hasattr(thing, "rule"):
            line = thing.rule.line
            self._untagged = len(self.flow.graph.nodes)
            return self.located(line, rule_origin(thing, self.where(line)))
        line = thing.declaration.line
        return self.located(line, relation_origin(thing, self.where(line)))

    @contextlib.contextmanager
    def unnamed(self):
        """Nodes built inside belong to no rule (the one-row input every rule shares)."""
        graph = self.flow.graph
        outer, graph.origin = graph.origin, None
        try:
            yield
        finally:
            graph.origin = outer

    def tag(self, part: str) -> None:
        """The nodes of the current rule built since the last tag compute ``part`` of it
        (a part naming the compiler's own variables, ``#h1``, is left to the next tag; an
        adorned relation of magic sets, ``tc#bf``, is no such variable)."""
        if _COMPILER_VARIABLE.search(part):
            return
        nodes = self.flow.graph.nodes
        for node in nodes[self._untagged:]:
            origin = node.origin
            if origin is not None and origin.rule and origin.part is None:
                node.origin = origin.with_part(part)
        self._untagged = len(nodes)
