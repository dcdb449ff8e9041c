"""Records: tuples of int64 values interned as one int64 id, on every partition worker.

A record ``[a, b]`` (and an algebraic data type's value, a record that starts
with its branch number) is stored in columns as one id: a 64-bit hash of its
components, so any worker packs a record without asking anyone -- the way
symbols are content hashes (:mod:`diffflow.schema`).  The components are kept
in the dataflow's :class:`~diffflow.schema.SymbolTable` under the id, as a
short text no user string can be mistaken for, so every runtime that ships new
symbols between workers (cluster, processes, Spark) ships new records with
them, and hash collisions are detected the same way.  Id 0 is ``nil``.

Both directions work on whole columns: :func:`pack` hashes with numpy and
interns only the distinct rows; :func:`unpack` reads each distinct id once.

>>> from diffflow.schema import SymbolTable
>>> table = SymbolTable()
>>> ids = pack(table, [np.array([1, 2, 1]), np.array([5, 6, 5])])
>>> bool(ids[0] == ids[2]), unpack(table, ids, 2).tolist()
(True, [[1, 5], [2, 6], [1, 5]])
>>> unpack(table, np.array([0]), 2).tolist()  # nil: no components
[[0, 0]]
"""
from __future__ import annotations

import numpy as np

NIL = 0
_MARK = "\x00\x01record:"  # (a symbol's text starting so is a record's components)
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
            h = _mix(h ^ (matrix[:, j].view(np.uint64) + _GOLDEN))
    ids = h.view(np.int64)
    return np.where(ids == NIL, 1, ids)


def pack(symbols, columns: list) -> np.ndarray:
    """Intern the records whose components are ``columns`` (equal-length int64 arrays);
    their ids.  Raises on a hash collision, as symbols do."""
    n = len(columns[0]) if columns else 0
    matrix = np.stack([np.asarray(c, np.int64) for c in columns], axis=1) if columns else \
        np.zeros((n, 0), np.int64)
    ids = record_ids(matrix)
    if n == 0:
        return ids
    unique, first = np.unique(ids, return_index=True)
    text = symbols._text
    rows = np.ascontiguousarray(matrix[first])
    width = rows.shape[1] * 8
    raw = rows.tobytes()
    for i, rid in enumerate(unique.tolist()):
        blob = _MARK + raw[i * width:(i + 1) * width].decode("latin-1")
        known = text.setdefault(rid, blob)
        if known != blob:
            raise RuntimeError(f"record hash collision at id {rid}")
    return ids


def components(symbols, rid: int) -> tuple:
    """The components of one record id (``()`` for ``nil``).

    >>> from diffflow.schema import SymbolTable
    >>> table = SymbolTable()
    >>> components(table, int(pack(table, [np.array([7]), np.array([-1])])[0]))
    (7, -1)
    """
    if rid == NIL:
        return ()
    blob = symbols._text.get(rid)
    if blob is None or not blob.startswith(_MARK):
        raise KeyError(f"{rid} is not a known record id")
    return tuple(np.frombuffer(blob[len(_MARK):].encode("latin-1"), np.int64).tolist())


def unpack(symbols, ids: np.ndarray, width: int) -> np.ndarray:
    """The first ``width`` components of each record id, as an ``(n, width)`` matrix; a
    record with fewer components (``nil``, another ADT branch) has zeros after its own."""
    ids = np.asarray(ids, np.int64)
    out = np.zeros((len(ids), width), np.int64)
    if len(ids) == 0 or width == 0:
        return out
    unique, inverse = np.unique(ids, return_inverse=True)
    rows = np.zeros((len(unique), width), np.int64)
    text, skip = symbols._text, len(_MARK)
    for i, rid in enumerate(unique.tolist()):
        if rid == NIL:
            continue
        values = np.frombuffer(text[rid][skip:].encode("latin-1"), np.int64)[:width]
        rows[i, :len(values)] = values
    return rows[inverse.ravel()]
