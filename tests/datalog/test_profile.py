"""``diffflow run --profile`` and ``diffflow profile``: per rule and relation, per step and
round, checked against counts derived independently of the profiler."""
import json
import re
import textwrap

import pytest

from diffflow.cli import main

K = 6  # edges of the chain 0 -> 1 -> ... -> K

CHAIN = """
    .decl edge(x: number, y: number)
    .input edge
    .decl path(x: number, y: number)
    .output path
    path(x, y) :- edge(x, y).
    path(x, z) :-
        path(x, y),
        edge(y, z).
    .decl far(x: number)
    .output far
    far(x) :- edge(x, _), x >= 2.
"""


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.fixture
def chain(tmp_path):
    prog = _write(tmp_path / "chain.dl", CHAIN)
    _write(tmp_path / "facts" / "edge.facts", "".join(f"{i}\t{i + 1}\n" for i in range(K)))
    _write(tmp_path / "steps" / "1" / "edge.insert.facts", f"{K}\t{K + 1}\n")
    _write(tmp_path / "steps" / "2" / "edge.remove.facts", "0\t1\n")
    return prog


def _run(tmp_path, prog, *extra):
    out = tmp_path / "prof.json"
    assert main(["run", str(prog), "-F", str(tmp_path / "facts"), "-D", str(tmp_path / "out"),
                 "--profile", str(out), *extra]) == 0
    return json.loads(out.read_text())


def _rows(profile, kind, key, step=0):
    """``{round: (time, tuples, rows_in, calls)}`` of one rule or relation in one step."""
    cols = profile["activity"]["columns"]
    found = {}
    for row in profile["activity"]["rows"]:
        r = dict(zip(cols, row))
        if r["kind"] == kind and r["key"] == key and r["step"] == step:
            found[r["round"]] = (r["time_ns"], r["tuples"], r["rows_in"], r["calls"])
    return found


def _rule(profile, line):
    (rule,) = [r for r in profile["rules"] if r["location"].endswith(f"chain.dl:{line}")]
    return rule


def test_every_rule_appears_with_its_place_and_text(chain, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "0")
    profile = _run(tmp_path, chain)
    assert profile["format"] == "diffflow-profile" and profile["version"] == 1
    places = {(r["location"].rsplit("/", 1)[-1], r["text"], r["relation"], r["stratum"])
              for r in profile["rules"]}
    assert places == {("chain.dl:5", "path(x, y) :- edge(x, y).", "path", None),
                      ("chain.dl:6", "path(x, z) :- path(x, y), edge(y, z).", "path", "path"),
                      ("chain.dl:11", "far(x) :- edge(x, _), x >= 2.", "far", None)}
    assert [r["id"] for r in profile["rules"]] == [1, 2, 3]   # numbered in source order
    assert {r["name"]: r["stratum"] for r in profile["relations"]} == \
        {"edge": None, "path": "path", "far": None}
    assert profile["steps"][0]["sizes"] == {"path": K * (K + 1) // 2, "far": K - 2}


def test_tuples_and_rounds_match_the_chain(chain, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "0")   # every round's steps logged
    profile = _run(tmp_path, chain)
    # a non-recursive rule derives its relation's facts: far holds the K - 2 edges from x >= 2
    far = _rows(profile, "rule", _rule(profile, 11)["id"])
    assert set(far) == {-1} and far[-1][1] == K - 2
    assert _rows(profile, "relation", "far")[-1][1] == K - 2   # new facts of far
    # the recursive rule: round 0 brings the K edges in, round j >= 1 derives the paths of
    # length j + 1 (K - j of them), so round K derives none and the loop settles there
    rec = _rows(profile, "rule", _rule(profile, 6)["id"])
    assert sorted(rec) == list(range(K + 1))
    assert [rec[j][1] for j in range(K + 1)] == [0] + [K - j for j in range(1, K + 1)]
    # the relation's distinct: round j has the paths of length j + 1 as new facts
    path = _rows(profile, "relation", "path")
    assert [path[j][1] for j in range(K)] == [K - j for j in range(K)]
    assert sum(t for t, *_ in rec.values()) > 0
    assert profile["compiled"]["rows"] == []


def test_updates_have_per_step_entries(chain, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "0")
    profile = _run(tmp_path, chain, "--updates", str(tmp_path / "steps"))
    assert [s["step"] for s in profile["steps"]] == [0, 1, 2]
    assert profile["steps"][-1]["sizes"]["path"] == K * (K + 1) // 2   # 1..K+1 minus 0's paths
    rec = _rule(profile, 6)["id"]
    # step 1 adds edge K -> K+1: the K paths ending at K (from 0, ..., K-1) extend by it
    assert sum(t[1] for t in _rows(profile, "rule", rec, step=1).values()) == K
    # step 2 removes edge 0 -> 1: the K + 1 paths from 0 are retracted, K of them derived
    # by the recursive rule (path(0, 1) by the other)
    assert sum(t[1] for t in _rows(profile, "rule", rec, step=2).values()) == K


def test_compiled_loops_are_reported_as_such(chain, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "force")
    profile = _run(tmp_path, chain, "--updates", str(tmp_path / "steps"))
    runs = [dict(zip(profile["compiled"]["columns"], row)) for row in profile["compiled"]["rows"]]
    assert {r["step"] for r in runs} >= {1, 2} and {r["stratum"] for r in runs} == {"path"}
    assert all(r["first_round"] <= r["last_round"] and r["time_ns"] > 0 for r in runs)
    # the edge K -> K+1 of step 1 meets the path of length K - 1 at round K - 1 at the latest
    assert max(r["last_round"] for r in runs if r["step"] == 1) >= K - 1


def test_profile_prints_the_summary_and_detail(chain, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "0")
    _run(tmp_path, chain)
    capsys.readouterr()
    assert main(["profile", str(tmp_path / "prof.json")]) == 0
    text = capsys.readouterr().out
    assert "Rules by time (3 rules)" in text and "Relations by size" in text
    line = next(ln for ln in text.splitlines() if "chain.dl:6" in ln)
    assert line.split()[0] == "R2" and line.endswith("path(x, z) :- path(x, y), edge(y, z).")
    tuples, rounds = re.search(r"(\d+)\s+(\d+)\s+\S*chain\.dl:6", line).groups()
    assert (int(tuples), int(rounds)) == (K * (K - 1) // 2, K + 1)
    assert main(["profile", str(tmp_path / "prof.json"), "--rule", "R2"]) == 0
    detail = capsys.readouterr().out
    assert "Rule R2" in detail and "Per step and round" in detail
    assert main(["profile", str(tmp_path / "prof.json"), "--relation", "path",
                 "--html", str(tmp_path / "p.html")]) == 0
    page = (tmp_path / "p.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Relation path" in page
    assert "<script" not in page and "http" not in page


def test_html_summary_has_the_rules(chain, tmp_path, monkeypatch):
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "0")
    _run(tmp_path, chain)
    assert main(["profile", str(tmp_path / "prof.json"), "--html", str(tmp_path / "s.html")]) == 0
    page = (tmp_path / "s.html").read_text()
    assert "<svg" in page and "far(x) :- edge(x, _), x &gt;= 2." in page


@pytest.mark.parametrize("content, message", [
    (None, "no such file; write one with `diffflow run PROGRAM.dl --profile"),
    ("{not json", ":1:2: not JSON"),
    ('{"a": 1}', 'not a diffflow profile (no "format": "diffflow-profile")'),
    ('{"format": "diffflow-profile", "version": 99}', "profile version 99, but this diffflow "
                                                      "reads version 1"),
    ('{"format": "diffflow-profile", "version": 1, "steps": [], "rules": [], "relations": [],'
     ' "activity": {"columns": ["step"], "rows": []}, "compiled": {}}',
     "'activity' table does not have the columns"),
])
def test_bad_profile_files_are_named_with_the_fix(tmp_path, capsys, content, message):
    path = tmp_path / "p.json"
    if content is not None:
        path.write_text(content)
    assert main(["profile", str(path)]) != 0
    err = capsys.readouterr().err
    assert str(path) in err and message in err


def test_unknown_rule_or_relation_and_unwritable_profile(chain, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DIFFFLOW_COMPILED_ROUNDS", "0")
    _run(tmp_path, chain)
    assert main(["profile", str(tmp_path / "prof.json"), "--rule", "9"]) != 0
    assert "no rule R9; its rules are R1 to R3" in capsys.readouterr().err
    assert main(["profile", str(tmp_path / "prof.json"), "--relation", "nope"]) != 0
    assert "no relation 'nope'; it has edge, far, path" in capsys.readouterr().err
    assert main(["run", str(chain), "-F", str(tmp_path / "facts"), "-D", str(tmp_path / "o"),
                 "--profile", str(tmp_path / "no" / "p.json")]) != 0
    assert "the folder" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_profile_never_overwrites_another_file_and_a_damaged_one_is_named(chain, tmp_path,
                                                                           capsys):
    program_text = chain.read_text()
    for target in (str(chain), "-", ""):  # the program itself, stdout, nothing
        assert main(["run", str(chain), "-F", str(tmp_path / "facts"), "-D",
                     str(tmp_path / "out"), "--profile", target]) != 0
        assert "--profile" in capsys.readouterr().err
    assert chain.read_text() == program_text
    profile = _run(tmp_path, chain)
    _run(tmp_path, chain)  # an existing profile is replaced
    assert main(["profile", str(tmp_path / "prof.json"), "--html",
                 str(tmp_path / "prof.json")]) != 0
    assert "is the profile being read" in capsys.readouterr().err
    profile["relations"] = [{"name": 1}]
    (tmp_path / "bad.json").write_text(json.dumps(profile))
    assert main(["profile", str(tmp_path / "bad.json")]) != 0
    assert "the profile is damaged (KeyError" in capsys.readouterr().err
