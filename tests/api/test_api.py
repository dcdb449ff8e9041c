"""The public API: input formats, column types, outputs, epochs in flight."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import diffflow as dd


@pytest.mark.parametrize("parts", [1, 3])
def test_input_formats_agree(parts):
    rows = [(1, 10), (2, 20), (2, 20), (3, 30)]
    formats = [rows, np.array(rows), pd.DataFrame(rows, columns=["k", "v"]),
               pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows]})]
    snapshots = []
    for data in formats:
        flow = dd.Dataflow(partitions=parts)
        c = flow.input("c", ["k", "v"])
        out = c.output()
        c.insert(data)
        flow.advance()
        snapshots.append(out.snapshot())
    assert snapshots[0] == {(1, 10): 1, (2, 20): 2, (3, 30): 1}
    assert all(s == snapshots[0] for s in snapshots)


def test_one_column_input_takes_scalars():
    flow = dd.Dataflow()
    c = flow.input("c", ["x"])
    out = c.output()
    c.insert([1, 2, 2])
    c.insert(np.array([5]))
    flow.advance()
    assert out.snapshot() == {(1,): 1, (2,): 2, (5,): 1}


@pytest.mark.parametrize("parts", [1, 3])
def test_str_float_bool_columns_round_trip(parts):
    flow = dd.Dataflow(partitions=parts)
    people = flow.input("people", [("name", str), ("city", str), ("height", float), ("adult", bool)])
    cities = flow.input("cities", [("city", str), ("country", str)])
    joined = people.join(cities, on="city")
    stats = joined.aggregate(by=["country"], n=dd.count(), tallest=dd.max("height"),
                             total=dd.sum("height"))
    adults = joined.filter(dd.col("adult") & (dd.col("country") == "FR")).select("name")
    s_out, a_out = stats.output(), adults.output()
    people.insert([("ann", "paris", 1.62, True), ("bob", "lyon", 1.80, True),
                   ("cy", "oslo", -0.5, False), ("dee", "paris", 1.1, False)])
    cities.insert([("paris", "FR"), ("lyon", "FR"), ("oslo", "NO")])
    flow.advance()
    assert s_out.snapshot() == {("FR", 3, 1.80, 1.62 + 1.80 + 1.1): 1, ("NO", 1, -0.5, -0.5): 1}
    assert a_out.snapshot() == {("ann",): 1, ("bob",): 1}
    people.remove([("bob", "lyon", 1.80, True)])
    flow.advance()
    snap = s_out.snapshot()
    (fr,) = [r for r in snap if r[0] == "FR"]
    assert fr[:3] == ("FR", 2, 1.62) and fr[3] == pytest.approx(2.72)
    assert a_out.snapshot() == {("ann",): 1}


def test_changes_carry_epochs_and_to_pandas():
    flow = dd.Dataflow()
    c = flow.input("c", ["x"])
    out = c.distinct().output()
    c.insert([1, 1, 2])
    flow.advance()
    c.remove([2])
    c.insert([3])
    flow.advance()
    assert out.changes() == [((1,), 0, 1), ((2,), 0, 1), ((2,), 1, -1), ((3,), 1, 1)]
    assert out.changes() == []
    df = out.to_pandas()
    assert list(df.columns) == ["x"] and sorted(df["x"]) == [1, 3]


def test_to_pandas_repeats_rows_by_multiplicity():
    flow = dd.Dataflow()
    c = flow.input("c", ["x"])
    out = c.output()
    c.insert([4, 4])
    flow.advance()
    assert out.to_pandas()["x"].tolist() == [4, 4]


@pytest.mark.local_runtime  # the callback appends to this process's list
def test_inspect_sees_complete_updates():
    seen = []
    flow = dd.Dataflow()
    c = flow.input("c", ["x"])
    out = c.inspect(seen.extend).select(y=dd.col("x") * 10).output()
    c.insert([1])
    flow.advance()
    c.update([(1,), (2,)], [-1, 3])
    flow.advance()
    assert seen == [((1,), (0,), 1), ((1,), (1,), -1), ((2,), (1,), 3)]
    assert out.snapshot() == {(20,): 3}


@pytest.mark.parametrize("parts", [1, 3])
def test_many_epochs_in_flight_match_one_at_a_time(parts):
    def build():
        flow = dd.Dataflow(partitions=parts)
        a = flow.input("a", ["k", "v"])
        out = a.aggregate(by=["k"], n=dd.count(), hi=dd.max("v")).output()
        return flow, a, out

    steps = [[(1, 5), (2, 7)], [(1, 9)], [(3, 1)], [(1, 2)]]
    flow1, a1, out1 = build()
    flow2, a2, out2 = build()
    for rows in steps:
        a1.insert(rows)
        flow1.advance()
        a2.insert(rows)
        flow2.advance(run=False)  # close the epoch, compute later
    assert out2.snapshot() == {}
    flow2.run()
    assert out1.snapshot() == out2.snapshot() == {(1, 3, 9): 1, (2, 1, 7): 1, (3, 1, 1): 1}
    assert out1.changes() == out2.changes()


def test_arrangement_is_shared_between_operators():
    flow = dd.Dataflow()
    a = flow.input("a", ["k", "x"])
    b = flow.input("b", ["k", "y"])
    idx = a.arrange(by=["k"])
    j = idx.join(b, on="k")
    n = idx.aggregate(n=dd.count())
    j2 = a.join(b.select("k", z="y"), on="k")
    arranges = [node for node in flow.graph.nodes if node.kind == "arrange"
                and node.inputs == [a.node.id]]
    assert len(arranges) == 1, "a is indexed once by k and every reader shares it"
    outs = [j.output(), n.output(), j2.output()]
    a.insert([(1, 10), (1, 11)])
    b.insert([(1, 5)])
    flow.advance()
    assert outs[0].snapshot() == {(1, 10, 5): 1, (1, 11, 5): 1}
    assert outs[1].snapshot() == {(1, 2): 1}
    assert outs[2].snapshot() == outs[0].snapshot()


@pytest.mark.slow
def test_traces_stay_bounded_over_many_epochs():
    """Logical compaction: memory follows the live data, not the number of epochs."""
    flow = dd.Dataflow(partitions=2)
    a = flow.input("a", ["k", "v"])
    b = flow.input("b", ["k"])
    out = a.join(b, on="k").aggregate(by=["k"], n=dd.count()).output()
    b.insert([(k,) for k in range(5)])
    for epoch in range(600):
        row = (epoch % 5, epoch % 3)
        a.insert([row])
        flow.advance()
        a.remove([row])
        flow.advance()
    sizes = flow._runtime.trace_sizes()
    assert out.snapshot() == {}
    assert sum(sizes) < 120, f"traces hold {sum(sizes)} updates after 1200 epochs"


@pytest.mark.local_runtime  # other runtimes hold workers; their checkpoints are tested apart
@pytest.mark.parametrize("parts", [1, 3])
def test_operator_state_is_picklable_and_resumes(parts):
    """Per-partition state is plain data: a pickled dataflow continues exactly like the original."""
    import pickle

    flow = dd.Dataflow(partitions=parts)
    a = flow.input("a", ["k", "v"])
    b = flow.input("b", ["k"])
    out = a.join(b, on="k").aggregate(by=["k"], n=dd.count(), hi=dd.max("v")).output("counts")
    a.insert([(1, 5), (2, 6), (1, 7)])
    b.insert([(1,), (2,)])
    flow.advance()
    copy = pickle.loads(pickle.dumps(flow))
    a2 = next(h for h in copy._inputs if h.name == "a")
    out2 = dd.Output(copy, out.node, "counts")
    for f, handle in [(flow, a), (copy, a2)]:
        handle.insert([(2, 9)])
        handle.remove([(1, 7)])
        f.advance()
    assert out.snapshot() == out2.snapshot() == {(1, 1, 5): 1, (2, 2, 9): 1}


@pytest.mark.parametrize("partitions", [1, 2, 3])
def test_join_on_every_column_in_swapped_order(partitions):
    # regression: exchange hashed an all-columns key in schema order, not key order
    flow = dd.Dataflow(partitions=partitions)
    a = flow.input("a", ["x", "y"])
    b = flow.input("b", ["p", "q"])
    out = a.join(b, left_on=["x", "y"], right_on=["q", "p"]).output()
    a.insert([(1, 2), (2, 1), (3, 4)]); b.insert([(2, 1), (1, 2), (3, 4)]); flow.advance()
    assert out.snapshot() == {(1, 2): 1, (2, 1): 1}


@pytest.mark.slow
def test_a_dropped_dataflow_is_freed_before_the_next_one_starts():
    # a dataflow and its collections refer to each other; big numpy arrays never prompt
    # Python's cycle collector, so diffflow collects before a new dataflow starts
    import gc
    import weakref

    import numpy as np

    def big_flow():
        flow = dd.Dataflow()
        a = flow.input("a", ["x"])
        out = a.distinct().output()
        a.insert(np.arange(600_000).reshape(-1, 1))
        flow.advance()
        assert len(out.snapshot()) == 600_000
        return weakref.ref(flow)

    gc.disable()  # only diffflow's own collection may free it
    try:
        dropped = big_flow()
        assert dropped() is not None  # held by its own reference cycles
        flow = dd.Dataflow()
        a = flow.input("a", ["x"])
        out = a.output()
        a.insert([(1,)])
        flow.advance()
        assert dropped() is None and sorted(out.snapshot()) == [(1,)]
    finally:
        gc.enable()


@pytest.mark.slow
def test_closing_a_big_dataflow_frees_its_operators_at_once(monkeypatch):
    # a closed dataflow's traces must not wait for the next dataflow or for Python's collector
    import gc
    import weakref

    import numpy as np

    from diffflow.api import flow as flow_module
    from diffflow.common import memory

    released = []
    monkeypatch.setattr(memory, "release", lambda: (released.append(1), gc.collect()))
    gc.disable()
    try:
        with dd.Dataflow() as flow:
            a = flow.input("a", ["x"])
            out = a.distinct().output()
            a.insert(np.arange(flow_module._COLLECT_AFTER_ROWS).reshape(-1, 1))
            flow.advance()
            assert len(out.snapshot()) == flow_module._COLLECT_AFTER_ROWS
            engines = [weakref.ref(e) for e in flow._runtime.engines.values()]
        assert released == [1] and all(e() is None for e in engines)
        with dd.Dataflow() as small:  # a small flow closes without a collection
            b = small.input("b", ["x"])
            b.insert([(1,)])
            small.advance()
        assert released == [1]
    finally:
        gc.enable()


def test_with_closes_the_dataflow():
    with dd.Dataflow() as flow:
        a = flow.input("a", ["x"])
        out = a.output()
        a.insert([(1,)])
        flow.advance()
        assert sorted(out.snapshot()) == [(1,)]
    with pytest.raises(dd.GraphError, match="closed"):
        a.insert([(2,)])


@pytest.mark.parametrize("runtime", ["local", "processes"])
def test_an_output_without_a_change_feed_keeps_its_contents_only(runtime):
    flow = dd.Dataflow(partitions=2, runtime=runtime)
    words = flow.input("words", [("w", str)])
    counts = words.aggregate(by=["w"], n=dd.count())
    fed, latest = counts.output(), counts.output(changes=False)
    for epoch in range(20):
        words.insert([f"w{epoch % 3}"])
        if epoch % 2:
            words.remove([f"w{(epoch - 1) % 3}"])
        flow.advance()
        assert latest.snapshot() == fed.snapshot()
    assert len(fed.changes()) > 20
    with pytest.raises(ValueError, match=r"changes\(\): this output keeps no change feed"):
        latest.changes()
    with pytest.raises(ValueError, match=r"changes_dataframe\(\): this output keeps no"):
        latest.changes_dataframe()
    if runtime == "local":  # (nothing held for a reader that never comes)
        assert all(engine.ops[latest.node.id].changes == []
                   for engine in flow._runtime.engines.values())
    flow.close()
