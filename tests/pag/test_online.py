"""PagFlow: the PAG and its analyses maintained by a dataflow as events arrive, vs from-scratch numpy."""
from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from diffflow.pag.activity_metrics import metrics
from diffflow.pag.checks import violations
from diffflow.pag.critical import critical_participation
from diffflow.pag.epochs import build_epochs, chain_edges, message_edges
from diffflow.pag.online import PagFlow
from diffflow.runtime.events import Events
from tests.pag.test_pag import _events, _rows
from tests.support import pag_reference as ref


def _batches(ev: Events, rng: random.Random) -> list[Events]:
    """The events cut into random batches, workers interleaved, each worker's events in order."""
    per_worker = {w: list(np.flatnonzero(ev.w == w)[np.argsort(ev.seq[ev.w == w])]) for w in set(ev.w.tolist())}
    order = []
    while per_worker:
        w = rng.choice(sorted(per_worker))
        take = rng.randrange(1, 6)
        order += per_worker[w][:take]
        per_worker[w] = per_worker[w][take:]
        if not per_worker[w]:
            del per_worker[w]
    cuts = sorted(rng.sample(range(1, len(order)), min(6, len(order) - 1))) if len(order) > 1 else []
    return [ev.take(np.array(part, np.int64)) for part in np.split(np.array(order, np.int64), cuts)]


def _same_cp(got: list, want: list) -> None:
    assert [s["snapshot"] for s in got] == [s["snapshot"] for s in want]
    for g, w in zip(got, want):
        assert (g["start"], g["end"], g["paths"]) == (w["start"], w["end"], w["paths"])
        for part in ("by_activity", "by_worker", "by_operator", "by_pair"):
            assert g[part].keys() == w[part].keys(), part
            for key in w[part]:
                assert g[part][key] == pytest.approx(w[part][key], rel=1e-9, abs=1e-12)


def _violation_set(frame):
    return Counter(tuple(None if v is None or v is __import__("pandas").NA else v for v in row)
                   for row in frame.astype(object).values.tolist())


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("partitions", [1, 3])
def test_pag_flow_matches_from_scratch_at_every_step(seed, partitions):
    rng = random.Random(seed)
    ev = _events(ref.random_events(rng, workers=3, epochs=3, steps=5, messages=6))
    flow = PagFlow(partitions=partitions, message_max_ns=30, epoch_max_ns=300, operator_max_ns=25)
    fed = []
    try:
        for batch in _batches(ev, rng):
            flow.feed(batch)
            flow.advance()
            fed.append(batch)
            so_far = Events.concat(fed)
            latest = {w: so_far.e[so_far.w == w].max() for w in set(so_far.w.tolist())}
            closed = so_far.take(np.array([e < latest[w] for w, e in zip(so_far.w.tolist(), so_far.e.tolist())],
                                          bool))
            want = Counter(_rows(chain_edges(closed))) + Counter(_rows(message_edges(so_far)))
            got = flow.edges()
            assert Counter(_rows(got)) == want
            # the dataflow's aggregates and filters against the numpy analyses of the same PAG
            assert flow.metrics().to_dict("records") == metrics(got).to_dict("records")
            scratch = violations(got, message_max_ns=30, epoch_max_ns=300)
            mine = flow.violations()
            assert _violation_set(mine[mine.kind != "operator"]) == _violation_set(scratch)
            _same_cp(flow.cp(), critical_participation(got).summaries)
        flow.flush()
        flow.advance()
        assert Counter(_rows(flow.edges())) == Counter(_rows(build_epochs(ev)))
        scratch = violations(build_epochs(ev), message_max_ns=30, epoch_max_ns=300, operator_max_ns=25)
        assert _violation_set(flow.violations()) == _violation_set(scratch)
        _same_cp(flow.cp(), critical_participation(build_epochs(ev)).summaries)
        # retiring the first two epochs leaves exactly the PAG of the others
        flow.retire(3)
        flow.advance()
        assert Counter(_rows(flow.edges())) == Counter(_rows(build_epochs(ev.take(ev.e >= 3))))
    finally:
        flow.close()


@pytest.mark.slow
def test_cli_follow_reports_epochs_while_the_trace_grows(tmp_path):
    import json
    import subprocess
    import sys
    import time

    from diffflow.pag.api import PAG, cp_json
    from diffflow.runtime.events import write_events

    ev = _events(ref.random_events(random.Random(11), workers=2, epochs=4, steps=6, messages=6))
    trace = tmp_path / "live.trace"
    trace.write_text("")
    proc = subprocess.Popen([sys.executable, "-m", "diffflow", "pag", "cp", str(trace), "--follow", "--json",
                             "--until-idle", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for epoch in (1, 2, 3, 4):
            with open(trace, "a") as fh:
                write_events(ev.take(ev.e == epoch), fh)
            if epoch == 3:
                # epochs 1 and 2 are closed (every worker logged epoch 3): reported before the trace ends
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                assert json.loads(line)["epoch"] == 1
            time.sleep(0.3)
        # read through the same buffered stream readline() used (communicate() would skip its buffer)
        out = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    reported = [json.loads(line)] + [json.loads(x) for x in out.splitlines()]
    want = cp_json(PAG(build_epochs(ev), epochs=True))
    assert [s["epoch"] for s in reported] == [s["epoch"] for s in want] == [1, 2, 3, 4]
    for got, exp in zip(reported, want):
        assert (got["start"], got["end"], got["paths"]) == (exp["start"], exp["end"], exp["paths"])
        assert got["by_activity"] == pytest.approx(exp["by_activity"], rel=1e-9, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("partitions", [1, 3])
def test_pag_flow_in_time_windows_matches_from_scratch(seed, partitions):
    from diffflow.pag.windows import build_windows

    rng = random.Random(100 + seed)
    ev = _events(ref.random_events(rng, workers=3, epochs=3, steps=5, messages=6))
    window = 4_000
    flow = PagFlow(partitions=partitions, window_ns=window, message_max_ns=30)
    fed = []
    try:
        # a window closes when every worker has logged past its end: feed each worker's events in time order
        batches = _batches(ev.take(np.lexsort((ev.seq, ev.t))), rng)
        for batch in batches:
            flow.feed(batch)
            flow.advance()
            fed.append(batch)
            so_far = Events.concat(fed)
            horizon = min(so_far.t[so_far.w == w].max() for w in set(so_far.w.tolist())) // window
            closed = so_far.take(so_far.t // window < horizon)
            assert Counter(_rows(flow.edges())) == Counter(_rows(build_windows(closed, window)))
        flow.flush()
        flow.advance()
        whole = build_windows(ev, window)
        assert Counter(_rows(flow.edges())) == Counter(_rows(whole))
        want = critical_participation(whole).summaries
        for s in want:
            s["epoch"] = None
        _same_cp(flow.cp(), want)
    finally:
        flow.close()
