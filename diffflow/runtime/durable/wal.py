"""The write-ahead log: every closed epoch's input changes, on stable storage before the
epoch is computed.

A log lives in ``ROOT/wal``.  On a local disk it is a sequence of *segments*, each a file
``segment-E-STAMP.log`` started at epoch ``E`` (a new one on every start, so a torn tail
left by a crash is never appended to) holding one *record* per epoch, appended and flushed with
``fdatasync``: one small write and one flush per epoch.  On an object store (which cannot
append) each record is an object ``epoch-E.rec`` of its own.  A record is framed as::

    b"DFWL" | epoch (u64) | length (u64) | CRC-32 of the payload (u32) | payload

and its payload is the safe state format (:mod:`.state_format`).  Reading stops at the
first incomplete or damaged record of a segment (a crash mid-append), so a torn tail is
dropped, never read.  See docs/DURABILITY.md.

>>> import tempfile
>>> log = WriteAheadLog(tempfile.mkdtemp(), start=0)
>>> log.append(0, b"first"); log.append(1, b"second"); log.close()
>>> WriteAheadLog.read(log.root, after=1)
[(1, b'second')]
"""
from __future__ import annotations

import os
import struct
import time
import zlib

from diffflow.runtime import storage

_HEAD = struct.Struct("<4sQQI")
_MAGIC = b"DFWL"


def _frame(epoch: int, payload: bytes) -> bytes:
    return _HEAD.pack(_MAGIC, epoch, len(payload), zlib.crc32(payload)) + payload


def _records(data: bytes):
    """``(epoch, payload)`` of each whole record in ``data``, up to the first damaged one."""
    at = 0
    while at + _HEAD.size <= len(data):
        magic, epoch, length, crc = _HEAD.unpack_from(data, at)
        end = at + _HEAD.size + length
        if magic != _MAGIC or end > len(data):
            return
        payload = data[at + _HEAD.size:end]
        if zlib.crc32(payload) != crc:
            return
        yield epoch, payload
        at = end


class WriteAheadLog:
    """Appends records to the log under ``root`` from epoch ``start`` on."""

    def __init__(self, root: str, start: int):
        self.root = root
        self.folder = storage.join(root, "wal")
        storage.make_folder(self.folder)
        self._file = self.path = None
        if not storage.is_uri(root):
            # (named by its first epoch, then a unique stamp: a process resumed at the same
            # epoch as a crashed one starts a segment of its own)
            path = storage.join(self.folder, f"segment-{start:012d}-{time.time_ns()}.log")
            self.path = path
            self._file = open(path, "ab", buffering=0)
            storage.sync_folder(self.folder)

    def append(self, epoch: int, payload: bytes) -> None:
        """Log ``epoch``'s record, on stable storage when this returns."""
        record = _frame(epoch, payload)
        if self._file is None:
            storage.write_durably(storage.join(self.folder, f"epoch-{epoch:012d}.rec"), record)
            return
        at = self._file.tell()
        try:
            self._file.write(record)
            os.fdatasync(self._file.fileno())
        except BaseException:
            # (a full disk: cut the partial record off, so a later append is read after it)
            try:
                self._file.truncate(at)
            except OSError:
                pass
            raise

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @staticmethod
    def read(root: str, after: int):
        """``(epoch, payload)`` of every logged epoch ``>= after``, in epoch order (a torn
        record and anything after it in its segment are dropped)."""
        found: dict = {}
        for _path, records in _files(root):
            for epoch, payload in records:
                if epoch >= after:
                    found.setdefault(epoch, payload)
        return sorted(found.items())

    @staticmethod
    def prune(root: str, before: int, keep: str | None = None) -> None:
        """Delete the files that hold only epochs before ``before`` (a kept checkpoint
        covers them), except the one being appended to (``keep``)."""
        for path, records in _files(root, skip=keep):
            if all(epoch < before for epoch, _ in records):
                storage.remove_file(path)


def _files(root: str, skip: str | None = None):
    """``(path, [(epoch, payload), ...])`` of each file of the log under ``root`` (but
    ``skip``, not read at all)."""
    folder = storage.join(root, "wal")
    for name in storage.list_folder(folder):
        if name.endswith(".log") or name.endswith(".rec"):
            path = storage.join(folder, name)
            if path != skip:
                yield path, list(_records(storage.read_bytes(path)))
