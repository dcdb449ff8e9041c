"""Inputs: collections changed from outside, and converting the rows given to them.

An :class:`InputCollection` stages encoded rows (+1/-1 or explicit diffs) at
the open epoch; :meth:`Dataflow.advance <diffflow.Dataflow.advance>` hands
them to the runtime.  The helpers below turn lists of tuples, numpy arrays,
pandas DataFrames and pyarrow tables into one validated sequence per column.

>>> import diffflow as dd
>>> flow = dd.Dataflow(); people = flow.input("people", [("name", str), "age"])
>>> seen = people.output()
>>> people.insert([("ann", 31)]); people.update([("bob", 40)], [2]); flow.advance()
>>> sorted(seen.snapshot().items())
[(('ann', 31), 1), (('bob', 40), 2)]
"""
from __future__ import annotations

import numpy as np

from diffflow.api.collection import Collection
from diffflow.common.schema import Schema, encode_column


class InputCollection(Collection):
    """An input: change it with ``insert``/``remove``/``update``, then ``flow.advance()``."""

    def __init__(self, flow, node, name):
        super().__init__(flow, node)
        self.name = name
        self._staged: list = []

    def insert(self, rows) -> None:
        """Add rows (each once) at the current epoch.

        Accepts a list of tuples, a 2-D numpy array, a pandas DataFrame or a
        pyarrow Table (columns by name); a one-column input also takes scalars.
        Nothing of a call is applied if any row is bad.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); a.insert([1, 2]); a.insert([(3,)])
        """
        encoded = self._encode(rows)
        self._staged.append((encoded, np.ones(len(encoded), np.int64)))

    def remove(self, rows) -> None:
        """Remove rows (each once) at the current epoch; same formats as :meth:`insert`.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); a.remove([(3,)])
        """
        encoded = self._encode(rows)
        self._staged.append((encoded, -np.ones(len(encoded), np.int64)))

    def update(self, rows, diffs) -> None:
        """Change the multiplicity of each row by the matching entry of ``diffs``.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); a.update([(1,), (2,)], [3, -1])
        """
        encoded = self._encode(rows)
        diffs_arr = _as_diffs(diffs, len(encoded), self.name)
        self._staged.append((encoded, diffs_arr))

    def insert_dataframe(self, df) -> None:
        """Add the rows of a Spark DataFrame at the current epoch (Spark runtime only).

        Spark tasks push the rows straight to the partition workers as Arrow
        batches (nothing is collected on the driver).  Columns must match the
        input's names and types; on any error nothing is staged.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"])
        >>> a.insert_dataframe(None)
        Traceback (most recent call last):
        TypeError: input 'a': insert_dataframe needs runtime='spark'; on this runtime pass rows (e.g. df.toPandas()) to insert()
        """
        self._push_dataframe(df, +1)

    def remove_dataframe(self, df) -> None:
        """Remove the rows of a Spark DataFrame at the current epoch (see :meth:`insert_dataframe`).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"])
        >>> a.remove_dataframe(None)
        Traceback (most recent call last):
        TypeError: input 'a': remove_dataframe needs runtime='spark'; on this runtime pass rows (e.g. df.toPandas()) to remove()
        """
        self._push_dataframe(df, -1)

    def update_dataframe(self, df) -> None:
        """Apply a DataFrame of changes: the input's columns plus an integer ``diff`` column.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"])
        >>> a.update_dataframe(None)
        Traceback (most recent call last):
        TypeError: input 'a': update_dataframe needs runtime='spark'; on this runtime pass rows (e.g. df.toPandas()) to update()
        """
        self._push_dataframe(df, None)

    def _push_dataframe(self, df, sign) -> None:
        method = {1: "insert", -1: "remove", None: "update"}[sign]
        if self.flow.runtime_name != "spark":
            raise TypeError(f"input {self.name!r}: {method}_dataframe needs runtime='spark'; on "
                            f"this runtime pass rows (e.g. df.toPandas()) to {method}()")
        if not hasattr(df, "mapInArrow"):
            raise TypeError(f"input {self.name!r}: {method}_dataframe expects a Spark DataFrame, "
                            f"got {type(df).__name__}")
        runtime = self.flow._ensure_runtime()
        runtime.push_dataframe(self.node.id, self.schema, df, sign, self.name)

    def _stage_encoded(self, rows: np.ndarray, diffs: np.ndarray) -> None:
        """Stage rows already encoded by :meth:`_encode` (no second validation)."""
        self.flow._check_open(f"change input {self.name!r}")
        self._staged.append((rows, diffs))

    def _encode(self, data, labels=None) -> np.ndarray:
        """Validated int64 rows; ``labels`` name the columns in errors (default: the input's)."""
        self.flow._check_open(f"change input {self.name!r}")
        columns = _columns_of(data, self.schema, self.name)
        schema, symbols = self.schema, self.flow.symbols
        n = len(columns[0]) if columns else _row_count(data)
        rows = np.empty((n, schema.width), np.int64)
        for j, (name, kind) in enumerate(zip(schema.names, schema.types)):
            where = labels[j] if labels else f"input {self.name!r} column {name!r}"
            rows[:, j] = encode_column(columns[j], kind, symbols, where)
        return rows


def restage(staged: dict, wanted: dict) -> dict:
    """Move inputs from the rows they were given to new ones: for each input in either dict,
    remove its ``staged`` rows and insert its ``wanted`` ones (the request inputs of an
    explanation, one proof level per epoch).  Returns the new ``{input: rows}``.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
    >>> now = restage({}, {a: [(1,), (2,)]}); flow.advance()
    >>> _ = restage(now, {a: [(3,)]}); flow.advance(); sorted(out.snapshot())
    [(3,)]
    """
    for handle in set(staged) | set(wanted):
        old, new = staged.get(handle, []), wanted.get(handle, [])
        if old:
            handle.remove(old)
        if new:
            handle.insert(new)
    return {handle: rows for handle, rows in wanted.items() if rows}


def _row_count(data) -> int:
    try:
        return len(data)
    except TypeError:
        return 0


def _columns_of(data, schema: Schema, name: str) -> list:
    """Split user data into one sequence per schema column, validating shape."""
    width = schema.width
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        missing = [c for c in schema.names if c not in data.columns]
        extra = [c for c in data.columns if c not in schema.names]
        if missing or extra:
            raise ValueError(f"input {name!r}: DataFrame columns {list(data.columns)} do not "
                             f"match the input's columns {list(schema.names)}")
        return [_plain(data[c].to_numpy()) for c in schema.names]
    if module == "pyarrow":
        got = list(data.column_names)
        if sorted(got) != sorted(schema.names):
            raise ValueError(f"input {name!r}: table columns {got} do not match the input's "
                             f"columns {list(schema.names)}")
        return [_plain(data.column(c).to_numpy(zero_copy_only=False)) for c in schema.names]
    if isinstance(data, np.ndarray) and data.dtype != object:
        if data.ndim == 1 and width == 1:
            return [data]
        if data.ndim != 2 or data.shape[1] != width:
            raise ValueError(f"input {name!r}: array of shape {data.shape} does not have "
                             f"{width} columns {list(schema.names)}")
        return [data[:, j] for j in range(width)]
    if isinstance(data, (str, bytes)) or not hasattr(data, "__iter__"):
        raise TypeError(f"input {name!r}: expected rows (a list of tuples, an array or a "
                        f"DataFrame), got {type(data).__name__}")
    rows = list(data)
    for i, row in enumerate(rows):
        if isinstance(row, (tuple, list)):
            if len(row) != width:
                raise ValueError(f"input {name!r}: row {i} {tuple(row)!r} has {len(row)} values; "
                                 f"expected {width} for columns {list(schema.names)}")
        elif width == 1 and not isinstance(row, np.ndarray):
            rows[i] = (row,)
        else:
            raise ValueError(f"input {name!r}: row {i} {row!r} is not a tuple of {width} "
                             f"values for columns {list(schema.names)}")
    if not rows:
        return [[] for _ in range(width)]
    return [list(c) for c in zip(*rows)]


def _plain(values: np.ndarray) -> np.ndarray:
    if values.dtype == object:
        return values.tolist()
    return values


def _as_diffs(diffs, n: int, name: str) -> np.ndarray:
    values = list(diffs) if not isinstance(diffs, np.ndarray) else diffs
    arr = np.asarray(values)
    if arr.shape != (n,):
        raise ValueError(f"input {name!r}: update() got {arr.shape[0] if arr.ndim else 0} diffs "
                         f"for {n} rows")
    if arr.dtype.kind not in "iu" and n:
        raise TypeError(f"input {name!r}: diffs must be integers, got {arr.dtype}")
    return arr.astype(np.int64)

