"""Output rows as pandas DataFrames, the same on every runtime.

One function, :func:`frame`: encoded rows (plus extra int64 columns such as ``epoch``
and ``diff``) decoded column by column into an Arrow table, sorted by Arrow (columns
in order: ``epoch`` first when given, then the row's columns; strings by code point,
NaN after every number) and converted to pandas -- no per-row Python.  Going through
Arrow gives every column type one pandas dtype whether the frame is empty or not
(``int64``, ``float64``, ``bool``, and pandas' string dtype for ``str``), the dtypes
``toPandas()`` of the Spark runtime's DataFrames gives too.

>>> import numpy as np
>>> from diffflow.common.schema import Schema, SymbolTable
>>> symbols = SymbolTable(); schema = Schema.of(["k", ("s", str)])
>>> rows = np.stack([[2, 1], symbols.encode(["b", "a"])], axis=1)
>>> frame(rows, schema, symbols).values.tolist()
[[1, 'a'], [2, 'b']]
"""
from __future__ import annotations

import numpy as np

from diffflow.common.schema import Schema, SymbolTable, decode_array


def frame(rows: np.ndarray, schema: Schema, symbols: SymbolTable, extra: dict | None = None):
    """A pandas DataFrame of ``rows`` decoded by ``schema``, then ``extra``'s int64 columns,
    sorted by ``epoch`` (when in ``extra``) and then the row's columns.

    >>> from diffflow.common.schema import Schema, SymbolTable
    >>> frame(np.array([[3], [1]]), Schema.of(["x"]), SymbolTable(),
    ...       {"epoch": np.array([0, 1]), "diff": np.array([1, -1])})
       x  epoch  diff
    0  3      0     1
    1  1      1    -1
    """
    import pandas as pd
    import pyarrow as pa

    arrow = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "str": pa.string()}
    columns = {name: pa.array(decode_array(rows[:, j], kind, symbols), arrow[kind])
               for j, (name, kind) in enumerate(zip(schema.names, schema.types))}
    for name, values in (extra or {}).items():
        columns[name] = pa.array(np.asarray(values, np.int64), pa.int64())
    if not columns:  # a zero-width snapshot: only how many rows
        return pd.DataFrame(index=pd.RangeIndex(len(rows)))
    keys = (["epoch"] if "epoch" in columns else []) + list(schema.names)
    table = pa.table(columns)
    if keys and table.num_rows > 1:
        table = table.sort_by([(key, "ascending") for key in keys])
    return table.to_pandas()
