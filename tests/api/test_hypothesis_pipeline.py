"""Hypothesis drives arbitrary update sequences through a join + aggregate + distinct pipeline."""
from collections import Counter, defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

import diffflow as dd
import pytest

update = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 3), st.integers(0, 3),
                   st.sampled_from([1, 1, -1]))


def oracle(state):
    joined = Counter()
    for (k, x), m in state["a"].items():
        for (k2, y), n in state["b"].items():
            if k == k2:
                joined[(k, x, y)] += m * n
    groups = defaultdict(Counter)
    for (k, x, y), m in joined.items():
        groups[x][(k, y)] += m
    out = Counter()
    for x, g in groups.items():
        if any(m > 0 for m in g.values()):
            out[(x, sum(g.values()))] += 1
    return {k: v for k, v in out.items() if v}


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(update, max_size=6), min_size=1, max_size=6), st.sampled_from([1, 3]))
def test_join_aggregate_matches_oracle(epochs, parts):
    flow = dd.Dataflow(partitions=parts)
    a = flow.input("a", ["k", "x"])
    b = flow.input("b", ["k", "y"])
    out = a.join(b, on="k").aggregate(by=["x"], n=dd.count()).output()
    state = {"a": Counter(), "b": Counter()}
    handles = {"a": a, "b": b}
    for changes in epochs:
        for name, k, v, d in changes:
            handles[name].update([(k, v)], [d])
            state[name][(k, v)] += d
        flow.advance()
        assert out.snapshot() == oracle(state)
