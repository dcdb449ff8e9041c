"""A traced Datalog run seen in the dashboard, operators named by their rules: a screenshot
for the docs.

Usage::

    python bench/dashboard_datalog.py             # docs/dashboard_datalog.png
    python bench/dashboard_datalog.py --png /tmp/flights.png --jobs 1

Runs the README's main job (``examples/flights``: the program, then its update step) on
``--jobs`` partitions with ``--trace``, prints ``diffflow pag cp`` of the update's epoch, then
writes the dashboard of the trace (``diffflow pag report``) and screenshots it on that epoch in
headless Chromium (Debian's ``chromium`` and ``chromium-driver``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from dashboard_rescale import screenshot  # noqa: E402

FLIGHTS = os.path.join(REPO, "examples", "flights")


def diffflow(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "diffflow", *args], check=True, cwd=REPO,
                          **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--png", default=os.path.join(REPO, "docs", "dashboard_datalog.png"))
    parser.add_argument("--jobs", default="2", help="partitions of the run (default 2)")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="diffflow-dashboard-")
    trace, html = os.path.join(folder, "flights.trace"), os.path.join(folder, "flights.html")
    diffflow("run", os.path.join(FLIGHTS, "flights.dl"), "-F", os.path.join(FLIGHTS, "facts"),
             "-D", os.path.join(folder, "out"), "--updates", os.path.join(FLIGHTS, "updates"),
             "-j", args.jobs, "--trace", trace)
    update_epoch = 1  # epoch 0 is the initial run, epoch N the N-th step
    cp = diffflow("pag", "cp", trace, "--top", "5", capture_output=True, text=True).stdout
    print(cp[cp.index(f"== epoch {update_epoch}:"):])
    diffflow("pag", "report", trace, "-o", html)
    screenshot(html, args.png, update_epoch)
    print(f"trace {trace}\nreport {html}\nscreenshot (epoch {update_epoch}) {args.png}")


if __name__ == "__main__":
    main()
