"""Outputs: read a collection's current contents and its changes.

An :class:`Output` reads only through the runtime interface
(:class:`diffflow.runtime.base.Runtime`: ``output_contents`` and
``take_output_changes``), so it works the same on every runtime.  Two kinds of read:

* *contents* -- :meth:`~Output.snapshot`, :meth:`~Output.to_pandas`,
  :meth:`~Output.to_dataframe`: the collection after the last computed epoch, as often
  as asked;
* the *change feed* -- :meth:`~Output.changes`, :meth:`~Output.changes_dataframe`: every
  change ``(row, epoch, diff)`` once, to whichever asks next ("since the last read" means
  since the last read of the feed; a contents read is not one).  The first feed read
  starts at epoch 0.  A snapshot followed by exactly the later changes: empty the feed,
  then read contents (no epoch can be computed between two calls).

>>> import diffflow as dd
>>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
>>> a.insert([5]); flow.advance(); out
<Output 1 Schema(x: int)>
"""
from __future__ import annotations

import numpy as np

from diffflow.api.frames import frame
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
        """``{row: multiplicity}`` of the collection after the last computed epoch (a read of
        contents: it leaves the change feed of :meth:`changes` as it is).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([3, 3, 4]); flow.advance(); out.snapshot()
        {(3,): 2, (4,): 1}
        """
        runtime = self.flow._reader()
        if runtime is None:  # not run yet, or closed
            return {}
        rows, diffs = runtime.output_contents(self.node.id)
        return dict(zip(self._decode(rows), diffs.tolist()))

    def changes(self) -> list:
        """The change feed: ``[(row, epoch, diff), ...]`` not handed out yet, consolidated, by
        epoch then row.  One feed per output, shared with :meth:`changes_dataframe` (each
        change goes once to whichever asks next); contents reads do not move it.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([1]); flow.advance(); a.remove([1]); a.insert([2]); flow.advance()
        >>> out.changes()
        [((1,), 0, 1), ((1,), 1, -1), ((2,), 1, 1)]
        """
        self._check_feed("changes")
        runtime = self.flow._reader()
        if runtime is None:  # not run yet, or closed
            return []
        chunks = runtime.take_output_changes(self.node.id)
        if not chunks:
            return []
        merged = concat(chunks, self.node.schema.width, self.node.dim).consolidated()
        items = list(zip(self._decode(merged.rows), merged.times[:, 0].tolist(),
                         merged.diffs.tolist()))
        return sorted(items, key=lambda item: (item[1], item[0]))

    def _check_feed(self, method: str) -> None:
        if not self.node.params.get("changes", True):
            raise ValueError(f"{method}(): this output keeps no change feed (it was made with "
                             f"output(changes=False)); read snapshot(), or make it with "
                             f"output() to read its changes")

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
        """The current collection as a pandas DataFrame on every runtime: ``to_dataframe("pandas")``.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x", ("s", str)]); out = a.output()
        >>> a.insert([(1, "p")]); flow.advance(); out.to_pandas().values.tolist()
        [[1, 'p']]
        """
        return self.to_dataframe("pandas")

    def to_dataframe(self, kind: str | None = None):
        """The collection after the last computed epoch as a DataFrame, one line per copy of a
        row, sorted by the columns (pandas).  A read of contents, not of the change feed: it
        leaves :meth:`changes` / :meth:`changes_dataframe` as they are.

        ``kind``: ``"pandas"``, or ``"spark"`` (``runtime='spark'`` only: Spark tasks pull each
        partition's rows from its worker, materialised at once, so the DataFrame stays the
        contents of this moment).  By default a Spark DataFrame on the Spark runtime and a
        pandas one on the others.  A row of negative multiplicity cannot be copies:
        read such an output with :meth:`snapshot`.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x", ("s", str)]); out = a.output()
        >>> a.insert([(2, "q"), (1, "p"), (1, "p")]); flow.advance(); out.to_dataframe()
           x  s
        0  1  p
        1  1  p
        2  2  q
        """
        if self._kind(kind, "to_dataframe") == "spark":
            return self.flow._ensure_runtime().output_dataframe(
                self.node.id, self.node.schema, "snapshot")
        runtime, schema = self.flow._reader(), self.node.schema
        if runtime is None:  # not run yet, or closed
            rows, diffs = np.zeros((0, schema.width), np.int64), np.zeros(0, np.int64)
        else:
            rows, diffs = runtime.output_contents(self.node.id)
        if (diffs < 0).any():
            bad = self._decode(rows[diffs < 0][:1])[0]
            raise ValueError(f"output {self.name or self.node.id!r} has negative "
                             f"multiplicities (e.g. {bad!r}); read it with snapshot() instead")
        return frame(np.repeat(rows, diffs, axis=0), schema, self.flow.symbols, {})

    def changes_dataframe(self, kind: str | None = None):
        """The change feed as a DataFrame: the row's columns, ``epoch`` and ``diff``, the same
        changes :meth:`changes` returns (consolidated; pandas: sorted by epoch, then row).

        "Since the last read": an output's change feed hands out each change once, to
        whichever of :meth:`changes` and :meth:`changes_dataframe` asks next, on every
        runtime.  Reads of contents (:meth:`snapshot`, :meth:`to_pandas`,
        :meth:`to_dataframe`) are not reads of the feed: the first feed read returns every
        epoch's changes from epoch 0, whatever was read before.  To follow a snapshot with
        only later changes, empty the feed first (``out.changes(); df = out.to_dataframe()``).

        ``kind`` as for :meth:`to_dataframe`.  The result can be fed to another dataflow's
        :meth:`InputCollection.update_dataframe <diffflow.api.inputs.InputCollection.update_dataframe>`
        (after dropping ``epoch``).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([1, 2]); flow.advance(); a.remove([1]); flow.advance()
        >>> out.to_dataframe().x.tolist()   # contents: the feed is untouched
        [2]
        >>> out.changes_dataframe()
           x  epoch  diff
        0  1      0     1
        1  2      0     1
        2  1      1    -1
        >>> len(out.changes_dataframe())    # each change is handed out once
        0
        """
        self._check_feed("changes_dataframe")
        schema = self.node.schema
        clash = [c for c in ("epoch", "diff") if c in schema.names]
        if clash:
            raise ValueError(f"output {self.name or self.node.id!r} has a column named "
                             f"{clash[0]!r}, which changes_dataframe() adds; read it with "
                             f"changes(), or rename the column")
        if self._kind(kind, "changes_dataframe") == "spark":
            return self.flow._ensure_runtime().output_dataframe(self.node.id, schema, "changes")
        runtime = self.flow._reader()
        chunks = runtime.take_output_changes(self.node.id) if runtime is not None else []
        merged = concat(chunks, schema.width, self.node.dim).consolidated()
        return frame(merged.rows, schema, self.flow.symbols,
                     {"epoch": merged.times[:, 0], "diff": merged.diffs})

    def _kind(self, kind, method: str) -> str:
        spark = self.flow.runtime_name == "spark"
        if kind is None:
            return "spark" if spark else "pandas"
        if kind not in ("pandas", "spark"):
            raise ValueError(f"output {self.name or self.node.id!r}: {method}() takes "
                             f"kind='pandas' or 'spark', not {kind!r}")
        if kind == "spark" and not spark:
            raise TypeError(f"output {self.name or self.node.id!r}: {method}(kind='spark') "
                            f"needs runtime='spark'; on this runtime read pandas (kind='pandas')")
        return kind

    def __repr__(self) -> str:
        return f"<Output {self.name or self.node.id} {self.node.schema!r}>"
