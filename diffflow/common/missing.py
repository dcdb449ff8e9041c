"""Missing values: the collection API has none, and says so where one comes in.

The rule (one for every column type and every way rows come in -- lists of tuples,
numpy arrays, pandas DataFrames, pyarrow tables, Spark DataFrames -- on every runtime):
an input row is a tuple of values, and ``None``, ``NaN``, ``pd.NA``, ``NaT`` and
Spark/Arrow nulls are *missing*, not values.  An input that gets one refuses the whole
call (nothing is staged) with a ``ValueError`` naming the input, the column, how many
are missing, the first row, and the fix: ``df.dropna(...)`` or ``df.fillna(...)``.

Why reject rather than read NaN as a number: pandas writes a missing value as NaN
(an int column with a gap becomes float), SQL engines (DuckDB, Spark) read NULL as
"unknown", and an exact incremental engine with no nulls can only give NaN the meaning
of a number -- ``sum`` would turn NaN and ``min``/``max`` would order it above every
float, silently.  A rejection costs one ``dropna``/``fillna`` and never a wrong answer.

Computed values are not inputs: a float expression may still give NaN (IEEE), and the
Datalog front end keeps Soufflé's IEEE floats (its facts do not pass through here).

>>> first_missing(np.array([1.0, np.nan, np.nan]))
(2, 1)
>>> first_missing(["a", None]), first_missing(np.array([1, 2]))
((1, 1), None)
"""
from __future__ import annotations

import numpy as np

_MISSING_TYPES = ("NAType", "NaTType")  # pandas' pd.NA and pd.NaT (no pandas import here)


def _is_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, (float, np.floating)):
        return value != value
    return type(value).__name__ in _MISSING_TYPES


def first_missing(values) -> tuple[int, int] | None:
    """``(how many, first position)`` of the missing values in a column, else ``None``.

    A numpy array of a non-object dtype is checked at once (NaN only for floats); other
    sequences value by value (the slow path lists of tuples already take).

    >>> first_missing([1, 2, 3]) is None
    True
    """
    if isinstance(values, np.ndarray) and values.dtype != object:
        if values.dtype.kind not in "fc":
            return None
        mask = np.isnan(values)
    else:
        mask = np.fromiter((_is_missing(v) for v in values), bool)
    count = int(mask.sum())
    return (count, int(mask.argmax())) if count else None


def missing_message(where: str, column: str, count: int | None, row=None,
                    spark: bool = False) -> str:
    """The error text for ``count`` missing values of ``column`` (the first at ``row``;
    ``count=None``: an unknown number, e.g. those one Spark task found).

    >>> print(missing_message("input 'sales'", "amount", 2, row=3))
    input 'sales' column 'amount': 2 missing values (None/NaN/NA), the first in row 3. diffflow has no nulls and reads NaN as missing (as pandas does): drop those rows (df.dropna(subset=['amount'])) or fill them (df.fillna({'amount': 0})) first
    """
    first = "" if row is None else f", the first in row {row}"
    kinds = "null/NaN" if spark else "None/NaN/NA"
    many = "has missing values" if count is None else \
        f"{count} missing value{'s' if count != 1 else ''}"
    return (f"{where} column {column!r}: {many} "
            f"({kinds}){first}. diffflow has no nulls and reads NaN as missing (as pandas "
            f"does): drop those rows (df.dropna(subset=[{column!r}])) or fill them "
            f"(df.fillna({{{column!r}: 0}})) first")
