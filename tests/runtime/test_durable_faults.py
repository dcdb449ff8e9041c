"""``kill -9`` of the driving process, then resume (issue 42): seeded runs per runtime.

Each run starts tests/support/durable_victim.py, which feeds seeded epochs to a durable
dataflow (a loop, an aggregate, a rescale at epoch 4, checkpoints every 3 epochs) and hands
each epoch's output changes to an exactly-once sink file.  The victim is killed with SIGKILL
either at a named point (``DIFFFLOW_FAILPOINT``: just after an epoch is logged, part-way
through a run, with a checkpoint's files written but not its manifest, at a rescale step)
or after a seeded delay, then run again to the end.  Its final outputs and the sink's
concatenated change stream must equal an uninterrupted run's, computed here.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.support.durable_flow import build, epochs, feed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EPOCHS = 8
POINTS = ["logged:2", "logged:6", "run:3", "run:9", "checkpoint:1", "checkpoint:2",
          "rescale:1", None, None, None]  # (None: killed after a seeded delay)


def _expected(seed: int):
    flow, inputs, outputs = build()
    changes = []
    for batch in epochs(seed, EPOCHS):
        feed(flow, inputs, batch)
        changes += [["change", i, list(row), epoch, diff] for i, out in enumerate(outputs)
                    for row, epoch, diff in out.changes()]
    final = [sorted([list(k), v] for k, v in out.snapshot().items()) for out in outputs]
    return changes, final


# (worker processes start in about a second each: one partition on the processes runtime,
# rescaled to two at epoch 4, keeps its loop under three minutes)
PARTITIONS = {"local": 2, "processes": 1}


def _victim(tmp_path, runtime, seed, failpoint=None):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("DIFFFLOW_FAILPOINT", None)
    if failpoint:
        env["DIFFFLOW_FAILPOINT"] = failpoint
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.durable_victim", str(tmp_path / "state"),
         str(tmp_path / "sink"), runtime, str(PARTITIONS[runtime]), str(seed), str(EPOCHS)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _sink(tmp_path):
    lines = [json.loads(line) for line in (tmp_path / "sink").read_text().splitlines()]
    changes = [line for line in lines if line[0] == "change"]
    (end,) = [line[1] for line in lines if line[0] == "end"]
    return sorted(changes, key=lambda c: (c[3], c[1], c[2], c[4])), end


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["local", "processes"])
def test_kill_9_at_random_points_then_resume_equals_an_uninterrupted_run(tmp_path, runtime):
    outcomes = {"killed": 0, "finished before the kill": 0}
    resume_seconds = []
    for seed in range(30):
        run = tmp_path / f"run{seed}"
        run.mkdir()
        rng = random.Random(seed)
        point = POINTS[seed % len(POINTS)]
        victim = _victim(run, runtime, seed, point)
        if point is None:
            try:
                victim.wait(timeout=rng.uniform(0.4, 2.5))
            except subprocess.TimeoutExpired:
                os.kill(victim.pid, signal.SIGKILL)
        _out, err = victim.communicate(timeout=120)
        killed = victim.returncode == -signal.SIGKILL
        assert killed or victim.returncode == 0, err.decode()
        outcomes["killed" if killed else "finished before the kill"] += 1
        started = time.perf_counter()
        again = _victim(run, runtime, seed)
        _out, err = again.communicate(timeout=120)
        resume_seconds.append(time.perf_counter() - started)
        assert again.returncode == 0, err.decode()
        changes, final = _sink(run)
        expected_changes, expected_final = _expected(seed)
        assert final == expected_final, (seed, point)
        assert changes == sorted(expected_changes, key=lambda c: (c[3], c[1], c[2], c[4])), \
            (seed, point)
    # (the loop's figures, for the record: pytest -s shows them)
    print(f"\n{runtime}: {outcomes}, resumed runs took {min(resume_seconds):.2f}-"
          f"{max(resume_seconds):.2f} s")
    assert outcomes["killed"] >= 20
