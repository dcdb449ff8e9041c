"""Spine: one partition's trace of a collection, as an LSM of immutable batches.

Design
------
A spine is a list of batches, oldest first, whose descriptions tile the
history: ``batches[i].upper == batches[i + 1].lower``.  New batches are
appended at the end; afterwards, while the second-to-last batch is no more
than twice the size of the last, the two are merged; so is any batch under
``SMALL_BATCH`` updates (a loop seals a tiny batch per round, and lookups
should not search one per round).  Sizes therefore decrease geometrically
from old to new, a spine of ``n`` updates has ``O(log n)`` batches, and every
update takes part in ``O(log n)`` merges, each linear, plus merges of at most
``SMALL_BATCH`` updates: inserting ``n`` updates costs amortised ``O(n log n)``.

Logical compaction
------------------
Readers tell the spine (through :meth:`set_compaction`) the frontier beyond
which they will ever look.  Updates at times the frontier cannot tell apart
may then be advanced (``advance_by``) and consolidated.  The spine applies its
frontier whenever it merges, so compaction costs nothing extra and happens at
amortised rates; :meth:`compact` forces it everywhere (checkpoints, tests).

Lookups
-------
:meth:`gather` finds the updates of many keys at once: one vectorised binary
search per batch (``O(m log n)`` for ``m`` keys), never per-key Python.
"""
from __future__ import annotations

import numpy as np

from ..lattice import Antichain
from . import columnar
from .batch import Batch, merge
from .updates import Updates, concat


# Batches below this many updates are merged with the next one regardless of the
# geometric rule (see Spine.insert).
SMALL_BATCH = 256


def expand_ranges(lo: np.ndarray, hi: np.ndarray):
    """For half-open ranges ``[lo[i], hi[i])``, list (range index, position) pairs.

    >>> q, p = expand_ranges(np.array([5, 0]), np.array([7, 1]))
    >>> q.tolist(), p.tolist()
    ([0, 0, 1], [5, 6, 0])
    """
    counts = hi - lo
    total = int(counts.sum())
    query = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    positions = np.arange(total, dtype=np.int64) + np.repeat(lo - starts, counts)
    return query, positions


class Spine:
    """A geometric LSM of batches for one partition of an arrangement.

    >>> s = Spine(width=2, key_width=1, dim=1)
    >>> batch = s.insert_updates(Updates.from_lists([(1, 10), (2, 20)], [(0,), (0,)], [1, 1]),
    ...                          upper=Antichain([(1,)]))
    >>> q, rows, times, diffs = s.gather(np.array([[2], [3]]))
    >>> q.tolist(), rows.tolist()
    ([0], [[2, 20]])
    """

    # rescaling (diffflow.runtime.migrate) sets this while the batches it imported in front
    # still wait for their own merges: the tail's cascade stops at them meanwhile
    hold_imports = False

    def __init__(self, width: int, key_width: int, dim: int):
        self.width, self.key_width, self.dim = width, key_width, dim
        self.batches: list[Batch] = []
        self.since = Antichain.minimum(dim)
        self.upper = Antichain.minimum(dim)

    def __len__(self) -> int:
        return sum(len(b) for b in self.batches)

    def insert(self, batch: Batch) -> None:
        """Append a batch whose ``lower`` is the spine's ``upper``; merge geometrically."""
        if batch.lower != self.upper:
            raise ValueError(f"batch lower {batch.lower!r} does not continue spine upper {self.upper!r}")
        self.upper = batch.upper
        if len(batch) == 0 and self.batches:
            self.batches[-1] = self.batches[-1].extended_to(batch.upper)
            return
        self.batches.append(batch)
        batches = self.batches
        while len(batches) >= 2:
            older, newer = batches[-2], batches[-1]
            # geometric merging; and a tiny batch per loop round would leave ~log2(rounds)
            # batches for every lookup to search, so small tails merge at once (both
            # batches are small then, so compacting them too costs little)
            if len(older) > 2 * len(newer) and len(older) >= SMALL_BATCH:
                break
            if self.hold_imports and older.lower == older.upper and len(older):
                break
            merged = merge(older, newer, self.since)
            batches[-2:] = [merged]

    def insert_updates(self, updates: Updates, upper: Antichain) -> Batch:
        """Consolidate ``updates`` into a batch ``[self.upper, upper)`` and insert it."""
        batch = Batch.from_updates(updates, self.key_width, self.upper, upper)
        self.insert(batch)
        return batch

    def insert_chunks(self, chunks, upper: Antichain) -> Batch:
        """:meth:`insert_updates` of a list of chunks (consolidated without concatenating).

        >>> s = Spine(width=1, key_width=1, dim=1)
        >>> u = Updates.from_lists([(4,), (2,)], [(0,), (0,)], [1, 1])
        >>> s.insert_chunks([u, u.negated(), u], upper=Antichain([(1,)])).rows.tolist()
        [[2], [4]]
        """
        batch = Batch.from_chunks(chunks, self.width, self.dim, self.key_width, self.upper, upper)
        self.insert(batch)
        return batch

    def extend_to(self, upper: Antichain) -> None:
        """Nothing happened before ``upper``: move the spine's upper on (what inserting an
        empty batch does, without building one).

        >>> s = Spine(width=1, key_width=1, dim=1)
        >>> _ = s.insert_chunks([Updates.from_lists([(4,)], [(0,)], [1])], Antichain([(1,)]))
        >>> s.extend_to(Antichain([(5,)])); s.upper == Antichain([(5,)]), len(s)
        (True, 1)
        """
        if not self.batches:
            self.insert_chunks([], upper)
            return
        self.batches[-1] = self.batches[-1].extended_to(upper)
        self.upper = upper

    def set_compaction(self, frontier: Antichain) -> None:
        """Allow times to be advanced to ``frontier`` (frontiers only move forward)."""
        self.since = frontier

    def compact(self) -> None:
        """Apply the compaction frontier to every batch now, and merge them into one."""
        if not self.batches:
            return
        merged = self.batches[0].live()
        if merged.since != self.since:
            merged = merged.advanced(self.since)
        for batch in self.batches[1:]:
            merged = merge(merged, batch, self.since)
        self.batches = [merged]

    def gather(self, query_keys: np.ndarray, width: int | None = None):
        """All updates whose key equals one of ``query_keys`` (an ``(m, key_width)`` array).

        Returns ``(query_index, rows, times, diffs)``; ``query_index[i]`` is the
        query row that update ``i`` matched.  With ``width``, the queries are
        sorted row prefixes of that many columns (``key_width <= width <=
        self.width``): e.g. whole rows, to read the multiplicities of a few
        ``(key, value)`` pairs without reading their keys' other values.
        """
        width = self.key_width if width is None else width
        query_keys = np.ascontiguousarray(query_keys, dtype=np.int64)
        if query_keys.ndim != 2 or query_keys.shape[1] != width or not \
                self.key_width <= width <= self.width:
            raise ValueError(f"gather: query keys of shape {query_keys.shape} do not match "
                             f"key width {width}")
        parts = []
        for batch in self.batches:
            if len(batch):  # batches hold valid arrays: no checks per call
                found = columnar.gather_prefix_unchecked(batch.rows, batch.times, batch.diffs,
                                                         width, query_keys)
                if len(found[0]) and batch.dead is not None:  # rows of bins that moved away
                    bins = np.empty(len(found[0]), np.int32)
                    columnar.bin_of_prefix(found[1], self.key_width, len(batch.dead), bins)
                    keep = ~batch.dead[bins]
                    found = tuple(x[keep] for x in found)
                if len(found[0]):
                    parts.append(found)
        if not parts:
            return (np.zeros(0, np.int64), np.zeros((0, self.width), np.int64),
                    np.zeros((0, self.dim), np.int64), np.zeros(0, np.int64))
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate(x) for x in zip(*parts))

    def to_updates(self) -> Updates:
        """Every update in the spine, consolidated."""
        chunks = [b.live().updates() for b in self.batches]
        return concat(chunks, self.width, self.dim).consolidated()

    def _check(self) -> None:
        """Assert the spine's invariants and those of all its batches."""
        lower = None
        for batch in self.batches:
            batch._check()
            assert batch.key_width == self.key_width and batch.width == self.width
            if lower is not None:
                assert batch.lower == lower, "batch descriptions must tile the history"
            lower = batch.upper
        if self.batches:
            assert self.batches[-1].upper == self.upper

    def __repr__(self) -> str:
        sizes = [len(b) for b in self.batches]
        return f"Spine(width={self.width}, key_width={self.key_width}, batches={sizes})"
