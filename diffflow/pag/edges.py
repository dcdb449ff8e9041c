"""The PAG edge table: one row per activity, grouped into snapshots.

An edge runs from vertex ``(src_w, src_t, src_k)`` to ``(dst_w, dst_t,
dst_k)``: worker, timestamp (ns) and a tie-breaking ordinal for events of one
worker at the same instant (0 where the source format has none).  ``type``
is a code into :data:`~diffflow.runtime.events.ACTIVITIES`; ``op`` the operator
(-1: none); ``n`` the record count (-1: none); ``block`` marks edges no
critical path may use (waiting).  ``snap`` is the snapshot: the epoch for
epoch snapshots, the window index for time windows.  Local edges have
``src_w == dst_w``; messages cross workers.

>>> e = Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Processing")])
>>> e.duration.tolist(), e.is_local.tolist(), e.type_names()
([5], [True], ['Processing'])
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from diffflow.runtime.events import ACTIVITIES, ACTIVITY


@dataclass
class Edges:
    """PAG edges as numpy columns (see the module docstring)."""

    snap: np.ndarray
    src_w: np.ndarray
    src_t: np.ndarray
    src_k: np.ndarray
    dst_w: np.ndarray
    dst_t: np.ndarray
    dst_k: np.ndarray
    type: np.ndarray
    op: np.ndarray
    n: np.ndarray
    block: np.ndarray
    names: dict = field(default_factory=dict)

    COLUMNS = ("snap", "src_w", "src_t", "src_k", "dst_w", "dst_t", "dst_k", "type", "op", "n", "block")

    def __len__(self) -> int:
        return len(self.snap)

    @classmethod
    def empty(cls) -> "Edges":
        """An edge table with no rows.

        >>> len(Edges.empty())
        0
        """
        cols = [np.zeros(0, np.int64) for _ in cls.COLUMNS[:-1]] + [np.zeros(0, bool)]
        return cls(*cols)

    @classmethod
    def from_rows(cls, rows, names=None) -> "Edges":
        """Edges from tuples ``(snap, src_w, src_t, src_k, dst_w, dst_t, dst_k, type[, op, n, block])``.

        ``block`` defaults to ``type == "Waiting"``.

        >>> Edges.from_rows([(0, 0, 0, 0, 0, 3, 0, "Waiting")]).block.tolist()
        [True]
        """
        out = {c: [] for c in cls.COLUMNS}
        for row in rows:
            snap, sw, st, sk, dw, dt, dk, kind, *rest = row
            op, n, block = (list(rest) + [-1, -1, kind == "Waiting"][len(rest):])[:3]
            for c, v in zip(cls.COLUMNS, (snap, sw, st, sk, dw, dt, dk, ACTIVITY[kind], op, n, block)):
                out[c].append(v)
        cols = [np.asarray(out[c], np.int64).reshape(-1) for c in cls.COLUMNS[:-1]]
        return cls(*cols, np.asarray(out["block"], bool).reshape(-1), names=dict(names or {}))

    @property
    def duration(self) -> np.ndarray:
        """Signed duration ``dst_t - src_t`` (clock skew can make a message's negative)."""
        return self.dst_t - self.src_t

    @property
    def is_local(self) -> np.ndarray:
        """True for a worker's own activity, False for a message between workers."""
        return self.src_w == self.dst_w

    def type_names(self) -> list:
        """Activity type names, one per edge.

        >>> Edges.from_rows([(0, 0, 0, 0, 1, 2, 0, "DataMessage")]).type_names()
        ['DataMessage']
        """
        return [ACTIVITIES[c] for c in self.type.tolist()]

    def take(self, index) -> "Edges":
        """The rows at ``index`` (an index array or a boolean mask).

        >>> len(Edges.from_rows([(0, 0, 0, 0, 0, 1, 0, "Busy")]).take(np.zeros(1, bool)))
        0
        """
        return Edges(*(getattr(self, c)[index] for c in self.COLUMNS), names=self.names)

    @staticmethod
    def concat(parts) -> "Edges":
        """The rows of several tables, in order.

        >>> a = Edges.from_rows([(0, 0, 0, 0, 0, 1, 0, "Busy")]); len(Edges.concat([a, a]))
        2
        """
        parts = list(parts)
        if not parts:
            return Edges.empty()
        names = {}
        for p in parts:
            names.update(p.names)
        return Edges(*(np.concatenate([getattr(p, c) for p in parts]) for c in Edges.COLUMNS),
                     names=names)

    def sorted(self) -> "Edges":
        """Sorted by snapshot, then source vertex, then destination vertex.

        >>> Edges.from_rows([(1, 0, 0, 0, 0, 1, 0, "Busy"), (0, 0, 0, 0, 0, 1, 0, "Busy")]).sorted().snap.tolist()
        [0, 1]
        """
        order = np.lexsort((self.dst_k, self.dst_t, self.dst_w, self.src_k, self.src_t, self.src_w, self.snap))
        return self.take(order)

    def snapshots(self):
        """``(snap, edges of that snapshot)`` in snapshot order.

        >>> [s for s, _ in Edges.from_rows([(2, 0, 0, 0, 0, 1, 0, "Busy")]).snapshots()]
        [2]
        """
        order = np.argsort(self.snap, kind="stable")
        snaps = self.snap[order]
        bounds = np.flatnonzero(np.r_[True, snaps[1:] != snaps[:-1], True]) if len(order) else [0]
        for a, b in zip(bounds[:-1], bounds[1:]):
            yield int(snaps[a]), self.take(order[a:b])

    def to_pandas(self):
        """The edges as a pandas DataFrame with readable types.

        >>> Edges.from_rows([(0, 0, 0, 0, 0, 1, 0, "Busy")]).to_pandas()["type"].tolist()
        ['Busy']
        """
        import pandas as pd

        frame = pd.DataFrame({c: getattr(self, c) for c in self.COLUMNS})
        frame["type"] = self.type_names()
        frame["duration"] = self.duration
        return frame
