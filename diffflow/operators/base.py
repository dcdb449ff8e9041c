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

What the runtime needs to know about an operator kind it reads from the
class, never from the kind's name: a subclass sets ``kind`` (the graph
node kind it implements, which registers it) and declares its *traits*:

* ``summary`` -- how times change from input to output (the path summary
  progress tracking carries frontiers along: identity, or enter / leave /
  advance a loop's round);
* ``always_steps`` -- step it in every sweep, even with no new input or
  frontier (inputs: their capability moves when an epoch closes);
* ``frontier_blind`` -- while it holds no capabilities, a step with no input changes
  nothing anyone reads, whatever the frontiers (a trace's upper may lag until the next
  input seals a longer batch): the runtime skips such steps, so a commit costs the nodes
  its data reaches, not the whole graph;
* ``compaction`` -- ``None``, or which frontier its traces (:meth:`traces`)
  may forget distinctions before: ``"readers"`` (a shared trace: the input
  frontiers of every operator reading it) or ``"input"`` (a private trace:
  its own input's frontier), applied through :meth:`compact`;
* ``round_limit`` -- it enforces a loop's ``max_rounds`` and reports cut
  epochs through :meth:`take_overflow`.

>>> from diffflow.operators.registry import operator_class
>>> cls = operator_class("feedback")
>>> cls.__name__, cls.summary, cls.round_limit, operator_class("arrange").compaction
('FeedbackOp', ADVANCE, True, 'readers')
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from diffflow.arrangements.updates import Updates, concat
from diffflow.common.fields import Fields
from diffflow.lattice.frontiers import IDENTITY

REGISTRY: dict = {}  # graph node kind -> Operator subclass (see operators.registry)


class OperatorContext(Fields):
    """What an operator instance knows about where it runs."""

    _fields = ("partition", "parts", "dim", "symbols", "peer")
    _hidden = ("peer",)

    def __init__(self, partition: int, parts: int, dim: int, symbols: object,
                 peer: Callable[[int], "Operator"] | None = None):
        self.partition, self.parts, self.dim, self.symbols = partition, parts, dim, symbols
        self.peer = peer  # same-partition lookup of another node's operator


class Operator:
    """Base class: a stateless operator holding no capabilities."""

    kind: str | None = None
    summary = IDENTITY
    always_steps = False
    frontier_blind = False
    compaction: str | None = None
    round_limit = False

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("kind"):
            REGISTRY[cls.kind] = cls

    def __init__(self, node, ctx: OperatorContext):
        self.node, self.ctx = node, ctx

    def step(self, inputs: list, frontiers: list) -> list:
        raise NotImplementedError

    def capabilities(self) -> np.ndarray | None:
        """Times ``(k, d)`` this operator may still produce output at, or ``None``."""
        return None

    def traces(self) -> list:
        """The traces (spines) this operator holds; those with ``compaction`` set have some."""
        return []

    def compact(self, frontier) -> None:
        """Let the traces forget distinctions between times ``frontier`` cannot tell apart."""

    def take_overflow(self) -> set:
        """Epochs cut at the loop's round limit since the last call (``round_limit`` only)."""
        return set()

    # -- rescaling (diffflow.runtime.rescale.migrate): between runs, nothing queued or pending ----
    def start_at(self, epoch: int) -> None:
        """This operator joins a running dataflow whose open epoch is ``epoch``."""

    def take_staged(self) -> list:
        """Updates held for the open epoch, routed by the whole row (inputs); taken."""
        return []

    def imported(self) -> None:
        """Rows of other partitions' bins were just added to the traces this operator reads."""

    def handover(self):
        """State not kept by key (e.g. an output's rows), taken from a partition being
        retired so :meth:`absorb` on another one keeps it; ``None`` when there is none."""
        return None

    def absorb(self, state) -> None:
        """Add what :meth:`handover` took from the same operator on a retired partition."""

    def port_chunks(self, inputs: list, port: int) -> Updates:
        """Everything that arrived on ``port`` as one chunk."""
        return concat(inputs[port], self.node.input_widths[port], self.ctx.dim)
