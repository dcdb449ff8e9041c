"""The registry of operator kinds: the graph's node kinds mapped to their classes.

Each operator class registers itself by setting ``kind``
(:class:`~diffflow.operators.base.Operator`); importing this module imports
every operator module, so the registry is complete.  Adding an operator means
one class with its declared traits, and its module in the import below.

>>> operator_class("join").__name__
'JoinOp'
"""
from __future__ import annotations

from diffflow.operators import arrange, iterate, join, linear, output, reduce  # noqa: F401 - classes register
from diffflow.operators.base import REGISTRY, Operator


def operator_class(kind: str) -> type[Operator]:
    """The class implementing a graph node kind.

    >>> operator_class("arrange").compaction
    'readers'
    """
    try:
        return REGISTRY[kind]
    except KeyError:
        raise KeyError(f"no operator implements node kind {kind!r}; known kinds: "
                       f"{', '.join(sorted(REGISTRY))}") from None
