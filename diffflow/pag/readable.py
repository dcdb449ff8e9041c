"""How ``diffflow pag`` shows durations and operators to a person: one unit per column, one name per operator.

Traces count time in nanoseconds; a column of ``3038746456`` is hard to read.
:func:`duration_unit` picks the unit of a column from its largest value
(``s``, ``ms`` or ``us``), :func:`format_duration` writes one duration, and
:func:`readable_frame` converts every time column of a table (``duration_ns``,
``start``, ``end``, ``total_ns``) and renames it after its unit
(``duration_ms``, ``start_s``...).  ``raw=True`` leaves nanoseconds.

Operators are named one way everywhere (``pag cp``, ``pag invariants``, the
dashboard): :func:`operator_label` gives ``"name (id N)"``, where the name is
what the trace logged for the operator (its label -- a Datalog rule, a
collection call -- and where it was built, ``file:line``).

>>> format_duration(3_038_746_456), format_duration(250_000), format_duration(12, raw=True)
('3.039 s', '250.000 us', '12 ns')
>>> operator_label(24, {24: "aggregate ['label'] by ['node'] at flow.py:12"})
"aggregate ['label'] by ['node'] at flow.py:12 (id 24)"
"""
from __future__ import annotations

import numpy as np

#: (unit, nanoseconds in one) from the largest; a column takes the first its largest value reaches
UNITS = (("s", 10**9), ("ms", 10**6), ("us", 10**3))

#: time columns of the pag tables (nanoseconds) and the stem of their readable name
TIME_COLUMNS = {"duration_ns": "duration", "total_ns": "total", "start": "start", "end": "end",
                "duration": "duration"}   # (the last three: as the patterns of queries/pag/ name them)


def duration_unit(values_ns) -> tuple:
    """``(unit, ns per unit)`` that shows the largest of ``values_ns`` with 1 to 3 integer digits
    (seconds from 1 s on, milliseconds from 1 ms, else microseconds).

    >>> duration_unit([5_000, 2_500_000]), duration_unit([]), duration_unit([4 * 10**9])
    (('ms', 1000000), ('ms', 1000000), ('s', 1000000000))
    """
    values = np.abs(np.asarray([v for v in values_ns if v is not None and v == v], dtype=float))
    if not len(values):
        return "ms", 10**6
    top = float(values.max())
    for unit, scale in UNITS:
        if top >= scale:
            return unit, scale
    return UNITS[-1]


def format_duration(ns, raw: bool = False) -> str:
    """One duration for a person: ``"3.039 s"``, ``"0.250 ms"``; ``raw`` gives ``"3038746456 ns"``.

    >>> format_duration(999_999), format_duration(1_500_000)
    ('999.999 us', '1.500 ms')
    """
    if raw:
        return f"{int(ns)} ns"
    unit, scale = duration_unit([ns])
    return f"{ns / scale:.3f} {unit}"


def readable_frame(frame, raw: bool = False, units: dict | None = None):
    """A copy of ``frame`` whose time columns (:data:`TIME_COLUMNS`, ns) are in the unit that suits
    each column, named after it (``duration_ns`` -> ``duration_ms``); ``raw`` keeps nanoseconds
    and only names them (``start`` -> ``start_ns``).  ``units`` (column -> ``(unit, scale)``)
    fixes the units of columns it has and learns those it lacks: the tables of a followed trace
    keep the unit their first table chose.

    >>> import pandas as pd
    >>> readable_frame(pd.DataFrame({"count": [2], "duration_ns": [3_038_746_456]})).to_dict("records")
    [{'count': 2, 'duration_s': 3.038746456}]
    >>> readable_frame(pd.DataFrame({"start": [5]}), raw=True).columns.tolist()
    ['start_ns']
    """
    out = frame.copy()
    units = {} if units is None else units
    names = {}
    for column, stem in TIME_COLUMNS.items():
        if column not in out.columns:
            continue
        if raw:
            names[column] = f"{stem}_ns"
            continue
        values = out[column].astype("float64")
        if column not in units:
            units[column] = duration_unit(values.tolist())
        unit, scale = units[column]
        out[column] = values / scale
        names[column] = f"{stem}_{unit}"
    return out.rename(columns=names)


def table_text(frame, raw: bool = False, header: bool = True, units: dict | None = None) -> str:
    """``frame`` as the text table the CLI prints: readable units (:func:`readable_frame`), three
    decimals, ``-`` where there is no value.

    >>> import pandas as pd
    >>> print(table_text(pd.DataFrame({"kind": ["epoch"], "peer": pd.array([None], "Int64"),
    ...                                "duration_ns": [2_500_000]})))
     kind peer duration_ms
    epoch    -       2.500
    """
    import pandas as pd

    shown = readable_frame(frame, raw, units)
    for column in shown.columns:
        values = shown[column]
        if pd.api.types.is_float_dtype(values):
            shown[column] = [f"{v:.3f}" if v == v else "-" for v in values.tolist()]
        elif values.isna().any():   # nullable integers print <NA>: a dash reads better
            shown[column] = ["-" if pd.isna(v) else v for v in values.astype(object).tolist()]
    return shown.to_string(index=False, header=header)


def operator_label(op, names: dict) -> str:
    """The one way the pag tools name operator ``op``: ``"name (id N)"``, or ``"id N"`` when the
    trace logged no name for it.

    >>> operator_label(3, {3: "distinct"}), operator_label(7, {})
    ('distinct (id 3)', 'id 7')
    """
    op = int(op)
    name = names.get(op)
    return f"{name} (id {op})" if name else f"id {op}"


def with_operator_labels(frame, names: dict):
    """A copy of a violations frame whose ``operator`` column holds :func:`operator_label` s.

    >>> import pandas as pd
    >>> with_operator_labels(pd.DataFrame({"operator": [4, None]}), {4: "join"})["operator"].tolist()
    ['join (id 4)', None]
    """
    import pandas as pd

    out = frame.copy()
    if "operator" in out.columns:
        labels = [None if pd.isna(o) else operator_label(o, names) for o in out["operator"].tolist()]
        out["operator"] = pd.Series(labels, index=out.index, dtype=object)
    return out


__all__ = ["UNITS", "TIME_COLUMNS", "duration_unit", "format_duration", "readable_frame", "table_text",
           "operator_label", "with_operator_labels"]
