"""Columnar chunks of updates ``(row, time, diff)``: what flows between operators.

A chunk is three aligned arrays: ``rows`` ``(n, w)`` int64, ``times``
``(n, d)`` int64 and ``diffs`` ``(n,)`` int64.  A chunk may mix many times
(times are data) and need not be consolidated; a :class:`~.batch.Batch` is
the consolidated, described form stored in arrangements.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from diffflow.arrangements import columnar
from diffflow.common import memory_budget


class Updates(NamedTuple):
    """A chunk of updates.

    >>> u = Updates.from_lists([(1, 2)], [(0,)], [1])
    >>> len(u), u.width, u.dim
    (1, 2, 1)
    """

    rows: np.ndarray
    times: np.ndarray
    diffs: np.ndarray

    @staticmethod
    def empty(width: int, dim: int) -> "Updates":
        """A chunk with no updates."""
        return Updates(np.zeros((0, width), np.int64), np.zeros((0, dim), np.int64),
                       np.zeros(0, np.int64))

    @staticmethod
    def from_lists(rows, times, diffs, width: int | None = None, dim: int | None = None):
        """Build a chunk from Python lists (tests and examples)."""
        rows = np.array(rows, dtype=np.int64).reshape(len(rows), -1 if width is None else width)
        times = np.array(times, dtype=np.int64).reshape(len(times), -1 if dim is None else dim)
        return Updates(rows, times, np.array(diffs, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.diffs)

    @property
    def width(self) -> int:
        return self.rows.shape[1]

    @property
    def dim(self) -> int:
        return self.times.shape[1]

    def take(self, index) -> "Updates":
        """The updates at ``index`` (an integer array, slice or boolean mask)."""
        return Updates(self.rows[index], self.times[index], self.diffs[index])

    def consolidated(self) -> "Updates":
        """Sorted by (row, time), equal pairs summed, zeros dropped."""
        return Updates(*columnar.consolidate(self.rows, self.times, self.diffs))

    def negated(self) -> "Updates":
        return Updates(self.rows, self.times, -self.diffs)

    def to_list(self) -> list:
        """``[(row tuple, time tuple, diff), ...]`` (tests and debugging)."""
        return list(zip(map(tuple, self.rows.tolist()), map(tuple, self.times.tolist()),
                        self.diffs.tolist()))


def concat(chunks: Sequence[Updates], width: int, dim: int) -> Updates:
    """Concatenate chunks (an empty list gives an empty chunk).

    >>> len(concat([Updates.from_lists([(1,)], [(0,)], [1])] * 2, 1, 1))
    2
    """
    chunks = [c for c in chunks if len(c)]
    if not chunks:
        return Updates.empty(width, dim)
    if len(chunks) == 1:
        return chunks[0]
    n = sum(len(c) for c in chunks)
    memory_budget.reserve(n * 8 * (width + dim + 1), "concatenating {:,} updates", n)
    return Updates(np.concatenate([c.rows for c in chunks]),
                   np.concatenate([c.times for c in chunks]),
                   np.concatenate([c.diffs for c in chunks]))
