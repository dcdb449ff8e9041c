"""The dataflow graph: nodes (operators with their parameters) and their inputs.

Nodes are created by the public collection API in construction order, which
is a topological order of the (acyclic, for now) graph.  Every node remembers
the user's source line that built it, so runtime failures can point at it.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from ..schema import Schema

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


@dataclass
class Node:
    """One operator of the graph.

    ``exchange[i]`` is ``None`` when port ``i`` takes data from the same
    partition, or the tuple of column positions whose hash routes each update.
    """

    id: int
    kind: str
    inputs: list
    schema: Schema
    params: dict = field(default_factory=dict)
    exchange: list = field(default_factory=list)
    input_widths: list = field(default_factory=list)
    dim: int = 1
    location: str = "<unknown>"
    label: str = ""

    def describe(self) -> str:
        return f"{self.label or self.kind} (node {self.id}, built at {self.location})"


class Graph:
    """An append-only list of nodes with their consumers."""

    def __init__(self):
        self.nodes: list[Node] = []

    def add(self, kind: str, inputs, schema: Schema, *, exchange=None, params=None,
            dim: int = 1, label: str = "", location: str | None = None) -> Node:
        inputs = list(inputs)
        node = Node(
            id=len(self.nodes), kind=kind, inputs=inputs, schema=schema,
            params=params or {}, exchange=list(exchange or [None] * len(inputs)),
            input_widths=[self.nodes[i].schema.width for i in inputs], dim=dim,
            location=location or user_location(), label=label or kind)
        self.nodes.append(node)
        return node

    def consumers(self) -> list[list[tuple[int, int]]]:
        """For each node, the ``(consumer, port)`` pairs reading its output."""
        out: list[list[tuple[int, int]]] = [[] for _ in self.nodes]
        for node in self.nodes:
            for port, src in enumerate(node.inputs):
                out[src].append((node.id, port))
        return out

    def __len__(self) -> int:
        return len(self.nodes)
