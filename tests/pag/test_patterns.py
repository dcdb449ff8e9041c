"""The PAG pattern library (queries/pag/) against plain-Python oracles written from PAG.md §3.4."""
from __future__ import annotations

import random
from collections import defaultdict

import pytest

from diffflow.cli import main
from diffflow.pag.api import PAG
from diffflow.pag.edges import Edges
from diffflow.pag.relations import match
from diffflow.pag.st2 import read_st2
from tests.support import pag_reference as ref
from tests.support import paths

ROOT = paths.REPO
QUERIES = ROOT / "queries" / "pag"
ST2 = paths.FIXTURES / "st2"


def _tuples(edges: Edges) -> list[tuple]:
    """(id, snap, src_w, src_t, dst_w, dst_t, type, op, records), written here, not by diffflow.pag.

    Times as pag.dl has them: float ns since the earliest instant.
    """
    names = edges.type_names()
    origin = min(edges.src_t.min(), edges.dst_t.min())
    return [(i, int(edges.snap[i]), int(edges.src_w[i]), float(edges.src_t[i] - origin), int(edges.dst_w[i]),
             float(edges.dst_t[i] - origin), names[i], int(edges.op[i]), int(edges.n[i])) for i in range(len(edges))]


def _run(pag, name, **kw):
    path = QUERIES / f"{name}.dl"
    return {k: [tuple(r) for r in v.itertuples(index=False, name=None)]
            for k, v in match(pag, path.read_text(), filename=str(path), **kw).items()}


def _khop_oracle(edges, k=10):
    ends = defaultdict(set)  # (snap, dst_t) -> edges ending there
    for e in edges:
        ends[(e[1], e[5])].add(e[0])
    by_id = {e[0]: e for e in edges}
    found = set()
    frontier = set()
    for e in edges:
        if e[6] == "Waiting":
            frontier |= {c for c in ends[(e[1], e[5])] if by_id[c][6] != "Waiting"}
    hop = 1
    while frontier and hop <= k:
        found |= {(c, hop) for c in frontier}
        frontier = {c2 for c in frontier for c2 in ends[(by_id[c][1], by_id[c][3])]}
        hop += 1
    summary = defaultdict(lambda: [0, 0])
    for c, h in found:
        e = by_id[c]
        summary[(h, e[6], e[2])][0] += 1
        summary[(h, e[6], e[2])][1] += e[5] - e[3]
    return sorted((h, t, w, n, d) for (h, t, w), (n, d) in summary.items())


def _random_pag(seed) -> PAG:
    from diffflow.pag.epochs import build_epochs
    from tests.pag.test_pag import _events

    return PAG(build_epochs(_events(ref.random_events(random.Random(seed), workers=3, epochs=2))), epochs=True)


@pytest.mark.parametrize("source", ["log_all", 0, 1, 2])
def test_khop_wait(source):
    pag = PAG(read_st2(ST2 / "log_all.pag.jsonl.gz"), epochs=True) if source == "log_all" else _random_pag(source)
    assert _run(pag, "khop_wait")["khop_summary"] == _khop_oracle(_tuples(pag.edges))


@pytest.mark.slow
@pytest.mark.parametrize("source", ["log_all", 3, 4])
def test_resumed_by_data_silent_worker_and_slow(source):
    pag = PAG(read_st2(ST2 / "log_all.pag.jsonl.gz"), epochs=True) if source == "log_all" else _random_pag(source)
    edges = _tuples(pag.edges)
    resumed = set()
    for w in edges:
        if w[6] != "Waiting" or w[2] != w[4]:
            continue
        for m in edges:
            if m[6] == "DataMessage" and m[1] == w[1] and m[4] == w[2] and m[5] == w[5] and \
                    any(n[1] == w[1] and n[2] == n[4] == w[2] and n[3] == w[5] and n[6] != "Waiting" for n in edges):
                resumed.add((w[1], w[2], w[5], m[2], m[8]))
    produced = {(s, w, t, f, p[7]) for (s, w, t, f, _) in resumed for m in edges
                if m[6] == "DataMessage" and (m[1], m[2], m[4], m[5]) == (s, f, w, t)
                for p in edges if p[6] == "Processing" and p[7] >= 0 and (p[1], p[2], p[4], p[5]) == (s, f, f, m[3])}
    got = _run(pag, "resumed_by_data")
    assert set(got["resumed"]) == resumed and set(got["produced_by"]) == produced
    if source == "log_all":
        assert len(resumed) == 100  # each of log_all's 100 data messages wakes worker 1

    active = {(e[1], e[2]) for e in edges} | {(e[1], e[4]) for e in edges}
    sent = {(e[1], e[2]) for e in edges if e[6] == "ControlMessage" and e[2] != e[4]}
    assert set(_run(pag, "silent_worker")["silent"]) == active - sent

    limit = 1_000_000.0 if source == "log_all" else 30.0
    slow = _run(pag, "slow", macros={"LIMIT": str(limit)})
    want = {(e[1], e[2], e[4], e[6], e[8], e[3], e[5], e[5] - e[3]) for e in edges
            if e[2] != e[4] and e[5] - e[3] > limit}
    assert set(slow["slow_message"]) == want


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("partitions", [1, 3])
def test_top_critical_against_brute_force_path_counts(seed, partitions):
    rows = ref.random_events(random.Random(seed), workers=3, epochs=2)
    padded = ref.pad(ref.build_epochs(rows))
    _, cp, _ = ref.critical_paths(padded)
    by_type = defaultdict(float)
    for e, c in zip(padded, cp):
        by_type[(e[0], e[7])] += c
    want = set()
    for (snap, kind), c in by_type.items():
        above = sum(1 for (s2, _), c2 in by_type.items() if s2 == snap and c2 > c)
        if c > 0 and above + 1 <= 2:
            want.add((snap, above + 1, kind))
    got = _run(_random_pag(seed), "top_critical", macros={"K": "2"}, partitions=partitions)["top_activity"]
    # CP values are sums of floats: compare them loosely, the ranking exactly
    assert {(s, r, t) for s, r, t, _ in got} == want
    for s, _, t, c in got:
        assert c == pytest.approx(by_type[(s, t)], rel=1e-9)


def test_cli_match_prints_each_output(capsys):
    trace = str(ST2 / "log_all.pag.jsonl.gz")
    assert main(["pag", "match", trace, str(QUERIES / "silent_worker.dl"), "--format", "st2"]) == 0
    assert capsys.readouterr().out.strip() == "== silent (0 rows)"
    assert main(["pag", "match", trace, str(QUERIES / "top_critical.dl"), "--format", "st2", "-M", "K=1"]) == 0
    out = capsys.readouterr().out
    assert "== top_activity (5 rows)" in out  # one most critical activity type per epoch


def test_user_pattern_errors_point_at_the_pattern(tmp_path, capsys):
    bad = tmp_path / "mine.dl"
    bad.write_text('#include "pag.dl"\n.decl x(a: number)\n.output x\nx(a) :- edge(a, _, _).\n')
    assert main(["pag", "match", str(ST2 / "mwe.pag.jsonl.gz"), str(bad), "--format", "st2"]) == 1
    assert "mine.dl:4:" in capsys.readouterr().err
