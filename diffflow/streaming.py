"""Incremental views fed by Spark Structured Streaming (``foreachBatch`` sinks).

Each micro-batch carries changed rows with a ``diff`` column (+1 inserts,
-1 removes).  :meth:`StreamingView.apply_batch` applies one micro-batch to a
dataflow input or a Datalog program's input relation and computes the new
epoch, so the view's outputs are exact after every micro-batch::

    view = StreamingView(program, "edge")
    query = (edges_stream.writeStream.foreachBatch(view.apply_batch)
             .option("checkpointLocation", ...).start())

Spark may replay a micro-batch after a failure; batches whose id was already
applied are skipped, so a replay changes nothing.  This module does not
import pyspark: it only calls the DataFrame methods it is given.
"""
from __future__ import annotations

import numpy as np


class StreamingView:
    """Applies micro-batches of ``(columns..., diff)`` rows to ``target`` and computes them.

    ``target`` is an :class:`~diffflow.InputCollection` or a
    :class:`~diffflow.Program` (then ``relation`` names its input relation).

    >>> import diffflow as dd, pandas as pd
    >>> program = dd.Program(".decl e(x: number, y: number)\\n.decl p(x: number, y: number)\\n"
    ...                      "p(x, y) :- e(x, y).\\np(x, z) :- p(x, y), e(y, z).")
    >>> view = StreamingView(program, "e")
    >>> view.apply_batch(pd.DataFrame({"x": [1, 2], "y": [2, 3], "diff": [1, 1]}), 0)
    >>> sorted(program.relation("p"))
    [(1, 2), (1, 3), (2, 3)]
    """

    def __init__(self, target, relation: str | None = None):
        from diffflow.api.inputs import InputCollection
        from diffflow.datalog.program import Program

        if isinstance(target, Program):
            if relation is None:
                raise ValueError("StreamingView(program, relation): name the input relation")
            target._relation(relation)  # unknown names raise here, with a suggestion
            self.columns = [f"c{j}" for j in range(target.relations[relation].arity)]
        elif isinstance(target, InputCollection):
            if relation is not None:
                raise ValueError("relation= is only for a Program target")
            self.columns = list(target.schema.names)
        else:
            raise TypeError(f"StreamingView needs an InputCollection or a Program, "
                            f"got {type(target).__name__}")
        self.target, self.relation = target, relation
        self.last_batch: int | None = None
        self.batches = 0

    def apply_batch(self, batch_df, batch_id: int) -> None:
        """``foreachBatch`` callback: apply one micro-batch and compute its epoch."""
        if self.last_batch is not None and batch_id <= self.last_batch:
            return  # a replayed micro-batch: already applied
        from diffflow.api.inputs import InputCollection

        target = self.target
        if isinstance(target, InputCollection) and target.flow.runtime_name == "spark" \
                and hasattr(batch_df, "mapInArrow"):
            target.update_dataframe(batch_df)  # pushed by Spark tasks, not via the driver
            target.flow.advance()
        else:
            frame = batch_df.toPandas() if hasattr(batch_df, "toPandas") else batch_df
            self._apply_frame(frame)
        self.last_batch = batch_id
        self.batches += 1

    def _apply_frame(self, frame) -> None:
        columns = list(frame.columns)
        if "diff" not in columns:
            raise ValueError(f"a micro-batch needs a 'diff' column (+1/-1) next to the row "
                             f"columns; got columns {columns}")
        row_columns = [c for c in columns if c != "diff"]
        diffs = frame["diff"].to_numpy()
        target = self.target
        from diffflow.api.inputs import InputCollection

        if isinstance(target, InputCollection):
            target.update(frame[row_columns], diffs.astype(np.int64))
            target.flow.advance()
            return
        arity = len(self.columns)
        if len(row_columns) != arity:
            raise ValueError(f"relation {self.relation!r} has {arity} columns; the micro-batch "
                             f"has {row_columns} besides 'diff'")
        bad = sorted(set(diffs.tolist()) - {1, -1})
        if bad:
            raise ValueError(f"relation {self.relation!r} is a set: diff must be +1 or -1, got {bad}")
        rows = list(frame[row_columns].itertuples(index=False, name=None))
        target.insert(self.relation, [r for r, d in zip(rows, diffs) if d > 0])
        target.remove(self.relation, [r for r, d in zip(rows, diffs) if d < 0])
        target.commit()

