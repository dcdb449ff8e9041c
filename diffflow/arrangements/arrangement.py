"""Arrangement: ``P`` spines, partition ``p`` holding the keys with ``hash % P == p``.

The hash is :func:`columnar.hash_rows` over the key columns -- a fixed
64-bit mix, identical in every process and runtime -- so a key lands in the
same partition in the local runtime and in Spark, and state can move between
them.  In a running dataflow each partition worker owns one spine of each
arrangement; this class is the same thing held in one place (tests, tools).
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.spine import Spine
from diffflow.arrangements.updates import Updates
from diffflow.common import memory_budget
from diffflow.lattice import Antichain


def split_by_partition(updates: Updates, key_columns, parts: int) -> list[Updates]:
    """Split a chunk into ``parts`` chunks by the hash of ``key_columns``.

    >>> chunks = split_by_partition(Updates.from_lists([(1,), (2,), (3,)], [(0,)] * 3, [1] * 3), [0], 2)
    >>> sum(len(c) for c in chunks)
    3
    """
    if parts == 1:
        return [updates]
    return split_by_owner(updates, key_columns, parts,
                          lambda keys: columnar.partition_of(keys, parts))


def split_by_owner(updates: Updates, key_columns, parts: int, owners) -> list[Updates]:
    """Split a chunk into ``parts`` chunks by ``owners(keys)``: the partition of each row's
    ``key_columns`` (a routing table's, or the hash's).

    >>> u = Updates.from_lists([(1,), (2,), (3,)], [(0,)] * 3, [1] * 3)
    >>> [len(c) for c in split_by_owner(u, [0], 2, lambda k: k[:, 0] % 2)]
    [1, 2]
    """
    columns = list(key_columns)
    n = len(updates)  # (the chunk is copied in partition order, with its permutation)
    memory_budget.reserve(n * 8 * (updates.width + updates.dim + 3),
                          "routing {:,} updates to {} partitions", n, parts)
    # all columns in their own order need no copy; any other selection or order does
    keys = updates.rows if columns == list(range(updates.width)) else updates.rows[:, columns]
    part = owners(np.ascontiguousarray(keys))
    perm, offsets = columnar.group_by_partition(part, parts)
    shuffled = updates.take(perm)
    return [shuffled.take(slice(offsets[p], offsets[p + 1])) for p in range(parts)]


class Arrangement:
    """An indexed, partitioned, multiversioned trace keyed by its first ``key_width`` columns.

    >>> from diffflow.lattice import Antichain
    >>> a = Arrangement(width=2, key_width=1, dim=1, parts=3)
    >>> a.insert(Updates.from_lists([(1, 10), (2, 20), (1, 11)], [(0,)] * 3, [1] * 3),
    ...          upper=Antichain([(1,)]))
    >>> sorted(a.gather(np.array([[1]]))[1].tolist())
    [[1, 10], [1, 11]]
    >>> a._check()
    """

    def __init__(self, width: int, key_width: int, dim: int, parts: int = 1):
        self.key_width, self.parts = key_width, parts
        self.spines = [Spine(width, key_width, dim) for _ in range(parts)]

    def insert(self, updates: Updates, upper: Antichain) -> None:
        """Route updates to their partitions and seal them as batches up to ``upper``."""
        for spine, chunk in zip(self.spines,
                                split_by_partition(updates, range(self.key_width), self.parts)):
            spine.insert_updates(chunk, upper)

    def set_compaction(self, frontier: Antichain) -> None:
        for spine in self.spines:
            spine.set_compaction(frontier)

    def compact(self) -> None:
        for spine in self.spines:
            spine.compact()

    def gather(self, query_keys: np.ndarray):
        """Updates of many keys at once: ``(query_index, rows, times, diffs)``."""
        query_keys = np.ascontiguousarray(query_keys, dtype=np.int64)
        if self.parts == 1:
            return self.spines[0].gather(query_keys)
        part = columnar.partition_of(query_keys, self.parts)
        results = []
        for p, spine in enumerate(self.spines):
            which = np.flatnonzero(part == p)
            if len(which):
                q, rows, times, diffs = spine.gather(query_keys[which])
                results.append((which[q], rows, times, diffs))
        if not results:
            return self.spines[0].gather(query_keys[:0])
        return tuple(np.concatenate(x) for x in zip(*results))

    def to_updates(self) -> Updates:
        chunks = [s.to_updates() for s in self.spines]
        u = Updates(*(np.concatenate(x) for x in zip(*chunks)))
        return u.consolidated()

    def __len__(self) -> int:
        return sum(len(s) for s in self.spines)

    def _check(self) -> None:
        """Every spine is valid and holds only its own partition's keys."""
        for p, spine in enumerate(self.spines):
            spine._check()
            for batch in spine.batches:
                if len(batch):
                    owner = columnar.partition_of(np.ascontiguousarray(batch.keys), self.parts)
                    assert np.all(owner == p), f"partition {p} holds a key of another partition"
