"""Spark baselines: diffflow (local and on Spark) next to hand-written PySpark and Spark SQL.

    python bench/bench_spark.py --graphs rmat --rmat-scale 10 --rmat-edges 3000
    python bench/bench_spark.py --graphs rmat --rmat-scale 14 --rmat-edges 60000,120000 \
        --workloads reach,cc
    timeout 3000 python bench/bench_spark.py --graphs ego-twitter --workloads reach,cc \
        --timeout 1500
    python bench/bench_spark.py --engines local,dfloop      # any subset of the engines
    python bench/bench_spark.py --standalone --engines processes,spark --workloads reach,cc \
        --rmat-scale 14 --rmat-edges 60000 --kill-at 15 --checkpoint-every 10

Workloads (every engine computes the same answer; the run checks them against scipy):

    reach   nodes reachable from 10 roots (roots included)      output: node count
    cc      weakly connected components by min-label propagation output: components / largest
    tc      transitive closure (skipped above --tc-max-edges)    output: pair count

Engines (``--engines``; a failing engine is reported in the table, the run goes on):

    local   diffflow, ``dd.Dataflow(partitions=P)``: initial computation, then ``--batches``
            update batches of 10 inserted + 10 removed edges, each followed by
            ``flow.advance()`` (median and p90 latency)
    processes  the same diffflow code on ``dd.Dataflow(runtime="processes", partitions=P)``:
            one worker process per partition on this machine, the peer of Spark's runtime
    spark   the same diffflow code on ``dd.Dataflow(runtime="spark", spark=spark,
            partitions=P)``; the initial load uses ``insert_dataframe`` when the input has it
            (its time is a note; "initial" is the first ``advance`` for both diffflow engines)
    dfloop  the usual hand-written PySpark DataFrame semi-naive loop (``localCheckpoint``
            every round to cut the lineage); an "update" is a recompute from scratch on the
            changed edge set, reported next to its ratio to diffflow's update median (on
            Spark when that engine ran, otherwise local)
    sql     Spark SQL ``WITH RECURSIVE`` (UNION ALL only in Spark 4.x): on a graph with a
            cycle it cannot reach a fixpoint and fails; the error name is the outcome.
            ``--sql-max-level`` / ``--sql-max-rows`` set spark.sql.cteRecursionLevelLimit /
            spark.sql.cteRecursionRowLimit (Spark's defaults: 100 levels, 1,000,000 rows)

The trivial-job latency (``spark.range(1).count()``, median of 10) is printed first as the
floor under every Spark figure.  Spark runs in this process (``--master``, default
``local[3]``: each of P = 2 partition workers holds a slot, and jobs need one more;
loopback only, UI off, ``spark.sql.shuffle.partitions`` = ``--shuffle-partitions``);
nothing is downloaded.  Times exclude moving the edge arrays into
Spark (a cached DataFrame is built first, untimed, and shared by the Spark engines).
Before the first graph every engine runs its workloads untimed on a ``--warmup-edges``
R-MAT graph (numba kernels, Spark codegen, JVM JIT); the first graph of a run is still
often slower than later ones, so compare sizes within one run and repeat runs.
``--standalone`` starts a real standalone cluster on loopback instead (a master and two
Workers of ``--standalone-cores`` cores, ``tests/support/standalone.py``) whose hosts have no
diffflow: executors run the archive ``diffflow spark-pack`` builds (``ship=True``).
``--kill-at N`` kills the executor that holds partition 0's worker before update N of each
``spark`` run and reports that update's time (noticing the loss, new workers, restoring the
last checkpoint, replaying) apart from the median; ``--checkpoint-every`` sets how often
(for the ``processes`` engine too, so both do the same work).
``--trace DIR`` writes each diffflow run's trace there, for ``diffflow pag cp``.
Not collected by pytest.  Needs ``pip install pyspark`` and a Java 17/21 runtime.
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import signal
import statistics
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from bench_graphs import load_graph, rmat_edges, scipy_reach  # noqa: E402
from datasets import add_data_option, graph_file  # noqa: E402

import diffflow as dd  # noqa: E402
from diffflow import graphs  # noqa: E402

BATCH = 10           # edges inserted and removed per update batch
ROOTS = 10           # reachability roots
ENGINES = ("local", "processes", "spark", "dfloop", "sql")
WORKLOADS = ("reach", "cc", "tc")


class EngineTimeout(Exception):
    """An engine ran past ``--timeout`` seconds."""


# -- graphs, updates and reference answers ------------------------------------------------------

def make_updates(edges: np.ndarray, batches: int, seed: int = 1):
    """``batches`` pairs (removed, inserted) of 10 present / 10 absent edges; the final edge set.

    ``edges`` must be distinct rows.  New edges join existing nodes, are not self loops and
    are absent before the batch; removed edges are present then (an edge a batch inserted may
    be removed later), so the edge collection stays a set for every engine.
    """
    rng = np.random.default_rng(seed)
    nodes = np.unique(edges)
    n = len(nodes)
    current = edges.copy()
    out = []
    for _ in range(batches):
        keys = np.searchsorted(nodes, current[:, 0]) * n + np.searchsorted(nodes, current[:, 1])
        drop_at = rng.choice(len(current), BATCH, replace=False)
        add = np.zeros((0, 2), np.int64)
        while len(add) < BATCH:
            i, j = rng.integers(0, n, 4 * BATCH), rng.integers(0, n, 4 * BATCH)
            cand = np.unique(i * n + j)
            cand = cand[(cand // n != cand % n) & ~np.isin(cand, keys)]
            cand = cand[~np.isin(cand, np.searchsorted(nodes, add[:, 0]) * n
                                 + np.searchsorted(nodes, add[:, 1]))]
            cand = rng.permutation(cand)[: BATCH - len(add)]
            add = np.concatenate([add, np.stack([nodes[cand // n], nodes[cand % n]], 1)])
        drop = current[drop_at]
        keep = np.ones(len(current), bool)
        keep[drop_at] = False
        current = np.concatenate([current[keep], add])
        out.append((drop, add))
    return out, current


def scipy_cc(edges: np.ndarray) -> tuple[int, int]:
    """(number of weakly connected components, size of the largest) over edge endpoints."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    ids, inv = np.unique(edges.ravel(), return_inverse=True)
    e = inv.reshape(-1, 2)
    m = sp.csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(len(ids), len(ids)))
    count, labels = connected_components(m, directed=True, connection="weak")
    return int(count), int(np.bincount(labels).max()) if len(labels) else 0


def scipy_tc(edges: np.ndarray) -> int:
    """Number of (x, y) pairs with a non-empty path x -> y (semi-naive, boolean sparse)."""
    from bench_datalog import reference_size

    return reference_size("tc", edges, None)


def reference(workload: str, edges: np.ndarray, roots: np.ndarray):
    if workload == "reach":
        return scipy_reach(edges, roots)
    if workload == "cc":
        return scipy_cc(edges)
    return scipy_tc(edges)


def fmt_size(size) -> str:
    if size is None:
        return "-"
    if isinstance(size, tuple):
        return f"{size[0]:,} / {size[1]:,}"
    return f"{size:,}"


# -- results ------------------------------------------------------------------------------------

@dataclass
class Result:
    engine: str
    workload: str
    size0: object = None            # answer on the initial edges
    size1: object = None            # answer after the update batches (or the recompute)
    initial: float | None = None    # seconds
    updates: list = field(default_factory=list)   # seconds per batch
    recompute: float | None = None  # seconds, from-scratch engines only
    outcome: str = "ok"
    notes: list = field(default_factory=list)

    @property
    def median(self):
        return statistics.median(self.updates) if self.updates else None

    @property
    def p90(self):
        if not self.updates:
            return None
        s = sorted(self.updates)
        return s[min(len(s) - 1, int(0.9 * len(s)))]


def error_name(exc: BaseException) -> str:
    """Spark's error condition (``RECURSION_LEVEL_LIMIT_EXCEEDED``, ...) or the exception type."""
    if isinstance(exc, EngineTimeout):
        return f"timeout ({exc})"
    for getter in ("getCondition", "getErrorClass"):
        fn = getattr(exc, getter, None)
        if fn is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    name = fn()
                if name:
                    return name
            except Exception:  # noqa: BLE001 - a best-effort label
                pass
    text = str(exc)
    if "cancelled" in text and "Job" in text:
        return "timeout (Spark jobs cancelled)"
    found = re.search(r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)?)\]", text)
    if found:
        return found.group(1)
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"{type(exc).__name__}: {first[:160]}"


class Deadline:
    """``--timeout`` for one engine run.

    Spark engines: after the deadline a watchdog thread cancels all Spark jobs every second
    (so a running recursive query or loop stage fails) and ``check()`` raises between rounds.
    The local engine: SIGALRM raises in the main thread (between numba kernel calls).
    """

    def __init__(self, seconds: float, spark=None, alarm: bool = False):
        self.seconds, self.spark, self.alarm = seconds, spark, alarm
        self.end = time.perf_counter() + seconds
        self._done = threading.Event()
        self._thread = None

    def __enter__(self):
        if self.alarm and hasattr(signal, "SIGALRM"):
            def ring(signum, frame):
                raise EngineTimeout(f"{self.seconds:.0f} s")
            self._old = signal.signal(signal.SIGALRM, ring)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        if self.spark is not None:
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def _watch(self):
        if self._done.wait(self.seconds):
            return
        while not self._done.is_set():
            try:
                self.spark.sparkContext.cancelAllJobs()
            except Exception:  # noqa: BLE001
                pass
            self._done.wait(1.0)

    def expired(self) -> bool:
        return time.perf_counter() > self.end

    def check(self):
        if time.perf_counter() > self.end:
            raise EngineTimeout(f"{self.seconds:.0f} s")

    def __exit__(self, *exc):
        self._done.set()
        if self.alarm and hasattr(signal, "SIGALRM"):
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._old)
        if self._thread is not None:
            self._thread.join()
        return False


# -- diffflow (local and Spark runtimes) ---------------------------------------------------------

def transitive_closure(edges):
    """``(src, dst)`` pairs joined by a non-empty path, with ``iterate``."""
    step = edges.select(mid="src", to="dst")
    return edges.iterate(
        lambda path: edges.concat(
            path.join(step, left_on="dst", right_on="mid").select(src="src", dst="to")).distinct(),
        name="transitive_closure")


def build(flow, workload: str):
    edges = flow.input("edges", ["src", "dst"])
    roots = None
    if workload == "reach":
        roots = flow.input("roots", ["node"])
        out = graphs.reachable(edges, roots).aggregate(by=[], n=dd.count())
    elif workload == "cc":
        out = graphs.connected_components(edges).aggregate(by=["label"], size=dd.count())
    else:
        out = transitive_closure(edges).aggregate(by=[], n=dd.count())
    return edges, roots, out.output()


def read(workload: str, out):
    snap = out.snapshot()
    if workload == "cc":
        sizes = [row[1] for row in snap]
        return len(sizes), max(sizes, default=0)
    return next(iter(snap))[0] if snap else 0


def make_flow(engine: str, ctx, workload: str = "warm"):
    args = ctx.args
    trace = None
    if getattr(args, "trace", None) and workload != "warm":
        os.makedirs(args.trace, exist_ok=True)
        trace = os.path.join(args.trace, f"{engine}-{workload}-{len(getattr(ctx, 'edges', ()))}.jsonl")
    options = {"partitions": args.partitions, "trace": trace}
    if engine in ("spark", "processes") and args.checkpoint_every:  # (the same work on both)
        options.update(checkpoint_every=args.checkpoint_every,
                       checkpoint_dir=f"file://{args.scratch}/checkpoints-{engine}-{workload}")
    if engine == "spark":
        return dd.Dataflow(runtime="spark", spark=ctx.spark, **options)
    if engine == "processes":
        return dd.Dataflow(runtime="processes", **options)
    return dd.Dataflow(**options)


def kill_executor_of(flow) -> float:
    """SIGKILL the executor JVM under partition 0's worker; return the seconds until the
    worker has died with it."""
    worker = pid = flow._runtime.worker_pids()[0]
    while pid > 1:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if b"CoarseGrainedExecutorBackend" in fh.read():
                break
        with open(f"/proc/{pid}/stat") as fh:
            pid = int(fh.read().rsplit(")", 1)[1].split()[1])
    else:
        raise RuntimeError("partition 0's worker runs under no executor JVM")
    killed = time.perf_counter()
    os.kill(pid, signal.SIGKILL)
    while os.path.exists(f"/proc/{worker}") and time.perf_counter() - killed < 30:
        with open(f"/proc/{worker}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                break  # (a zombie has died)
        time.sleep(0.005)
    return time.perf_counter() - killed


def close_flow(flow):
    for name in ("close", "stop", "shutdown"):
        fn = getattr(flow, name, None)
        if callable(fn):
            try:
                fn()
            except Exception:  # noqa: BLE001
                pass
            return


def run_diffflow(engine: str, workload: str, ctx, res: Result) -> None:
    flow = make_flow(engine, ctx, workload)
    try:
        edges, roots, out = build(flow, workload)
        if roots is not None:
            roots.insert(ctx.roots[:, None])
        if engine == "spark" and hasattr(edges, "insert_dataframe"):
            load, _ = timed(edges.insert_dataframe, ctx.edges_df)
            res.notes.append(f"insert_dataframe {load:.2f} s")
        else:
            load, _ = timed(edges.insert, ctx.edges)
            if engine == "spark":
                res.notes.append("no insert_dataframe: numpy insert")
        res.initial, _ = timed(flow.advance)
        res.size0 = read(workload, out)
        for i, (drop, add) in enumerate(ctx.updates):
            ctx.deadline.check()
            edges.remove(drop)
            edges.insert(add)
            if engine == "spark" and i == ctx.args.kill_at:
                died = kill_executor_of(flow)
                t, _ = timed(flow.advance)
                res.notes.append(f"executor killed: its worker died in {died:.2f} s, the next "
                                 f"update took {t:.2f} s ({flow._runtime.recoveries} recovery)")
                continue
            t, _ = timed(flow.advance)
            res.updates.append(t)
        res.size1 = read(workload, out)
    finally:
        close_flow(flow)


def warm_diffflow(engine: str, workloads, ctx) -> str | None:
    """Run each workload on a small graph with three updates (numba kernels load, JIT warms).

    Returns None, or the error that makes this engine unusable.
    """
    warm = warm_graph(ctx.args)
    t0 = time.perf_counter()
    try:
        warm_df = None
        if engine == "spark":
            warm_df = to_df(ctx.spark, warm, ctx.args.shuffle_partitions)
        for workload in workloads:
            flow = make_flow(engine, ctx)
            try:
                edges, roots, out = build(flow, workload)
                if warm_df is not None and hasattr(edges, "insert_dataframe"):
                    edges.insert_dataframe(warm_df)
                else:
                    edges.insert(warm)
                if roots is not None:
                    roots.insert(warm[:3, :1])
                flow.advance()
                read(workload, out)
                for drop, add in make_updates(warm, 3, seed=7)[0]:
                    edges.remove(drop)
                    edges.insert(add)
                    flow.advance()
                    read(workload, out)
            finally:
                close_flow(flow)
    except Exception as exc:  # noqa: BLE001
        return error_name(exc)
    print(f"warm-up {engine}: {time.perf_counter() - t0:.1f} s", flush=True)
    return None


# -- PySpark DataFrame semi-naive loops ---------------------------------------------------------

def df_reach(spark, e, roots: np.ndarray, deadline):
    """Frontier join edges, minus known nodes, union, until the frontier is empty."""
    import pandas as pd
    from pyspark.sql import functions as F

    step = e.withColumnRenamed("src", "node")
    known = spark.createDataFrame(pd.DataFrame({"node": roots.astype(np.int64)})) \
        .distinct().localCheckpoint()
    frontier, rounds = known, 0
    while True:
        deadline.check()
        rounds += 1
        new = (frontier.join(step, "node").select(F.col("dst").alias("node")).distinct()
               .join(known, "node", "left_anti").localCheckpoint())
        if new.count() == 0:
            break
        known = known.unionByName(new).localCheckpoint()
        frontier = new
    return known.count(), rounds


def df_cc(spark, e, deadline):
    """Min-label propagation over both edge directions, sending only from changed nodes."""
    from pyspark.sql import functions as F

    und = (e.select("src", "dst").unionByName(e.select(F.col("dst").alias("src"),
                                                      F.col("src").alias("dst")))
           .distinct().localCheckpoint())
    labels = und.select(F.col("src").alias("node")).distinct() \
        .withColumn("label", F.col("node")).localCheckpoint()
    step = und.withColumnRenamed("src", "node")
    delta, rounds = labels, 0
    while True:
        deadline.check()
        rounds += 1
        msgs = delta.join(step, "node").groupBy(F.col("dst").alias("node")) \
            .agg(F.min("label").alias("cand"))
        improved = (msgs.join(labels, "node").where(F.col("cand") < F.col("label"))
                    .select("node", F.col("cand").alias("label")).localCheckpoint())
        if improved.count() == 0:
            break
        labels = (labels.join(improved.withColumnRenamed("label", "new"), "node", "left")
                  .select("node", F.coalesce("new", "label").alias("label")).localCheckpoint())
        delta = improved
    sizes = labels.groupBy("label").count()
    row = sizes.agg(F.count("*").alias("n"), F.max("count").alias("largest")).collect()[0]
    return (int(row["n"]), int(row["largest"] or 0)), rounds


def df_tc(spark, e, deadline):
    """Semi-naive: delta joined with edges, minus known pairs, union, until delta is empty."""
    from pyspark.sql import functions as F

    step = e.select(F.col("src").alias("mid"), F.col("dst").alias("to"))
    tc = e.select("src", "dst").distinct().localCheckpoint()
    delta, rounds = tc, 0
    while True:
        deadline.check()
        rounds += 1
        new = (delta.select("src", F.col("dst").alias("mid")).join(step, "mid")
               .select("src", F.col("to").alias("dst")).distinct()
               .join(tc, ["src", "dst"], "left_anti").localCheckpoint())
        if new.count() == 0:
            break
        tc = tc.unionByName(new).localCheckpoint()
        delta = new
    return tc.count(), rounds


def run_dfloop(workload: str, ctx, res: Result) -> None:
    def once(df):
        if workload == "reach":
            return df_reach(ctx.spark, df, ctx.roots, ctx.deadline)
        if workload == "cc":
            return df_cc(ctx.spark, df, ctx.deadline)
        return df_tc(ctx.spark, df, ctx.deadline)

    res.initial, (res.size0, rounds) = timed(once, ctx.edges_df)
    res.notes.append(f"{rounds} rounds")
    final_df = ctx.final_df()
    res.recompute, (res.size1, rounds) = timed(once, final_df)
    if ctx.args.batches == 0:
        res.notes.append("recompute on the initial edges (--batches 0)")


# -- Spark SQL WITH RECURSIVE --------------------------------------------------------------------

SQL = {
    "reach": """WITH RECURSIVE r(node) AS (
        SELECT node FROM bench_roots
        UNION ALL
        SELECT e.dst FROM r JOIN {edges} e ON r.node = e.src)
      SELECT count(DISTINCT node) AS n FROM r""",
    # The aggregate in the recursive step is the natural formulation; Spark rejects it.
    "cc": """WITH RECURSIVE l(node, label) AS (
        SELECT DISTINCT node, node FROM
          (SELECT src AS node FROM {edges} UNION ALL SELECT dst FROM {edges})
        UNION ALL
        SELECT u.dst, min(l.label) FROM l
          JOIN (SELECT DISTINCT * FROM
            (SELECT src, dst FROM {edges} UNION ALL SELECT dst, src FROM {edges})) u
          ON l.node = u.src GROUP BY u.dst)
      SELECT count(*) AS n, max(c) AS largest FROM
        (SELECT label, count(*) AS c FROM
          (SELECT node, min(label) AS label FROM l GROUP BY node) GROUP BY label)""",
    "tc": """WITH RECURSIVE t(src, dst) AS (
        SELECT src, dst FROM {edges}
        UNION ALL
        SELECT t.src, e.dst FROM t JOIN {edges} e ON t.dst = e.src)
      SELECT count(*) AS n FROM (SELECT DISTINCT src, dst FROM t)""",
}

SQL_UNION = """WITH RECURSIVE r(node) AS (
        SELECT node FROM bench_roots
        UNION
        SELECT e.dst FROM r JOIN {edges} e ON r.node = e.src)
      SELECT count(*) AS n FROM r"""


def sql_once(spark, workload: str, view: str):
    row = spark.sql(SQL[workload].format(edges=view)).collect()[0]
    if workload == "cc":
        return int(row["n"]), int(row["largest"] or 0)
    return int(row["n"])


def run_sql(workload: str, ctx, res: Result) -> None:
    res.initial, res.size0 = timed(sql_once, ctx.spark, workload, "bench_edges")
    ctx.final_df().createOrReplaceTempView("bench_edges_final")
    res.recompute, res.size1 = timed(sql_once, ctx.spark, workload, "bench_edges_final")


def run_sql_union(ctx, res: Result) -> None:
    res.initial, res.size0 = timed(
        lambda: int(ctx.spark.sql(SQL_UNION.format(edges="bench_edges")).collect()[0]["n"]))


# -- Spark session -------------------------------------------------------------------------------

def start_standalone(args):
    """A master and two Workers on loopback whose hosts have no diffflow (tests/support)."""
    from tests.support.standalone import StandaloneCluster, python_without_diffflow

    from diffflow.runtime.spark import _ship

    t0 = time.perf_counter()
    hosts = python_without_diffflow(os.path.join(args.scratch, "hosts"))
    cluster = StandaloneCluster(os.path.join(args.scratch, "cluster"), workers=2,
                                cores=args.standalone_cores, memory="4g",
                                worker_env=hosts).start()
    args.master = cluster.url
    args.extra_conf = {"spark.executor.memory": "2g"}
    _ship(args.extra_conf, True)  # the archive, built once per content
    os.environ["PYSPARK_PYTHON"] = args.extra_conf["spark.pyspark.python"]
    print(f"standalone cluster {cluster.url}: 2 Workers x {args.standalone_cores} cores "
          f"(loopback), archive shipped, {time.perf_counter() - t0:.1f} s", flush=True)
    return cluster


def start_spark(args):
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        sys.exit("pyspark is not installed: pip install pyspark")
    builder = (SparkSession.builder.master(args.master).appName("diffflow-bench-spark")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
               .config("spark.default.parallelism", str(args.shuffle_partitions))
               .config("spark.python.worker.reuse", "true")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.driver.memory", args.driver_memory))
    for key, value in getattr(args, "extra_conf", {}).items():
        builder = builder.config(key, value)
    t0 = time.perf_counter()
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001
        sys.exit(f"could not start Spark ({error_name(exc)}); Spark 4 needs Java 17 or 21 "
                 f"(e.g. Debian's openjdk-17-jre-headless) and JAVA_HOME or java on PATH")
    spark.sparkContext.setLogLevel("OFF")
    try:  # PySpark logs every SQL error as a JSON record with the whole Java stack: mute it
        from pyspark.logger import PySparkLogger

        for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
            PySparkLogger.getLogger(name).disabled = True
    except ImportError:
        pass
    if args.sql_max_level is not None:
        spark.conf.set("spark.sql.cteRecursionLevelLimit", str(args.sql_max_level))
    if args.sql_max_rows is not None:
        spark.conf.set("spark.sql.cteRecursionRowLimit", str(args.sql_max_rows))
    print(f"Spark {spark.version} {args.master}: session started in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    return spark


def spark_floor(spark, n: int = 10):
    for _ in range(5):
        spark.range(1).count()
    times = []
    for _ in range(n):
        t, _ = timed(spark.range(1).count)
        times.append(t)
    return statistics.median(times), sorted(times)[min(n - 1, int(0.9 * n))]


def warm_graph(args) -> np.ndarray:
    """The warm-up graph: R-MAT scale 10 with ``--warmup-edges`` edges (tc: at most 1,000)."""
    n = args.warmup_edges if "tc" not in args.workloads else min(args.warmup_edges, 1000)
    return np.unique(rmat_edges(10, n, seed=5), axis=0)


def warm_dfloop(spark, workloads, args) -> None:
    """Each loop once on a small graph: the first Spark jobs of a kind pay for codegen and JIT."""
    warm = warm_graph(args)
    df = to_df(spark, warm, args.shuffle_partitions)
    never = Deadline(float("inf"))
    t0 = time.perf_counter()
    for workload in workloads:
        if workload == "reach":
            df_reach(spark, df, warm[:3, 0], never)
        elif workload == "cc":
            df_cc(spark, df, never)
        else:
            df_tc(spark, df, never)
    df.unpersist()
    print(f"warm-up dfloop: {time.perf_counter() - t0:.1f} s", flush=True)


def to_df(spark, edges: np.ndarray, parts: int):
    import pandas as pd

    pdf = pd.DataFrame({"src": edges[:, 0].astype(np.int64), "dst": edges[:, 1].astype(np.int64)})
    df = spark.createDataFrame(pdf).repartition(parts).cache()
    df.count()
    return df


# -- driver --------------------------------------------------------------------------------------

def timed(fn, *args):
    t0 = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - t0, value


class Context:
    """One graph: its edges, roots, update batches, final edge set and cached DataFrames."""

    def __init__(self, args, spark, label, edges):
        self.args, self.spark, self.label, self.edges = args, spark, label, edges
        rng = np.random.default_rng(2)
        sources = np.unique(edges[:, 0])
        self.roots = np.sort(rng.choice(sources, min(ROOTS, len(sources)), replace=False))
        self.updates, self.final = make_updates(edges, args.batches)
        self.edges_df = self._final_df = None
        self.deadline = None
        if spark is not None:
            import pandas as pd

            t, self.edges_df = timed(to_df, spark, edges, args.shuffle_partitions)
            self.edges_df.createOrReplaceTempView("bench_edges")
            spark.createDataFrame(pd.DataFrame({"node": self.roots.astype(np.int64)})) \
                .createOrReplaceTempView("bench_roots")
            print(f"  edges into a cached Spark DataFrame: {t:.2f} s (not counted)", flush=True)

    def final_df(self):
        if self._final_df is None:
            self._final_df = to_df(self.spark, self.final, self.args.shuffle_partitions)
        return self._final_df

    def release(self):
        for df in (self.edges_df, self._final_df):
            if df is not None:
                df.unpersist()


def run_graph(args, spark, label, edges, broken):
    print(f"\n## {label}: {len(np.unique(edges)):,} nodes, {len(edges):,} edges", flush=True)
    ctx = Context(args, spark, label, edges)
    results, refs = [], {}
    for workload in args.workloads:
        if workload == "tc" and len(edges) > args.tc_max_edges:
            print(f"  tc skipped: {len(edges):,} edges > --tc-max-edges {args.tc_max_edges:,}")
            continue
        t0, ref0 = timed(reference, workload, edges, ctx.roots)
        t1, ref1 = timed(reference, workload, ctx.final, ctx.roots)
        refs[workload] = (ref0, ref1)
        print(f"  {workload}: scipy reference {fmt_size(ref0)} -> {fmt_size(ref1)} "
              f"({t0 * 1e3:.0f} ms)", flush=True)
        for engine in args.engines:
            res = Result(engine, workload)
            if engine in broken:
                res.outcome = broken[engine]
                results.append(res)
                continue
            alarm = engine == "local"
            started = time.perf_counter()
            with Deadline(args.timeout, spark=None if alarm else spark, alarm=alarm) as dl:
                ctx.deadline = dl
                try:
                    if engine in ("local", "processes", "spark"):
                        run_diffflow(engine, workload, ctx, res)
                    elif engine == "dfloop":
                        run_dfloop(workload, ctx, res)
                    elif engine == "sql":
                        if workload == "reach":
                            union = Result("sql UNION", workload)
                            try:
                                run_sql_union(ctx, union)
                            except Exception as exc:  # noqa: BLE001
                                union.outcome = error_name(exc)
                                union.notes.append(
                                    f"failed after {time.perf_counter() - started:.1f} s")
                            started = time.perf_counter()
                            results.append(union)
                        run_sql(workload, ctx, res)
                except Exception as exc:  # noqa: BLE001
                    # past the deadline the alarm may surface wrapped (e.g. in an OperatorError)
                    res.outcome = (f"timeout ({args.timeout:.0f} s)" if dl.expired()
                                   else error_name(exc))
                    res.notes.append(f"failed after {time.perf_counter() - started:.1f} s")
            gc.collect()
            results.append(res)
            print(f"  {engine:6s} {workload:5s} {res.outcome:30.30s} size {fmt_size(res.size0)}"
                  f" -> {fmt_size(res.size1)}, initial {fmt_s(res.initial)} s, update median "
                  f"{fmt_ms(res.median)} ms, recompute {fmt_s(res.recompute)} s", flush=True)
    ctx.release()
    print_table(label, results, refs)
    return results


def fmt_s(v):
    return "-" if v is None else f"{v:.2f}"


def fmt_ms(v):
    return "-" if v is None else f"{v * 1e3:.1f}"


def print_table(label, results, refs):
    by_key = {(r.engine, r.workload): r for r in results}
    print(f"\n### {label}\n")
    print("| engine | workload | output size (initial -> after updates) | initial s "
          "| update median ms (p90) | recompute s | recompute / update | outcome |")
    print("|---|---|---|---|---|---|---|---|")
    mismatches = []
    for r in results:
        ref0, ref1 = refs.get(r.workload, (None, None))
        bad = [f"{what} {fmt_size(got)} != scipy {fmt_size(want)}"
               for what, got, want in (("initial", r.size0, ref0), ("final", r.size1, ref1))
               if got is not None and got != want]
        if bad:
            mismatches.append(f"{r.engine} {r.workload}: " + "; ".join(bad))
        ratio = "-"
        if r.recompute is not None:
            for base in ("spark", "local"):
                upd = by_key.get((base, r.workload))
                if upd is not None and upd.median:
                    ratio = f"{r.recompute / upd.median:,.0f}x (vs {base})"
                    break
        update = "-" if r.median is None else f"{r.median * 1e3:.1f} ({r.p90 * 1e3:.1f})"
        outcome = r.outcome + ("; " + ", ".join(r.notes) if r.notes else "")
        if bad:
            outcome = "**MISMATCH** " + outcome
        size = fmt_size(r.size0) if r.size1 is None else \
            f"{fmt_size(r.size0)} -> {fmt_size(r.size1)}"
        print(f"| {r.engine} | {r.workload} | {size} | {fmt_s(r.initial)} | {update} "
              f"| {fmt_s(r.recompute)} | {ratio} | {outcome} |")
    print("\n(cc output: components / largest component; sizes checked against scipy)")
    for m in mismatches:
        print(f"\n!!!!!!!! OUTPUT MISMATCH: {m} !!!!!!!!", file=sys.stderr)
        print(f"!!!!!!!! OUTPUT MISMATCH: {m} !!!!!!!!")
    sys.stdout.flush()


def main() -> None:
    from diffflow.arrangements.columnar import load_kernels

    load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--graphs", default="rmat", help="rmat and/or ego-twitter (comma list; "
                        "any SNAP graph found under --data works)")
    parser.add_argument("--rmat-scale", type=int, default=14)
    parser.add_argument("--rmat-edges", default="60000,120000",
                        help="comma list of R-MAT sizes: one graph each")
    parser.add_argument("--workloads", default="reach,cc,tc", help="reach, cc, tc")
    parser.add_argument("--tc-max-edges", type=int, default=5000,
                        help="skip tc on graphs with more edges (TC explodes)")
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=2, help="diffflow partitions")
    parser.add_argument("--engines", default="local,spark,dfloop,sql",
                        help="local, spark, dfloop, sql")
    parser.add_argument("--timeout", type=float, default=1800,
                        help="seconds per engine and workload (initial + updates/recompute)")
    parser.add_argument("--warmup-edges", type=int, default=3000,
                        help="edges of the R-MAT graph every engine runs first, untimed")
    parser.add_argument("--master", default="local[3]",
                        help="Spark master (each diffflow partition holds a slot: P + 1)")
    parser.add_argument("--standalone", action="store_true",
                        help="start a standalone cluster on loopback (2 Workers whose hosts "
                             "lack diffflow; executors run the shipped archive)")
    parser.add_argument("--standalone-cores", type=int, default=2, help="cores per Worker")
    parser.add_argument("--kill-at", type=int, default=None,
                        help="kill the executor of partition 0 before this update (spark)")
    parser.add_argument("--checkpoint-every", type=int, default=None,
                        help="spark engine: checkpoint every N epochs (to a file:// folder)")
    parser.add_argument("--trace", default=None, help="write diffflow runs' traces here")
    parser.add_argument("--shuffle-partitions", type=int, default=4)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--sql-max-level", type=int, default=None,
                        help="spark.sql.cteRecursionLevelLimit (Spark's default 100)")
    parser.add_argument("--sql-max-rows", type=int, default=None,
                        help="spark.sql.cteRecursionRowLimit (Spark's default 1,000,000)")
    add_data_option(parser)
    args = parser.parse_args()
    for name in [g for g in args.graphs.split(",") if g and g != "rmat"]:
        graph_file(name, args.data)  # a missing graph stops us before Spark starts
    args.engines = [e for e in args.engines.split(",") if e]
    args.workloads = [w for w in args.workloads.split(",") if w]
    for e in args.engines:
        if e not in ENGINES:
            parser.error(f"unknown engine {e!r}; choose from {', '.join(ENGINES)}")
    for w in args.workloads:
        if w not in WORKLOADS:
            parser.error(f"unknown workload {w!r}; choose from {', '.join(WORKLOADS)}")

    import tempfile

    args.scratch = tempfile.mkdtemp(prefix="bench-spark-")
    cluster = None
    if args.standalone:
        # kernels compiled here first, so the archive ships them (a fresh executor loads)
        warm_diffflow("local", args.workloads, argparse.Namespace(args=args, spark=None))
        cluster = start_standalone(args)
    spark = None
    if any(e in ("spark", "dfloop", "sql") for e in args.engines):
        spark = start_spark(args)
        med, p90 = spark_floor(spark)
        print(f"floor: trivial Spark job spark.range(1).count(): median {med * 1e3:.0f} ms, "
              f"p90 {p90 * 1e3:.0f} ms (of 10)", flush=True)
        if "sql" in args.engines:
            level = spark.conf.get("spark.sql.cteRecursionLevelLimit")
            rows = spark.conf.get("spark.sql.cteRecursionRowLimit")
            print(f"recursive CTE limits: level {level}, rows {rows}", flush=True)

    if "dfloop" in args.engines:
        warm_dfloop(spark, args.workloads, args)
    ctx0 = argparse.Namespace(args=args, spark=spark)
    broken = {}
    for engine in ("local", "processes", "spark"):
        if engine in args.engines:
            err = warm_diffflow(engine, args.workloads, ctx0)
            if err:
                print(f"engine {engine} unusable: {err}", flush=True)
                broken[engine] = err

    graphs_todo = []
    for name in [g for g in args.graphs.split(",") if g]:
        if name == "rmat":
            for n in (int(x) for x in args.rmat_edges.split(",") if x):
                e = np.unique(rmat_edges(args.rmat_scale, n, seed=0), axis=0)
                graphs_todo.append((f"R-MAT scale {args.rmat_scale}, {n:,} edges", e))
        else:
            graphs_todo.append((name, load_graph(name, args.data)))

    all_results = []
    for label, e in graphs_todo:
        all_results.append((label, run_graph(args, spark, label, e, broken)))
        gc.collect()

    rmat = [(label, rs) for label, rs in all_results if label.startswith("R-MAT")]
    if len(rmat) > 1:
        print("\n### Update latency as the R-MAT graph grows (median ms; "
              "from-scratch engines: recompute s)\n")
        print("| engine | workload | " + " | ".join(label for label, _ in rmat) + " |")
        print("|---|---|" + "---|" * len(rmat))
        for engine in args.engines:
            for workload in args.workloads:
                cells = []
                for _, rs in rmat:
                    r = next((x for x in rs if x.engine == engine and x.workload == workload),
                             None)
                    if r is None or r.outcome != "ok":
                        cells.append("-" if r is None else r.outcome.split(":")[0][:40])
                    elif r.median is not None:
                        cells.append(f"{r.median * 1e3:.1f} ms")
                    else:
                        cells.append(f"{fmt_s(r.recompute)} s")
                if any(c != "-" for c in cells):
                    print(f"| {engine} | {workload} | " + " | ".join(cells) + " |")
    if spark is not None:
        from diffflow.runtime.spark import release_workers

        release_workers(spark)
        spark.stop()
    if cluster is not None:
        cluster.stop()


if __name__ == "__main__":
    main()
