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
import urllib.error
import urllib.request

import numpy as np
import pytest

from diffflow.runtime.events import write_events
from tests.pag.test_pag import _events
from tests.support import pag_reference as ref


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


def pag_cp(path) -> list:
    """``diffflow pag cp PATH --json``: the numbers the dashboard must show."""
    return json.loads(subprocess.run(
        [sys.executable, "-m", "diffflow", "pag", "cp", str(path), "--json"],
        capture_output=True, text=True, check=True).stdout)


def trace_file(tmp_path, seed=3, epochs=4):
    ev = _events(ref.random_events(random.Random(seed), workers=2, epochs=epochs, steps=6,
                                   messages=6))
    path = tmp_path / "run.trace"
    with open(path, "w") as fh:
        write_events(ev, fh)
    return path, ev


@pytest.mark.slow
def test_the_dashboard_serves_what_pag_cp_computes(tmp_path):
    path, _ = trace_file(tmp_path, seed=4)   # critical paths in epochs 1-3
    want = pag_cp(path)
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
        # the k-hop wait charts: pag match with queries/pag/khop_wait.dl on the snapshot,
        # summed over workers
        from diffflow.pag.api import PAG, load
        from diffflow.pag.relations import match
        from tests.pag.test_patterns import QUERIES

        pattern, edges, seen = QUERIES / "khop_wait.dl", load(path).edges, 0
        for snap in sorted({s["epoch"] for s in want}):
            mine = PAG(edges.take(np.flatnonzero(edges.snap == snap)), epochs=True)
            found = match(mine, pattern.read_text(), filename=str(pattern),
                          macros={"K": "2"})["khop_summary"]
            expected = {(int(h), t): (int(g["count"].sum()), float(g["total_ns"].sum()))
                        for (h, t), g in found.groupby(["hops", "type"])}
            got = {(r["hops"], r["type"]): (r["count"], r["total_ns"])
                   for r in server.get(f"/api/khop/{snap}?k=2")["rows"]}
            assert got == expected
            seen += len(got)
        assert seen   # the trace has waits to explain
        with pytest.raises(urllib.error.HTTPError):
            server.get(f"/api/khop/{want[0]['epoch']}?k=0")
        page = server.get("/").decode()
        assert "/assets/plotly.min.js" in page and "cdn" not in page.lower()
        assert len(server.get("/assets/plotly.min.js")) > 1_000_000   # served from the package
    finally:
        err = server.stop()
    assert "Traceback" not in err


@pytest.mark.slow
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


CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def browser():
    """Headless Debian Chromium driven by selenium (nothing downloaded: the driver is the
    system's)."""
    import os

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("no browser: install Debian's Chromium with "
                    "`apt-get install chromium chromium-driver` (.ci/run does)")
    os.environ.setdefault("SE_OFFLINE", "true")   # selenium must not look for drivers online
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1600"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def wait_for(driver, condition, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(condition)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not seen within {timeout} s: {condition}")


@pytest.mark.slow
def test_a_person_sees_lanes_cp_violations_and_live_updates(tmp_path):
    full, ev = trace_file(tmp_path, seed=4)
    path = tmp_path / "live.trace"
    with open(path, "w") as fh:
        write_events(ev.take(ev.e <= 3), fh)
    driver = browser()  # (skips before a server starts: nothing is left running)
    server = Server(path, "--follow")
    try:
        driver.get(server.url + "/")
        wait_for(driver, "return document.querySelectorAll('#cp-table tr[data-key]').length", 30)
        # the lanes: one per worker
        lanes = wait_for(driver, "return document.getElementById('timeline').dataset.workers", 10)
        assert lanes == "0,1"
        assert driver.execute_script(
            "return document.querySelectorAll('#timeline .scatterlayer .trace').length") > 0
        # the CP numbers shown for the selected snapshot are diffflow pag cp's
        shown = int(driver.execute_script("return document.getElementById('snapshot').value"))
        rows = driver.execute_script(
            "return [...document.querySelectorAll('#cp-table tr[data-key]')].map("
            "r => [r.dataset.summary, r.dataset.key, Number(r.dataset.cp), r.cells[2].innerText])")
        want = {s["epoch"]: s for s in pag_cp(path)}[shown]
        for summary, key, cp, text in rows:
            assert cp == pytest.approx(want[f"by_{summary}"][key])
            assert text == f"{want[f'by_{summary}'][key]:.4f}"
        assert {(s, k) for s, k, _, _ in rows} == {
            (s, k) for s in ("activity", "worker", "operator") for k in want[f"by_{s}"]}
        # the k-hop wait charts drew the snapshot's waits
        assert int(wait_for(driver, "return document.getElementById('khop-count').dataset.rows", 10))
        # the trace breaks an invariant (no progress messages): listed
        assert driver.execute_script("return document.querySelectorAll('#violations li').length")
        # every chart has a title and axis titles, durations with their unit (issue 40)
        charts = ("timeline", "cp-chart", "activity-chart", "khop-count", "khop-duration")
        for div in charts:
            titles = driver.execute_script(
                f"const l = document.getElementById('{div}').layout; "
                "return [l.title.text, l.xaxis.title.text, l.yaxis.title.text]")
            assert all(titles), (div, titles)
        for div, axis in (("timeline", "xaxis"), ("activity-chart", "yaxis"), ("khop-duration", "yaxis")):
            text = driver.execute_script(f"return document.getElementById('{div}').layout.{axis}.title.text")
            assert text.endswith(("(s)", "(ms)", "(us)")), (div, text)
        # Plotly's toolbar covers no legend
        assert driver.execute_script("""
            const covered = [];
            for (const id of arguments[0]) {
              const chart = document.getElementById(id);
              const bar = chart.querySelector('.modebar'), legend = chart.querySelector('.legend');
              if (!bar || !legend) continue;
              const a = bar.getBoundingClientRect(), b = legend.getBoundingClientRect();
              if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) covered.push(id);
            }
            return covered;""", list(charts)) == []
        status = driver.execute_script("return document.getElementById('status').textContent")
        assert "data version" in status and "updates as the trace grows" in status, status
        # a live update within 2 s of events being appended, without reloading
        driver.execute_script("window.notReloaded = true")
        before = int(driver.execute_script("return document.getElementById('status').dataset.version"))
        snapshots = driver.execute_script("return document.getElementById('snapshot').options.length")
        with open(path, "a") as fh:
            write_events(ev.take(ev.e > 3), fh)
        wait_for(driver, f"return Number(document.getElementById('status').dataset.version) > {before}"
                         f" && document.getElementById('snapshot').options.length > {snapshots}", 2)
        assert driver.execute_script("return window.notReloaded === true")
        driver.save_screenshot(str(tmp_path / "dashboard.png"))   # what the person saw
        assert (tmp_path / "dashboard.png").stat().st_size > 10_000
    finally:
        driver.quit()
        server.stop()


@pytest.mark.slow
def test_a_report_is_one_self_contained_file_and_a_plot_a_png(tmp_path):
    path, _ = trace_file(tmp_path, seed=4)
    report, plot = tmp_path / "report.html", tmp_path / "cp.png"
    for command, out in (("report", report), ("plot", plot)):
        subprocess.run([sys.executable, "-m", "diffflow", "pag", command, str(path), "-o", str(out)],
                       check=True, capture_output=True)
    page = report.read_text()
    assert "<script src=" not in page and "http://" not in page.split("DASHBOARD_DATA")[1]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    done = subprocess.run([sys.executable, "-m", "diffflow", "pag", "report", str(path), "--follow",
                           "-o", str(report)], capture_output=True, text=True)
    assert done.returncode != 0 and "drop --follow" in done.stderr


@pytest.mark.slow
def test_a_report_opens_in_the_browser_with_no_server(tmp_path):
    path, _ = trace_file(tmp_path, seed=4)
    report = tmp_path / "report.html"
    subprocess.run([sys.executable, "-m", "diffflow", "pag", "report", str(path), "-o", str(report)],
                   check=True, capture_output=True)
    want = pag_cp(path)
    driver = browser()
    try:
        driver.get(report.as_uri())
        wait_for(driver, "return document.querySelectorAll('#cp-table tr[data-key]').length", 30)
        assert driver.execute_script("return document.getElementById('snapshot').options.length") \
            == len(want)
        assert driver.execute_script("return document.getElementById('timeline').dataset.workers") \
            == "0,1"
    finally:
        driver.quit()


@pytest.mark.slow
def test_many_pages_and_a_closed_one_do_not_stall_updates_and_ctrl_c_stops(tmp_path):
    import signal

    _, ev = trace_file(tmp_path, seed=4)
    path = tmp_path / "live.trace"
    with open(path, "w") as fh:
        write_events(ev.take(ev.e <= 2), fh)
    server = Server(path, "--follow")
    try:
        first = server.state_until(lambda s: s["snapshots"])["version"]
        pages = [urllib.request.urlopen(server.url + "/events", timeout=10) for _ in range(6)]
        for page in pages:
            assert page.readline().startswith(b"event: version")
        for page in pages[:3]:   # three tabs closed without a word
            page.close()
        with open(path, "a") as fh:
            write_events(ev.take(ev.e > 2), fh)
        started = time.monotonic()
        for page in pages[3:]:   # the open ones still hear of the new version, at once
            while True:
                line = page.readline()
                if line.startswith(b"data:") and int(line[5:]) > first:
                    break
        assert time.monotonic() - started < 2
        server.proc.send_signal(signal.SIGINT)   # Ctrl-C, with three pages still open
        _, err = server.proc.communicate(timeout=10)
        # promptly, with Ctrl-C's usual status, no traceback, and open pages not waited for
        assert server.proc.returncode in (0, 130) and "Traceback" not in err
    finally:
        server.proc.kill()


@pytest.mark.slow
def test_a_traced_dataflow_serves_its_own_dashboard_while_it_runs(tmp_path):
    import diffflow as dd
    from diffflow.graphs import connected_components

    port = free_port()
    with pytest.raises(ValueError, match="give trace= a file path"):
        dd.Dataflow(dashboard=port)
    flow = dd.Dataflow(partitions=2, trace=str(tmp_path / "run.trace"), dashboard=port)
    links = flow.input("links", ["src", "dst"])
    connected_components(links).output()
    url = f"http://127.0.0.1:{port}/api/state"
    for epoch in range(4):
        links.insert([(epoch * 10 + i, epoch * 10 + i + 1) for i in range(5)])
        flow.advance()
    deadline = time.monotonic() + 15
    while True:   # epochs 0-2 close once the workers have logged epoch 3
        with urllib.request.urlopen(url, timeout=10) as response:   # live since the flow began
            state = json.loads(response.read())
        if len(state["snapshots"]) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert [s["epoch"] for s in state["snapshots"]][:3] == [0, 1, 2]   # the API's epoch numbers
    flow.close()
    with pytest.raises(OSError):   # closing the dataflow stops its server
        urllib.request.urlopen(url, timeout=2)


@pytest.mark.slow
def test_a_busy_port_or_a_bad_option_is_refused_before_anything_is_served(tmp_path):
    import diffflow as dd

    path, _ = trace_file(tmp_path, seed=4)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        busy = holder.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "diffflow", "pag", "serve", str(path),
                               "--port", str(busy)], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and "another program holds it" in done.stderr
        assert "http://" not in done.stderr                 # no address announced
        with pytest.raises(ValueError, match="another program holds it"):
            dd.Dataflow(trace=str(tmp_path / "x.trace"), dashboard=busy)
    with pytest.raises(ValueError, match="from 1 to 65535"):
        dd.Dataflow(trace=str(tmp_path / "y.trace"), dashboard=70000)
    for bad in (["--window", "bogus"], ["--follow", "--format", "spark"], ["--retain", "0"]):
        done = subprocess.run([sys.executable, "-m", "diffflow", "pag", "serve", str(path),
                               "--port", str(free_port()), *bad],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and "http://" not in done.stderr, done.stderr


@pytest.mark.slow
def test_a_report_survives_markup_in_names_and_unknown_snapshots_are_404(tmp_path):
    from diffflow.pag.api import PAG
    from diffflow.pag.dashboard.report import write_report
    from diffflow.pag.edges import Edges

    pag = PAG(Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Processing", 7, 3)],
                              names={7: "<!--<script>"}), epochs=True)
    out = tmp_path / "r.html"
    write_report(pag, out)
    data = out.read_text().split("window.DASHBOARD_DATA = ")[1].split(";</script>")[0]
    assert "<" not in data and json.loads(data)["state"]["snapshots"]
    path, _ = trace_file(tmp_path, seed=4)
    server = Server(path)
    try:
        server.state_until(lambda s: s["snapshots"])
        with pytest.raises(urllib.error.HTTPError):
            server.get("/api/timeline/99")
    finally:
        server.stop()


def test_a_dashboard_keeps_the_newest_snapshots_it_is_told_to():
    from diffflow.pag.api import PAG
    from diffflow.pag.dashboard.server import Dashboard
    from diffflow.pag.edges import Edges

    def snapshot(s, workers=2):   # each worker busy for s ns in snapshot s
        return [(s, w, 0, w, 0, s, 0, "Processing") for w in range(workers)]

    dash = Dashboard(retain=3)
    for first in range(1, 20, 2):   # two snapshots a batch, as a followed trace gives them
        dash.add(PAG(Edges.from_rows(snapshot(first) + snapshot(first + 1)), epochs=True))
    state = dash.state()
    assert [s["snapshot"] for s in state["snapshots"]] == [18, 19, 20]
    assert {m["snapshot"] for m in state["metrics"]} == {18, 19, 20}
    assert {v["snapshot"] for v in state["violations"]} <= {18, 19, 20}
    assert state["dropped"] == 17 and sorted(dash.where) == [18, 19, 20]
    assert len(dash.parts) == 2   # (the batch of 17 and 18 stays while 18 is shown)
    assert dash.timeline(19)["activities"] and not dash.timeline(5)["activities"]
    # late events of a kept snapshot are analysed again with the rest; of a dropped one, not
    dash.add(PAG(Edges.from_rows(snapshot(19, workers=3) + snapshot(4)), epochs=True))
    state = dash.state()
    assert [s["snapshot"] for s in state["snapshots"]] == [18, 19, 20]
    assert dash.timeline(19)["workers"] == [0, 1, 2] and not dash.timeline(4)["activities"]
    with pytest.raises(ValueError, match="at least 1 snapshot"):
        Dashboard(retain=0)
    everything = Dashboard(retain=None)
    for first in range(1, 40, 2):
        everything.add(PAG(Edges.from_rows(snapshot(first) + snapshot(first + 1)), epochs=True))
    assert len(everything.state()["snapshots"]) == 40 and everything.dropped == 0
