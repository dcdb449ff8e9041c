"""``diffflow pag serve``: the dashboard server, started as a user would (a subprocess on a
free loopback port) on traces written in the test: its JSON agrees with ``diffflow pag cp
--json``, a growing trace is pushed to listeners as server-sent events, malformed lines are
reported and the server keeps going."""
from __future__ import annotations

import json
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

import pag_reference as ref
from diffflow.pag.events import write_events
from test_pag import _events


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``diffflow pag serve TRACE ...`` in a subprocess, on a free loopback port."""

    def __init__(self, trace, *options):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "diffflow", "pag", "serve", str(trace),
                                      "--port", str(self.port), *options],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.get("/api/state")
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the server did not start: {self.proc.stderr.read()}")
                time.sleep(0.2)

    def get(self, path):
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            body = response.read()
            return json.loads(body) if response.headers.get_content_type() == "application/json" \
                else body

    def state_until(self, ready, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.get("/api/state")
            if ready(state):
                return state
            time.sleep(0.1)
        raise AssertionError(f"state never became ready: {state}")

    def stop(self) -> str:
        self.proc.terminate()   # what Ctrl-C does to uvicorn: a clean stop
        try:
            _, err = self.proc.communicate(timeout=30)
        finally:
            self.proc.kill()
        return err


def trace_file(tmp_path, seed=3, epochs=4):
    ev = _events(ref.random_events(random.Random(seed), workers=2, epochs=epochs, steps=6,
                                   messages=6))
    path = tmp_path / "run.trace"
    with open(path, "w") as fh:
        write_events(ev, fh)
    return path, ev


def test_the_dashboard_serves_what_pag_cp_computes(tmp_path):
    path, _ = trace_file(tmp_path, seed=4)   # critical paths in epochs 1-3
    want = json.loads(subprocess.run(
        [sys.executable, "-m", "diffflow", "pag", "cp", str(path), "--json"],
        capture_output=True, text=True, check=True).stdout)
    assert any(s["paths"] for s in want)
    server = Server(path)
    try:
        state = server.state_until(lambda s: s["snapshots"])
        assert [s["epoch"] for s in state["snapshots"]] == [s["epoch"] for s in want]
        for got, exp in zip(state["snapshots"], want):
            assert got["by_activity"] == pytest.approx(exp["by_activity"])
            assert got["by_worker"] == pytest.approx(exp["by_worker"])
        view = server.get(f"/api/timeline/{want[0]['epoch']}")
        assert view["workers"] == [0, 1] and view["activities"]
        page = server.get("/").decode()
        assert "/assets/plotly.min.js" in page and "cdn" not in page.lower()
        assert len(server.get("/assets/plotly.min.js")) > 1_000_000   # served from the package
    finally:
        err = server.stop()
    assert "Traceback" not in err


def test_a_followed_trace_is_pushed_to_listeners_and_bad_lines_reported(tmp_path):
    full, ev = trace_file(tmp_path, seed=5)
    path = tmp_path / "live.trace"
    with open(path, "w") as fh:
        write_events(ev.take(ev.e <= 2), fh)
    server = Server(path, "--follow")
    versions: list = []

    def listen():   # a page's EventSource, as raw server-sent events
        with urllib.request.urlopen(server.url + "/events", timeout=30) as stream:
            for line in stream:
                if line.startswith(b"data:"):
                    versions.append(int(line[5:]))
                    if len(versions) >= 3:
                        return
    try:
        first = server.state_until(lambda s: s["snapshots"])   # epoch 1 closed
        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        time.sleep(0.5)
        with open(path, "a") as fh:
            fh.write("this is not an event\n")
            write_events(ev.take(ev.e > 2), fh)
        listener.join(timeout=10)
        assert len(versions) >= 2 and versions[-1] > versions[0]   # pushed, not polled
        state = server.state_until(lambda s: len(s["snapshots"]) >= 3 and s["errors"])
        assert len(state["snapshots"]) > len(first["snapshots"])
        assert "line skipped" in state["errors"][0]
    finally:
        err = server.stop()
    assert "line skipped" in err and "Traceback" not in err
