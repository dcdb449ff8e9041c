"""Construction A (time windows) against the plain reference, Appendix-A well-formedness and the sum rule."""
from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from diffflow.pag.api import PAG, cp_json, load
from diffflow.pag.windows import build_windows, check_windows
from diffflow.runtime.events import write_events
from tests.pag.test_pag import _events
from tests.support import pag_reference as ref
from tests.support import pag_windows_reference as wref


def _tuples(edges):
    names = edges.type_names()
    return [(int(s), int(a), int(b), int(c), int(d), names[i], int(o), bool(x)) for i, (s, a, b, c, d, o, x) in
            enumerate(zip(edges.snap, edges.src_w, edges.src_t, edges.dst_w, edges.dst_t, edges.op, edges.block))]


def _windowed_events(rng):
    """Random events whose activities sometimes cross window boundaries (window 200 ns)."""
    rows = ref.random_events(rng, workers=rng.randrange(1, 4), epochs=rng.randrange(1, 3), steps=6, messages=6)
    for row in rows:
        row["t"] -= 10_000  # epochs 1.. start at 10_000: bring them near 0 so windows are few
    return rows


@pytest.mark.parametrize("seed", range(50))
def test_windows_match_the_plain_reference_and_are_well_formed(seed):
    rng = random.Random(seed)
    rows = _windowed_events(rng)
    window, theta = rng.choice([(200, 5), (200, 1000), (97, 3), (10_000, 20)])
    pag = build_windows(_events(rows), window, gap_ns=theta)
    assert Counter(_tuples(pag)) == Counter(wref.build_windows(rows, window, theta))
    problems = check_windows(pag, window)
    # chains are always whole; a Waiting edge not ending at a receive can only come from an explicit
    # Waiting activity of the trace that no message ended (the generator makes some)
    assert [p for p in problems if "Waiting edge" not in p] == []
    explicit_waits = any(r["act"] == "Waiting" for r in rows)
    assert not problems or explicit_waits
    for s in cp_json(PAG(pag, epochs=False, window_ns=window)):
        if s["paths"] > 0:
            assert math.isclose(sum(s["by_activity"].values()), 1.0, rel_tol=1e-9), s
            assert s["start"] == s["snapshot"] * window - 1 and s["end"] == (s["snapshot"] + 1) * window


def test_a_send_received_in_the_next_window_is_projected_to_both_boundaries():
    from diffflow.runtime.events import Events

    ev = Events.from_rows([(0, -1, 50, "Sent", "DataMessage", -1, 0, 7, 1, 3),
                           (1, -1, 130, "Received", "DataMessage", -1, 0, 7, 0, 3)])
    pag = build_windows(ev, 100, gap_ns=1)
    msgs = sorted(t[:5] for t in _tuples(pag) if t[5] == "DataMessage")
    # window 0: sent at 50, projected to the window's end on worker 1; window 1: from its start on worker 0
    assert msgs == [(0, 0, 50, 1, 100), (1, 0, 99, 1, 130)]
    # worker 1 in window 0: an edge arrives at 100 (the synthetic receive); the chain still spans -1..100
    assert check_windows(pag, 100) == []
    # before the receive, worker 1's window-1 timeline holds only the window's start: SnailTrail
    # types that gap Unknown (Waiting needs a send or an activity before the receive)
    assert (1, 1, 99, 1, 130, "Unknown", -1, False) in _tuples(pag)


def test_windows_through_load_and_the_cli(tmp_path, capsys):
    import json

    from diffflow.cli import main

    rows = _windowed_events(random.Random(4))
    path = tmp_path / "run.trace"
    write_events(_events(rows), path)
    pag = load(path, window="200ns")
    assert not pag.epochs and pag.window_ns == 200
    assert main(["pag", "cp", str(path), "--window", "200ns", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["epoch"] for s in out] == [None] * len(out) and len(out) == len(set(pag.edges.snap.tolist()))
    assert np.all(np.diff([s["start"] for s in out]) > 0)


def test_chunked_windows_equal_one_pass(monkeypatch):
    import diffflow.pag.windows as windows

    rows = _windowed_events(random.Random(9))
    ev = _events(rows)
    whole = build_windows(ev, 150)
    monkeypatch.setattr(windows, "CHUNK_EVENTS", 20)
    assert Counter(_tuples(windows.build_windows(ev, 150))) == Counter(_tuples(whole))
