"""What a person reads from ``diffflow pag``: durations with units (``--raw`` for ns), one name per
operator in every tool, ``pag serve`` checking the thresholds ``pag invariants`` takes, a plot with a
title, ``--follow`` saying it waits for a missing trace, the API's epoch numbers in traces, and
``diffflow pag`` alone listing its commands (issue 40)."""
from __future__ import annotations

import json
import threading

import pytest

import diffflow as dd
from diffflow.cli import main
from diffflow.runtime.events import read_events

NAME = "aggregate ['label'] by ['node'] at flow.py:12"
LABEL = f"{NAME} (id 24)"
# one worker, one 3.038746456 s step of operator 24 in epoch 0
TRACE = (f'{{"t": 0, "w": 0, "e": 0, "kind": "Start", "act": "Scheduling", "op": 24, "name": {json.dumps(NAME)}}}\n'
         '{"t": 3038746456, "w": 0, "e": 0, "kind": "End", "act": "Scheduling", "op": 24, "n": 5}\n')


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "run.trace"
    path.write_text(TRACE)
    return str(path)


def test_tables_show_durations_in_a_unit_the_header_names_and_raw_gives_nanoseconds(trace, capsys):
    assert main(["pag", "metrics", trace]) == 0
    out = capsys.readouterr().out
    assert "duration_s" in out.splitlines()[0] and "3.039" in out and "3038746456" not in out
    assert main(["pag", "metrics", trace, "--raw"]) == 0
    out = capsys.readouterr().out
    assert "duration_ns" in out.splitlines()[0] and "3038746456" in out
    assert main(["pag", "cp", trace]) == 0
    assert capsys.readouterr().out.startswith("== epoch 0: 3.039 s, ")
    assert main(["pag", "cp", trace, "--raw"]) == 0
    assert capsys.readouterr().out.startswith("== epoch 0: 3038746456 ns, ")
    assert main(["pag", "invariants", trace, "--operator-max", "1000"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert {"duration_s", "start_us", "end_s"} <= set(header)   # each column in its own unit


def test_cp_invariants_and_the_dashboard_name_an_operator_the_same_way(trace, capsys):
    assert main(["pag", "cp", trace]) == 0
    assert LABEL in capsys.readouterr().out
    assert main(["pag", "cp", trace, "--json"]) == 0
    assert list(json.loads(capsys.readouterr().out)[0]["by_operator"]) == [LABEL]
    assert main(["pag", "invariants", trace, "--operator-max", "1000"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[1].startswith("operator") and LABEL in rows[1]
    from diffflow.pag.api import load
    from diffflow.pag.dashboard.views import overview

    view = overview(load(trace), operator_max_ns=10**9)
    assert [v["operator_name"] for v in view["violations"]] == [LABEL]
    assert list(view["snapshots"][0]["by_operator"]) == [LABEL]


def test_a_traced_dataflow_names_its_operators_with_where_they_were_built(tmp_path, capsys):
    path = str(tmp_path / "run.trace")
    flow = dd.Dataflow(trace=path)
    nums = flow.input("nums", ["x"])
    line = __import__("inspect").currentframe().f_lineno + 1
    total = nums.aggregate(s=dd.sum("x"))
    total.output()
    nums.insert([1, 2, 3])
    flow.advance()
    flow.close()
    assert main(["pag", "cp", path, "--json"]) == 0
    operators = json.loads(capsys.readouterr().out)[0]["by_operator"]
    assert f"aggregate ['s'] by [] at test_readable.py:{line} (id {total.node.id})" in operators, operators


def test_serve_checks_the_thresholds_invariants_takes_and_its_page_data_shows_them(trace, monkeypatch):
    from diffflow.pag.dashboard import server

    served = []
    monkeypatch.setattr(server, "serve", lambda dashboard, host, port: served.append(dashboard))
    assert main(["pag", "serve", trace, "--port", "0", "--operator-max", "1000", "--no-well-formed"]) == 0
    state = served[0].state()
    assert [(v["kind"], v["operator_name"]) for v in state["violations"]] == [("operator", LABEL)]
    assert state["thresholds"]["operator_max_ns"] == 10**9 and "operator > 1.000 s" in state["thresholds_text"]
    assert not state["live"]   # a finished trace: the page does not speak of versions
    served.clear()
    assert main(["pag", "serve", trace, "--port", "0"]) == 0   # no threshold: no operator is too long
    assert [v["kind"] for v in served[0].state()["violations"]] == []


def test_the_plot_has_a_title_and_labelled_axes(trace, tmp_path, monkeypatch):
    import matplotlib.figure

    seen = []
    original = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, *a, **k: (seen.append([(ax.get_title(), ax.get_xlabel(), ax.get_ylabel())
                                                           for ax in fig.axes]), original(fig, *a, **k)))
    assert main(["pag", "plot", trace, "-o", str(tmp_path / "cp.png")]) == 0
    (title, xlabel, ylabel), = seen[0]
    assert title.startswith("Critical participation per snapshot") and xlabel == "epoch" and "fraction" in ylabel


@pytest.mark.slow
def test_follow_says_once_that_it_waits_for_a_missing_trace(tmp_path, capsys):
    missing = tmp_path / "later.trace"
    assert main(["pag", "cp", str(missing), "--follow", "--until-idle", "0.3"]) == 1
    err = capsys.readouterr().err
    assert err.count(f"waiting for {missing} to appear") == 1
    assert "did not appear within 0.3 s" in err
    # the run starts writing it meanwhile: it is read, and --until-idle counts from then
    threading.Timer(0.3, lambda: missing.write_text(TRACE)).start()
    assert main(["pag", "cp", str(missing), "--follow", "--until-idle", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("waiting for") == 1 and "== epoch 0: 3.039 s" in captured.out


def test_traces_number_epochs_as_the_api_does(tmp_path, capsys):
    path = str(tmp_path / "run.trace")
    flow = dd.Dataflow(trace=path)
    nums = flow.input("nums", ["x"])
    out = nums.distinct().output()
    nums.insert([1])
    flow.advance()
    nums.insert([2])
    flow.advance()
    assert {epoch for _, epoch, _ in out.changes()} == {0, 1}
    flow.close()
    assert set(read_events(path).e.tolist()) == {0, 1}
    assert main(["pag", "cp", path, "--json"]) == 0
    assert [s["epoch"] for s in json.loads(capsys.readouterr().out)] == [0, 1]


def test_pag_alone_lists_its_commands_and_says_what_to_type(capsys):
    assert main(["pag"]) == 2
    err = capsys.readouterr().err
    for command in ("cp", "metrics", "invariants", "match", "serve", "report", "plot"):
        assert any(line.split()[:1] == [command] for line in err.splitlines()), command
    assert "diffflow pag cp run.trace" in err and "pag_command" not in err


def test_durations_pick_a_unit_per_column():
    from diffflow.pag.readable import format_duration, readable_frame

    assert [format_duration(ns) for ns in (5, 5_000, 5_000_000, 5 * 10**9)] == \
        ["0.005 us", "5.000 us", "5.000 ms", "5.000 s"]
    import pandas as pd

    frame = readable_frame(pd.DataFrame({"duration_ns": [1_000_000, 250_000_000], "start": [2 * 10**9, None]}))
    assert frame.columns.tolist() == ["duration_ms", "start_s"] and frame["duration_ms"].tolist() == [1.0, 250.0]
