"""ST2's aggregate metrics (PAG.md §3.2): per snapshot and (from worker, to worker, activity).

Local activities count as ``(w, w, type)``, messages as ``(src, dst, type)``:
the number of edges, their total duration in ns (negative clock-skew
durations count as 0) and the records they carry.

>>> from diffflow.pag.edges import Edges
>>> pag = Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Processing", 2, 40), (1, 0, 5, 0, 0, 7, 0, "Processing", 2, 10),
...                        (1, 0, 5, 0, 1, 9, 0, "DataMessage", -1, 10)])
>>> metrics(pag).to_dict("records")[0]
{'epoch': 1, 'from_worker': 0, 'to_worker': 0, 'activity': 'Processing', 'count': 2, 'duration_ns': 7, 'records': 50}
"""
from __future__ import annotations

import numpy as np

from diffflow.pag.edges import Edges
from diffflow.runtime.events import ACTIVITIES


def metrics(edges: Edges, *, epochs: bool = True):
    """A pandas DataFrame: one row per (snapshot, from_worker, to_worker, activity) with count, duration_ns, records.

    The first column is ``epoch`` for epoch snapshots, ``window`` for time windows.

    >>> metrics(Edges.empty()).columns.tolist()
    ['epoch', 'from_worker', 'to_worker', 'activity', 'count', 'duration_ns', 'records']
    """
    import pandas as pd

    snap = "epoch" if epochs else "window"
    frame = pd.DataFrame({snap: edges.snap, "from_worker": edges.src_w, "to_worker": edges.dst_w,
                          "type": edges.type, "duration_ns": np.maximum(edges.duration, 0),
                          "records": np.maximum(edges.n, 0)})
    out = (frame.groupby([snap, "from_worker", "to_worker", "type"], sort=True)
           .agg(count=("duration_ns", "size"), duration_ns=("duration_ns", "sum"), records=("records", "sum"))
           .reset_index())
    codes = out.pop("type").to_numpy(np.int64)
    out.insert(3, "activity", np.array(ACTIVITIES, dtype=object)[codes])
    return out.astype({snap: np.int64, "from_worker": np.int64, "to_worker": np.int64, "count": np.int64,
                       "duration_ns": np.int64, "records": np.int64})
