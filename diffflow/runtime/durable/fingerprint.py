"""A dataflow's fingerprint: what must be equal for a checkpoint to fit a resumed dataflow.

A checkpoint holds each operator's state by node number, so the dataflow that reads it must
have the same nodes: the same operators, in the same order, with the same inputs, schemas,
exchanges, loops and parameters.  The fingerprint is a SHA-256 over exactly that.  User
functions count by their qualified name and their compiled code (a changed function body
is another dataflow), not by where they were defined: a resumed program may be a new
process with other line numbers.  Source locations and labels are left out.

>>> import diffflow as dd
>>> def build():
...     flow = dd.Dataflow(); a = flow.input("a", ["x"]); a.distinct().output()
...     return flow
>>> graph_fingerprint(build().graph) == graph_fingerprint(build().graph)
True
"""
from __future__ import annotations

import hashlib

import numpy as np

# node fields that say where a node was built, not what it computes
_WHERE = ("location", "label", "origin")


def graph_fingerprint(graph) -> str:
    """The hex SHA-256 of a graph's structure and operator parameters."""
    digest = hashlib.sha256()
    for scope in graph.scopes:
        parent = None if scope.parent is None else scope.parent.id
        digest.update(repr(("scope", scope.id, parent, scope.max_rounds)).encode())
    for node in graph.nodes:
        digest.update(repr(("node", node.id, node.kind, list(node.inputs),
                            tuple(node.schema.names), tuple(node.schema.types),
                            _canonical(node.exchange), _canonical(node.input_widths),
                            node.dim, node.scope.id if node.scope is not None else None,
                            _canonical(_computing(node)))).encode())
    return digest.hexdigest()


def _computing(node) -> dict:
    """A node's parameters that say what it computes: an output's ``changes`` (whether it
    keeps a change feed) only says what can be read, so a dataflow resumes with either."""
    if node.kind == "output":
        return {k: v for k, v in node.params.items() if k != "changes"}
    return node.params


def _canonical(value, depth: int = 0):
    """A plain, repeatable description of a parameter value (no memory addresses)."""
    if depth > 8:
        return "..."
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return value
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v, depth + 1) for v in value)
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(repr(_canonical(v, depth + 1)) for v in value))
    if isinstance(value, dict):
        return tuple(sorted((repr(k), repr(_canonical(v, depth + 1))) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape,
                hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest())
    if isinstance(value, np.generic):
        return value.item()
    code = getattr(value, "__code__", None)
    if code is not None:  # a function: its name and compiled code
        return ("function", getattr(value, "__qualname__", ""),
                hashlib.sha256(code.co_code).hexdigest(), _canonical(code.co_consts, depth + 1))
    if callable(value) and not hasattr(value, "__dict__"):
        return ("callable", getattr(value, "__qualname__", type(value).__name__))
    fields = getattr(value, "__dict__", None)
    if fields is None and hasattr(type(value), "__slots__"):
        fields = {k: getattr(value, k, None) for k in type(value).__slots__}
    if fields is None:
        return ("object", type(value).__qualname__)
    return (type(value).__qualname__,
            _canonical({k: v for k, v in fields.items() if k not in _WHERE}, depth + 1))
