"""Spark event logs as raw events (PAG.md §4, after SnailTrail's spark-parser).

Usage: ``diffflow pag cp app-2024...-0001 --format spark --window 10s`` (the
format is also told from the log's first line), or ``read_spark(path)`` then
:func:`~diffflow.pag.windows.build_windows`.  Spark logs every task, not every
core: tasks are placed on cores here.

* Workers: the driver is worker 0; every core of every executor (in
  ``SparkListenerExecutorAdded`` order, ``Total Cores`` each) is one worker.
* Each task (by launch time) goes on a core of its executor that is free when
  it starts -- the one freed most recently (a new core is added, with a
  warning, if the log claims more concurrent tasks than cores).  Its
  scheduler delay (the time not spent deserialising, running or serialising,
  nor fetching the result) is split: ``delay_split`` of it before the task
  starts on the core, the rest after.
* On the core: ``Deserialization``, ``Buffer`` (shuffle fetch wait),
  ``Processing`` (run time less shuffle read and write), ``Buffer`` (shuffle
  write), ``Serialization``, all with ``op`` = the stage (``names`` has the
  stage names); a ``ControlMessage`` from the driver at launch to the core's
  start, and one back from the core's end to the result's arrival.
* The driver: ``Scheduling`` until each launch, ``Waiting`` until each
  result arrives, ``Buffer`` while it fetches a large result.
* ``shuffle=True`` adds a ``DataMessage`` from every core that ran a parent
  stage (when it completed) to every core of the child stage (when it was
  submitted, or when the parent completed if that is later).

Times are ns (the log has ms); ``e`` is -1: Spark snapshots are time windows.

>>> import io, json
>>> lines = [{"Event": "SparkListenerExecutorAdded", "Executor ID": "1", "Executor Info": {"Total Cores": 1}},
...          {"Event": "SparkListenerTaskEnd", "Stage ID": 0, "Task Info": {"Task ID": 0, "Executor ID": "1",
...           "Launch Time": 1000, "Finish Time": 1110, "Getting Result Time": 0},
...           "Task Metrics": {"Executor Deserialize Time": 10, "Executor Run Time": 80,
...                            "Result Serialization Time": 0}}]
>>> ev = read_spark(io.StringIO("\\n".join(json.dumps(x) for x in lines)))
>>> sorted(set(ev.w.tolist())), int(ev.t.min()), int(ev.t.max())
([0, 1], 1000000000, 1110000000)
"""
from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass

import numpy as np

from diffflow.runtime.events import ACTIVITY, KIND, Events, TraceError, read_bytes

_MS = 1_000_000


@dataclass
class _Task:
    id: int
    stage: int
    executor: str
    launch: int  # ns
    finish: int
    getting_result: int  # ns, 0 when the result came with the status update
    deserialize: int
    run: int
    serialize: int
    fetch_wait: int
    shuffle_write: int


def read_log_bytes(source, name=None):
    """The text of a Spark event log: a file (plain, ``.gz`` or ``.zstd``), a rolling log folder
    (``eventlog_v2_<app>/events_<n>_<app>[.zstd]``, Spark 3+), or a stream.

    A log still being written ends wherever Spark's last flush left it; a
    partial last line is dropped.

    >>> import io
    >>> read_log_bytes(io.BytesIO(b'{"Event": "SparkListenerLogStart"}\\n'))[0]
    b'{"Event": "SparkListenerLogStart"}\\n'
    """
    import os

    if not isinstance(source, (str, os.PathLike)):
        return read_bytes(source, name)
    path = os.fspath(source)
    if os.path.isdir(path):
        parts = [f for f in os.listdir(path) if f.startswith("events_")]
        if not parts:
            raise TraceError(f"{path}: a folder without events_* files is not a Spark event log "
                             "(a rolling log is a folder eventlog_v2_<app> of events_<n>_<app> files)")
        parts.sort(key=lambda f: int(f.split("_")[1]) if f.split("_")[1].isdigit() else 0)
        return b"".join(_decompressed(os.path.join(path, f)) for f in parts), name or path
    return _decompressed(path), name or path


def _decompressed(path: str) -> bytes:
    import gzip

    if path.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            return fh.read()
    codec = path.rsplit(".", 1)[-1] if "." in os.path.basename(path) else ""
    if codec in ("lz4", "lzf", "snappy"):
        raise TraceError(f"{path}: Spark's {codec} event-log compression cannot be read here; write logs with "
                         "spark.eventLog.compression.codec=zstd (Spark's default) or spark.eventLog.compress=false")
    if codec != "zstd":
        with open(path, "rb") as fh:
            return fh.read()
    import pyarrow as pa

    chunks = []
    with open(path, "rb") as raw, pa.CompressedInputStream(raw, "zstd") as stream:
        while True:
            try:
                chunk = stream.read(1 << 20)
            except OSError:  # a frame Spark has not finished writing yet
                break
            if not chunk:
                break
            chunks.append(chunk)
    data = b"".join(chunks)
    return data[: data.rfind(b"\n") + 1]


def _tasks(source, name):
    data, name = read_log_bytes(source, name)
    executors: dict = {}  # executor id -> cores, in order of appearance
    stage_names: dict = {}
    parents: dict = {}
    submitted: dict = {}
    completed: dict = {}
    tasks = []
    for lineno, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise TraceError(f"{name}:{lineno}: not a JSON object ({exc.msg} at column {exc.colno}); "
                             "a Spark event log has one JSON event per line") from None
        if not isinstance(event, dict) or "Event" not in event:
            raise TraceError(f"{name}:{lineno}: not a Spark listener event (no \"Event\" field)")
        kind = event["Event"]
        try:
            if kind == "SparkListenerExecutorAdded":
                executors.setdefault(str(event["Executor ID"]), int(event["Executor Info"]["Total Cores"]))
            elif kind == "SparkListenerStageSubmitted":
                info = event["Stage Info"]
                stage_names[info["Stage ID"]] = info.get("Stage Name", str(info["Stage ID"]))
                parents[info["Stage ID"]] = list(info.get("Parent IDs", []))
                submitted[info["Stage ID"]] = int(info.get("Submission Time", 0)) * _MS
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                completed[info["Stage ID"]] = int(info.get("Completion Time", 0)) * _MS
            elif kind == "SparkListenerTaskEnd":
                info, metrics = event["Task Info"], event.get("Task Metrics") or {}
                if info.get("Failed") or info.get("Killed"):
                    continue
                read = metrics.get("Shuffle Read Metrics") or {}
                write = metrics.get("Shuffle Write Metrics") or {}
                tasks.append(_Task(
                    int(info["Task ID"]), int(event["Stage ID"]), str(info["Executor ID"]),
                    int(info["Launch Time"]) * _MS, int(info["Finish Time"]) * _MS,
                    int(info.get("Getting Result Time", 0)) * _MS,
                    int(metrics.get("Executor Deserialize Time", 0)) * _MS,
                    int(metrics.get("Executor Run Time", 0)) * _MS,
                    int(metrics.get("Result Serialization Time", 0)) * _MS,
                    int(read.get("Fetch Wait Time", 0)) * _MS,
                    int(write.get("Shuffle Write Time", 0))))  # already ns
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceError(f"{name}:{lineno}: a {kind} event without a usable {exc} field") from None
    if not tasks:
        raise TraceError(f"{name}: the log has no finished tasks (an application that ran no job, or a log cut "
                         "short); there is no activity to analyse")
    return name, executors, stage_names, parents, submitted, completed, tasks


def read_spark(source, *, name: str | None = None, delay_split: float = 0.33, shuffle: bool = False) -> Events:
    """Raw events of a Spark event log (a file, a rolling log folder, or a stream); see the module docstring.

    >>> import io
    >>> read_spark(io.StringIO('{"Event": "SparkListenerLogStart"}\\n'), name="app.log")
    Traceback (most recent call last):
    ...
    diffflow.runtime.events.TraceError: app.log: the log has no finished tasks (an application that ran no job, or a log cut short); there is no activity to analyse
    """
    name, executors, stage_names, parents, submitted, completed, tasks = _tasks(source, name)
    tasks.sort(key=lambda task: (task.launch, task.id))
    # workers: the driver 0, then every core of every executor
    cores: dict = {}
    next_worker = 1
    for executor, count in executors.items():
        cores[executor] = list(range(next_worker, next_worker + count))
        next_worker += count
    free_at: dict = {}
    rows = []  # (w, t, rank at equal t, kind, act, op, corr, peer)
    driver_instants = []  # (t, what): "launch", "result", "finish"
    ran_on: dict = {}  # stage -> cores
    added = 0
    for task in tasks:
        busy = task.deserialize + task.run + task.serialize
        fetch = task.finish - task.getting_result if task.getting_result else 0
        delay = max(task.finish - task.launch - busy - fetch, 0)
        start = task.launch + int(round(delay_split * delay))
        end = start + busy
        if task.executor not in cores:
            cores[task.executor] = []
        free = [c for c in cores[task.executor] if free_at.get(c, -1) <= start]
        if not free:
            cores[task.executor].append(next_worker)
            free = [next_worker]
            next_worker += 1
            added += 1
        core = max(free, key=lambda c: free_at.get(c, -1))  # the most recently freed
        free_at[core] = end
        ran_on.setdefault(task.stage, set()).add(core)
        result = task.getting_result or task.finish
        rows += [(0, task.launch, 1, "Sent", "ControlMessage", -1, 2 * task.id, core),
                 (core, start, 1, "Received", "ControlMessage", -1, 2 * task.id, 0),
                 (core, end, 1, "Sent", "ControlMessage", -1, 2 * task.id + 1, 0),
                 (0, result, 1, "Received", "ControlMessage", -1, 2 * task.id + 1, core)]
        t = start
        read_part = min(task.fetch_wait, task.run)
        write_part = min(task.shuffle_write, task.run - read_part)
        for act, length in (("Deserialization", task.deserialize), ("Buffer", read_part),
                            ("Processing", task.run - read_part - write_part), ("Buffer", write_part),
                            ("Serialization", task.serialize)):
            if length > 0:
                rows += [(core, t, 2, "Start", act, task.stage, -1, -1), (core, t + length, 0, "End", act, task.stage, -1, -1)]
                t += length
        driver_instants += [(task.launch, "launch"), (result, "result")]
        if task.getting_result:
            driver_instants.append((task.finish, "finish"))
    if added:
        warnings.warn(f"{name}: more tasks ran at once than the log's executors have cores; "
                      f"{added} core(s) were added to place them", stacklevel=2)
    # at one instant the driver takes a result before launching the next task on the freed core
    driver_instants.sort(key=lambda x: (x[0], {"result": 0, "finish": 1, "launch": 2}[x[1]]))
    state_of = {"launch": "Scheduling", "result": "Waiting", "finish": "Buffer"}
    for (a, _), (b, what) in zip(driver_instants, driver_instants[1:]):
        if b > a:
            act = state_of[what]
            rows += [(0, a, 2, "Start", act, -1, -1, -1), (0, b, 0, "End", act, -1, -1, -1)]
    if shuffle:
        rows += _shuffle_rows(parents, submitted, completed, ran_on)
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    w = np.array([r[0] for r in rows], np.int64)
    seq = np.zeros(len(rows), np.int64)
    starts = np.flatnonzero(np.r_[True, w[1:] != w[:-1]])
    seq = np.arange(len(rows)) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
    col = lambda i: np.array([r[i] for r in rows], np.int64)  # noqa: E731
    kind = np.array([KIND[r[3]] for r in rows], np.int64)
    act = np.array([ACTIVITY[r[4]] for r in rows], np.int64)
    none = np.full(len(rows), -1, np.int64)
    return Events(w, none.copy(), seq, col(1), act, kind, col(5), none.copy(), col(6), col(7), none.copy(),
                  none.copy(), names={s: str(n) for s, n in stage_names.items()})


def _shuffle_rows(parents, submitted, completed, ran_on) -> list:
    rows, corr = [], 1 << 40  # correlators apart from the tasks' control messages
    for child, ps in parents.items():
        for parent in ps:
            if parent not in completed or child not in ran_on or parent not in ran_on:
                continue
            sent = completed[parent]
            received = max(submitted.get(child, sent), sent)
            for src in sorted(ran_on[parent]):
                for dst in sorted(ran_on[child]):
                    if src != dst:
                        rows += [(src, sent, 1, "Sent", "DataMessage", -1, corr, dst),
                                 (dst, received, 1, "Received", "DataMessage", -1, corr, src)]
                        corr += 1
    return rows


def stage_wall_clock(source, *, name: str | None = None) -> dict:
    """Per stage, ``max(finish) - min(launch)`` of its finished tasks, in ns.

    >>> import io
    >>> log = ('{"Event": "SparkListenerTaskEnd", "Stage ID": 3, "Task Info": {"Task ID": 0, "Executor ID": "1",'
    ...        ' "Launch Time": 10, "Finish Time": 30}}\\n')
    >>> stage_wall_clock(io.StringIO(log))
    {3: 20000000}
    """
    *_, tasks = _tasks(source, name)
    first: dict = {}
    last: dict = {}
    for task in tasks:
        first[task.stage] = min(first.get(task.stage, task.launch), task.launch)
        last[task.stage] = max(last.get(task.stage, task.finish), task.finish)
    return {stage: last[stage] - first[stage] for stage in sorted(first)}
