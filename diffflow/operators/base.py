"""The contract between operators and the runtime that drives them.

One :class:`Operator` instance exists per (graph node, partition).  Its state
is plain numpy data (picklable), so the same code runs in the local runtime
and inside Spark partition workers.  The runtime calls :meth:`Operator.step`
with the chunks that arrived on each input port since the last call and the
current frontier of each port, and routes the returned chunks downstream.

Contract of ``step``:

* input chunks may mix many times; a port's frontier bounds the times that may
  still arrive on it (times it does not admit are complete);
* the returned chunks are the operator's output updates; their times must be
  admitted by the union of the input frontiers and :meth:`capabilities`
  before the call (an operator never emits into the past);
* :meth:`capabilities` lists the times the operator may still emit at
  without new input (data it holds back until complete).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..arrangements.updates import Updates, concat


@dataclass
class OperatorContext:
    """What an operator instance knows about where it runs."""

    partition: int
    parts: int
    dim: int
    symbols: object
    peer: Callable[[int], "Operator"] = field(default=None, repr=False)  # same-partition lookup


class Operator:
    """Base class: a stateless operator holding no capabilities."""

    def __init__(self, node, ctx: OperatorContext):
        self.node, self.ctx = node, ctx

    def step(self, inputs: list, frontiers: list) -> list:
        raise NotImplementedError

    def capabilities(self) -> np.ndarray | None:
        """Times ``(k, d)`` this operator may still produce output at, or ``None``."""
        return None

    def port_chunks(self, inputs: list, port: int) -> Updates:
        """Everything that arrived on ``port`` as one chunk."""
        return concat(inputs[port], self.node.input_widths[port], self.ctx.dim)
