"""A lone min/max whose only values are the int64 extremes (the shortcut's sentinels)."""
import pytest

import diffflow as dd
from tests.support.both_tactics import tactic  # noqa: F401

I64_MAX, I64_MIN = 2 ** 63 - 1, -2 ** 63


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("kind,value", [("min", I64_MAX), ("max", I64_MIN)])
def test_lone_extremum_of_sentinel_value(kind, value, parts):
    flow = dd.Dataflow(partitions=parts)
    a = flow.input("a", ["k", "v"])
    agg = dd.min if kind == "min" else dd.max
    out = a.aggregate(by=["k"], best=agg("v")).output()
    a.insert([(1, value)])
    flow.advance()
    assert out.snapshot() == {(1, value): 1}
    a.insert([(1, 5)])
    flow.advance()
    assert out.snapshot() == {(1, 5): 1}
    a.remove([(1, 5)])
    flow.advance()
    assert out.snapshot() == {(1, value): 1}
    flow.close()


@pytest.mark.parametrize("kind,value", [("min", I64_MAX), ("max", I64_MIN)])
def test_sentinel_value_next_to_another_aggregate_is_fine(kind, value):
    # with a second aggregate the shortcut is off: the general path is right
    flow = dd.Dataflow()
    a = flow.input("a", ["k", "v"])
    agg = dd.min if kind == "min" else dd.max
    out = a.aggregate(by=["k"], best=agg("v"), n=dd.count()).output()
    a.insert([(1, value)])
    flow.advance()
    assert out.snapshot() == {(1, value, 1): 1}
    flow.close()
