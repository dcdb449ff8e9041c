"""The write-ahead log: every closed epoch's input changes, on stable storage before the
epoch is computed.

A log lives in ``ROOT/wal``.  On a local disk it is a sequence of *segments*, each a file
``segment-E-STAMP.log`` started at epoch ``E`` (a new one on every start, so a torn tail
left by a crash is never appended to) holding one *record* per epoch, written and flushed
with ``fdatasync`` before the epoch runs: one small write and one flush per epoch.  A
segment reserves its space on disk ahead (:data:`RESERVE` bytes at a time; zeros after the
last record end it), so an append never grows the file: a full disk fails the reservation,
before anything is written, and a flush does not wait for the file system to record a new
size (~0.03 ms for a small record here, against ~0.07 ms when every append grows the
file).  After a failed write or flush the next record starts a new segment (what the
failed file holds is no longer trusted; a record in both is read once).  On an object store
(which cannot append) each record is an object ``epoch-E.rec`` of its own.  A record is
framed as::

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

import errno
import os
import struct
import time
import zlib

from diffflow.runtime import storage

#: bytes a segment reserves on disk at a time (see the module docstring)
RESERVE = 4 << 20

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
        self._local = not storage.is_uri(root)
        if self._local:
            self._open_segment(start)

    def _open_segment(self, start: int) -> None:
        # (named by its first epoch, then a unique stamp: a process resumed at the same
        # epoch as a crashed one starts a segment of its own)
        self.path = storage.join(self.folder, f"segment-{start:012d}-{time.time_ns()}.log")
        self._file = open(self.path, "xb", buffering=0)
        self._end = 0        # where the next record goes
        self._allocated = 0  # bytes reserved on disk (None: the file system cannot)
        storage.sync_folder(self.folder)

    def append(self, epoch: int, payload: bytes) -> None:
        """Log ``epoch``'s record, on stable storage when this returns.  Raises OSError
        (a full disk, a failed flush) with the record not logged: appending it again later
        is safe."""
        record = _frame(epoch, payload)
        if not self._local:
            storage.write_durably(storage.join(self.folder, f"epoch-{epoch:012d}.rec"), record)
            return
        if self._file is None:  # (the segment before failed)
            self._open_segment(epoch)
        fd, at = self._file.fileno(), self._end
        try:
            if self._allocated is not None and at + len(record) > self._allocated:
                self._reserve(fd, at + len(record))
            os.pwrite(fd, record, at)
            os.fdatasync(fd)
        except BaseException:
            self._abandon(fd, at, len(record))
            raise
        self._end = at + len(record)

    def _reserve(self, fd: int, needed: int) -> None:
        """Reserve the segment's space on disk up to ``needed`` bytes and more (raises
        OSError on a full disk); where the file system cannot, appends grow the file."""
        size = max(needed, self._allocated + RESERVE)
        try:
            os.posix_fallocate(fd, self._allocated, size - self._allocated)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
            self._allocated = None
            return
        os.fsync(fd)  # (the file's new size and extents: once per RESERVE bytes)
        self._allocated = size

    def _abandon(self, fd: int, at: int, length: int) -> None:
        """After a failed append: zero what was written of the record (so a reader of this
        segment stops before it) and start the next record in a new segment."""
        try:
            os.pwrite(fd, bytes(length), at)
            os.fdatasync(fd)
        except OSError:
            pass
        self.close()

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
