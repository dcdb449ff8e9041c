"""DataFrames in and out, the same on every runtime (tests/runtime/test_spark.py runs
:func:`check_dataframes` on Spark with its shared session).

One dataflow per runtime goes through a few epochs of inserts, removes and updates given as
DataFrames; every read (contents and change feed, as DataFrames and as lists) is compared
with an answer computed independently from a ``Counter`` of the rows given.  It also checks
the change feed's "since the last read" (contents reads do not consume it), the missing-value
rule for int, float and str columns (a located error, nothing staged), and that
``changes_dataframe`` feeds ``update_dataframe``.
"""
from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

import diffflow as dd

COLUMNS = ["shop", "item", "price"]


def _frame(rows, typed: bool = True) -> pd.DataFrame:
    df = pd.DataFrame(list(rows), columns=COLUMNS)
    return df.astype({"item": "int64", "price": "float64"}) if typed else df


def _as_rows(df) -> list:
    """A DataFrame's rows as plain tuples: a pandas one's in its order (part of what is
    checked), a Spark one's sorted by row then epoch (it has no order) as expected ones are."""
    if hasattr(df, "toPandas"):
        return sorted((tuple(r) for r in df.collect()), key=_epoch_first)
    return [tuple(r) for r in df.itertuples(index=False)]


def _epoch_first(row: tuple) -> tuple:
    return (row[3],) + row[:3] if len(row) > 3 else row  # (a change: row, epoch, diff)


def _expected_contents(counts: Counter) -> list:
    return sorted(row for row, n in counts.items() for _ in range(n))


def _expected_changes(history: list, since: int) -> list:
    """The feed from epoch ``since`` on: each epoch's multiset difference, by epoch then row."""
    out = []
    for epoch in range(since, len(history)):
        before = history[epoch - 1] if epoch else Counter()
        after = history[epoch]
        for row in sorted(set(before) | set(after)):
            if after[row] != before[row]:
                out.append(row + (epoch, after[row] - before[row]))
    return out


def check_dataframes(spark=None, **options) -> None:
    """Drive and read one dataflow built with ``options`` (with ``spark``: an insert, an
    update and a feed given back are Spark DataFrames, and reads default to Spark ones)."""
    on_spark = spark is not None
    flow = dd.Dataflow(spark=spark, **options)
    sales = flow.input("sales", [("shop", str), ("item", int), ("price", float)])
    copy = flow.input("copy", [("shop", str), ("item", int), ("price", float)])
    out, copied = sales.output(), copy.output()
    to_spark = spark.createDataFrame if on_spark else (lambda df: df)
    counts, history = Counter(), []

    def advance():
        flow.advance()
        history.append(Counter(counts))

    # epoch 0: a pandas insert; epoch 1: a remove and an insert (a Spark DataFrame on Spark)
    first = [("oslo", 1, 2.5), ("lima", 2, 0.25), ("oslo", 1, 2.5), ("rome", 3, -1.0)]
    sales.insert_dataframe(_frame(first))
    counts.update(first)
    advance()
    assert _as_rows(out.to_dataframe()) == _expected_contents(counts)
    sales.remove_dataframe(_frame([("oslo", 1, 2.5)]))  # pandas on Spark too
    sales.insert_dataframe(to_spark(_frame([("kyiv", 4, 8.0)])))
    counts.subtract([("oslo", 1, 2.5)])
    counts.update([("kyiv", 4, 8.0)])
    advance()
    # contents reads do not consume the feed: its first read starts at epoch 0
    assert _as_rows(out.to_dataframe()) == _expected_contents(counts)
    assert _as_rows(out.to_dataframe(kind="pandas")) == _expected_contents(counts)
    feed = out.changes_dataframe()
    assert list(feed.columns) == COLUMNS + ["epoch", "diff"]
    assert _as_rows(feed) == _expected_changes(history, 0)
    assert len(_as_rows(out.changes_dataframe())) == 0  # each change handed out once
    # epoch 2: update_dataframe with a diff column (+2 of a new row, -1 of an old one)
    update = _frame([("lima", 5, 1.5), ("rome", 3, -1.0)]).assign(diff=[2, -1])
    sales.update_dataframe(to_spark(update))
    counts.update({("lima", 5, 1.5): 2})
    counts.subtract([("rome", 3, -1.0)])
    advance()
    pandas_feed = out.changes_dataframe(kind="pandas")
    assert _as_rows(pandas_feed) == _expected_changes(history, 2)
    assert out.changes() == []  # list and DataFrame reads share one feed
    # the feed as read, given to update_dataframe, rebuilds the collection
    copy.update_dataframe(feed.drop("epoch") if on_spark else feed.drop(columns="epoch"))
    copy.update_dataframe(pandas_feed.drop(columns="epoch"))
    advance()
    assert _as_rows(copied.to_dataframe()) == _expected_contents(counts)
    assert out.snapshot() == copied.snapshot() == dict(+counts)

    # missing values: refused with the column, the row and the fix; nothing staged
    gaps = {"item": [("oslo", 1, 1.0), ("oslo", None, 1.0)],
            "price": [("oslo", 1, 1.0), ("oslo", 2, float("nan"))],
            "shop": [("oslo", 1, 1.0), (None, 2, 1.0)]}
    for column, rows in gaps.items():
        with pytest.raises(ValueError, match=rf"input 'sales' column '{column}': 1 missing "
                                             rf"value .*the first in row 1\..*df\.dropna"):
            sales.insert_dataframe(_frame(rows, typed=False))
    with pytest.raises(ValueError, match=r"column 'diff': 1 missing value"):
        sales.update_dataframe(_frame(first[:2]).assign(diff=[1, None]))
    with pytest.raises(ValueError, match=r"column 'price': 1 missing value"):
        sales.insert([("oslo", 1, float("nan"))])  # rows as tuples follow the same rule
    if on_spark:  # a NaN found by a Spark task (nulls: test_spark.py's error test)
        df = spark.createDataFrame(gaps["price"], "shop string, item long, price double")
        with pytest.raises(ValueError, match=r"column 'price': has missing values "
                                             r"\(null/NaN\).*dropna"):
            sales.insert_dataframe(df)
    advance()
    assert out.snapshot() == dict(+counts)
    assert len(_as_rows(out.changes_dataframe())) == 0
    flow.close()


@pytest.mark.local_runtime  # each case picks its runtime
@pytest.mark.parametrize("runtime,parts", [("local", 1), ("local", 2), ("cluster", 2),
                                           ("processes", 2)])
def test_dataframes_mean_the_same_on_every_runtime(runtime, parts):
    check_dataframes(runtime=runtime, partitions=parts)


def test_dataframe_errors_say_what_to_pass():
    flow = dd.Dataflow()
    a = flow.input("a", [("x", int), ("diff", int)])
    b = flow.input("b", ["x"])
    out = b.output()
    with pytest.raises(ValueError, match=r"input has a column of that name; use update"):
        a.update_dataframe(pd.DataFrame({"x": [1], "diff": [1]}))
    with pytest.raises(ValueError, match=r"needs a 'diff' column"):
        b.update_dataframe(pd.DataFrame({"x": [1]}))
    with pytest.raises(TypeError, match=r"column 'diff' must hold integers, got float64; cast"):
        b.update_dataframe(pd.DataFrame({"x": [1], "diff": [0.5]}))
    with pytest.raises(TypeError, match=r"expects a pandas DataFrame .*got list; pass rows "
                                        r"to insert\(\)"):
        b.insert_dataframe([(1,)])
    with pytest.raises(ValueError, match=r"column named 'diff', which changes_dataframe"):
        a.output().changes_dataframe()
    with pytest.raises(TypeError, match=r"kind='spark'\) needs runtime='spark'"):
        out.to_dataframe(kind="spark")
    # a pandas index is named where it is not the row's position
    df = pd.DataFrame({"x": [1.0, None]}, index=[10, 11])
    with pytest.raises(ValueError, match=r"the first in row 1 \(index label 11\)"):
        b.insert(df)
    flow.advance()
    assert out.snapshot() == {}


def test_datalog_floats_stay_ieee():
    """The missing-value rule is the collection API's: a Datalog fact's NaN is a float, as in
    Soufflé, while an input of the collection API refuses it."""
    program = dd.Program(".decl f(x: float)\n.output f")
    program.insert("f", pd.DataFrame({"x": [float("nan"), 1.0]}))
    program.commit()
    assert sorted(str(x) for (x,) in program.relation("f")) == ["1.0", "nan"]
    flow = dd.Dataflow()
    with pytest.raises(ValueError, match=r"input 'f' column 'x': 1 missing value"):
        flow.input("f", [("x", float)]).insert([(float("nan"),), (1.0,)])
