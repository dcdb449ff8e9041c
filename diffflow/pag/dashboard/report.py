"""Static outputs of the dashboard, for reports and CI artefacts: ``diffflow pag report``
(one self-contained HTML file with the dashboard's views of a finished trace: Plotly's
script, the page's script and the data inline) and ``diffflow pag plot`` (critical
participation over snapshots as a PNG, drawn by matplotlib).

>>> import tempfile, os
>>> from diffflow.pag.edges import Edges; from diffflow.pag.api import PAG
>>> pag = PAG(Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Processing")]), epochs=True)
>>> out = os.path.join(tempfile.mkdtemp(), "r.html"); write_report(pag, out)
>>> text = open(out).read(); "DASHBOARD_DATA" in text and "<script src=" not in text
True
"""
from __future__ import annotations

import json

import numpy as np

from diffflow.pag.api import PAG
from diffflow.pag.dashboard.server import STATIC, _plotly_script
from diffflow.pag.dashboard.views import khop, overview, thresholds_text, timeline

KHOPS = range(1, 6)   # the k a report's k-hop charts offer
KHOP_SNAPSHOTS = 20   # reports of more snapshots leave the k-hop charts out (the page says so)


def write_report(pag: PAG, path, **thresholds) -> None:
    """The dashboard of a finished trace as one HTML file that needs nothing else."""
    from diffflow.pag.dashboard.colors import COLORS

    state = {"version": 1, **overview(pag, **thresholds), "errors": [], "colors": COLORS, "live": False,
             "thresholds": thresholds, "thresholds_text": thresholds_text(thresholds)}
    snaps = sorted({int(s) for s in np.unique(pag.edges.snap).tolist()})
    if not len(pag.edges):
        raise ValueError("the trace holds no activity (no two events of a worker, no "
                         "message): nothing to report")
    data = {"state": state, "timelines": {str(s): timeline(pag, s) for s in snaps},
            "khops": {f"{s}/{k}": khop(pag, s, k) for s in snaps for k in KHOPS}
            if len(snaps) <= KHOP_SNAPSHOTS else {}}
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    inline = lambda code: "<script>" + code.replace("</script", "<\\/script") + "</script>"  # noqa: E731
    page = page.replace('<script src="/assets/plotly.min.js"></script>',
                        inline(_plotly_script().read_text(encoding="utf-8")))
    page = page.replace('<script src="/assets/app.js"></script>',
                        inline("window.DASHBOARD_DATA = " +
                               json.dumps(data).replace("<", "\\u003c") + ";") +
                        inline((STATIC / "app.js").read_text(encoding="utf-8")))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)


def write_plot(pag: PAG, path, title: str | None = None) -> None:
    """Critical participation by activity, stacked per snapshot, as a PNG with a title
    (default: "Critical participation per snapshot") and labelled axes."""
    import matplotlib

    matplotlib.use("Agg")   # no screen needed
    import matplotlib.pyplot as plt

    from diffflow.pag.dashboard.colors import COLORS
    from diffflow.runtime.events import ACTIVITIES

    if not len(pag.edges):
        raise ValueError("the trace holds no activity (no two events of a worker, no "
                         "message): nothing to plot")
    summaries = overview(pag)["snapshots"]
    labels = [str(s["snapshot"]) for s in summaries]
    kinds = [k for k in ACTIVITIES if any(s["by_activity"].get(k, 0) for s in summaries)]
    figure, axes = plt.subplots(figsize=(max(6, len(labels) * 0.4), 4), dpi=100)
    bottom = np.zeros(len(labels))
    for kind in kinds:
        values = np.array([s["by_activity"].get(kind, 0.0) for s in summaries])
        axes.bar(labels, values, bottom=bottom, label=kind, color=COLORS.get(kind))
        bottom += values
    axes.set_title(title or "Critical participation per snapshot", fontsize="medium")
    axes.set_xlabel("epoch" if pag.epochs else f"time window ({_window_text(pag.window_ns)} each)")
    axes.set_ylabel("critical participation (fraction, sums to 1)")
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1, 1))
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def _window_text(window_ns) -> str:
    from diffflow.pag.readable import format_duration

    return format_duration(window_ns).replace(".000 ", " ")


__all__ = ["write_plot", "write_report"]
