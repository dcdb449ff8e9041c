"""Errors name what was wrong and where, and bad input changes nothing."""
import pytest

import diffflow as dd
from diffflow.api.collection import GraphError
from diffflow.common.errors import OperatorError


def make():
    flow = dd.Dataflow()
    c = flow.input("people", [("id", int), ("name", str)])
    return flow, c, c.output()


def test_wrong_arity_names_input_and_row_and_applies_nothing():
    flow, c, out = make()
    with pytest.raises(ValueError, match=r"input 'people': row 1 \(2,\) has 1 values; expected 2"):
        c.insert([(1, "a"), (2,)])
    flow.advance()
    assert out.snapshot() == {}


def test_wrong_type_names_input_column_and_row_and_applies_nothing():
    flow, c, out = make()
    with pytest.raises(TypeError, match=r"input 'people' column 'name': row 2 has 7 \(int\); expected str"):
        c.insert([(1, "a"), (2, "b"), (3, 7)])
    with pytest.raises(TypeError, match=r"column 'id': row 0 has 'x'"):
        c.remove([("x", "y")])
    with pytest.raises(TypeError, match="column 'id'.*True"):
        c.insert([(True, "b")])
    flow.advance()
    assert out.snapshot() == {}


def test_text_utf8_cannot_hold_names_its_row_and_applies_nothing():
    # (a lone surrogate: what bytes decoded with errors='surrogateescape' leave behind; a
    # small batch and one numpy would hash, both handed to pandas, which refuses it)
    flow, c, out = make()
    for rows in ([(1, "a"), (2, "b\udcff")], [(i, f"n{i}") for i in range(40)] + [(9, "\ud800")]):
        with pytest.raises(ValueError, match=r"input 'people' column 'name': row \d+ value "
                                             r".* is not text UTF-8 can hold: .* at position"):
            c.insert(rows)
    prog = dd.Program(".decl e(a: symbol)\n.decl q(a: symbol)\nq(x) :- e(x).\n")
    with pytest.raises(ValueError, match=r"e: attribute 'a': row 1 value 'x\\udcff' is not text"):
        prog.insert("e", [("ok",), ("x\udcff",)])
    c.insert([(1, "a")])
    prog.insert("e", [("ok",)])
    flow.advance()
    prog.commit()
    assert out.snapshot() == {(1, "a"): 1} and prog.relation("q") == {("ok",)}


def test_bad_diffs():
    flow, c, out = make()
    with pytest.raises(ValueError, match="1 diffs for 2 rows"):
        c.update([(1, "a"), (2, "b")], [1])
    with pytest.raises(TypeError, match="diffs must be integers"):
        c.update([(1, "a")], [0.5])


def test_unknown_columns_fail_at_construction_with_available_names():
    flow, c, _ = make()
    with pytest.raises(GraphError, match=r"unknown column 'nme' in select; available columns: \['id', 'name'\]"):
        c.select("nme")
    with pytest.raises(GraphError, match="unknown column 'age' in filter"):
        c.filter(dd.col("age") > 3)
    with pytest.raises(GraphError, match=r"unknown column 'ident' in join \(left keys\)"):
        c.join(c, on="ident")
    with pytest.raises(GraphError, match=r"unknown column 'score' in aggregate total=sum"):
        c.aggregate(by=["name"], total=dd.sum("score"))
    with pytest.raises(GraphError, match=r"unknown column 'nam' in aggregate\(by=...\)"):
        c.aggregate(by=["nam"], n=dd.count())


def test_join_name_clash_says_how_to_rename():
    flow = dd.Dataflow()
    a = flow.input("a", ["k", "v"])
    b = flow.input("b", ["k", "v"])
    with pytest.raises(GraphError, match=r"two columns named 'v'.*rename=\{'v': 'v_right'\}"):
        a.join(b, on="k")
    assert a.join(b.select("k", v_right="v"), on="k").columns == ["k", "v", "v_right"]
    assert a.join(b, on="k", rename={"v": "v_right"}).columns == ["k", "v", "v_right"]


def test_type_errors_in_expressions_and_joins():
    flow, c, _ = make()
    with pytest.raises(GraphError, match="str columns support only == and !="):
        c.filter(dd.col("name") < "m")
    with pytest.raises(GraphError, match="not a boolean expression"):
        c.filter(dd.col("id") + 1)
    other = flow.input("other", [("name", int)])
    with pytest.raises(GraphError, match="join key types differ"):
        c.join(other, on="name")


def test_building_after_running_is_refused():
    flow, c, _ = make()
    flow.advance()
    with pytest.raises(GraphError, match="already started running"):
        c.select("id")


def test_runtime_failure_names_operator_and_user_line():
    flow = dd.Dataflow()
    c = flow.input("c", ["a", "b"])
    ratio = c.select(r=dd.col("a") // dd.col("b"))  # the line the error must name
    ratio.output()
    c.insert([(4, 0)])
    with pytest.raises(OperatorError, match=r"select .*test_errors.py:\d+.*division by zero"):
        flow.advance()


def test_runtime_arguments_are_checked():
    with pytest.raises(ValueError, match=r"needs spark=<a SparkSession>"):
        dd.Dataflow(runtime="spark")
    with pytest.raises(ValueError, match=r"unknown runtime 'sparkle'; choose one of local"):
        dd.Dataflow(runtime="sparkle")
    with pytest.raises(ValueError, match=r"spark= is only used with runtime='spark'"):
        dd.Dataflow(spark=object())
    with pytest.raises(ValueError, match=r"checkpoint_every must be a positive int"):
        dd.Dataflow(runtime="processes", checkpoint_every=0)
    with pytest.raises(ValueError, match=r"checkpoint_every= on the local runtime needs "
                                         r"durable=True"):
        dd.Dataflow(checkpoint_every=5)  # (it was ignored: no checkpoint was ever written)
