"""Partition workers in Spark's task slots, failing fast, and Spark settings passed through.

* on the shared local session: workers hold task slots while they live; a worker dies with
  its Spark task (the task's process killed, as when an executor is lost) and the next
  epoch is exact on fresh workers;
* in a subprocess with a one-slot ``local[1]`` session: too few slots for the partitions
  fails with the numbers, a DataFrame job with no free slot fails naming the fix, and
  ``conf={...}`` reaches Spark unchanged;
* ``diffflow run --spark``: an unreachable master fails before Spark starts, in one line;
  fact files are checked before Spark starts; ``--conf`` needs ``KEY=VALUE`` and ``--spark``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import diffflow as dd

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as fh:  # (pid (comm) state ppid ...; comm may hold spaces)
        return int(fh.read().rsplit(")", 1)[1].split()[1])


def _gone(pid: int, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":  # (a zombie has ended)
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
def test_workers_hold_task_slots_while_they_live(spark):
    from diffflow.runtime.spark_slots import slots

    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
    nums = flow.input("nums", ["x"])
    out = nums.aggregate(n=dd.count()).output()
    nums.insert([1, 2])
    flow.advance()
    total, busy = slots(spark.sparkContext)
    assert total == 5 and busy >= 2  # (idle pooled workers of earlier tests hold theirs too)
    assert out.snapshot() == {(2,): 1}
    flow.close()


@pytest.mark.slow
def test_idle_pooled_workers_give_their_slots_to_waiting_jobs(spark):
    from diffflow.runtime.spark import spark_pool
    from diffflow.runtime.spark_slots import slots

    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=4)
    flow.input("nums", ["x"]).output()
    flow.advance()
    flow.close()  # its four workers stay pooled, holding four of the five slots
    pool = spark_pool(spark)
    assert len(pool.idle) >= 4 and slots(spark.sparkContext)[1] >= 4
    # a job of six 0.3 s tasks: one free slot would run them one by one (the pool looks
    # for waiting tasks every 0.5 s), so the pool sees them wait and yields its slots
    sc = spark.sparkContext
    assert sc.parallelize(range(6), 6).map(lambda x: time.sleep(0.3) or x * 2).sum() == 30
    deadline = time.monotonic() + 10
    while pool.idle and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pool.idle and slots(sc)[1] == 0
    again = dd.Dataflow(runtime="spark", spark=spark, partitions=2)  # fresh workers start
    nums = again.input("nums", ["x"])
    out = nums.output()
    nums.insert([3])
    again.advance()
    assert out.snapshot() == {(3,): 1}
    again.close()


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc (Linux)")
def test_a_worker_dies_with_its_task_and_the_next_epoch_is_exact(spark):
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2, checkpoint_every=1)
    local = dd.Dataflow(partitions=2)
    outs = []
    for f in (flow, local):
        nums = f.input("nums", ["k", "x"])
        outs.append((nums, nums.aggregate(by=["k"], total=dd.sum("x")).output()))
    for f, (nums, _) in zip((flow, local), outs):
        nums.insert([(1, 5), (2, 7)])
        f.advance()
    worker = flow._runtime.worker_pids()[0]
    task = _parent(worker)  # the Spark task's Python process, holding the worker's slot
    assert task != os.getpid()
    os.kill(task, signal.SIGKILL)  # as when its executor is lost
    assert _gone(worker), "the worker outlived its task"
    for f, (nums, _) in zip((flow, local), outs):
        nums.insert([(1, 1), (3, 2)])
        f.advance()
    assert outs[0][1].snapshot() == outs[1][1].snapshot() == {(1, 6): 1, (2, 7): 1, (3, 2): 1}
    assert flow._runtime.recoveries == 1
    assert worker not in flow._runtime.worker_pids()
    flow.close()


_ONE_SLOT = textwrap.dedent("""
    import diffflow as dd
    from diffflow.runtime import spark_slots
    from diffflow.runtime.spark import local_session, release_workers

    spark_slots.SLOT_WAIT = 1.0  # (the real wait lets executors register: not needed here)
    spark = local_session("local[1]", conf={"spark.executorEnv.DIFFFLOW_PROBE": "a_b"},
                          spark_sql_shuffle_partitions=3)
    conf = spark.sparkContext.getConf()
    print("conf", conf.get("spark.executorEnv.DIFFFLOW_PROBE"),
          conf.get("spark.sql.shuffle.partitions"))
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
    flow.input("nums", ["x"]).output()
    try:
        flow.advance()
    except RuntimeError as exc:
        print("two:", exc)
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=1)
    nums = flow.input("nums", ["x"])
    out = nums.output()
    nums.insert([4]); flow.advance()
    print("one:", sorted(out.snapshot()))
    try:
        nums.insert_dataframe(spark.createDataFrame([(5,)], "x long"))
    except RuntimeError as exc:
        print("frame:", exc)
    flow.close(); release_workers(spark); spark.stop()
""")


@pytest.mark.slow
def test_one_slot_refuses_two_workers_and_a_dataframe_job_with_the_numbers(tmp_path):
    script = tmp_path / "one_slot.py"
    script.write_text(_ONE_SLOT)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = {line.split(" ", 1)[0]: line for line in done.stdout.splitlines()}
    assert lines["conf"] == "conf a_b 3"  # conf={...} unchanged, keywords with _ read as .
    assert "cannot place 2 more partition worker(s)" in lines["two:"]
    assert "local[1] has 1 slot(s), 0 of them busy" in lines["two:"]
    assert "local[N] with N >= 2 (one more for DataFrame jobs)" in lines["two:"]
    assert lines["one:"] == "one: [(4,)]"  # one worker fits: the session still works
    assert "needs a free executor slot" in lines["frame:"] and "at least 2 slots" in lines["frame:"]


TC = (".decl e(x: number, y: number)\n.input e\n.decl tc(x: number, y: number)\n.output tc\n"
      "tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), e(y, z).\n")


def _run(tmp_path, *args):
    program = tmp_path / "tc.dl"
    program.write_text(TC)
    return subprocess.run([sys.executable, "-m", "diffflow", "run", str(program), *args],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=REPO))


@pytest.mark.slow
def test_an_unreachable_master_fails_before_spark_starts_in_one_line(tmp_path):
    (tmp_path / "e.facts").write_text("1\t2\n")
    done = _run(tmp_path, "-F", str(tmp_path), "-D", "-", "--spark", "spark://127.0.0.1:1")
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Spark master spark://127.0.0.1:1" in lines[0]
    assert "Connection refused" in lines[0] and "Spark was not started" in lines[0]


@pytest.mark.slow
def test_fact_files_are_checked_before_spark_starts(tmp_path):
    (tmp_path / "e.facts").write_text("1\t2\n3\tfour\n")
    done = _run(tmp_path, "-F", str(tmp_path), "-D", "-", "-v", "--spark", "local[1]", "-j", "1")
    assert done.returncode != 0
    assert "e.facts:2" in done.stderr and "started Spark" not in done.stderr
    assert "SparkContext" not in done.stderr and "java" not in done.stderr.lower()


@pytest.mark.slow
def test_more_jobs_than_a_local_master_has_cores_fails_before_spark_starts(tmp_path):
    (tmp_path / "e.facts").write_text("1\t2\n")
    done = _run(tmp_path, "-F", str(tmp_path), "-D", "-", "--spark", "local[2]", "-j", "3")
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1, done.stderr
    assert "-j 3 needs 3 task slots, but --spark local[2] has 2" in lines[0]
    assert "--spark local[3] or -j 2" in lines[0]


@pytest.mark.slow
def test_conf_needs_key_value_and_spark(tmp_path):
    done = _run(tmp_path, "--spark", "local[1]", "--conf", "spark.executor.memory")
    assert done.returncode == 2 and "expected KEY=VALUE" in done.stderr
    done = _run(tmp_path, "--conf", "spark.executor.memory=1g")
    assert done.returncode != 0 and "--conf sets Spark settings: it needs --spark" in done.stderr


@pytest.mark.slow
def test_a_web_server_or_a_bad_url_is_no_master_in_one_line(tmp_path):
    import http.server
    import threading

    from diffflow.runtime.spark import master_problem

    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:  # (a master's web UI port given for its RPC port: Spark would retry for a minute)
        message = master_problem(f"spark://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
    assert "is a web server" in message and "7077" in message
    (tmp_path / "e.facts").write_text("1\t2\n")
    for url in ("nonsense", "local[x]"):
        done = _run(tmp_path, "-F", str(tmp_path), "-D", "-", "--spark", url)
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1, done.stderr
        assert f"{url!r} is not a Spark master URL" in lines[0]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc (Linux)")
def test_release_workers_leaves_open_dataflows_working_and_ends_their_workers_after(spark):
    from diffflow.runtime.spark import release_workers

    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
    nums = flow.input("nums", ["x"])
    out = nums.aggregate(s=dd.sum("x")).output()
    nums.insert([1, 2])
    flow.advance()
    workers = flow._runtime.worker_pids()
    release_workers(spark)
    nums.insert([3])
    flow.advance()
    assert out.snapshot() == {(6,): 1} and flow._runtime.recoveries == 0
    flow.close()  # (given back to a released pool: they end, and their slots are free)
    assert all(_gone(pid) for pid in workers)
