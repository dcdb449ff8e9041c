"""diffflow on a real Spark standalone cluster (a master and two 2-core Workers on loopback,
each Worker on its own address; ``tests/support/standalone.py``).

Each test runs a driver script in a subprocess (a process holds one SparkContext, and this
one holds the suite's local session):

* answers equal the local runtime's over update epochs, while an executor that holds a
  partition worker is killed mid-run (the worker dies with it; fresh workers restore the
  last checkpoint from a ``file://`` URI and replay) -- and, separately, while the Worker
  JVM under it is killed;
* an application allowed one core (``spark.cores.max=1``) with two partitions fails within
  ~20 s, saying how many slots there are;
* under dynamic allocation (no executor at the start), the workers' tasks bring executors,
  and executors running workers outlive the idle timeout.

The Workers' hosts have no diffflow: their ``python3`` is this interpreter's base Python
without site-packages (``python_without_diffflow``), so executors run what the drivers ship
(``local_session(ship=ARCHIVE)``, the archive ``spark_pack.pack`` builds once for the module).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.support.standalone import StandaloneCluster, python_without_diffflow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.slow

_DRIVER = textwrap.dedent("""
    import os, random, signal, sys, time
    import diffflow as dd
    from diffflow import graphs
    from diffflow.runtime.spark import local_session, release_workers
    from diffflow.runtime.spark_slots import slots

    url, archive, checkpoints, kill, cores = sys.argv[1:6]
    spark = local_session(url, conf={"spark.driver.host": "127.0.0.1",
                                     "spark.driver.bindAddress": "127.0.0.1",
                                     "spark.executor.memory": "512m",
                                     "spark.cores.max": cores}, ship=archive)
    deadline = time.monotonic() + 60
    while slots(spark.sparkContext)[0] < int(cores) and time.monotonic() < deadline:
        time.sleep(0.5)
    print("slots", slots(spark.sparkContext)[0], flush=True)
    from diffflow.runtime import spark_slots
    if kill != "none":  # (the recovery waits for the killed executor's replacement to
        spark_slots.SLOT_WAIT = 120.0  # register: a JVM start, slow on a loaded machine)
    elif slots(spark.sparkContext)[0] == int(cores):  # (every core has registered: a
        spark_slots.SLOT_WAIT = 3.0  # launch short of slots need not wait 20 s more)
    print("executors run", spark.sparkContext.parallelize([0], 1).map(
        lambda _: (__import__("diffflow").__file__, "site" in sys.modules)).collect(), flush=True)

    def chain_up(pid, marker):
        # the first ancestor of pid whose command line holds marker
        while pid > 1:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker in fh.read():
                    return pid
            with open(f"/proc/{pid}/stat") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        raise RuntimeError(f"no ancestor runs {marker!r}")

    flows = [dd.Dataflow(partitions=2),
             dd.Dataflow(runtime="spark", spark=spark, partitions=2, checkpoint_every=2,
                         checkpoint_dir=checkpoints)]
    outs = []
    for flow in flows:
        edges = flow.input("edges", ["src", "dst"])
        roots = flow.input("roots", ["node"])
        reach = graphs.reachable(edges, roots)
        outs.append((edges, roots, reach.output(),
                     edges.aggregate(by=["src"], n=dd.count()).output()))
    rng = random.Random(7)
    present = set()
    try:
        for epoch in range(8):
            add = {(rng.randrange(30), rng.randrange(30)) for _ in range(25)}
            drop = set(rng.sample(sorted(present), min(8, len(present))))
            present = (present | add) - drop
            for edges, roots, _, _ in outs:
                edges.insert(sorted(add)); edges.remove(sorted(drop))
                if epoch == 0:
                    roots.insert([0, 1])
            if epoch == 4 and kill != "none":
                worker = flows[1]._runtime.worker_pids()[0]
                marker = (b"CoarseGrainedExecutorBackend" if kill == "executor"
                          else b"org.apache.spark.deploy.worker.Worker")
                os.kill(chain_up(worker, marker), signal.SIGKILL)
                print("killed", kill, flush=True)
            for flow in flows:
                flow.advance()
            local, remote = outs[0], outs[1]
            for a, b in ((local[2], remote[2]), (local[3], remote[3])):
                assert a.snapshot() == b.snapshot(), epoch
                assert a.changes() == b.changes(), epoch
            print("exact", epoch, flush=True)
        print("recoveries", flows[1]._runtime.recoveries, flush=True)
    except RuntimeError as exc:
        print("error:", exc, flush=True)
    for flow in flows:
        flow.close()
    release_workers(spark)
    spark.stop()
""")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, shipped_archive):
    root = tmp_path_factory.mktemp("standalone")
    hosts = python_without_diffflow(tmp_path_factory.mktemp("hosts"))
    started = StandaloneCluster(root, workers=2, cores=2, worker_env=hosts).start()
    started.archive = shipped_archive[0]
    yield started
    started.stop()


def _drive(cluster, tmp_path, kill, cores):
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script), cluster.url, str(cluster.archive),
                           f"file://{tmp_path}/checkpoints", kill, str(cores)],
                          capture_output=True, text=True, timeout=280, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.splitlines()


@pytest.mark.parametrize("kill", ["executor", "worker"])
def test_epochs_stay_exact_when_an_executor_or_its_worker_jvm_is_killed(cluster, tmp_path, kill):
    lines = _drive(cluster, tmp_path, kill, 4)
    assert lines[0] == "slots 4"
    # diffflow came from the shipped archive, on a Python without site-packages
    assert lines[1].startswith("executors run [(") and \
        "/diffflow_env/site/diffflow/__init__.py', False)]" in lines[1], lines[1]
    assert f"killed {kill}" in lines
    assert [line for line in lines if line.startswith("exact")] == \
        [f"exact {epoch}" for epoch in range(8)], "\n".join(lines)  # (whole: an error line)
    assert lines[-1] == "recoveries 1"
    if kill == "worker":  # (the next test's application gets the remaining Worker's cores)
        cluster.add_worker()


def test_two_partitions_on_one_core_fail_with_the_slot_count(cluster, tmp_path):
    lines = _drive(cluster, tmp_path, "none", 1)
    assert lines[0] == "slots 1"
    error = [line for line in lines if line.startswith("error:")]
    assert error and "cannot place 2 more partition worker(s)" in error[0], lines
    assert "has 1 slot(s), 0 of them busy" in error[0]


_DYNAMIC = textwrap.dedent("""
    import sys, time
    import diffflow as dd
    from diffflow.runtime.spark import local_session, release_workers
    from diffflow.runtime.spark_slots import slots

    spark = local_session(sys.argv[1], ship=sys.argv[2], conf={
        "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.memory": "512m",
        "spark.executor.cores": "1", "spark.dynamicAllocation.enabled": "true",
        "spark.dynamicAllocation.shuffleTracking.enabled": "true",
        "spark.dynamicAllocation.minExecutors": "0",
        "spark.dynamicAllocation.executorIdleTimeout": "3s"})
    print("slots at start", slots(spark.sparkContext)[0], flush=True)
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
    nums = flow.input("nums", ["x"])
    out = nums.aggregate(s=dd.sum("x")).output()
    nums.insert([1, 2]); flow.advance()
    print("first", sorted(out.snapshot()), flush=True)
    time.sleep(8)  # (past the idle timeout: executors that run workers are not idle)
    nums.insert([3]); flow.advance()
    print("later", sorted(out.snapshot()), flow._runtime.recoveries, flush=True)
    flow.close(); release_workers(spark); spark.stop()
""")


def test_dynamic_allocation_brings_executors_for_the_workers_and_keeps_them(cluster, tmp_path):
    script = tmp_path / "dynamic.py"
    script.write_text(_DYNAMIC)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script), cluster.url, str(cluster.archive)],
                          capture_output=True,
                          text=True, timeout=280, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    lines = done.stdout.splitlines()
    assert lines == ["slots at start 0", "first [(3,)]", "later [(6,)] 0"], lines
