"""The partition-worker protocol without Spark: in-process workers and worker processes.

The same seeded differential cases as the local runtime, on

* ``runtime="cluster"``: partition workers as objects in this process, driven
  sweep by sweep by the progress coordinator (fast: every case, P = 1 and 3);
* ``runtime="processes"``: worker processes exchanging Arrow batches over
  loopback sockets (a sample of cases), including a worker killed with SIGKILL.
"""
from __future__ import annotations

import os
import signal

import pytest

import diffflow as dd
from tests.datalog import test_incremental as datalog_cases
from tests.operators import test_operators_random as operator_cases
from tests.support import helpers

OPERATOR_CASES = sorted(name for name in dir(operator_cases) if name.startswith("test_"))


@pytest.fixture
def runtime(request, monkeypatch):
    monkeypatch.setitem(helpers.RUNTIME_OPTIONS, "runtime", request.param)
    return request.param


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["cluster"], indirect=True)
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("case", OPERATOR_CASES)
def test_operator_cases_in_process_workers(runtime, case, parts):
    for seed in range(4):
        getattr(operator_cases, case)(seed=seed, parts=parts)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["cluster"], indirect=True)
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("name", sorted(datalog_cases.PROGRAMS))
def test_datalog_cases_in_process_workers(runtime, name, parts):
    datalog_cases.check_program_against_reference(name, 1, parts)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["processes"], indirect=True)
@pytest.mark.parametrize("case", ["test_join", "test_aggregate", "test_distinct_and_threshold"])
def test_operator_cases_in_worker_processes(runtime, case):
    getattr(operator_cases, case)(seed=0, parts=2)


def _word_totals(*flows) -> list:
    """``(words input, output of the total per word)`` of each flow."""
    outs = []
    for flow in flows:
        words = flow.input("words", [("w", str), ("n", int)])
        outs.append((words, words.aggregate(by=["w"], total=dd.sum("n")).output()))
    return outs


def _agree(outs, epoch) -> None:
    """The second flow's output has the first's contents and changes."""
    assert outs[1][1].snapshot() == outs[0][1].snapshot(), epoch
    assert outs[1][1].changes() == outs[0][1].changes(), epoch


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint_every, uri", [(None, False), (1, False), (1, True)])
def test_worker_process_killed_between_epochs(checkpoint_every, uri, tmp_path):
    # (uri: checkpoints written and read back through a file:// URI, as shared storage is)
    local = dd.Dataflow(partitions=2)
    remote = dd.Dataflow(partitions=2, runtime="processes", checkpoint_every=checkpoint_every,
                         checkpoint_dir=f"file://{tmp_path}/shared" if uri else None)
    outs = _word_totals(local, remote)
    for epoch, batch in enumerate([[("a", 1), ("b", 2)], [("a", 3)], [("c", 4), ("b", 5)]]):
        for words, _ in outs:
            words.insert(batch)
        if epoch == 2:
            os.kill(remote._runtime.worker_pids()[0], signal.SIGKILL)
        local.advance()
        remote.advance()
        _agree(outs, epoch)
    assert remote._runtime.recoveries == 1
    if uri:  # the last two checkpoints are where the URI says, each committed by a manifest
        shared = tmp_path / "shared"
        assert sorted(p.name for p in shared.iterdir()) == [
            "checkpoint-000000000002", "checkpoint-000000000003"]
        assert sorted(p.name for p in (shared / "checkpoint-000000000003").iterdir()) == [
            "MANIFEST.json", "part-0.state", "part-1.state"]
    remote.close()


@pytest.mark.slow
def test_a_lost_worker_recovers_from_the_checkpoint_before_a_damaged_one(tmp_path):
    local = dd.Dataflow(partitions=2)
    remote = dd.Dataflow(partitions=2, runtime="processes", checkpoint_every=2,
                         checkpoint_dir=str(tmp_path))
    outs = _word_totals(local, remote)
    batches = [[("a", 1), ("b", 2)], [("a", 3)], [("c", 4), ("b", 5)], [("a", -1)],
               [("d", 7)], [("c", 1)]]
    for epoch, batch in enumerate(batches):
        for words, _ in outs:
            words.insert(batch)
        if epoch == 5:  # checkpoints at epochs 2 and 4: the newest one's file is damaged
            newest = tmp_path / "checkpoint-000000000004" / "part-1.state"
            data = bytearray(newest.read_bytes())
            data[len(data) // 2] ^= 0xFF
            newest.write_bytes(bytes(data))
            os.kill(remote._runtime.worker_pids()[1], signal.SIGKILL)
        local.advance()
        if epoch == 5:
            with pytest.warns(RuntimeWarning, match=r"part-1.state does not match its "
                                                    r"manifest.*the checkpoint before it "
                                                    r"\(epoch 2"):
                remote.advance()
        else:
            remote.advance()
        _agree(outs, epoch)
    assert remote._runtime.recoveries == 1
    remote.close()


@pytest.mark.slow
def test_without_checkpoint_every_the_recovery_log_stays_bounded(monkeypatch, tmp_path):
    from diffflow.runtime import cluster_recovery

    monkeypatch.setattr(cluster_recovery, "AUTO_EPOCHS", 3)
    monkeypatch.setattr(cluster_recovery, "AUTO_ROWS", 5)
    local, remote = dd.Dataflow(partitions=2), dd.Dataflow(partitions=2, runtime="processes")
    outs = _word_totals(local, remote)
    kept = []
    for epoch in range(12):
        batch = [(f"w{epoch % 4}", epoch)] * (6 if epoch == 7 else 1)  # (epoch 7: 6 rows)
        for words, _ in outs:
            words.insert(batch)
        if epoch == 10:
            os.kill(remote._runtime.worker_pids()[0], signal.SIGKILL)
        local.advance()
        remote.advance()
        runtime = remote._runtime
        kept.append((len(runtime.log_closed), runtime.checkpoint_epoch))
        _agree(outs, epoch)
    # a checkpoint once 3 epochs (or 5 rows: epoch 7) are logged, so at most 2 stay logged
    assert [k for k, _ in kept] == [1, 2, 0, 1, 2, 0, 1, 0, 1, 2, 0, 1]
    assert [c for _, c in kept][-1] == 11 and runtime.recoveries == 1
    durable = dd.Dataflow(partitions=2, runtime="processes", durable=True,
                          checkpoint_dir=str(tmp_path))
    durable.input("x", ["a"]).insert([1])
    durable.advance()  # (its checkpoints are the durable flow's: checkpoint_every, 100)
    assert not durable._runtime.auto_checkpoint
    remote.close()
    durable.close()


def test_operator_failure_in_a_worker_names_the_operator():
    flow = dd.Dataflow(partitions=2, runtime="processes")
    nums = flow.input("nums", ["x"])
    out = nums.map(lambda row: (10 // row[0],), ["y"]).output()
    nums.insert([0, 1])
    with pytest.raises(dd.OperatorError, match=r"operator flat_map \(node 1, built at "
                                               r".*test_cluster_runtime.py:\d+\) failed: "
                                               r"ZeroDivisionError"):
        flow.advance()
    flow.close()
    assert out.snapshot() == {}


def test_a_worker_silent_past_the_reply_bound_is_named_with_its_stacks(monkeypatch):
    """The coordinator waits for a reply at most DIFFFLOW_REPLY_TIMEOUT seconds: then it
    names the partition and the command, with what the worker was doing (here: a map
    that sleeps far longer than the bound), instead of waiting for ever."""
    import time

    from diffflow.common.errors import WorkerTimeout

    monkeypatch.setenv("DIFFFLOW_REPLY_TIMEOUT", "1")

    def dawdle(row):
        time.sleep(60)
        return row

    flow = dd.Dataflow(partitions=2, runtime="processes")
    nums = flow.input("nums", ["x"])
    nums.map(dawdle, ["y"]).output()
    nums.insert(list(range(20)))
    with pytest.raises(WorkerTimeout, match=r"partition worker [01] did not answer the "
                                            r"coordinator's 'run' within 1 s") as caught:
        flow.advance()
    assert caught.value.partition in (0, 1) and caught.value.command == "run"
    assert "serving 'run'" in str(caught.value) and "in dawdle" in str(caught.value)
    flow.close()  # (the silent workers were let go: nothing goes back to the pool)


def test_worker_connections_send_small_messages_at_once():
    """TCP_NODELAY on the coordinator's connections: a reply between 16 and 64 KiB
    (two writes in multiprocessing) would otherwise wait up to 40 ms for a delayed ACK."""
    import socket
    import time

    flow = dd.Dataflow(partitions=2, runtime="processes")
    nums = flow.input("nums", ["x"])
    out = nums.output()
    nums.insert(list(range(2500)))  # ~20 KB of rows per partition: one 16-64 KiB reply
    flow.advance()
    for conn in flow._runtime.transport.conns:
        sock = socket.socket(fileno=conn.fileno())
        try:
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            sock.detach()
    started = time.perf_counter()
    for _ in range(5):
        assert len(out.snapshot()) == 2500
    assert time.perf_counter() - started < 0.15
    flow.close()
