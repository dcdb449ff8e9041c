"""Engine state as bytes, without pickle: :func:`dumps` and :func:`loads`.

A checkpoint holds a partition's engine state (spines of batches, numpy arrays, dicts,
antichains...).  Reading it back must never run code the bytes choose, so the format is
data only:

* a 32-byte header: the magic ``\\x89DFSTATE``, the format version, a CRC-32 of everything
  after the header, and the lengths of the two parts below;
* a *skeleton*: JSON naming every value's kind (``["L", items]`` a list, ``["A", dtype,
  shape, ...]`` an array, ``["O", class, state, slots]`` an object of a class on
  :data:`ALLOWED`, ``["R", n]`` the ``n``-th container seen again...), so shared
  references and cycles stay what they were;
* the arrays' and bytes' raw buffers, each at a 64-byte aligned offset, dtype and byte
  order as they were.

Objects are rebuilt only from the classes on :data:`ALLOWED` -- diffflow's own state
classes, looked up by name in that list, never imported by a name from the data -- with
``cls.__new__`` and their ``__dict__`` / ``__slots__``, or their own ``__setstate__``.
Anything else (functions, user objects, arrays of Python objects) is refused by
:func:`dumps`, naming where it sits: user code is not saved but re-supplied by the dataflow
being resumed.  Bytes that are truncated, corrupted, crafted or from another format version
give a :class:`~diffflow.common.errors.StateFormatError`, never another exception.

>>> import numpy as np
>>> state = {"rows": np.arange(6).reshape(3, 2), "seen": {1, 2}}
>>> state["again"] = state["rows"]
>>> back = loads(dumps(state))
>>> back["rows"].tolist(), back["seen"], back["again"] is back["rows"]
([[0, 1], [2, 3], [4, 5]], {1, 2}, True)
"""
from __future__ import annotations

import json
import struct
import zlib

from diffflow.common.errors import StateFormatError
from diffflow.runtime.durable.state_decoder import _Decoder
from diffflow.runtime.durable.state_encoder import _Encoder, _render
from diffflow.runtime.durable.state_types import _HEADER, ALIGN, ALLOWED, MAGIC, VERSION

__all__ = ["ALLOWED", "MAGIC", "VERSION", "dumps", "loads"]


def dumps(value) -> bytes:
    """``value`` as bytes :func:`loads` reads back (shared references and cycles kept).

    Refuses (:class:`~diffflow.common.errors.StateFormatError`, naming the path inside
    ``value``) anything that is not data: functions, classes, objects of classes off
    :data:`ALLOWED`, arrays of Python objects.

    >>> loads(dumps([1, 2.5, "x", b"y", None, (True, 2 ** 70)]))
    [1, 2.5, 'x', b'y', None, (True, 1180591620717411303424)]
    >>> dumps({"ops": [len]})
    Traceback (most recent call last):
    diffflow.common.errors.StateFormatError: ops[0]: a function cannot be saved; user code is re-supplied by the dataflow being resumed
    """
    encoder = _Encoder()
    try:
        skeleton = json.dumps(encoder.encode(value), separators=(",", ":")).encode("ascii")
    except RecursionError:
        raise StateFormatError(f"{_render(encoder.path[:8])}...: the value nests deeper than "
                               f"Python's recursion limit lets it be saved") from None
    gap = b"\0" * (-(_HEADER.size + len(skeleton)) % ALIGN)
    lengths = struct.pack("<QQ", len(skeleton), encoder.size)
    crc = zlib.crc32(lengths)
    for part in (skeleton, gap, *encoder.parts):
        crc = zlib.crc32(part, crc)
    header = _HEADER.pack(MAGIC, VERSION, crc, len(skeleton), encoder.size)
    return b"".join((header, skeleton, gap, *encoder.parts))


def loads(data):
    """The value :func:`dumps` wrote into ``data`` (bytes, or any buffer of bytes).

    Arrays come back as fresh, aligned copies (writeable unless they were read-only when
    saved), so they neither keep ``data`` alive nor share memory with each other.

    >>> loads(b"not a state")
    Traceback (most recent call last):
    diffflow.common.errors.StateFormatError: not diffflow engine state: it starts with b'not a st', not b'\\x89DFSTATE'
    """
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    try:
        skeleton, area = _open(view)
        return _Decoder(area).decode(skeleton)
    except StateFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever crafted data trips on is a bad format
        raise StateFormatError(f"engine state is corrupt and cannot be read: "
                               f"{type(exc).__name__}: {exc}") from exc


def _open(view: memoryview):
    """The header checked: ``(skeleton, data area)``."""
    size = len(view)
    head = bytes(view[:_HEADER.size])
    if head[:len(MAGIC)] != MAGIC[:len(head)]:
        raise StateFormatError(f"not diffflow engine state: it starts with "
                               f"{head[:len(MAGIC)]!r}, not {MAGIC!r}")
    if size < _HEADER.size:
        raise StateFormatError(f"engine state is truncated: {size} bytes, shorter than its "
                               f"{_HEADER.size}-byte header")
    _, version, crc, skeleton_size, data_size = _HEADER.unpack(head)
    if version != VERSION:
        raise StateFormatError(
            f"engine state written by format version {version}; this diffflow reads "
            f"version {VERSION}: resume with the diffflow that wrote it, or start afresh")
    start = _HEADER.size + skeleton_size
    data_start = start + (-start % ALIGN)
    if size != data_start + data_size:
        raise StateFormatError(
            f"engine state is {'truncated' if size < data_start + data_size else 'too long'}:"
            f" {size} bytes where its header says {data_start + data_size}")
    if zlib.crc32(view[_HEADER.size:], zlib.crc32(head[16:])) != crc:
        raise StateFormatError("engine state is corrupt: its checksum does not match "
                               "(a damaged file or a torn write)")
    skeleton = json.loads(bytes(view[_HEADER.size:start]))
    return skeleton, view[data_start:]
