"""Outputs: read a collection's current contents and its changes.

An :class:`Output` reads only through the runtime interface
(:class:`diffflow.runtime.base.Runtime`: ``output_contents`` and
``take_output_changes``), so it works the same on every runtime.

>>> import diffflow as dd
>>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
>>> a.insert([5]); flow.advance(); out
<Output 1 Schema(x: int)>
"""
from __future__ import annotations

from diffflow.arrangements.updates import concat
from diffflow.common.schema import decode_rows

# Annotations naming types of modules above this one (Collection, Output, Dataflow) are
# strings (``from __future__ import annotations``): they name the type without importing it.


class Output:
    """Reads a collection's current contents and its changes."""

    def __init__(self, flow: Dataflow, node, name):  # noqa: F821
        self.flow, self.node, self.name = flow, node, name

    def _decode(self, rows):
        return decode_rows(rows, self.node.schema, self.flow.symbols)

    def snapshot(self) -> dict:
        """``{row: multiplicity}`` of the collection after the last computed epoch.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([3, 3, 4]); flow.advance(); out.snapshot()
        {(3,): 2, (4,): 1}
        """
        runtime = self.flow._runtime
        if runtime is None:  # not run yet, or closed
            return {}
        rows, diffs = runtime.output_contents(self.node.id)
        return dict(zip(self._decode(rows), diffs.tolist()))

    def changes(self) -> list:
        """``[(row, epoch, diff), ...]`` since the last call, consolidated, by epoch then row.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([1]); flow.advance(); a.remove([1]); a.insert([2]); flow.advance()
        >>> out.changes()
        [((1,), 0, 1), ((1,), 1, -1), ((2,), 1, 1)]
        """
        runtime = self.flow._runtime
        if runtime is None:  # not run yet, or closed
            return []
        chunks = runtime.take_output_changes(self.node.id)
        if not chunks:
            return []
        merged = concat(chunks, self.node.schema.width, self.node.dim).consolidated()
        items = list(zip(self._decode(merged.rows), merged.times[:, 0].tolist(),
                         merged.diffs.tolist()))
        return sorted(items, key=lambda item: (item[1], item[0]))

    def explain(self, rows):
        """Why ``rows`` are in this output: the input rows (per input, with multiplicities)
        that reproduce them at the last computed epoch, chosen along the lowest rounds
        (:mod:`diffflow.explain`).  Needs ``Dataflow(explain=True)``.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(explain=True); a = flow.input("a", ["k", "v"])
        >>> top = a.aggregate(by=["k"], hi=dd.max("v")).output()
        >>> a.insert([(1, 5), (1, 9), (2, 4)]); flow.advance()
        >>> top.explain([(1, 9)]).inputs
        {'a': {(1, 9): 1}}
        """
        return self.flow._explainer().explain(self, rows)

    def to_pandas(self):
        """The current collection as a pandas DataFrame, one line per copy of a row.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x", ("s", str)]); out = a.output()
        >>> a.insert([(1, "p")]); flow.advance(); out.to_pandas().values.tolist()
        [[1, 'p']]
        """
        import pandas as pd

        snap = self.snapshot()
        negative = [r for r, m in snap.items() if m < 0]
        if negative:
            raise ValueError(f"output has negative multiplicities (e.g. {negative[0]!r}); "
                             f"read it with snapshot() instead")
        rows = [r for r, m in snap.items() for _ in range(m)]
        return pd.DataFrame(rows, columns=list(self.node.schema.names))

    def to_dataframe(self):
        """The current collection as a Spark DataFrame, one row per copy (Spark runtime only).

        Spark tasks pull each partition's rows from its worker; the result is
        materialised at once, so it stays the snapshot of this moment.
        """
        return self._spark_runtime("to_dataframe").output_dataframe(
            self.node.id, self.node.schema, "snapshot")

    def changes_dataframe(self):
        """The changes since the last read as a Spark DataFrame ``(columns..., epoch, diff)``.

        Like :meth:`changes`, each change is handed out once.
        """
        return self._spark_runtime("changes_dataframe").output_dataframe(
            self.node.id, self.node.schema, "changes")

    def _spark_runtime(self, method: str):
        if self.flow.runtime_name != "spark":
            raise TypeError(f"output {self.name!r}: {method}() needs runtime='spark'; on this "
                            f"runtime use to_pandas() or changes()")
        return self.flow._ensure_runtime()

    def __repr__(self) -> str:
        return f"<Output {self.name or self.node.id} {self.node.schema!r}>"
