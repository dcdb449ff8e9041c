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
from diffflow.common.missing import first_missing, missing_message
from diffflow.common.schema import Schema, encode_column, encode_floats

_NAN_CODE = int(encode_floats(np.array([np.nan]))[0])


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
        """Add the rows of a DataFrame at the current epoch, on every runtime.

        Takes a pandas DataFrame (or a pyarrow Table), or on ``runtime='spark'`` also a
        Spark DataFrame, whose tasks push the rows straight to the partition workers as
        Arrow batches (nothing is collected on the driver).  Columns must match the
        input's names (any order) and types; a missing value (None, NaN, NA, null) is
        refused with its column and row (:mod:`diffflow.common.missing`: ``df.dropna()``
        or ``df.fillna(...)`` first).  On any error nothing is staged.

        >>> import diffflow as dd, pandas as pd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x", ("s", str)]); out = a.output()
        >>> a.insert_dataframe(pd.DataFrame({"x": [1, 2], "s": ["p", "q"]})); flow.advance()
        >>> out.to_dataframe().values.tolist()
        [[1, 'p'], [2, 'q']]
        >>> a.insert_dataframe(pd.DataFrame({"x": [3, None], "s": ["r", "t"]}))
        Traceback (most recent call last):
        ValueError: input 'a' column 'x': 1 missing value (None/NaN/NA), the first in row 1. diffflow has no nulls and reads NaN as missing (as pandas does): drop those rows (df.dropna(subset=['x'])) or fill them (df.fillna({'x': 0})) first
        """
        self._apply_dataframe(df, +1)

    def remove_dataframe(self, df) -> None:
        """Remove the rows of a DataFrame at the current epoch (see :meth:`insert_dataframe`).

        >>> import diffflow as dd, pandas as pd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.insert([1, 2]); a.remove_dataframe(pd.DataFrame({"x": [1]})); flow.advance()
        >>> out.snapshot()
        {(2,): 1}
        """
        self._apply_dataframe(df, -1)

    def update_dataframe(self, df) -> None:
        """Apply a DataFrame of changes: the input's columns plus an integer ``diff`` column
        (the multiplicity change of each row: ``1`` adds it, ``-1`` removes it), the shape
        :meth:`Output.changes_dataframe <diffflow.api.outputs.Output.changes_dataframe>`
        returns.  Same DataFrames and rules as :meth:`insert_dataframe`.

        >>> import diffflow as dd, pandas as pd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
        >>> a.update_dataframe(pd.DataFrame({"x": [1, 2], "diff": [3, -1]})); flow.advance()
        >>> sorted(out.snapshot().items())
        [((1,), 3), ((2,), -1)]
        """
        self._apply_dataframe(df, None)

    def _apply_dataframe(self, df, sign) -> None:
        method = {1: "insert", -1: "remove", None: "update"}[sign]
        where = f"input {self.name!r}: {method}_dataframe"
        if sign is None and "diff" in self.schema.names:
            raise ValueError(f"{where} reads the diffs from a column named 'diff', but the "
                             f"input has a column of that name; use update(rows, diffs)")
        if hasattr(df, "mapInArrow"):  # a Spark DataFrame
            if self.flow.runtime_name != "spark":
                raise TypeError(f"{where} got a Spark DataFrame, which needs runtime='spark'; "
                                f"on this runtime pass df.toPandas()")
            if self.flow.durable:  # (its rows never pass through this process to be logged)
                raise ValueError(f"{where}: a durable dataflow logs the rows it is given, and "
                                 f"a Spark DataFrame's rows stay on the executors; pass "
                                 f"df.toPandas() (or rows), or use a dataflow without "
                                 f"durable=True")
            runtime = self.flow._ensure_runtime()
            runtime.push_dataframe(self.node.id, self.schema, df, sign, self.name)
            return
        module = type(df).__module__.split(".")[0]
        if module not in ("pandas", "pyarrow"):
            spark = " (or a Spark DataFrame on runtime='spark')"
            raise TypeError(f"{where} expects a pandas DataFrame{spark}, got "
                            f"{type(df).__name__}; pass rows to {method}()")
        if sign is not None:
            encoded = self._encode(df)
            self._staged.append((encoded, np.full(len(encoded), sign, np.int64)))
            return
        pandas = module == "pandas"
        names = list(df.columns) if pandas else list(df.column_names)
        if "diff" not in names:
            raise ValueError(f"{where} needs a 'diff' column beside the input's columns "
                             f"{list(self.schema.names)}; got columns {names}")
        diffs = (df["diff"].to_numpy() if pandas
                 else df.column("diff").to_numpy(zero_copy_only=False))
        _refuse_missing(diffs, df, self.name, "diff")
        if diffs.dtype.kind not in "iu":
            raise TypeError(f"{where}: column 'diff' must hold integers, got {diffs.dtype}; "
                            f"cast it (df['diff'].astype('int64'))")
        self.update(df.drop(columns="diff") if pandas else df.drop(["diff"]), diffs)

    def _stage_encoded(self, rows: np.ndarray, diffs: np.ndarray) -> None:
        """Stage rows already encoded by :meth:`_encode` (no second validation)."""
        self.flow._check_open(f"change input {self.name!r}")
        self._staged.append((rows, diffs))

    def _encode(self, data, labels=None, ieee: bool = False) -> np.ndarray:
        """Validated int64 rows; ``labels`` name the columns in errors (default: the input's).
        ``ieee``: NaN is a float, not a missing value (Datalog's facts, as in Soufflé)."""
        self.flow._check_open(f"change input {self.name!r}")
        columns = _columns_of(data, self.schema, self.name)
        schema, symbols = self.schema, self.flow.symbols
        n = len(columns[0]) if columns else _row_count(data)
        rows = np.empty((n, schema.width), np.int64)
        for j, (name, kind) in enumerate(zip(schema.names, schema.types)):
            where = labels[j] if labels else f"input {self.name!r} column {name!r}"
            values = columns[j]
            try:
                rows[:, j] = encode_column(values, kind, symbols, where)
            except TypeError:  # (a gap in an int column arrives as floats with NaN)
                if not ieee:
                    _refuse_missing(values, data, self.name, name)  # a better reason, if any
                raise
            if kind == "float" and not ieee and (rows[:, j] == _NAN_CODE).any():
                _refuse_missing(values, data, self.name, name)  # (every NaN encodes as one)
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


def _refuse_missing(values, data, input_name: str, column: str) -> None:
    """Raise the located error of :mod:`diffflow.common.missing` if ``values`` has a gap."""
    found = first_missing(values)
    if found is None:
        return
    count, i = found
    row = i
    index = getattr(data, "index", None)  # a pandas DataFrame's row labels
    if index is not None and type(data).__module__.split(".")[0] == "pandas" and index[i] != i:
        label = index[i].item() if isinstance(index[i], np.generic) else index[i]
        row = f"{i} (index label {label!r})"
    raise ValueError(missing_message(f"input {input_name!r}", column, count, row))


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

