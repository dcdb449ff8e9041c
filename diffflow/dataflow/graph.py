"""The dataflow graph: nodes (operators with their parameters), inputs and scopes.

Nodes are created by the public collection API in construction order.  Every
edge goes from an earlier node to a later one except a loop's feedback edge,
which closes a cycle back to the loop variable: construction order is a
topological order of the graph with its feedback edges removed.

A :class:`Scope` is the root (times ``(epoch,)``) or a loop nested in another
scope, whose times carry one more coordinate, the round.  Every node remembers
the user's source line that built it, so failures can point at it.
"""
from __future__ import annotations

import os
import sys

from diffflow.common.fields import Fields
from diffflow.common.schema import Schema
from diffflow.dataflow.origin import Origin, operator_word

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_location() -> str:
    """``file:line`` of the innermost caller outside the diffflow package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if not filename.startswith(_PACKAGE_DIR + os.sep):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


class Scope(Fields):
    """The root scope or a loop; ``depth`` is the number of enclosing loops."""

    _fields = ("id", "parent", "label", "location", "max_rounds")
    __eq__ = object.__eq__  # scopes are compared by identity
    __hash__ = object.__hash__

    def __init__(self, id: int, parent: "Scope | None" = None, label: str = "root",
                 location: str = "<unknown>", max_rounds: int | None = 10_000):
        self.id, self.parent, self.label, self.location = id, parent, label, location
        self.max_rounds = max_rounds  # None: no limit

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    @property
    def dim(self) -> int:
        """Number of time coordinates inside this scope."""
        return self.depth + 1

    def ancestors(self) -> list:
        """This scope and its parents, innermost first."""
        out, s = [], self
        while s is not None:
            out.append(s)
            s = s.parent
        return out

    def describe(self) -> str:
        return f"loop {self.label!r} (built at {self.location})" if self.parent else "the root scope"


class Node(Fields):
    """One operator of the graph.

    ``exchange[i]`` is ``None`` when port ``i`` takes data from the same
    partition, or the tuple of column positions whose hash routes each update.
    """

    _fields = ("id", "kind", "inputs", "schema", "params", "exchange", "input_widths", "dim",
              "location", "label", "scope", "origin")
    origin = None  # (nodes pickled before origins existed)

    def __init__(self, id: int, kind: str, inputs: list, schema: Schema, params=None,
                 exchange=None, input_widths=None, dim: int = 1, location: str = "<unknown>",
                 label: str = "", scope: Scope | None = None, origin: Origin | None = None):
        self.id, self.kind, self.inputs, self.schema = id, kind, inputs, schema
        self.params = {} if params is None else params
        self.exchange = [] if exchange is None else exchange
        self.input_widths = [] if input_widths is None else input_widths
        self.dim, self.location, self.label, self.scope = dim, location, label, scope
        self.origin = origin  # what a front end compiled it from (see .origin)

    @property
    def name(self) -> str:
        """What traces and activity graphs call the node: its :class:`~.origin.Origin`'s name
        (``file:line: rule [operator]``) when a front end built it, else its label."""
        if self.origin is None:
            return self.label or self.kind
        return self.origin.name(operator_word(self.kind, self.label))

    def describe(self) -> str:
        if self.origin is None:
            return f"{self.label or self.kind} (node {self.id}, built at {self.location})"
        origin = self.origin
        return (f"{origin.what} [{origin.operator(operator_word(self.kind, self.label))}] "
                f"(node {self.id}, built at {origin.location})")


class Graph:
    """An append-only list of nodes with their consumers."""

    # bytes each process computing the graph may hold in the engine's arrays, or None
    # (``Dataflow(memory_limit=...)``; travels with the graph to worker processes)
    memory_limit = None

    def __init__(self):
        self.nodes: list[Node] = []
        self.root = Scope(0)
        self.scopes: list[Scope] = [self.root]
        # front ends (Datalog) set this to the source position of what they compile
        self.location_override: str | None = None
        # ... and to what they compile (a rule, a relation): every node added keeps it
        self.origin: Origin | None = None

    def new_scope(self, parent: Scope, label: str, max_rounds: int) -> Scope:
        scope = Scope(len(self.scopes), parent, label,
                      self.location_override or user_location(), max_rounds)
        self.scopes.append(scope)
        return scope

    def add(self, kind: str, inputs, schema: Schema, *, exchange=None, params=None,
            scope: Scope | None = None, label: str = "", location: str | None = None) -> Node:
        inputs = list(inputs)
        scope = scope or self.root
        location = location or self.location_override or user_location()
        node = Node(
            id=len(self.nodes), kind=kind, inputs=inputs, schema=schema,
            params=params or {}, exchange=list(exchange or [None] * len(inputs)),
            input_widths=[self.nodes[i].schema.width for i in inputs], dim=scope.dim,
            location=location, label=label or kind, scope=scope, origin=self.origin)
        self.nodes.append(node)
        return node

    def connect(self, node: Node, source: Node) -> None:
        """Add an input port to ``node`` reading ``source`` (closes a loop's cycle)."""
        node.inputs.append(source.id)
        node.input_widths.append(source.schema.width)
        node.exchange.append(None)

    def consumers(self) -> list[list[tuple[int, int]]]:
        """For each node, the ``(consumer, port)`` pairs reading its output."""
        out: list[list[tuple[int, int]]] = [[] for _ in self.nodes]
        for node in self.nodes:
            for port, src in enumerate(node.inputs):
                out[src].append((node.id, port))
        return out

    def __len__(self) -> int:
        return len(self.nodes)
