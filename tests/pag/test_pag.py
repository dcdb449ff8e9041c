"""Program activity graphs: construction B, critical participation, metrics, invariants, ST2 traces, CLI."""
from __future__ import annotations

import io
import json
import math
import random
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from diffflow.cli import main
from diffflow.pag.activity_metrics import metrics
from diffflow.pag.api import PAG, cp_json
from diffflow.pag.checks import violations
from diffflow.pag.critical import critical_participation
from diffflow.pag.edges import Edges
from diffflow.pag.epochs import build_epochs
from diffflow.pag.st2 import read_st2
from diffflow.runtime.events import ACTIVITIES, Events, TraceError, read_events, write_events
from tests.support import pag_reference as ref
from tests.support import paths

ST2 = paths.FIXTURES / "st2"


def _events(rows: list[dict]) -> Events:
    cols = {c: np.array([r[c] for r in rows], np.int64) for c in ("w", "e", "seq", "t", "op", "ch", "n", "out")}
    cols["corr"] = np.array([r["corr"] for r in rows], np.int64)
    cols["peer"] = np.array([r["peer"] for r in rows], np.int64)
    cols["act"] = np.array([ACTIVITIES.index(r["act"]) for r in rows], np.int64)
    cols["kind"] = np.array([("Start", "End", "Sent", "Received").index(r["kind"]) for r in rows], np.int64)
    return Events(**cols)


def _rows(edges: Edges) -> list[tuple]:
    names = edges.type_names()
    return [(s, sw, st, sk, dw, dt, dk, names[i], op, n, bool(b)) for i, (s, sw, st, sk, dw, dt, dk, op, n, b)
            in enumerate(zip(*(getattr(edges, c).tolist() for c in
                               ("snap", "src_w", "src_t", "src_k", "dst_w", "dst_t", "dst_k", "op", "n", "block"))))]


@pytest.mark.parametrize("seed", range(60))
def test_construction_and_critical_participation_match_the_plain_reference(seed):
    rng = random.Random(seed)
    rows = ref.random_events(rng, workers=rng.randrange(1, 4), epochs=rng.randrange(1, 3))
    pag = build_epochs(_events(rows))
    expected = ref.build_epochs(rows)
    assert Counter(_rows(pag)) == Counter(expected)

    result = critical_participation(pag)
    got = Counter(zip(_rows(result.edges), np.round(result.tpc, 9).tolist(), np.round(result.cp, 9).tolist()))
    padded = ref.pad(expected)
    tpc, cp, paths = ref.critical_paths(padded)
    want = Counter(zip(padded, np.round(tpc, 9).tolist(), np.round(cp, 9).tolist()))
    assert got == want
    for summary in result.summaries:
        assert summary["paths"] == paths[summary["snapshot"]]
        if summary["paths"] > 0 and summary["end"] > summary["start"]:
            assert math.isclose(sum(summary["by_activity"].values()), 1.0, rel_tol=1e-9)
            assert math.isclose(sum(summary["by_worker"].values()) + sum(summary["by_pair"].values()), 1.0,
                                rel_tol=1e-9)


def test_path_counts_are_float_and_exceed_int64():
    # a ladder of 80 rungs between two workers: 2**80 paths from start to end
    rows = []
    for i in range(80):
        rows.append((0, 0, 2 * i, 0, 0, 2 * i + 2, 0, "Processing"))
        rows.append((0, 1, 2 * i, 0, 1, 2 * i + 2, 0, "Processing"))
        rows.append((0, 0, 2 * i, 0, 1, 2 * i + 2, 0, "DataMessage"))
        rows.append((0, 1, 2 * i, 0, 0, 2 * i + 2, 0, "DataMessage"))
    result = critical_participation(Edges.from_rows(rows), pad=False)
    assert result.summaries[0]["paths"] == 2.0 * 2.0**80
    assert math.isclose(float(result.cp.sum()), 1.0, rel_tol=1e-9)


@pytest.mark.parametrize("name,edges,epochs,chains", [("mwe", 36, 2, 2), ("log_all", 1930, 5, 10),
                                                      ("triangles", 12404, 10, 20)])
def test_st2_traces_have_their_documented_structure_and_the_sum_rule_holds(name, edges, epochs, chains):
    pag = read_st2(ST2 / f"{name}.pag.jsonl.gz")
    assert len(pag) == edges and len(set(pag.snap.tolist())) == epochs
    local = pag.is_local
    # one gap-free chain per (worker, epoch): every local vertex has local in/out degree <= 1,
    # and the chain has exactly one first and one last vertex
    src = Counter(zip(pag.snap[local].tolist(), pag.src_w[local].tolist(), pag.src_t[local].tolist()))
    dst = Counter(zip(pag.snap[local].tolist(), pag.dst_w[local].tolist(), pag.dst_t[local].tolist()))
    assert max(src.values()) == 1 and max(dst.values()) == 1
    firsts = set(src) - set(dst)
    assert len(firsts) == chains == len({(s, w) for s, w, _ in src})
    assert (pag.block == (pag.type == ACTIVITIES.index("Waiting"))).all()
    on_chain = set(src) | set(dst)
    remote = ~local
    for s, sw, st, dw, dt in zip(*(pag.take(remote).__getattribute__(c).tolist()
                                   for c in ("snap", "src_w", "src_t", "dst_w", "dst_t"))):
        assert (s, sw, st) in on_chain and (s, dw, dt) in on_chain
    for summary in cp_json(PAG(pag, epochs=True)):
        assert math.isclose(sum(summary["by_activity"].values()), 1.0, rel_tol=1e-9), summary["epoch"]


def test_st2_type_counts_and_negative_messages():
    pag = read_st2(ST2 / "triangles.pag.jsonl.gz")
    assert Counter(pag.type_names()) == {"Busy": 5452, "Spinning": 3676, "Processing": 1966, "Waiting": 656,
                                         "DataMessage": 394, "ControlMessage": 260}
    assert int((pag.duration < 0).sum()) == 4
    assert -17_000 < pag.duration.min() <= -16_000  # -16.5 us of clock skew between the two workers
    log_all = read_st2(ST2 / "log_all.pag.jsonl.gz")
    assert Counter(log_all.type_names()) == {"Busy": 757, "Processing": 416, "Spinning": 340, "Waiting": 210,
                                             "ControlMessage": 107, "DataMessage": 100}
    spans = [round((e.dst_t.max() - e.src_t.min()) / 1e6, 3) for _, e in log_all.snapshots()]
    assert spans == [0.318, 7.043, 13.531, 20.303, 26.458]


def test_metrics_of_log_all_epoch_2_match_st2():
    frame = metrics(read_st2(ST2 / "log_all.pag.jsonl.gz"))
    rows = {(r.from_worker, r.to_worker, r.activity): (r.count, r.duration_ns, r.records)
            for r in frame[frame.epoch == 2].itertuples()}
    # the figures PAG.md §3.2 derived from ST2's metrics command
    assert rows[(0, 0, "Processing")] == (14, 5_176_803, 50_000)
    assert rows[(0, 1, "DataMessage")] == (10, 206_500, 10_000)
    assert rows[(1, 0, "ControlMessage")] == (11, 30_547_773, 0)
    assert rows[(1, 1, "Busy")] == (72, 1_130_460, 0)
    assert rows[(1, 1, "Waiting")] == (11, 4_137_894, 0)


def test_invariants_find_long_messages_invocations_snapshots_and_silent_workers():
    pag = Edges.from_rows([
        (1, 0, 0, 0, 0, 10, 0, "Processing", 4),          # fragments of one invocation of operator 4
        (1, 0, 10, 0, 0, 25, 0, "Processing", 4, 30),     # ... ending with its record count: 25 ns
        (1, 0, 25, 0, 0, 30, 0, "Spinning", 5, 0),        # a short idle step
        (1, 0, 12, 0, 1, 40, 0, "DataMessage", -1, 30),   # a 28 ns message
        (1, 1, 0, 0, 1, 40, 0, "Waiting"),
        (1, 1, 40, 0, 1, 41, 0, "Busy"),
        (1, 1, 41, 0, 0, 45, 0, "ControlMessage"),        # worker 1 sent progress, worker 0 did not
    ])
    found = violations(pag, operator_max_ns=20, message_max_ns=20, epoch_max_ns=40)
    table = found[["kind", "worker", "operator", "duration_ns"]].astype(object)
    kinds = [tuple(None if v is None or v is pd.NA else v for v in row) for row in table.values.tolist()]
    assert kinds[0] == ("epoch", None, None, 45)
    assert ("operator", 0, 4, 25) in {(k, w, o, d) for k, w, o, d in kinds}
    assert ("message", 0, 28) in {(k, w, d) for k, w, _, d in kinds}
    assert ("progress", 0) in {(k, w) for k, w, _, _ in kinds}
    assert ("progress", 1) not in {(k, w) for k, w, _, _ in kinds}
    assert found["duration_ns"].tolist() == sorted(found["duration_ns"].tolist(), reverse=True)


def test_trace_lines_round_trip_and_bad_lines_are_located(tmp_path):
    rows = ref.random_events(random.Random(3))
    ev = _events(rows)
    path = tmp_path / "run.trace"
    write_events(ev, path)
    back = read_events(path)
    order = np.lexsort((ev.seq, ev.w))
    back_order = np.lexsort((back.seq, back.w))
    for c in Events.COLUMNS:
        assert getattr(back, c)[back_order].tolist() == getattr(ev, c)[order].tolist(), c
    lines = path.read_text().splitlines()
    lines.insert(4, '{"t": 1, "w": 0, "kind": "Start", "act": "Thinking"}')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"run.trace:5: unknown activity 'Thinking'"):
        read_events(path)
    lines[4] = '{"t": 1, "w": 0, "kind": "Start", "act": '
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"run.trace:5: not a JSON object"):
        read_events(path)
    lines[4] = '{"t": "soon", "w": 0, "kind": "Start", "act": "Busy"}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"run.trace:5: field 't' must be an integer"):
        read_events(path)


def test_st2_reader_locates_bad_lines(tmp_path):
    path = tmp_path / "pag.jsonl"
    good = '{"src": {"t": 1, "w": 0, "e": 1}, "dst": {"t": 2, "w": 0, "e": 1}, "type": "Busy", "operator": 0, "traverse": "Unbounded", "length": 0}'
    path.write_text(good + "\n" + good.replace('"Busy"', '"Nap"') + "\n")
    with pytest.raises(TraceError, match=r"pag.jsonl:2: unknown edge type 'Nap'"):
        read_st2(path)


def test_cli_cp_json_follows_the_contract(capsys):
    assert main(["pag", "cp", str(ST2 / "log_all.pag.jsonl.gz"), "--format", "st2", "--json"]) == 0
    snapshots = json.loads(capsys.readouterr().out)
    assert [s["epoch"] for s in snapshots] == [1, 2, 3, 4, 5]
    pag = read_st2(ST2 / "log_all.pag.jsonl.gz")
    for s, (_, e) in zip(snapshots, pag.snapshots()):
        assert set(s) == {"epoch", "start", "end", "paths", "by_activity", "by_worker", "by_operator", "by_pair"}
        assert (s["start"], s["end"]) == (min(e.src_t.min(), e.dst_t.min()), max(e.src_t.max(), e.dst_t.max()))
        assert math.isclose(sum(s["by_activity"].values()), 1.0, rel_tol=1e-9)
        assert s["by_activity"].get("Unknown", 0.0) >= 0.0  # the padding edges are typed Unknown


@pytest.mark.slow
def test_cli_tables_metrics_invariants_and_errors(tmp_path, capsys):
    trace = str(ST2 / "triangles.pag.jsonl.gz")
    assert main(["pag", "cp", trace, "--format", "st2"]) == 0
    out = capsys.readouterr().out
    assert out.count("== epoch") == 10 and "by activity:" in out and "%" in out
    csv = tmp_path / "m.csv"
    assert main(["pag", "metrics", trace, "--format", "st2", "-o", str(csv)]) == 0
    assert csv.read_text().splitlines()[0] == "epoch,from_worker,to_worker,activity,count,duration_ns,records"
    assert main(["pag", "invariants", trace, "--format", "st2", "--message-max", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "message" in out
    bad = tmp_path / "bad.trace"
    bad.write_text('{"t": 1, "w": 0, "kind": "Start", "act": "Busy"}\n{"t": 2}\n')
    assert main(["pag", "cp", str(bad)]) == 1
    assert "bad.trace:2: missing field 'w'" in capsys.readouterr().err


@pytest.mark.slow
def test_follow_reports_each_epoch_once_as_it_closes(tmp_path, capsys):
    from diffflow.pag.follow import follow

    rows = ref.random_events(random.Random(7), workers=2, epochs=3, steps=4)
    ev = _events(rows)
    path = tmp_path / "live.trace"
    path.write_text("")
    gen = follow(path, until_idle=0.3, poll=0.02)
    buf = io.StringIO()
    write_events(ev.take(np.lexsort((ev.seq, ev.w, ev.e))), buf)
    lines = buf.getvalue().splitlines(keepends=True)
    with open(path, "a") as fh:
        fh.writelines(lines)
        fh.write('{"t": oops}\n')
    seen = Counter()
    for pag in gen:
        seen.update(set(pag.edges.snap.tolist()))
    assert f"live.trace:{len(lines) + 1}: not a JSON object" in capsys.readouterr().err
    whole = build_epochs(ev)
    assert set(seen) == set(whole.snap.tolist()) and max(seen.values()) == 1


def test_formats_are_told_apart_by_their_first_line(tmp_path, capsys):
    from diffflow.pag.api import detect_format

    assert detect_format(ST2 / "mwe.pag.jsonl.gz") == "st2"
    spark = tmp_path / "app.log"
    spark.write_text('{"Event":"SparkListenerLogStart","Spark Version":"3.5.1"}\n')
    assert detect_format(spark) == "spark"
    raw = tmp_path / "run.trace"
    write_events(Events.from_rows([(0, 1, 0, "Start", "Busy"), (0, 1, 5, "End", "Busy")]), raw)
    assert detect_format(raw) == "diffflow"
    assert main(["pag", "cp", str(ST2 / "mwe.pag.jsonl.gz"), "--json"]) == 0
    assert [s["epoch"] for s in json.loads(capsys.readouterr().out)] == [1, 2]


def test_a_lone_worker_is_never_silent():
    lone = Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Busy")])
    assert violations(lone).empty
    pair = Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Busy"), (1, 1, 0, 0, 1, 5, 0, "Busy")])
    assert sorted(violations(pair)["worker"].tolist()) == [0, 1]


def test_chunked_analysis_equals_one_pass(monkeypatch):
    import diffflow.pag.critical as critical

    rows = ref.random_events(random.Random(5), workers=3, epochs=6, steps=8, messages=8)
    pag = build_epochs(_events(rows))
    pag = pag.take(np.random.default_rng(0).permutation(len(pag)))  # snapshots interleaved
    whole = critical_participation(pag)
    monkeypatch.setattr(critical, "CHUNK_EDGES", 40)
    parts = critical_participation(pag)
    assert len(parts.summaries) == 6 and parts.summaries == whole.summaries
    n = len(pag)
    assert parts.tpc[:n].tolist() == whole.tpc[:n].tolist() and parts.cp[:n].tolist() == whole.cp[:n].tolist()
    assert Counter(_rows(parts.edges.take(np.arange(n, len(parts.edges))))) == \
        Counter(_rows(whole.edges.take(np.arange(n, len(whole.edges)))))


def test_chunked_construction_equals_one_pass(monkeypatch):
    import diffflow.pag.epochs as epochs

    ev = _events(ref.random_events(random.Random(8), workers=3, epochs=7, steps=6, messages=6))
    whole = build_epochs(ev)
    monkeypatch.setattr(epochs, "CHUNK_EVENTS", 30)
    assert len(list(epochs.epoch_chunks(ev))) > 2
    assert Counter(_rows(epochs.build_epochs(ev))) == Counter(_rows(whole))


def test_empty_traces_and_out_of_range_numbers_say_so(tmp_path, capsys):
    empty = tmp_path / "empty.trace"
    empty.write_text("\n\n")
    assert main(["pag", "cp", str(empty)]) == 0
    assert "holds no activity" in capsys.readouterr().err
    huge = tmp_path / "huge.trace"
    huge.write_text('{"t": 99999999999999999999, "w": 0, "kind": "Start", "act": "Busy"}\n')
    assert main(["pag", "cp", str(huge)]) == 1
    assert "huge.trace:1: field 't' = 99999999999999999999 does not fit a 64-bit integer" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("name,unreleased", [("mwe", 0), ("log_all", 4), ("triangles", 2)])
def test_well_formedness_finds_the_waits_no_message_ends(name, unreleased, capsys):
    from diffflow.pag.checks import well_formedness

    # PAG.md §1.5 B4: 206 of log_all's 210 and 654 of triangles' 656 Waiting edges end at a receive
    problems = well_formedness(read_st2(ST2 / f"{name}.pag.jsonl.gz"))
    assert len(problems) == unreleased and all("does not end at a receive" in p[4] for p in problems)
    assert main(["pag", "invariants", str(ST2 / f"{name}.pag.jsonl.gz"), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("well-formedness") == unreleased


def test_broken_chains_and_orphan_vertices_are_reported():
    from diffflow.pag.checks import well_formedness

    pag = Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Busy"), (1, 0, 7, 0, 0, 9, 0, "Busy"),
                           (1, 1, 3, 0, 0, 5, 0, "DataMessage")])
    problems = sorted(p[4] for p in well_formedness(pag))
    # the break leaves the vertex at 7 without an edge in, like the message's source at 3
    assert problems == ["the chain breaks between 5 and 7", "vertex at 3 has no edge in", "vertex at 7 has no edge in"]
