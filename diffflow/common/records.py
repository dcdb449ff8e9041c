"""Records: tuples of int64 values interned as one int64 id, on every partition worker.

A record ``[a, b]`` (and an algebraic data type's value, a record that starts
with its branch number) is stored in columns as one id: a 64-bit hash of its
components, so any worker packs a record without asking anyone -- the way
symbols are content hashes (:mod:`diffflow.common.schema`).  Id 0 is ``nil``.

The components live in a columnar store per symbol table (:class:`RecordStore`:
sorted runs of ids with their component matrices, merged as they grow, read
with binary searches), so packing and unpacking whole columns is numpy work,
not a Python step per row.  New records are also written into the
:class:`~diffflow.common.schema.SymbolTable`'s texts as one entry per batch, so every
runtime that ships new symbols between workers (cluster, processes, Spark)
ships new records with them; a table absorbs the batches it receives on its
next read.  Hash collisions are detected, as for symbols.

>>> from diffflow.common.schema import SymbolTable
>>> table = SymbolTable()
>>> ids = pack(table, [np.array([1, 2, 1]), np.array([5, 6, 5])])
>>> bool(ids[0] == ids[2]), unpack(table, ids, 2).tolist()
(True, [[1, 5], [2, 6], [1, 5]])
>>> unpack(table, np.array([0]), 2).tolist()  # nil: no components
[[0, 0]]
"""
from __future__ import annotations

import itertools

import numpy as np

NIL = 0
_MARK = "\x00\x01records:"  # (a symbol-table text starting so is a batch of records)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(h: np.ndarray) -> np.ndarray:
    h = (h ^ (h >> np.uint64(30))) * _M1
    h = (h ^ (h >> np.uint64(27))) * _M2
    return h ^ (h >> np.uint64(31))


def record_ids(matrix: np.ndarray) -> np.ndarray:
    """The ids of the rows of an ``(n, k)`` int64 matrix (never 0, the id of ``nil``).

    >>> a = record_ids(np.array([[1, 2], [2, 1], [1, 2]]))
    >>> bool(a[0] == a[2]), bool(a[0] != a[1]), bool((a != 0).all())
    (True, True, True)
    """
    n, k = matrix.shape
    with np.errstate(over="ignore"):
        h = np.full(n, np.uint64(k) * _GOLDEN, dtype=np.uint64)
        for j in range(k):
            h = _mix(h ^ (np.ascontiguousarray(matrix[:, j]).view(np.uint64) + _GOLDEN))
    ids = h.view(np.int64)
    return np.where(ids == NIL, 1, ids)


class RecordStore:
    """The components of the records a symbol table knows, by arity: sorted runs of ids
    and their components, a new run per batch, neighbouring runs merged when they grow
    alike (so a batch costs its own size, amortised, and a read a binary search per run)."""

    def __init__(self):
        self.runs: dict = {}  # arity -> [(sorted ids, (n, arity) components)]
        self.seen = 0  # texts of the symbol table read so far

    def absorb(self, text: dict) -> None:
        """Read the batches added to the symbol table's texts since the last call."""
        if len(text) == self.seen:
            return
        for blob in itertools.islice(text.values(), self.seen, None):
            if isinstance(blob, str) and blob.startswith(_MARK):
                self._add(*_decode_batch(blob))
        self.seen = len(text)

    def _add(self, ids: np.ndarray, rows: np.ndarray) -> None:
        runs = self.runs.setdefault(rows.shape[1], [])
        runs.append((ids, rows))
        while len(runs) > 1 and len(runs[-2][0]) <= 2 * len(runs[-1][0]):
            (a, ra), (b, rb) = runs.pop(), runs.pop()
            ids, first = np.unique(np.concatenate([b, a]), return_index=True)
            runs.append((ids, np.concatenate([rb, ra])[first]))

    def find(self, keys: np.ndarray, arity: int | None = None):
        """``(found, arity, rows)`` of sorted ``keys``: whether each id is known, its arity
        (-1 if not) and its components (zero-padded to the widest arity asked).  (Sorted
        keys keep the binary searches local: ten times faster than random ones.)"""
        found = np.zeros(len(keys), bool)
        arities = np.full(len(keys), -1, np.int64)
        wanted = [arity] if arity is not None else sorted(self.runs)
        width = max(wanted, default=0)
        rows = np.zeros((len(keys), width), np.int64)
        for k in wanted:
            for run_ids, run_rows in self.runs.get(k, ()):
                at = np.minimum(np.searchsorted(run_ids, keys), len(run_ids) - 1)
                hit = ~found & (run_ids[at] == keys)
                if hit.any():
                    found |= hit
                    arities[hit] = k
                    rows[hit, :k] = run_rows[at[hit]]
        return found, arities, rows


def _store(symbols) -> RecordStore:
    store = getattr(symbols, "_records", None)
    if store is None:
        store = symbols._records = RecordStore()
    store.absorb(symbols._text)
    return store


def _batch_key(ids: np.ndarray) -> int:
    """A 64-bit hash of a batch's sorted ids (batches with other ids differ by it)."""
    with np.errstate(over="ignore"):
        spread = _mix(np.arange(len(ids), dtype=np.uint64) * _GOLDEN + _GOLDEN)
        h = np.bitwise_xor.reduce(_mix(ids.view(np.uint64) ^ spread))
        return int(_mix(np.array([h ^ np.uint64(len(ids))], np.uint64)).view(np.int64)[0])


def _encode_batch(ids: np.ndarray, rows: np.ndarray) -> str:
    head = np.array([len(ids), rows.shape[1]], np.int64)
    raw = head.tobytes() + ids.tobytes() + np.ascontiguousarray(rows).tobytes()
    return _MARK + raw.decode("latin-1")


def _decode_batch(blob: str):
    raw = np.frombuffer(blob[len(_MARK):].encode("latin-1"), np.int64)
    n, k = int(raw[0]), int(raw[1])
    return raw[2:2 + n].copy(), raw[2 + n:2 + n + n * k].reshape(n, k).copy()


def pack(symbols, columns: list, rows: int = 0) -> np.ndarray:
    """Intern the records whose components are ``columns`` (equal-length int64 arrays);
    their ids (``rows`` of them for records of no component, ``[]``).  Raises on a hash
    collision, as symbols do."""
    n = len(columns[0]) if columns else rows
    matrix = np.stack([np.asarray(c, np.int64) for c in columns], axis=1) if columns else \
        np.zeros((n, 0), np.int64)
    ids = record_ids(matrix)
    if n == 0:
        return ids
    order, unique, starts = _sorted_distinct(ids)
    rows = matrix[order[starts]]
    store = _store(symbols)
    found, _, known = store.find(unique, matrix.shape[1])
    if (known[found] != rows[found]).any():
        at = int(np.flatnonzero(found & (known != rows).any(axis=1))[0])
        raise RuntimeError(f"record hash collision at id {int(unique[at])}")
    if not found.all():
        fresh_ids, fresh_rows = unique[~found], np.ascontiguousarray(rows[~found])
        key = _batch_key(fresh_ids)
        symbols._text.setdefault(key, _encode_batch(fresh_ids, fresh_rows))
        store.absorb(symbols._text)
    return ids


def find_components(symbols, keys: np.ndarray):
    """``(found, arity, components)`` of sorted distinct ids (:meth:`RecordStore.find`);
    an id the table does not know raises ``KeyError``."""
    found, arity, rows = _store(symbols).find(np.asarray(keys, np.int64))
    if not found.all():
        raise KeyError(f"{int(keys[~found][0])} is not a known record id")
    return found, arity, rows


def unpack(symbols, ids: np.ndarray, width: int) -> np.ndarray:
    """The first ``width`` components of each record id, as an ``(n, width)`` matrix; a
    record with fewer components (``nil``, another ADT branch) has zeros after its own."""
    ids = np.asarray(ids, np.int64)
    out = np.zeros((len(ids), width), np.int64)
    if len(ids) == 0 or width == 0:
        return out
    order, unique, starts = _sorted_distinct(ids)
    found, _, rows = _store(symbols).find(unique)
    missing = ~found & (unique != NIL)
    if missing.any():
        raise KeyError(f"{int(unique[missing][0])} is not a known record id")
    take = min(width, rows.shape[1])
    codes = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(ids))))
    out[order, :take] = rows[codes, :take]
    return out


def _sorted_distinct(ids: np.ndarray):
    """``(order, distinct, starts)``: ``ids[order]`` is sorted, ``distinct`` its distinct
    values, each first at ``starts`` of the sorted ids."""
    order = np.argsort(ids)
    ordered = ids[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    return order, ordered[starts], starts
