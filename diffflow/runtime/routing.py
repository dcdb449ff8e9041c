"""Bins and the routing table: which partition owns each key.

Every key (the columns an exchange routes by) hashes into one of
:data:`BINS` bins, ``bin = hash_rows(key) % BINS``, and a dataflow-wide table
maps each bin to its partition.  One table serves every exchange, so equal
keys meet on one partition whatever collection they come from: joins stay
co-partitioned through every change of the table.  Rescaling
(:mod:`diffflow.runtime.rescale.plans`) moves state a bin at a time by changing the table.

``BINS = 720720 = lcm(1..16)``: the default table ``bin % P`` then routes
exactly like ``hash % P`` for every ``P <= 16`` (and every other divisor of
``BINS``), so a dataflow that never rescales partitions its data as before,
through the plain modulo kernel (no table lookup at all).

>>> r = Routing(3)
>>> r.is_default, r.table()[:6].tolist()
(True, [0, 1, 2, 0, 1, 2])
>>> moved = r.table(); moved[0] = 2; Routing(3, moved).is_default
False
"""
from __future__ import annotations

import functools

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.arrangement import split_by_owner
from diffflow.arrangements.updates import Updates

BINS = 720_720  # lcm(1..16): the default table reproduces hash % P for P <= 16


class Routing:
    """The owner of every bin: ``table[bin]``, for ``parts`` partitions (``None``: ``bin % parts``).

    >>> keys = np.arange(20)[:, None]
    >>> bool((Routing(4).owners(keys) == columnar.partition_of(keys, 4)).all())
    True
    """

    def __init__(self, parts: int, table: np.ndarray | None = None):
        self.parts = int(parts)
        if table is None and BINS % self.parts:
            table = np.arange(BINS, dtype=np.int32) % self.parts  # no modulo shortcut for P
        if table is not None:
            table = np.ascontiguousarray(table, dtype=np.int32)
            check_table(table, self.parts)
            table.setflags(write=False)
            if BINS % self.parts == 0 and _is_modulo(table, self.parts):
                table = None
        self._table = table

    @property
    def is_default(self) -> bool:
        """Whether keys are routed by ``hash % parts`` (the table is ``bin % parts``)."""
        return self._table is None

    def lookup(self) -> np.ndarray:
        """The table as a read-only int32 array of :data:`BINS` entries (cached)."""
        return _modulo_table(self.parts) if self._table is None else self._table

    def table(self) -> np.ndarray:
        """The table as a fresh writable int32 array of :data:`BINS` entries."""
        if self._table is None:
            return _modulo_table(self.parts).copy()
        return self._table.copy()

    def owners(self, keys: np.ndarray) -> np.ndarray:
        """The partition owning each key row (int64)."""
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        if self._table is None:
            return columnar.partition_of(keys, self.parts)
        return columnar.owner_by_table(keys, self._table)

    def split(self, updates: Updates, key_columns) -> list:
        """``updates`` split into ``parts`` chunks by the owners of ``key_columns``.

        >>> u = Updates.from_lists([(1,), (2,), (3,)], [(0,)] * 3, [1] * 3)
        >>> [len(c) for c in Routing(1).split(u, [0])]
        [3]
        """
        if self.parts == 1:
            return [updates]
        return split_by_owner(updates, key_columns, self.parts, self.owners)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Routing) or other.parts != self.parts:
            return False
        if self._table is None or other._table is None:
            return self._table is other._table
        return bool(np.array_equal(self._table, other._table))

    def __getstate__(self):
        return {"parts": self.parts, "table": self._table}

    def __setstate__(self, state):
        self.parts, self._table = state["parts"], state["table"]

    def __repr__(self) -> str:
        kind = "hash % P" if self._table is None else "table"
        return f"Routing(parts={self.parts}, {kind})"


def _is_modulo(table: np.ndarray, parts: int) -> bool:
    head = min(BINS, 4096)  # (most tables differ early: no full comparison)
    return bool(np.array_equal(table[:head], _modulo_table(parts)[:head])
                and np.array_equal(table, _modulo_table(parts)))


@functools.lru_cache(maxsize=16)
def _modulo_table(parts: int) -> np.ndarray:
    """``bin % parts`` for every bin, read-only (shared)."""
    table = np.arange(BINS, dtype=np.int32) % np.int32(parts)
    table.setflags(write=False)
    return table


def check_table(table: np.ndarray, parts: int) -> None:
    """Refuse a table of the wrong length or with partitions outside ``[0, parts)``.

    >>> check_table(np.zeros(3, np.int32), 2)
    Traceback (most recent call last):
    ValueError: a routing table needs 720720 entries (one per bin), got 3
    """
    if table.ndim != 1 or len(table) != BINS:
        raise ValueError(f"a routing table needs {BINS} entries (one per bin), got "
                         f"{table.shape[0] if table.ndim == 1 else table.shape}")
    if len(table) and (int(table.min()) < 0 or int(table.max()) >= parts):
        bad = int(table.min()) if int(table.min()) < 0 else int(table.max())
        raise ValueError(f"a routing table names partition {bad}; there are {parts} "
                         f"(0..{parts - 1})")
