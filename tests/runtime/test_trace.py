"""Execution traces (``Dataflow(trace=...)``, ``Program(trace=...)``, ``diffflow run --trace``).

A P=2 join + distinct over known inputs runs traced on the local, cluster,
processes and Spark runtimes; the trace file reads back with ``read_events``
and is checked against the conventions of :mod:`diffflow.runtime.tracing`:

* events from both workers (and the coordinator, worker 2, on cluster
  runtimes); per worker ``seq`` strictly increasing, ``t`` non-decreasing,
  Start/End properly nested, steps that did nothing absent, every wait ending
  at the receive that ended it;
* every message ``Sent`` has exactly one ``Received`` (same ``corr`` and
  ``ch``, peers swapped, same ``n``) and vice versa;
* ``n``/``out`` are the rows that moved: inputs emit what was inserted,
  every node consumes exactly what its producers emitted, outputs consume
  the result, and the rows crossing partitions are those the key hash sends
  away;
* ``e`` counts ``advance()`` calls; tracing off gives identical results.
"""
from __future__ import annotations

import io
import json
import os
import signal
from collections import Counter

import numpy as np
import pytest

import diffflow as dd
from diffflow import graphs
from diffflow.arrangements.arrangement import split_by_partition
from diffflow.arrangements.updates import Updates
from diffflow.runtime.engine import partition_rows
from diffflow.runtime.events import (ACTIVITY, END, RECEIVED, SENT, START, Events, read_events,
                                     write_events)
from diffflow.runtime.trace_sink import format_events
from diffflow.runtime.tracing import WorkerLog

SCHEDULING, WAITING = ACTIVITY["Scheduling"], ACTIVITY["Waiting"]
MESSAGES = (ACTIVITY["DataMessage"], ACTIVITY["ControlMessage"])

A_ROWS = [(i, i % 5) for i in range(20)]          # a(x, y): 20 rows, 4 per y
B_ROWS = [(k, 10 * k) for k in range(5)]           # b(y, z): one per y


def build(flow):
    """a join b on y, distinct: 20 results for the rows above."""
    a = flow.input("a", ["x", "y"])
    b = flow.input("b", ["y", "z"])
    out = a.join(b, on="y").distinct().output()
    return a, b, out


def run_epochs(flow):
    """Epoch 1: A_ROWS and B_ROWS; epoch 2: one more a row; epoch 3: one a row removed."""
    a, b, out = build(flow)
    a.insert(A_ROWS)
    b.insert(B_ROWS)
    flow.advance()
    results = [out.snapshot()]
    a.insert([(100, 1)])
    flow.advance()
    results.append(out.snapshot())
    a.remove([(0, 0)])
    flow.advance()
    results.append(out.snapshot())
    return (a, b, out), results


# -- the checks --------------------------------------------------------------------------------

def check_timelines(ev: Events, workers: set) -> None:
    """Per worker: seq increasing, t non-decreasing, Start/End nested, waits end at receives."""
    assert set(ev.w.tolist()) == workers
    for w in workers:
        mine = ev.take(ev.w == w)
        mine = mine.take(np.argsort(mine.seq, kind="stable"))
        assert (np.diff(mine.seq) > 0).all()
        assert (np.diff(mine.t) >= 0).all(), f"worker {w}: time runs backwards"
        stack = []
        for i in range(len(mine)):
            kind, act, op = int(mine.kind[i]), int(mine.act[i]), int(mine.op[i])
            if kind == START:
                assert not stack or act != SCHEDULING, f"worker {w}: a step inside {stack}"
                stack.append((act, op))
            elif kind == END:
                assert stack and stack.pop() == (act, op), f"worker {w}: End {act}/{op} unmatched"
                if act == SCHEDULING:
                    assert mine.n[i] > 0 or mine.out[i] > 0, "a step that did nothing was logged"
                if act == WAITING:
                    nxt = i + 1
                    assert nxt < len(mine) and mine.kind[nxt] == RECEIVED \
                        and mine.t[nxt] == mine.t[i], f"worker {w}: a wait not ended by a receive"
            else:
                assert not stack or stack[-1][0] != SCHEDULING, "a message inside a step"
        assert not stack, f"worker {w}: unclosed {stack}"


def check_messages(ev: Events) -> int:
    """Every Sent has exactly one matching Received and vice versa; returns how many pairs."""
    msg = np.isin(ev.act, MESSAGES)
    sent = {}
    for i in np.flatnonzero(msg & (ev.kind == SENT)).tolist():
        key = (int(ev.w[i]), int(ev.corr[i]))
        assert key not in sent, f"correlator {key} used twice"
        sent[key] = (int(ev.peer[i]), int(ev.act[i]), int(ev.ch[i]), int(ev.n[i]), int(ev.e[i]))
    received = Counter()
    for i in np.flatnonzero(msg & (ev.kind == RECEIVED)).tolist():
        key = (int(ev.peer[i]), int(ev.corr[i]))
        assert key in sent, f"a receive without a send: {key}"
        peer, act, ch, n, e = sent[key]
        assert (peer, act, ch, n, e) == (int(ev.w[i]), int(ev.act[i]), int(ev.ch[i]),
                                         int(ev.n[i]), int(ev.e[i]))
        received[key] += 1
    assert all(received[key] == 1 for key in sent), "a send without exactly one receive"
    return len(sent)


def totals(ev: Events, epoch: int, column: str) -> dict:
    """``{op: Σ column}`` over the operator-step Ends of one epoch (every worker)."""
    ends = ev.take((ev.kind == END) & (ev.act == SCHEDULING) & (ev.e == epoch))
    found: dict = {}
    for op, value in zip(ends.op.tolist(), getattr(ends, column).tolist()):
        found[op] = found.get(op, 0) + value
    return found


def crossing_rows(rows, key, parts=2) -> int:
    """Rows staged on one partition (row hash) and consumed on another (key hash)."""
    rows = np.asarray(rows, np.int64)
    crossing = 0
    for p, (part, diffs) in enumerate(partition_rows(rows, np.ones(len(rows), np.int64), parts)):
        chunk = Updates(part, np.zeros((len(part), 1), np.int64), diffs)
        crossing += sum(len(piece) for q, piece in enumerate(split_by_partition(chunk, key, parts))
                        if q != p)
    return crossing


def check_rows(ev: Events, flow, handles, results) -> None:
    """``n``/``out`` against the data: inputs, conservation along edges, crossings, outputs."""
    a, b, out = handles
    graph = flow.graph
    for epoch, (a_rows, b_rows) in enumerate([(20, 5), (1, 0), (1, 0)]):   # the API's epochs 0, 1, 2
        emitted, consumed = totals(ev, epoch, "out"), totals(ev, epoch, "n")
        assert emitted.get(a.node.id, 0) == a_rows and emitted.get(b.node.id, 0) == b_rows
        for node in graph.nodes:  # each node consumed exactly what its producers emitted
            assert consumed.get(node.id, 0) == sum(emitted.get(src, 0) for src in node.inputs), \
                (epoch, node.kind)
        before = results[epoch - 1].keys() if epoch > 0 else set()
        changed = len(results[epoch].keys() ^ before)
        assert consumed[out.node.id] == changed
    # epoch 0: the rows crossing partitions into the two arrangements are those the key hash moves
    data = ev.take((ev.act == ACTIVITY["DataMessage"]) & (ev.kind == RECEIVED) & (ev.e == 0))
    for source, rows in ((a, A_ROWS), (b, B_ROWS)):
        (arrange, port), = [c for c in graph.consumers()[source.node.id]]
        key = graph.nodes[arrange].exchange[port]
        assert int(data.n[data.ch == arrange].sum()) == crossing_rows(rows, key)


def check_trace(ev: Events, flow, handles, results, coordinator: bool) -> None:
    workers = {0, 1, 2} if coordinator else {0, 1}
    check_timelines(ev, workers)
    assert check_messages(ev) > 0
    assert set(ev.e.tolist()) == {0, 1, 2}   # the epochs out.changes() reports
    check_rows(ev, flow, handles, results)
    assert ev.names[handles[0].node.id].startswith("input 'a' at test_trace.py:")
    assert not len(ev.take((ev.w == 2) & (ev.op >= 0))), "the coordinator has no operators"
    if coordinator:
        control = ev.take(ev.act == ACTIVITY["ControlMessage"])
        assert set(control.take(control.w < 2).peer.tolist()) == {2}
        waits = ev.take((ev.act == WAITING) & (ev.kind == END))
        assert set(waits.w.tolist()) == {0, 1, 2}


def traced_run(tmp_path, **options):
    path = tmp_path / "run.trace"
    flow = dd.Dataflow(partitions=2, trace=str(path), **options)
    handles, results = run_epochs(flow)
    flow.close()
    return read_events(str(path)), flow, handles, results


# -- the runtimes ------------------------------------------------------------------------------

def test_local_trace(tmp_path):
    ev, flow, handles, results = traced_run(tmp_path)
    check_trace(ev, flow, handles, results, coordinator=False)
    assert not len(ev.take(ev.act == ACTIVITY["ControlMessage"]))  # no coordinator in-process


def test_cluster_trace(tmp_path):
    ev, flow, handles, results = traced_run(tmp_path, runtime="cluster")
    check_trace(ev, flow, handles, results, coordinator=True)


def test_processes_trace(tmp_path):
    ev, flow, handles, results = traced_run(tmp_path, runtime="processes")
    check_trace(ev, flow, handles, results, coordinator=True)
    # worker processes wait for every peer's batch each sweep, empty or not
    data = ev.take((ev.act == ACTIVITY["DataMessage"]) & (ev.kind == SENT))
    assert (data.n >= 0).all() and ((data.n == 0) == (data.ch < 0)).all()


@pytest.mark.slow
def test_spark_trace(spark, tmp_path):
    ev, flow, handles, results = traced_run(tmp_path, runtime="spark", spark=spark)
    check_trace(ev, flow, handles, results, coordinator=True)


@pytest.mark.parametrize("runtime", ["local", "cluster"])
def test_tracing_off_gives_the_same_results(runtime, tmp_path):
    _, plain = run_epochs(dd.Dataflow(partitions=2, runtime=runtime))
    _, traced = run_epochs(dd.Dataflow(partitions=2, runtime=runtime,
                                       trace=str(tmp_path / "t")))
    assert traced == plain


@pytest.mark.parametrize("runtime", ["local", "cluster"])
def test_a_loop_traced(runtime):
    """Reachability: many sweeps per epoch; on the cluster, workers wait between sweeps."""
    batches = []
    flow = dd.Dataflow(partitions=2, runtime=runtime, trace=batches.append)
    edges, roots = flow.input("edges", ["src", "dst"]), flow.input("roots", ["node"])
    out = graphs.reachable(edges, roots).output()
    edges.insert([(i, i + 1) for i in range(12)])
    roots.insert([0])
    flow.advance()
    assert len(out.snapshot()) == 13
    assert len(batches) == 1 and isinstance(batches[0], Events)
    ev = batches[0]
    check_timelines(ev, {0, 1, 2} if runtime == "cluster" else {0, 1})
    check_messages(ev)
    if runtime == "cluster":  # from the second sweep on, a worker waits for the next frontiers
        waits = np.flatnonzero((ev.act == WAITING) & (ev.kind == END) & (ev.w == 0))
        after = [int(ev.act[(ev.w == 0) & (ev.seq == ev.seq[i] + 1)][0]) for i in waits]
        assert after.count(ACTIVITY["ControlMessage"]) >= 5


def test_callback_receives_events_per_run():
    batches = []
    flow = dd.Dataflow(partitions=2, trace=batches.append)
    handles, results = run_epochs(flow)
    assert [set(b.e.tolist()) for b in batches] == [{0}, {1}, {2}]
    assert all(isinstance(b, Events) for b in batches)
    check_rows(Events.concat(batches), flow, handles, results)


def test_epochs_run_together_carry_the_newest_epoch():
    batches = []
    flow = dd.Dataflow(trace=batches.append)
    nums = flow.input("nums", ["x"])
    nums.distinct().output()
    nums.insert([1])
    flow.advance(run=False)
    nums.insert([2])
    flow.advance(run=False)
    flow.run()
    assert len(batches) == 1 and set(batches[0].e.tolist()) == {1}
    assert totals(batches[0], 1, "out")[nums.node.id] == 2


@pytest.mark.slow
def test_program_trace(tmp_path):
    path = tmp_path / "p.trace"
    program = dd.Program(".decl e(x: number, y: number)\n.decl p(x: number, y: number)\n"
                         "p(x, y) :- e(x, y).\np(x, z) :- p(x, y), e(y, z).",
                         partitions=2, trace=str(path))
    program.insert("e", [(1, 2), (2, 3), (3, 4)])
    program.commit()
    assert len(program.relation("p")) == 6
    ev = read_events(str(path))
    check_timelines(ev, {0, 1})
    check_messages(ev)
    assert set(ev.e.tolist()) == {0}


@pytest.mark.slow
def test_worker_killed_between_epochs_keeps_the_trace_consistent(tmp_path):
    path = tmp_path / "k.trace"
    flow = dd.Dataflow(partitions=2, runtime="processes", trace=str(path))
    a, b, out = build(flow)
    a.insert(A_ROWS)
    b.insert(B_ROWS)
    flow.advance()
    os.kill(flow._runtime.worker_pids()[0], signal.SIGKILL)
    a.insert([(100, 1)])
    flow.advance()
    assert len(out.snapshot()) == 21 and flow._runtime.recoveries == 1
    flow.close()
    ev = read_events(str(path))
    check_timelines(ev, {0, 1, 2})
    check_messages(ev)
    assert set(ev.e.tolist()) == {0, 1}


# -- the file and its targets --------------------------------------------------------------------

def test_format_matches_write_events():
    log = WorkerLog(1)
    log.epoch = 2
    log.step(3, log.now(), [[np.zeros(4)]], [np.zeros(1)])
    log.received(ACTIVITY["DataMessage"], 0, 7, 3, 5)
    log.span(WAITING, log.now(), log.now())
    corr = log.sent(ACTIVITY["ControlMessage"], 2)
    ev = log.take()
    ev.names = {3: 'a "quoted" name'}
    ours = [json.loads(line) for line in format_events(ev).splitlines()]
    theirs = io.StringIO()
    write_events(ev, theirs)
    reference = [json.loads(line) for line in theirs.getvalue().splitlines()]
    for line in reference:  # we write the name on Start lines only
        if line.get("op") == 3 and line["kind"] != "Start":
            del line["name"]
    assert ours == reference and corr == 0
    back = read_events(io.StringIO(format_events(ev)))
    for column in Events.COLUMNS:
        assert getattr(back, column).tolist() == getattr(ev, column).tolist()
    assert back.names == ev.names


def test_the_file_is_emptied_when_the_dataflow_is_built(tmp_path):
    path = tmp_path / "old.trace"
    path.write_text("stale\n")
    dd.Dataflow(trace=str(path))
    assert path.read_text() == ""


@pytest.mark.parametrize("where", ["missing/run.trace", "."])
def test_an_unwritable_trace_fails_at_once(tmp_path, where):
    target = str(tmp_path / where)
    with pytest.raises(ValueError, match=r"trace=.*cannot write the trace file .*give a file path"):
        dd.Dataflow(trace=target)


def test_a_trace_of_the_wrong_type_says_what_it_takes():
    with pytest.raises(TypeError, match="a file path or a function"):
        dd.Dataflow(trace=3)


PROGRAM = """
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def test_cli_trace(tmp_path):
    from diffflow.cli import main

    prog = tmp_path / "reach.dl"
    prog.write_text(PROGRAM)
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "edge.facts").write_text("1\t2\n2\t3\n3\t4\n")
    step = tmp_path / "steps" / "1"
    step.mkdir(parents=True)
    (step / "edge.insert.facts").write_text("4\t5\n")
    trace = tmp_path / "run.trace"
    assert main(["run", str(prog), "-F", str(tmp_path / "facts"), "-D", str(tmp_path / "out"),
                 "-j", "2", "--updates", str(tmp_path / "steps"), "--trace", str(trace)]) == 0
    ev = read_events(str(trace))
    check_timelines(ev, {0, 1})
    check_messages(ev)
    assert set(ev.e.tolist()) == {0, 1}


def test_cli_unwritable_trace_fails_before_reading_anything(tmp_path, capsys):
    from diffflow.cli import main

    prog = tmp_path / "reach.dl"
    prog.write_text(PROGRAM)
    status = main(["run", str(prog), "-F", str(tmp_path / "nofacts"), "-D", str(tmp_path),
                   "--trace", str(tmp_path / "no" / "such" / "run.trace")])
    err = capsys.readouterr().err
    assert status == 1
    assert "--trace " in err and "cannot write the trace file" in err and "fact" not in err
