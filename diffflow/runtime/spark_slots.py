"""Partition workers in Spark's task slots: one long-running task per worker.

A partition worker is the child process of one Spark task, which waits for it: the
worker holds that task's executor slot for its whole life, the executor's process tree
(and so its container's memory limit on YARN or Kubernetes) holds the worker, and the
worker dies with its task -- killed with its parent (``PR_SET_PDEATHSIG`` on Linux, and
a watch on the parent's pid everywhere) when Spark kills the task or loses the executor.
The coordinator then sees the worker's connection close and recovers (fresh workers in
fresh tasks, the last checkpoint, the inputs since; :mod:`diffflow.runtime.cluster`).

Why a child process and not the task's own Python: a worker ends with ``os._exit`` (its
peer threads and sockets go with the process), and a task's Python is reused by the
next task.  Why not a barrier stage: a barrier stage is retried whole when one task
fails (every worker would restart for one lost executor), and Spark refuses barrier
stages under dynamic allocation.  A task retried after its executor was lost starts no
worker (the pool asks for replacements itself, as many as it needs).

Slots: a launch needs one free slot per worker (:func:`slots`: cores / ``spark.task.cpus``
of the registered executors, minus their running tasks).  With fewer free than needed,
and dynamic allocation off, it waits :data:`SLOT_WAIT` seconds for executors to register
and then fails naming the numbers.  Spark jobs diffflow runs itself (DataFrames in and
out) need one free slot more: :meth:`SparkLauncher.free_slot` first retires idle pooled
workers, then fails naming the fix.  Under dynamic allocation Spark adds executors for
waiting tasks, and an executor running a task is never idle, so it is not removed.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

#: seconds a launch waits for the executors to offer the slots it needs (executors
#: register a few seconds after the application starts) before it fails
SLOT_WAIT = 20.0


def slots(sc) -> tuple:
    """``(slots, busy)``: the task slots of the registered executors (their cores over
    ``spark.task.cpus``; the driver's count only for a local master, where the driver is
    the executor) and how many tasks run now (the task scheduler's count: the status
    store's lags behind, it is written at most every so often)."""
    task_cpus = int(sc.getConf().get("spark.task.cpus", "1"))
    local = sc.master.startswith("local")
    context = sc._jsc.sc()
    summaries = context.statusStore().executorList(True)
    total = 0
    for i in range(summaries.size()):
        executor = summaries.apply(i)
        if executor.id() != "driver" or local:
            total += executor.totalCores() // task_cpus
    busy = 0
    running = context.taskScheduler().runningTasksByExecutors().iterator()
    while running.hasNext():
        busy += running.next()._2()
    return total, busy


def slot_message(master: str, count: int, total: int, busy: int) -> str:
    """What to do when ``count`` more workers find ``total - busy`` free slots.

    >>> print(slot_message("local[2]", 2, 2, 1))  # doctest: +NORMALIZE_WHITESPACE
    Spark cannot place 2 more partition worker(s): each holds an executor slot (a core, or
    spark.task.cpus cores) while it lives, and local[2] has 2 slot(s), 1 of them busy
    (diffflow's workers included), so 1 free. Use local[N] with N >= 3 (one more for
    DataFrame jobs), or fewer partitions (-j, partitions=).
    """
    where = f"local[N] with N >= {busy + count} (one more for DataFrame jobs)" \
        if master.startswith("local") else \
        "more cores (more executors or Workers, spark.cores.max; one more for DataFrame jobs)"
    return (f"Spark cannot place {count} more partition worker(s): each holds an executor "
            f"slot (a core, or spark.task.cpus cores) while it lives, and {master} has "
            f"{total} slot(s), {busy} of them busy (diffflow's workers included), so "
            f"{max(total - busy, 0)} free. Use {where}, or fewer partitions (-j, partitions=).")


def dynamic_allocation(sc) -> bool:
    """Whether Spark adds and removes executors as tasks wait (``spark.dynamicAllocation``)."""
    return sc.getConf().get("spark.dynamicAllocation.enabled", "false").lower() == "true"


def waiting_tasks(sc, ours=()) -> int:
    """Tasks of running jobs not started yet, except the jobs of the groups ``ours``."""
    tracker = sc.statusTracker()
    skip = {job for group in ours for job in tracker.getJobIdsForGroup(group)}
    waiting = 0
    for job in tracker.getActiveJobsIds():
        info = None if job in skip else tracker.getJobInfo(job)
        for stage in (info.stageIds if info is not None else ()):
            state = tracker.getStageInfo(stage)
            if state is not None:
                waiting += max(0, state.numTasks - state.numActiveTasks
                               - state.numCompletedTasks - state.numFailedTasks)
    return waiting


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """In the worker, before it runs: the kernel kills it when its task's process dies."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def serve_partition(args, _rows):
    """The Spark task of one partition worker: start it, wait for it, end with it."""
    from pyspark import TaskContext

    from diffflow.runtime.worker_start import worker_command

    host, port, authkey_hex, background = args
    context = TaskContext.get()
    if context is not None and context.attemptNumber() > 0:
        # a retry after its executor was lost: the coordinator asks for what it needs
        yield (socket.gethostname(), -1, None)
        return
    bind = os.environ.get("SPARK_LOCAL_IP") or socket.gethostbyname(socket.gethostname())
    proc = subprocess.Popen(
        worker_command(host, port, bytes.fromhex(authkey_hex), bind, os.getpid(), background),
        stdin=subprocess.DEVNULL,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
    try:
        proc.wait()
    finally:  # (the task was killed: the worker goes with it)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    yield (socket.gethostname(), proc.pid, proc.returncode)


class SparkLauncher:
    """Starts partition workers as long-running Spark tasks (a job each, run by a thread
    of the driver) and checks the slots they need."""

    def __init__(self, spark):
        self.spark = spark
        self.jobs: list = []     # (job group, thread, launch) of every worker whose job may run
        self.failure = None      # why a launch's job failed, once it did
        self.pool = None         # the pool whose idle workers free_slot may retire
        self.launches = 0        # launches so far: a failure matters to the latest only
        self.yielding = None     # the thread that retires idle workers when jobs wait
        self.stopped = False
        self.lock = threading.Lock()
        self.cancelled: set = set()  # job groups of lost workers, cancelled on purpose

    def launch(self, count: int, address: tuple, authkey: bytes, bind_host: str,
               background: bool = False) -> None:
        """Start ``count`` workers that connect to ``address`` (fails at once, in one
        message, when the cluster cannot offer their slots).  Each is a job of its own, so
        a lost task (a local master does not retry it) takes only its own worker along.
        ``background``: they start at the lowest priority (ahead of a rescaling step)."""
        sc = self.spark.sparkContext
        # (a lost worker's retried task would hold the slot we need; every earlier launch
        # was accepted, or failed, before this one: take() runs them one at a time)
        self.cancel_retries(before=self.launches + 1)
        self._wait_for_slots(sc, count)
        if self.yielding is None:
            self.yielding = threading.Thread(target=self._yield_idle, daemon=True,
                                             name="diffflow-idle-workers")
            self.yielding.start()
        with self.lock:  # (a lost worker's job may be failing right now)
            self.launches += 1
            self.failure = None
        self.jobs = [job for job in self.jobs if job[1].is_alive()]
        for _ in range(count):
            group = f"diffflow-worker-{uuid.uuid4().hex[:12]}"
            thread = threading.Thread(target=self._run, name=group, daemon=True,
                                      args=(address, authkey, group, self.launches,
                                            background))
            self.jobs.append((group, thread, self.launches))
            thread.start()

    @property
    def groups(self) -> list:
        """The job groups of the workers' jobs still running."""
        return [group for group, thread, _ in self.jobs if thread.is_alive()]

    def _wait_for_slots(self, sc, count: int) -> None:
        if dynamic_allocation(sc):
            return  # (Spark starts executors for the waiting tasks; the pool waits for them)
        # (a local master's slots are all there from the start: no executor to wait for)
        deadline = time.monotonic() + (0 if sc.master.startswith("local") else SLOT_WAIT)
        while True:
            total, busy = slots(sc)
            if total - busy >= count:
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(slot_message(sc.master, count, total, busy))
            time.sleep(0.1)
            self.cancel_retries(before=self.launches + 1)  # (a retry may hold the slot)

    def _run(self, address, authkey, group, launch, background=False) -> None:
        from functools import partial

        sc = self.spark.sparkContext
        try:
            sc.setJobGroup(group, "diffflow: a partition worker", interruptOnCancel=True)
            task = partial(serve_partition, (address[0], address[1], authkey.hex(), background))
            sc.parallelize([0], 1).mapPartitions(task).collect()
        except Exception as exc:  # noqa: BLE001 - told to whoever waits for the workers
            # (a worker of an earlier launch that is lost is the coordinator's to notice:
            # its connection closes; only a launch still awaited needs to hear of it)
            with self.lock:
                if not self.stopped and launch == self.launches and \
                        group not in self.cancelled:
                    self.failure = exc

    def cancel_retries(self, before: int | None = None) -> int:
        """Cancel the jobs of workers whose task failed (its executor was lost): Spark retries
        such a task, and the retry, which starts nothing (see :func:`serve_partition`), would
        hold a slot while a Python starts for it -- seconds on a fresh executor -- where the
        worker that replaces the lost one is about to go.  Only jobs of launches before
        ``before`` (default: the latest, which may still be awaited: its failure, e.g. a
        Python without diffflow, is :meth:`check`'s to report).  Returns how many."""
        sc = self.spark.sparkContext
        tracker = sc.statusTracker()
        before = self.launches if before is None else before
        cancelled = 0
        for group, thread, launch in self.jobs:
            if group in self.cancelled or not thread.is_alive() or launch >= before:
                continue
            for job in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job)
                stages = [tracker.getStageInfo(stage) for stage in (info.stageIds if info else ())]
                if any(stage is not None and stage.numFailedTasks > 0 for stage in stages):
                    self.cancelled.add(group)
                    sc.cancelJobGroup(group)
                    cancelled += 1
                    break
        return cancelled

    def check(self) -> None:
        """Raise why the workers will not come, once a launch's job has failed."""
        if self.failure is None:
            return
        exc, self.failure = self.failure, None
        problem = executor_python_problem(self.spark.sparkContext, exc)
        raise RuntimeError(problem or f"Spark could not run diffflow's partition workers: "
                                      f"{task_error(exc)}")

    def free_slot(self, parts: int) -> None:
        """Make sure a Spark job of diffflow's own (DataFrames in or out) can run: a free
        slot, retiring idle pooled workers if need be; else one message naming the fix."""
        sc = self.spark.sparkContext
        if dynamic_allocation(sc):
            return
        total, busy = slots(sc)
        if total - busy >= 1:
            return
        if self.pool is not None and self.pool.idle:
            with self.pool.lock:
                self.pool.retire_idle()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                total, busy = slots(sc)
                if total - busy >= 1:
                    return
                time.sleep(0.2)
        raise RuntimeError(
            f"reading or writing a DataFrame runs a Spark job, which needs a free executor "
            f"slot, but all {total} slot(s) of {sc.master} are busy ({parts} held by this "
            f"dataflow's partition workers): give Spark at least {parts + 1} slots (more "
            f"executors or cores, local[N] with N >= {parts + 1}) or use fewer partitions.")

    def _yield_idle(self) -> None:
        """Idle pooled workers hold slots: when another job's tasks wait for slots, end
        them (the next dataflow starts fresh ones), so Spark work never waits on ours; and
        lost workers' retried tasks are cancelled (:meth:`cancel_retries`)."""
        while not self.stopped:
            time.sleep(0.5)
            try:
                self.cancel_retries()
            except Exception:  # noqa: BLE001 - a stopping context: nothing to cancel
                pass
            pool = self.pool
            if pool is None or not pool.idle or not pool.lock.acquire(blocking=False):
                continue
            try:
                if pool.idle and waiting_tasks(self.spark.sparkContext, self.groups):
                    pool.retire_idle()
            except Exception:  # noqa: BLE001 - a stopping context: nothing to yield to
                pass
            finally:
                pool.lock.release()

    def stop(self, wait: float = 5.0) -> None:
        """Let the idle workers' jobs end (they exit once the pool has hung up) for up to
        ``wait`` seconds, then cancel what is left when no dataflow holds a worker."""
        self.stopped = True
        deadline = time.monotonic() + wait
        held = self.pool.taken if self.pool is not None else 0  # (their dataflows are open)
        while len(self.groups) > held and time.monotonic() < deadline:
            time.sleep(0.05)
        # (while dataflows hold workers, which job is whose is unknown: cancel none; they end
        # when their dataflows give them back to the closed pool)
        groups, self.jobs = ([] if held else self.groups), []
        try:
            sc = self.spark.sparkContext
            for group in groups:
                sc.cancelJobGroup(group)
        except Exception:  # noqa: BLE001 - a stopped context has nothing left to cancel
            pass


def executor_python_problem(sc, exc) -> str | None:
    """A message for a Spark job that failed because the executors' Python lacks a module,
    or because a shipped archive found no Python of its version there.

    >>> class Context: pythonExec, master = "python3", "spark://head:7077"
    >>> print(executor_python_problem(Context(), Exception("No module named 'diffflow'")))
    ... # doctest: +NORMALIZE_WHITESPACE
    Spark's executors ran Python 'python3' (master spark://head:7077), which cannot import
    diffflow (No module named 'diffflow'). Ship diffflow with the job (diffflow run --ship,
    local_session(ship=True); a package of your own code: diffflow spark-pack FILE --with
    PACKAGE, then --ship FILE), install it into that Python on every executor, or point Spark
    at a Python that has it: spark.pyspark.python=PATH (the same path on every executor; --conf
    with diffflow run or spark-submit, conf= with local_session), or PYSPARK_PYTHON before the
    session starts.
    """
    shipped = re.search(r"diffflow's Spark archive holds packages for .*?diffflow spark-pack\)",
                        str(exc), flags=re.S)
    if shipped:  # (what the archive's bin/python said on the executor)
        return re.sub(r"\s+", " ", shipped.group(0))
    found = re.search(r"No module named '([\w.]+)'", str(exc))
    if not found:
        return None
    module = found.group(1)
    python = getattr(sc, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON", "python3")
    return (f"Spark's executors ran Python {python!r} (master {sc.master}), which cannot import "
            f"{module.split('.')[0]} (No module named {module!r}). Ship diffflow with the "
            f"job (diffflow run --ship, local_session(ship=True); a package of your own "
            f"code: diffflow spark-pack FILE --with PACKAGE, then --ship FILE), install it "
            f"into that Python on every executor, or point Spark at a Python that has it: "
            f"spark.pyspark.python=PATH (the same path on every executor; --conf with "
            f"diffflow run or spark-submit, conf= with local_session), or PYSPARK_PYTHON "
            f"before the session starts.")


def task_error(exc: Exception) -> str:
    """The user's message out of a Spark task failure (the last 'SomethingError: ...' line)."""
    text = str(exc)
    found = re.findall(r"^\s*(?:\w+\.)*(\w*Error): (.+)$", text, flags=re.M)
    for kind, message in reversed(found):
        if kind not in ("PythonException", "Py4JJavaError", "SparkException"):
            return message.strip()
    return text.splitlines()[0] if text else type(exc).__name__
