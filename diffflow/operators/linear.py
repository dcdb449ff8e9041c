"""Linear operators: their output at each time depends only on the input updates.

``select`` (projection, renaming, column expressions), ``filter``, ``negate``,
``concat`` and ``flat_map`` act on each update independently, so they need no
state and no frontier: they transform chunks as they pass.  ``flat_map`` calls
a Python function per row -- the documented slow path; column expressions are
the fast path.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements.updates import Updates
from diffflow.common.schema import decode_rows, encode_column
from diffflow.operators.base import Operator


class SelectOp(Operator):
    """Compute output columns from expressions (``params['exprs']``: list of Expr)."""

    kind = "select"
    frontier_blind = True

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        plan = node.params["plan"]
        # A renaming (every column in place) leaves the rows as they are; so does a
        # projection the input join already wrote (engine.fused_projections sets this).
        self.passthrough = plan is not None and list(plan) == list(range(node.input_widths[0]))

    def step(self, inputs, frontiers):
        if self.passthrough:
            return [c for c in inputs[0] if len(c)]
        # chunk by chunk: concatenating first would copy every column once more
        return [self._select(c) for c in inputs[0] if len(c)]

    def _select(self, chunk):
        plan = self.node.params["plan"]
        if plan is not None:  # pure projection: a column gather
            rows = np.ascontiguousarray(chunk.rows[:, plan])
        else:
            schema = self.node.params["input_schema"]
            exprs = self.node.params["exprs"]
            rows = np.empty((len(chunk), len(exprs)), dtype=np.int64)
            for j, expr in enumerate(exprs):
                rows[:, j] = expr.evaluate(chunk.rows, schema, self.ctx.symbols)
        return Updates(rows, chunk.times, chunk.diffs)


class FilterOp(Operator):
    """Keep updates whose row satisfies a boolean expression."""

    kind = "filter"
    frontier_blind = True

    def step(self, inputs, frontiers):
        expr, schema = self.node.params["predicate"], self.node.params["input_schema"]
        out = []
        for chunk in inputs[0]:
            if len(chunk):
                keep = expr.evaluate(chunk.rows, schema, self.ctx.symbols) != 0
                if keep.any():
                    out.append(chunk.take(keep))
        return out


class NegateOp(Operator):
    """Negate every diff."""

    kind = "negate"
    frontier_blind = True

    def step(self, inputs, frontiers):
        return [c.negated() for c in inputs[0] if len(c)]


class ConcatOp(Operator):
    """Union of several inputs with the same columns."""

    kind = "concat"
    frontier_blind = True

    def step(self, inputs, frontiers):
        return [c for port in inputs for c in port if len(c)]


class ConsolidateOp(Operator):
    """Consolidate what arrives (the input port exchanges by the whole row)."""

    kind = "consolidate"
    frontier_blind = True

    def step(self, inputs, frontiers):
        chunk = self.port_chunks(inputs, 0)
        if not len(chunk):
            return []
        return [chunk.consolidated()]


class FlatMapOp(Operator):
    """Apply a Python function to each row (slow path: per-row Python).

    The function receives the row as a tuple of Python values and returns an
    iterable of output rows (``map`` wraps a one-row function).
    """

    kind = "flat_map"
    frontier_blind = True

    def step(self, inputs, frontiers):
        chunk = self.port_chunks(inputs, 0)
        if not len(chunk):
            return []
        fn = self.node.params["fn"]
        if self.node.params.get("columnar"):  # a vectorised function (Collection._expand)
            source, rows = fn(chunk.rows, self.ctx.symbols)
            if not len(source):
                return []
            return [Updates(np.ascontiguousarray(rows, dtype=np.int64), chunk.times[source],
                            chunk.diffs[source])]
        in_schema, out_schema = self.node.params["input_schema"], self.node.schema
        symbols = self.ctx.symbols
        source, produced = [], []
        for i, row in enumerate(decode_rows(chunk.rows, in_schema, symbols)):
            for out in fn(row):
                out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
                if len(out) != out_schema.width:
                    raise ValueError(
                        f"function returned {out!r} for row {row!r}; expected "
                        f"{out_schema.width} values for columns {list(out_schema.names)}")
                source.append(i)
                produced.append(out)
        if not produced:
            return []
        where = f"{self.node.label} output"
        columns = [encode_column([r[j] for r in produced], kind, symbols, f"{where}.{name}")
                   for j, (name, kind) in enumerate(zip(out_schema.names, out_schema.types))]
        rows = np.stack(columns, axis=1) if columns else np.zeros((len(produced), 0), np.int64)
        source = np.array(source, dtype=np.int64)
        return [Updates(np.ascontiguousarray(rows), chunk.times[source], chunk.diffs[source])]


class InputOp(Operator):
    """Holds updates staged by the user until their epoch closes.

    Its capabilities are the open epoch (nothing earlier can still be staged)
    and the times of closed-epoch updates not yet sent.
    """

    kind = "input"
    always_steps = True

    def __init__(self, node, ctx):
        super().__init__(node, ctx)
        self.staged: list[Updates] = []    # at the open epoch
        self.released: list[Updates] = []  # closed epochs, sent at the next step
        self.epoch = 0

    def stage(self, rows: np.ndarray, diffs: np.ndarray) -> None:
        times = np.zeros((len(rows), self.ctx.dim), dtype=np.int64)
        times[:, 0] = self.epoch
        self.staged.append(Updates(rows, times, diffs))

    def start_at(self, epoch: int) -> None:
        self.epoch = epoch

    def take_staged(self) -> list:
        """The updates staged at the open epoch (taken: rescaling re-routes them)."""
        out, self.staged = self.staged, []
        return out

    def close_epoch(self) -> None:
        self.epoch += 1
        self.released.extend(self.staged)
        self.staged = []

    def step(self, inputs, frontiers):
        out, self.released = self.released, []
        return out

    def capabilities(self):
        t = np.zeros((1, self.ctx.dim), dtype=np.int64)
        t[0, 0] = self.epoch
        if self.released:
            t = np.concatenate([t] + [c.times for c in self.released])
        return t
