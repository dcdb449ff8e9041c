"""Durable dataflows (issue 42): checkpoints committed by a manifest, a write-ahead log, and
resuming after the driving process is lost.

A "crash" here is a dataflow abandoned without close(): its files are exactly what a killed
process leaves (the log is flushed record by record; nothing is written at exit).  The
kill -9 loops over real processes are in test_durable_faults.py.  Every expected value is an
uninterrupted dataflow's, fed the same epochs.
"""
from __future__ import annotations

import json
import os
import warnings

import pytest

import diffflow as dd
from diffflow.runtime.durable.checkpoints import CheckpointError
from diffflow.runtime.durable.wal import WriteAheadLog
from tests.support.durable_flow import build, epochs, feed


def uninterrupted(batches):
    flow, inputs, outputs = build()
    changes = [[] for _ in outputs]
    for batch in batches:
        feed(flow, inputs, batch)
        for seen, out in zip(changes, outputs):
            seen += out.changes()
    return [out.snapshot() for out in outputs], changes


@pytest.mark.parametrize("partitions, again", [(1, 1), (2, 2), (2, 3)])
@pytest.mark.parametrize("every", [1, 3, None])
def test_a_resumed_dataflow_continues_exactly_where_it_stopped(tmp_path, partitions, again,
                                                               every):
    batches = epochs(seed=partitions * 10 + again, count=9)
    expected, expected_changes = uninterrupted(batches)
    flow, inputs, outputs = build(partitions, checkpoint_dir=str(tmp_path), durable=True,
                                  checkpoint_every=every)
    taken = [[] for _ in outputs]
    for batch in batches[:5]:
        feed(flow, inputs, batch)
    for seen, out in zip(taken, outputs):  # a sink that took everything up to epoch 4
        seen += out.changes()
    feed(flow, inputs, batches[5])  # ... and crashed before taking epoch 5's changes
    del flow
    flow, inputs, outputs = build(again, checkpoint_dir=str(tmp_path), resume=True)
    assert flow.resume() == 6
    for batch in batches[6:]:
        feed(flow, inputs, batch)
    assert [out.snapshot() for out in outputs] == expected
    for seen, out in zip(taken, outputs):  # what a sink keeps: changes after what it has
        seen += [c for c in out.changes() if c[1] > 4]
    assert taken == expected_changes
    flow.close()


def test_checkpoints_are_committed_by_a_manifest_and_the_last_two_are_kept(tmp_path):
    flow, inputs, _ = build(checkpoint_dir=str(tmp_path), durable=True, checkpoint_every=2)
    for batch in epochs(seed=1, count=7):
        feed(flow, inputs, batch)
    folders = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("checkpoint-"))
    assert folders == ["checkpoint-000000000004", "checkpoint-000000000006"]
    manifest = json.loads((tmp_path / folders[-1] / "MANIFEST.json").read_text())
    assert manifest["epoch"] == 6 and manifest["partitions"] == 1
    files = manifest["files"]
    assert sorted(files) == ["part-0.state"]
    assert files["part-0.state"]["size"] == (tmp_path / folders[-1] / "part-0.state").stat().st_size
    # the log keeps the epochs since the older kept checkpoint, in a segment per checkpoint
    logged = [epoch for epoch, _ in WriteAheadLog.read(str(tmp_path), after=0)]
    assert logged == [4, 5, 6] and len(list((tmp_path / "wal").iterdir())) == 2
    flow.close()


def _crashed_run(tmp_path, batches, every=2):
    flow, inputs, _ = build(checkpoint_dir=str(tmp_path), durable=True, checkpoint_every=every)
    for batch in batches:
        feed(flow, inputs, batch)
    del flow


def _resumed(tmp_path):
    flow, inputs, outputs = build(checkpoint_dir=str(tmp_path), resume=True)
    flow.resume()
    return flow, [out.snapshot() for out in outputs]


def test_a_damaged_checkpoint_is_reported_and_the_one_before_is_used(tmp_path):
    batches = epochs(seed=2, count=7)
    _crashed_run(tmp_path, batches)
    newest = tmp_path / "checkpoint-000000000006" / "part-0.state"
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte
    newest.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="does not match its manifest"):
        flow, found = _resumed(tmp_path)
    assert flow.epoch == 7
    assert found == uninterrupted(batches)[0]


def test_a_checkpoint_without_its_manifest_was_interrupted_and_is_never_read(tmp_path):
    batches = epochs(seed=3, count=5)
    _crashed_run(tmp_path, batches)
    (tmp_path / "checkpoint-000000000004" / "MANIFEST.json").unlink()
    with pytest.warns(UserWarning, match="interrupted"):
        flow, found = _resumed(tmp_path)
    assert found == uninterrupted(batches)[0]


def test_a_torn_log_record_loses_only_the_epoch_being_logged(tmp_path):
    from diffflow.runtime.durable import wal

    batches = epochs(seed=4, count=5)
    _crashed_run(tmp_path, batches, every=10)  # (no checkpoint: everything from the log)
    (segment,) = (tmp_path / "wal").iterdir()
    data = segment.read_bytes()
    end = sum(wal._HEAD.size + len(payload) for _, payload in wal._records(data))
    assert not data[end:].strip(b"\0")  # (the space the segment reserved: zeros)
    segment.write_bytes(data[:end - 3])  # the process died while appending epoch 4's record
    flow, found = _resumed(tmp_path)
    assert flow.epoch == 4
    assert found == uninterrupted(batches[:4])[0]


def test_another_dataflow_cannot_resume_the_state(tmp_path):
    _crashed_run(tmp_path, epochs(seed=5, count=2))
    other = dd.Dataflow(checkpoint_dir=str(tmp_path), resume=True)
    other.input("words", [("w", str), ("n", int)]).distinct().output()
    with pytest.raises(CheckpointError, match="another dataflow"):
        other.resume()
    fresh, _inputs, _outputs = build(checkpoint_dir=str(tmp_path), durable=True)
    with pytest.raises(CheckpointError, match="pass resume=True"):
        fresh.resume()


def test_a_format_from_another_version_is_a_clear_error(tmp_path):
    _crashed_run(tmp_path, epochs(seed=6, count=3))
    identity = tmp_path / "DATAFLOW.json"
    identity.write_text(identity.read_text().replace('"version": 1', '"version": 99'))
    flow, _inputs, _outputs = build(checkpoint_dir=str(tmp_path), resume=True)
    with pytest.raises(CheckpointError, match="format version 99"):
        flow.resume()


def test_durability_needs_a_checkpoint_dir():
    with pytest.raises(ValueError, match="durable=True needs checkpoint_dir="):
        dd.Dataflow(durable=True)
    with pytest.raises(ValueError, match="resume=True needs checkpoint_dir="):
        dd.Dataflow(resume=True)


def test_a_full_disk_is_a_clear_error_and_loses_nothing(tmp_path, monkeypatch):
    from diffflow.runtime.durable import wal

    monkeypatch.setattr(wal, "RESERVE", 64)  # (every append reserves its space)
    batches = epochs(seed=7, count=4)
    flow, inputs, outputs = build(checkpoint_dir=str(tmp_path), durable=True)
    feed(flow, inputs, batches[0])

    def full(fd, offset, length):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(dd.DiffflowError, match="epoch 1 could not be logged.*No space left"):
        feed(flow, inputs, batches[1])
    assert flow.epoch == 1  # nothing of it was applied
    monkeypatch.undo()
    flow.advance()  # the rows were still staged: logged and computed now
    feed(flow, inputs, batches[2])
    assert [out.snapshot() for out in outputs] == uninterrupted(batches[:3])[0]
    del flow
    resumed, found = _resumed(tmp_path)
    assert resumed.epoch == 3 and found == uninterrupted(batches[:3])[0]


def test_a_failed_flush_logs_nothing_and_the_next_epoch_starts_a_new_segment(
        tmp_path, monkeypatch):
    batches = epochs(seed=8, count=3)
    flow, inputs, outputs = build(checkpoint_dir=str(tmp_path), durable=True)
    feed(flow, inputs, batches[0])
    sync = os.fdatasync

    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken)
    with pytest.raises(dd.DiffflowError, match="epoch 1 could not be logged.*Input/output "
                                               "error.*nothing of it was applied"):
        feed(flow, inputs, batches[1])
    assert flow.epoch == 1
    monkeypatch.setattr(os, "fdatasync", sync)
    flow.advance()  # (its rows were still staged: logged again, in a new segment)
    feed(flow, inputs, batches[2])
    assert len(list((tmp_path / "wal").iterdir())) == 2
    del flow
    resumed, found = _resumed(tmp_path)
    assert resumed.epoch == 3 and found == uninterrupted(batches)[0]


def test_a_program_resumes_from_its_checkpoint_dir(tmp_path):
    source = """
        .decl e(x: number, y: number)
        .decl t(x: number, y: number)
        t(x, y) :- e(x, y).
        t(x, z) :- t(x, y), e(y, z).
    """
    program = dd.Program(source, checkpoint_dir=str(tmp_path), durable=True, checkpoint_every=2)
    for edges in ([(1, 2)], [(2, 3)], [(3, 4)]):
        program.insert("e", edges)
        program.commit()
    del program
    resumed = dd.Program(source, checkpoint_dir=str(tmp_path), resume=True)
    assert resumed.insert("e", [(1, 2), (3, 4)]) == 0  # (it knows its facts: both are in)
    resumed.insert("e", [(4, 5)])
    resumed.commit()
    assert resumed.relation("t") == {(a, b) for a in range(1, 6) for b in range(a + 1, 6)}
    assert resumed.remove("e", [(1, 2)]) == 1
    resumed.commit()
    assert resumed.relation("t") == {(a, b) for a in range(2, 6) for b in range(a + 1, 6)}


@pytest.mark.parametrize("before, after", [(False, True), (True, False)])
def test_a_program_resumes_with_or_without_change_feeds(tmp_path, before, after):
    """Whether outputs keep change feeds is the resumed program's choice: a checkpoint
    written with feeds resumes without them (its unread changes dropped) and the other way
    round (the replayed epochs' changes are read)."""
    source = """
        .decl e(x: number, y: number)
        .decl t(x: number, y: number)
        t(x, y) :- e(x, y).
        t(x, z) :- t(x, y), e(y, z).
    """
    program = dd.Program(source, checkpoint_dir=str(tmp_path), durable=True,
                         checkpoint_every=2, changes=before)
    for edges in ([(1, 2)], [(2, 3)], [(3, 4)]):
        program.insert("e", edges)
        program.commit()
    del program
    resumed = dd.Program(source, checkpoint_dir=str(tmp_path), resume=True, changes=after)
    assert resumed.relation("t") == {(a, b) for a in range(1, 5) for b in range(a + 1, 5)}
    runtime = resumed.flow._reader()
    out = resumed._compiled.outputs["t"]
    if after:  # epoch 2 was logged after the checkpoint: replayed, its changes re-emitted
        assert resumed.changes_by_epoch("t") == {2: [((1, 4), 1), ((2, 4), 1), ((3, 4), 1)]}
    else:
        assert runtime.take_output_changes(out.node.id) == []
        with pytest.raises(ValueError, match="keeps no change feeds"):
            resumed.changes("t")
    resumed.insert("e", [(4, 5)])
    resumed.commit()
    assert resumed.relation("t") == {(a, b) for a in range(1, 6) for b in range(a + 1, 6)}
    if after:
        assert resumed.changes("t") == [((a, 5), 1) for a in range(1, 5)]


def test_no_warning_when_nothing_was_passed_over(tmp_path):
    _crashed_run(tmp_path, epochs(seed=8, count=3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _resumed(tmp_path)
