"""``memory_limit=``: an operator about to allocate past the limit stops before allocating,
with an error naming it, its line (or Datalog rule) and the size it needed; under a
generous limit the answer is exact; with no limit nothing is checked."""
import inspect
import resource

import pytest

import diffflow as dd
from diffflow.common import memory_budget
from diffflow.common.errors import DiffflowError, MemoryLimitError, OperatorError

MiB = 1 << 20


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cross_join(flow, n: int):
    """Inputs ``a``, ``b`` of ``n`` rows each sharing one key: their join is ``n * n`` rows.
    Returns the output and the line that builds the join."""
    a = flow.input("a", ["k", "x"])
    b = flow.input("b", ["k", "y"])
    line = inspect.currentframe().f_lineno + 1
    out = a.join(b, on="k").output()
    a.insert([(0, i) for i in range(n)])
    b.insert([(0, 10 * i) for i in range(n)])
    return out, line


@pytest.mark.parametrize("parts", [1, 2])
def test_cross_join_stops_before_allocating_and_names_the_join_line(parts):
    n = 20_000  # 4e8 joined rows of 3 columns, a time and a diff: ~12 GiB
    flow = dd.Dataflow(partitions=parts, memory_limit="16MiB")
    _, line = cross_join(flow, n)
    before = peak_rss()
    with pytest.raises(MemoryLimitError) as caught:
        flow.advance()
    err = caught.value
    assert isinstance(err, OperatorError) and isinstance(err, MemoryError)
    message = str(err)
    assert f"test_memory_limit.py:{line}" in message and "join" in err.operator
    assert "memory limit of 16.0 MiB" in message and "Raise the limit" in message
    assert err.limit == 16 * MiB and err.needed > 0 and err.held + err.needed > err.limit
    # nothing near the join's size was allocated (nor the limit passed by much)
    assert peak_rss() - before < 512 * MiB < n * n * 8
    # the epoch was left half computed: the dataflow refuses to go on, saying why
    with pytest.raises(DiffflowError, match="stopped when an operator failed.*memory limit"):
        flow.advance()
    assert memory_budget.limit() is None  # the limit held only while the dataflow ran


@pytest.mark.parametrize("parts", [1, 2])
def test_generous_limit_gives_the_exact_answer(parts):
    n = 300
    flow = dd.Dataflow(partitions=parts, memory_limit="1.5GiB")
    out, _ = cross_join(flow, n)
    flow.advance()
    assert out.snapshot() == {(0, i, 10 * j): 1 for i in range(n) for j in range(n)}


def test_a_step_under_the_limit_passes_where_a_bigger_one_stops():
    # the same dataflow runs under a limit its data fits and stops under one it does not
    def run(limit):
        flow = dd.Dataflow(memory_limit=limit)
        a = flow.input("a", ["k", "x"])
        pairs = a.join(a, on="k", rename={"x": "x2"})
        out = pairs.aggregate(by=["k"], n=dd.count()).output()
        a.insert([(k % 4, k) for k in range(1000)])  # 4 keys of 250 rows: 250,000 pairs
        flow.advance()
        return out

    assert run("1GiB").snapshot() == {(k, 250 * 250): 1 for k in range(4)}
    with pytest.raises(MemoryLimitError, match="join"):
        run("8MiB")


@pytest.mark.slow
def test_datalog_range_names_the_rule(tmp_path):
    source = (".decl n(x: number)\nn(1).\n.decl r(x: number, y: number)\n"
              "r(x, y) :- n(x), y = range(0, 5000000).\n")
    with pytest.raises(MemoryLimitError) as caught:
        dd.Program(source, filename="gen.dl", memory_limit="32MiB").commit()
    message = str(caught.value)
    assert "gen.dl:4" in message and "range(...) making 5,000,000 values" in message
    assert "restrict the rule" in message
    small = dd.Program(source.replace("5000000", "1000"), memory_limit="32MiB")
    small.commit()
    assert sorted(small.relation("r")) == [(1, y) for y in range(1000)]


def test_cli_memory_limit_names_the_rule_file_and_line(tmp_path, capsys):
    from diffflow.cli import main

    program = tmp_path / "pairs.dl"
    program.write_text(".decl e(x: number, y: number)\n.input e\n"
                       ".decl pair(a: number, b: number)\n.output pair\n"
                       "pair(a, b) :- e(0, a), e(0, b).\n")
    (tmp_path / "e.facts").write_text("".join(f"0\t{i}\n" for i in range(5000)))
    args = ["run", str(program), "-F", str(tmp_path), "-D", str(tmp_path / "out")]
    assert main(args + ["--memory-limit", "16MiB"]) != 0
    err = capsys.readouterr().err
    assert f"{program}:5" in err and "memory limit of 16.0 MiB" in err, err
    assert not (tmp_path / "out" / "pair.csv").exists()
    assert main(args + ["--memory-limit", "lots"]) != 0
    assert "memory limit 'lots' is not a size" in capsys.readouterr().err


@pytest.mark.parametrize("size, expected", [
    ("512MiB", 512 * 1024 ** 2), ("2GB", 2 * 1000 ** 3), ("1.5GiB", 3 * 1024 ** 3 // 2),
    ("64 kib", 64 * 1024), ("100", 100), (4096, 4096), ("3M", 3 * 1024 ** 2)])
def test_sizes(size, expected):
    assert memory_budget.parse_size(size) == expected
    assert dd.Dataflow(memory_limit=size).memory_limit == expected


@pytest.mark.parametrize("bad", ["lots", "12 parsecs", "-5MiB", "0", "", "1e9", "GiB", True,
                                 2.5, -1])
def test_bad_sizes_are_clear_errors(bad):
    with pytest.raises(ValueError, match="memory limit"):
        dd.Dataflow(memory_limit=bad)


def test_no_limit_checks_nothing():
    assert dd.Dataflow().memory_limit is None
    memory_budget.reserve(1 << 50, "more than any machine has")  # no limit: no error


@pytest.mark.slow
def test_processes_runtime_limits_each_worker():
    flow = dd.Dataflow(partitions=2, runtime="processes", memory_limit="16MiB")
    try:
        _, line = cross_join(flow, 20_000)
        with pytest.raises(MemoryLimitError) as caught:
            flow.advance()
        assert f"test_memory_limit.py:{line}" in str(caught.value)
        assert caught.value.limit == 16 * MiB
    finally:
        flow.close()
    flow = dd.Dataflow(partitions=2, runtime="processes", memory_limit="1GiB")
    try:
        out, _ = cross_join(flow, 200)
        flow.advance()
        assert out.snapshot() == {(0, i, 10 * j): 1 for i in range(200) for j in range(200)}
    finally:
        flow.close()


def test_held_bytes_count_the_traces_and_follow_them():
    import gc

    import numpy as np

    from diffflow.arrangements.spine import Spine
    from diffflow.arrangements.updates import Updates
    from diffflow.lattice import Antichain

    rows = 100_000  # 2 row columns, a time and a diff: 3.2 MB, counted by hand
    gc.collect()
    others = memory_budget.held()  # (traces of other tests' dataflows still alive here)
    trace = Spine(width=2, key_width=1, dim=1)
    memory_budget.set_limit(others + 5 * MiB)
    try:
        trace.insert_updates(Updates(np.arange(2 * rows).reshape(rows, 2),
                                     np.zeros((rows, 1), np.int64), np.ones(rows, np.int64)),
                             Antichain([(1,)]))
        assert trace.held_bytes() == rows * 4 * 8
        with pytest.raises(MemoryLimitError, match="a test array needs 2.0 MiB") as caught:
            memory_budget.reserve(2 * MiB, "a test array")
        assert caught.value.held >= rows * 4 * 8
        del trace, caught
        gc.collect()  # the trace is gone: its bytes no longer count
        memory_budget.reserve(2 * MiB, "a test array")
    finally:
        memory_budget.set_limit(None)
