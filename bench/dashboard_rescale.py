"""A traced run across a live rescale, seen in the dashboard: a screenshot for the docs.

Usage::

    python bench/dashboard_rescale.py                    # runtime processes, docs/dashboard_rescale.png
    python bench/dashboard_rescale.py --runtime spark --png /tmp/spark.png

Connected components over random edges start at 2 partitions, traced to a file; after 3
epochs a batched plan moves to 3 partitions (its worker starts in the background, then a step
per epoch), and 2 epochs after its last step an all-at-once step moves to 1.  It prints, per epoch, the partitions and the workers the trace names (the
partition the plan adds logs as worker 3: 0 and 1 are the first partitions, 2 the
coordinator) with the critical participation's sum, then writes the dashboard of the trace
(``diffflow pag report``) and screenshots it in headless Chromium (Debian's ``chromium`` and
``chromium-driver``) on a snapshot during the plan.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

import diffflow as dd  # noqa: E402
from diffflow import graphs  # noqa: E402
from diffflow.pag.api import cp_json, load  # noqa: E402
from diffflow.pag.dashboard.views import timeline  # noqa: E402
from diffflow.runtime.routing import BINS  # noqa: E402


def traced_run(path: str, runtime: str) -> list:
    """The run; returns the partition count of every epoch."""
    options = {"runtime": runtime}
    if runtime == "spark":
        from diffflow.runtime.spark import local_session
        options["spark"] = local_session("local[4]")
    rng = np.random.default_rng(11)
    edges = rng.integers(0, 3000, size=(9000, 2))
    counts = []
    with dd.Dataflow(partitions=2, trace=path, **options) as flow:
        links = flow.input("links", ["src", "dst"])
        graphs.connected_components(links).output()
        links.insert(edges)

        def epoch():
            if counts:
                at = len(counts) % 500 * 15
                links.remove(edges[at:at + 15])
                links.insert(rng.integers(0, 3000, size=(15, 2)))
            flow.advance()
            counts.append(flow.partitions)

        for _ in range(3):
            epoch()
        flow.rescale(partitions=3, strategy="batched", bins_per_step=BINS // 9)
        while flow.migration is not None:   # (its worker starts first, then the steps)
            epoch()
        for _ in range(2):
            epoch()
        flow.rescale(partitions=1, strategy="all_at_once")
        for _ in range(3):
            epoch()
    return counts


def screenshot(html: str, png: str, snapshot: int) -> None:
    os.environ.setdefault("SE_OFFLINE", "true")   # selenium must not look for drivers online
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,1500"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get("file://" + os.path.abspath(html))
        deadline = time.monotonic() + 30
        while not driver.execute_script(
                "return document.getElementById('snapshot').options.length"):
            if time.monotonic() > deadline:
                raise SystemExit("the dashboard did not load")
            time.sleep(0.1)
        driver.execute_script(f"document.getElementById('snapshot').value = '{snapshot}';"
                              f"showSnapshot({snapshot});")
        time.sleep(2)   # (plotly draws)
        driver.save_screenshot(png)
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runtime", default="processes", choices=["processes", "spark",
                                                                   "cluster"])
    parser.add_argument("--png", default=os.path.join(REPO, "docs", "dashboard_rescale.png"))
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="diffflow-dashboard-")
    trace = os.path.join(folder, "rescale.trace")
    counts = traced_run(trace, args.runtime)
    pag = load(trace)
    during = None
    for summary, parts in zip(cp_json(pag), counts):
        workers = timeline(pag, summary["epoch"])["workers"]
        print(f"epoch {summary['epoch']:2d}  partitions {parts}  workers {workers}  "
              f"CP sum {sum(summary['by_activity'].values()):.6f}")
        if parts == 3 and during is None:
            during = summary["epoch"]
    html = os.path.join(folder, "rescale.html")
    subprocess.run([sys.executable, "-m", "diffflow", "pag", "report", trace, "-o", html],
                   check=True)
    screenshot(html, args.png, during)
    print(f"trace {trace}\nreport {html}\nscreenshot (snapshot {during}) {args.png}")


if __name__ == "__main__":
    main()
