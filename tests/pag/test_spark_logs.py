"""Spark event logs as PAGs (PAG.md §4): the worked example, stage wall clocks, every log version."""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from diffflow.cli import main
from diffflow.pag.api import PAG, cp_json, load
from diffflow.pag.spark import read_spark, stage_wall_clock
from diffflow.pag.windows import build_windows, check_windows
from diffflow.runtime.events import ACTIVITIES, KINDS, TraceError
from tests.support import paths

LOGS = paths.FIXTURES / "spark"
WORDCOUNT = LOGS / "snailtrail-wordcount-spark2.1.json.gz"
MS = 1_000_000


def _timeline(ev, worker):
    order = np.lexsort((ev.seq, ev.w))
    t0 = ev.t.min()
    return [((int(ev.t[i]) - t0) / MS, KINDS[ev.kind[i]], ACTIVITIES[ev.act[i]], int(ev.op[i]))
            for i in order if ev.w[i] == worker]


def test_the_wordcount_log_gives_the_documented_placement_and_durations():
    ev = read_spark(WORDCOUNT)
    assert sorted(set(ev.w.tolist())) == [0, 1, 2, 3, 4]  # the driver; executors "0" -> 1, 2 and "1" -> 3, 4
    core = _timeline(ev, 3)  # stage 0's task 0 ran on worker 3 (PAG.md §4)
    spans = [(a[2], round(b[0] - a[0], 3)) for a, b in zip(core, core[1:]) if a[1] == "Start" and b[1] == "End"]
    assert core[0][:3] == (22.77, "Received", "ControlMessage")  # launch + 0.33 of a 69 ms delay
    assert spans[:4] == [("Deserialization", 326.0), ("Processing", 461.891), ("Buffer", 6.109),
                         ("Serialization", 1.0)]
    back = [x for x in _timeline(ev, 0) if x[1] == "Received"][0]
    assert back[:3] == (864.0, "Received", "ControlMessage")  # the result, at the task's finish
    driver = _timeline(ev, 0)
    states = [(a[2], a[0], b[0]) for a, b in zip(driver, driver[1:]) if a[1] == "Start" and b[1] == "End"]
    assert states[0] == ("Scheduling", 0.0, 25.0)
    assert states[1:3] == [("Waiting", 25.0, 864.0), ("Waiting", 864.0, 871.0)]  # waiting 25-871 ms
    task15 = [x for x in _timeline(ev, 1) + _timeline(ev, 2) + _timeline(ev, 3) + _timeline(ev, 4)]
    assert any(name == "Buffer" for _, kind, name, op in task15 if op == 2)


def test_stage_wall_clock_is_last_finish_minus_first_launch():
    want = {}
    with gzip.open(WORDCOUNT, "rt") as fh:
        for line in fh:
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd":
                info = event["Task Info"]
                lo, hi = want.get(event["Stage ID"], (math.inf, -math.inf))
                want[event["Stage ID"]] = (min(lo, info["Launch Time"]), max(hi, info["Finish Time"]))
    assert stage_wall_clock(WORDCOUNT) == {s: (hi - lo) * MS for s, (lo, hi) in want.items()}


@pytest.mark.parametrize("log", ["snailtrail-wordcount-spark2.1", "sparklens-spark2.3", "dr-elephant-spark1.5"])
def test_every_log_version_builds_well_formed_windows_with_the_sum_rule(log):
    ev = read_spark(LOGS / f"{log}.json.gz")
    window = 1_000 * MS
    pag = build_windows(ev, window)
    assert check_windows(pag, window) == []
    summaries = cp_json(PAG(pag, epochs=False, window_ns=window))
    assert summaries
    for s in summaries:
        assert s["paths"] > 0
        assert math.isclose(sum(s["by_activity"].values()), 1.0, rel_tol=1e-9)


def test_local_mode_executor_driver_is_placed_on_its_cores():
    ev = read_spark(LOGS / "sparklens-spark2.3.json.gz")
    assert sorted(set(ev.w.tolist())) == [0, 1, 2, 3, 4]  # executor "driver" with 4 cores


def test_a_log_without_tasks_and_a_broken_line_are_clear_errors(tmp_path):
    with pytest.raises(TraceError, match="no finished tasks"):
        read_spark(LOGS / "dr-elephant-spark1.4.json.gz")
    bad = tmp_path / "app.log"
    bad.write_text('{"Event": "SparkListenerLogStart"}\n{"Event": "SparkListenerTaskEnd", "Stage ID": 1}\n')
    with pytest.raises(TraceError, match=r"app.log:2: a SparkListenerTaskEnd event without a usable 'Task Info'"):
        read_spark(bad)
    bad.write_text('{"Event": "SparkListenerLogStart"}\n{"Event": \n')
    with pytest.raises(TraceError, match=r"app.log:2: not a JSON object"):
        read_spark(bad)


def test_cli_on_a_spark_log(capsys):
    assert main(["pag", "cp", str(WORDCOUNT), "--window", "1s", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out and all(s["epoch"] is None for s in out)
    assert all(math.isclose(sum(s["by_activity"].values()), 1.0, rel_tol=1e-9) for s in out)
    pag = load(WORDCOUNT)  # format told from the first line, 10 s windows by default
    assert not pag.epochs and pag.window_ns == 10_000 * MS
    assert main(["pag", "cp", str(WORDCOUNT), "--epochs"]) == 1
    assert "a Spark event log has no epochs" in capsys.readouterr().err


def test_shuffle_messages_join_the_stages():
    ev = read_spark(WORDCOUNT, shuffle=True)
    data = ev.act == ACTIVITIES.index("DataMessage")
    assert data.any() and (ev.kind[data] == 2).sum() == (ev.kind[data] == 3).sum()
    pag = build_windows(ev, 2_000 * MS)
    assert check_windows(pag, 2_000 * MS) == []


@pytest.mark.slow
def test_the_event_log_of_diffflows_own_spark_run_reads_as_a_pag(spark):
    import diffflow as dd

    with dd.Dataflow(partitions=2, runtime="spark", spark=spark) as flow:
        nums = flow.input("nums", ["x"])
        out = nums.distinct().output()
        nums.insert([(i % 7,) for i in range(50)])
        flow.advance()
        assert len(out.snapshot()) == 7
        # (workers' tasks last as long as the workers: a job of diffflow's that finishes)
        assert out.to_dataframe().count() == 7
    folder = Path(spark.sparkContext.getConf().get("spark.eventLog.dir").removeprefix("file:"))
    logs = sorted(folder.glob(f"*{spark.sparkContext.applicationId}*"))  # Spark 4: a rolling, zstd log folder
    assert logs, f"no event log in {folder}"
    ev = read_spark(logs[-1])  # still being written: the lines so far
    assert load(logs[-1], window="1s").window_ns == 1_000 * MS  # the format is told from the folder
    assert (ev.w > 0).any()  # diffflow's DataFrame tasks ran on the executor's cores
    pag = build_windows(ev, 1_000 * MS)
    assert check_windows(pag, 1_000 * MS) == []
    for s in cp_json(PAG(pag, epochs=False, window_ns=1_000 * MS)):
        if s["paths"] > 0:
            assert math.isclose(sum(s["by_activity"].values()), 1.0, rel_tol=1e-9)
