"""Behaviour that must be identical on every runtime: errors and loop limits.

Every runtime steps the same partition engine, so a loop that does not
converge is named the same way -- the diverging one, with the line that
built it -- whether the partitions run in this process, in worker objects,
in worker processes or on Spark.
"""
from __future__ import annotations

import pickle
import re

import pytest

import diffflow as dd
from diffflow.common.errors import (DatalogError, DiffflowError, ExpressionError, GraphError,
                                    NonConvergenceError, OperatorError, WorkerLost)
from diffflow.datalog import Program

RUNTIMES = [("local", 1), ("local", 3), ("cluster", 1), ("cluster", 3), ("processes", 2)]
HERE = __file__


def _options(runtime, request):
    if runtime == "spark":
        return {"runtime": "spark", "spark": request.getfixturevalue("spark")}
    return {"runtime": runtime}


def build_two_loops(flow):
    """A loop that converges within 50 rounds and one that never converges (limit 5)."""
    nums = flow.input("nums", ["x"])
    up_to_ten = nums.iterate(  # converges: counts up to 10
        lambda x: nums.concat(x.filter(dd.col("x") < 10).select(x=dd.col("x") + 1)).distinct(),
        max_rounds=50, name="converges")
    line_diverges = _next_line()
    forever = nums.iterate(lambda x: nums.concat(x.select(x=dd.col("x") + 1)).distinct(),
                           max_rounds=5, name="diverges")
    return nums, up_to_ten.output(), forever.output(), line_diverges


def _next_line() -> int:
    import sys
    return sys._getframe(1).f_lineno + 1


def _two_loops_on(options, parts):
    flow = dd.Dataflow(partitions=parts, **options)
    nums, up_to_ten, forever, line = build_two_loops(flow)
    nums.insert([0])
    try:
        with pytest.raises(NonConvergenceError) as info:
            flow.advance()
        return info.value, up_to_ten.snapshot(), forever.snapshot(), line
    finally:
        flow.close()


def _check_two_loops(error, up_to_ten, forever, line):
    assert error.scope.label == "diverges"
    assert error.epochs == [0]
    assert f"loop 'diverges' (built at {HERE}:{line})" in str(error)
    assert "after 5 rounds" in str(error)
    assert "converges" not in str(error)
    assert up_to_ten == {(i,): 1 for i in range(11)}
    # cut where the limit struck: the body's value at round 5, like the local runtime's
    assert forever == {(i,): 1 for i in range(7)}


@pytest.mark.parametrize("runtime,parts", RUNTIMES)
def test_the_diverging_loop_is_named_on_every_runtime(runtime, parts, request):
    _check_two_loops(*_two_loops_on(_options(runtime, request), parts))


@pytest.mark.slow
def test_the_diverging_loop_is_named_on_spark(request):
    _check_two_loops(*_two_loops_on(_options("spark", request), 2))


DATALOG_TWO_STRATA = """\
.decl seed(x: number)
seed(0).
.decl counts(x: number)
counts(x) :- seed(x).
counts(x + 1) :- counts(x), x < 10.
.decl grows(x: number)
grows(x) :- seed(x).
grows(x + 1) :- grows(x).
"""


@pytest.mark.parametrize("runtime,parts", RUNTIMES + [pytest.param("spark", 2, marks=pytest.mark.slow)])
def test_datalog_names_the_diverging_stratum_on_every_runtime(runtime, parts, request):
    program = Program(DATALOG_TWO_STRATA, partitions=parts, filename="two.dl", max_rounds=20,
                      **_options(runtime, request))
    try:
        with pytest.raises(NonConvergenceError) as info:
            program.commit()
        message = str(info.value)
        assert re.match(r"two\.dl:[78]: error: the recursion of grows was still", message), message
        assert "counts" not in message.split("error:")[1].split("was still")[0]
        assert program.relation("counts") == {(i,) for i in range(11)}
    finally:
        program.close()


@pytest.mark.parametrize("runtime,parts", [("cluster", 2), ("processes", 2)])
def test_worker_errors_arrive_with_their_type(runtime, parts):
    flow = dd.Dataflow(partitions=parts, runtime=runtime)
    nums = flow.input("nums", ["x"])
    nums.map(lambda row: (10 // row[0],), ["y"]).output()
    nums.insert([0, 1, 2, 3])
    with pytest.raises(OperatorError, match=r"operator flat_map .* failed: ZeroDivisionError"):
        flow.advance()
    flow.close()


def test_one_exception_hierarchy():
    for cls in (GraphError, ExpressionError, OperatorError, NonConvergenceError, WorkerLost,
                DatalogError):
        assert issubclass(cls, DiffflowError), cls
    assert dd.DiffflowError is DiffflowError and dd.GraphError is GraphError
    with pytest.raises(DiffflowError):
        dd.Dataflow().input("a", ["x"]).select("nope")
    with pytest.raises(DiffflowError):
        Program("p(x) :- q(x).")


def test_errors_survive_pickling_with_their_fields():
    err = DatalogError("bad", "p(1).", "p.dl", 1, 3, hint="try q")
    back = pickle.loads(pickle.dumps(err))
    assert (type(back), str(back), back.line, back.column, back.hint) == \
        (DatalogError, str(err), 1, 3, "try q")
    flow = dd.Dataflow()
    loop = flow.loop("fix", max_rounds=7)
    err = NonConvergenceError("cut", loop.scope, {2, 1})
    back = pickle.loads(pickle.dumps(err))
    assert (back.scope.label, back.scope.max_rounds, back.epochs) == ("fix", 7, [1, 2])


@pytest.mark.slow
@pytest.mark.parametrize("runtime,parts", RUNTIMES)
def test_strings_made_on_one_partition_are_known_on_all(runtime, parts):
    """A map's new strings travel with its rows: another partition and the driver decode them."""
    flow = dd.Dataflow(partitions=parts, runtime=runtime)
    nums = flow.input("nums", ["x"])
    names = nums.map(lambda row: (f"name-{row[0] % 7}",), [("s", str)])
    counted = names.aggregate(by=["s"], n=dd.count())  # routed by the string's hash
    shouted = counted.map(lambda row: (row[0].upper(), row[1]), [("s", str), "n"]).output()
    nums.insert(list(range(20)))
    flow.advance()
    expected = {(f"NAME-{k}", len(range(k, 20, 7))): 1 for k in range(7)}
    assert shouted.snapshot() == expected
    flow.close()


@pytest.mark.slow
def test_a_recovered_worker_knows_strings_added_after_the_start(tmp_path):
    import os
    import signal

    flow = dd.Dataflow(partitions=2, runtime="processes", checkpoint_every=None)
    words = flow.input("words", [("s", str)])
    upper = words.map(lambda row: (row[0].upper(),), [("u", str)]).output()
    words.insert(["x"])
    flow.advance()
    words.insert(["hello", "world"])
    flow.advance()
    os.kill(flow._runtime.worker_pids()[0], signal.SIGKILL)
    words.insert(["z"])
    flow.advance()
    assert upper.snapshot() == {("X",): 1, ("HELLO",): 1, ("WORLD",): 1, ("Z",): 1}
    assert flow._runtime.recoveries == 1
    flow.close()


@pytest.mark.parametrize("runtime", ["local", "cluster"])
def test_a_closed_dataflow_refuses_new_input(runtime):
    flow = dd.Dataflow(runtime=runtime)
    nums = flow.input("nums", ["x"])
    nums.output()
    nums.insert([1])
    flow.advance()
    flow.close()
    for change in (lambda: nums.insert([2]), lambda: nums.remove([1])):
        with pytest.raises(GraphError, match="this dataflow was closed"):
            change()
