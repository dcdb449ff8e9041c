"""Where checkpoints live: a local folder, or a URI every host of a cluster reaches.

A checkpoint is one file per partition, written by the partition's worker and read back
by whichever worker takes the partition after a failure -- on a cluster, maybe on
another host.  So on a cluster the folder must be shared storage, named by a URI:
``hdfs://namenode/path``, ``s3://bucket/path``, ``gs://...``, or ``file:///mnt/nfs/path``
for a file system every host mounts at the same path.  URIs go through
``pyarrow.fs`` (a dependency already: Arrow carries the data between workers); plain
paths through ``os``.  :func:`checkpoint_dir_problem` refuses a plain path with a master
whose executors may sit on other hosts.

>>> import tempfile
>>> folder = join(tempfile.mkdtemp(), "epoch-3")
>>> make_folder(folder)
>>> write_atomically(join(folder, "part-0.pkl"), b"state")
5
>>> read_bytes(join(folder, "part-0.pkl"))
b'state'
>>> remove_folder(folder)
"""
from __future__ import annotations

import hashlib
import os
import shutil


def is_uri(path: str) -> bool:
    """Whether ``path`` names storage by a URI (``scheme://...``) rather than a local path.

    >>> is_uri("hdfs://nn/ckpt"), is_uri("/tmp/ckpt"), is_uri("C:/ckpt")
    (True, False, False)
    """
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.isalnum() and len(scheme) > 1


def checkpoint_dir_problem(path: str | None, master: str) -> str | None:
    """Why ``path`` cannot hold checkpoints for a Spark ``master``, or ``None``: workers on
    other hosts write and read it, so a cluster needs a URI of shared storage.

    >>> checkpoint_dir_problem("/tmp/ckpt", "local[2]") is None
    True
    >>> checkpoint_dir_problem("hdfs://nn/ckpt", "yarn") is None
    True
    >>> print(checkpoint_dir_problem("/tmp/ckpt", "spark://head:7077"))  # doctest: +ELLIPSIS
    checkpoint_dir='/tmp/ckpt' is a path on this machine, but the executors of spark://...
    """
    if master.startswith("local"):
        return None
    if path is None:
        return (f"checkpoints on a cluster ({master}) need storage every executor and the "
                f"driver reach: pass checkpoint_dir='hdfs://...', 's3://...' or "
                f"'file:///shared/mount/...' (a file system every host mounts at that path)")
    if is_uri(path):
        return None
    return (f"checkpoint_dir={path!r} is a path on this machine, but the executors of "
            f"{master} may run on other hosts, which cannot write or read it: name shared "
            f"storage by a URI ('hdfs://...', 's3://...', or 'file://{os.path.abspath(path)}' "
            f"if every host mounts it at that path)")


def _fs(path: str):
    from pyarrow import fs

    return fs.FileSystem.from_uri(path)


def join(folder: str, *names: str) -> str:
    """``folder/name...``, for a path or a URI."""
    if is_uri(folder):
        return "/".join([folder.rstrip("/"), *names])
    return os.path.join(folder, *names)


def make_folder(folder: str) -> None:
    """Create ``folder`` (and its parents) if it is missing."""
    if is_uri(folder):
        filesystem, inner = _fs(folder)
        filesystem.create_dir(inner, recursive=True)
    else:
        os.makedirs(folder, exist_ok=True)


def write_atomically(path: str, data: bytes) -> int:
    """Write ``data`` to ``path`` so a reader never sees half of it (a temporary file
    renamed; object stores, which have no rename, write an object whole anyway); returns
    its size."""
    if not is_uri(path):
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return len(data)
    filesystem, inner = _fs(path)
    with filesystem.open_output_stream(inner) as out:
        out.write(data)
    return len(data)


def write_durably(path: str, data: bytes) -> dict:
    """Write ``data`` to ``path`` and flush it to stable storage before returning (``fsync``
    on a local file system; an object store has it once the write returns); returns what a
    manifest records of it: ``{"size": ..., "sha256": ...}``.  The file may be torn if the
    process dies meanwhile: what commits it is a manifest written after it.

    >>> import tempfile
    >>> write_durably(join(tempfile.mkdtemp(), "x"), b"abc")["size"]
    3
    """
    if not is_uri(path):
        with open(path, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    else:
        filesystem, inner = _fs(path)
        with filesystem.open_output_stream(inner) as out:
            out.write(data)
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def commit_file(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` all at once, durably: a reader sees the whole file or none
    of it, even after a crash (local: a temporary file flushed, renamed, and the folder
    flushed; an object store writes an object whole).  This is how a manifest commits."""
    if is_uri(path):
        write_durably(path, data)
        return
    tmp = path + ".tmp"
    write_durably(tmp, data)
    os.replace(tmp, path)
    sync_folder(os.path.dirname(path) or ".")


def sync_folder(folder: str) -> None:
    """Flush a local folder's entries (files created or renamed in it) to stable storage."""
    if is_uri(folder) or not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def list_folder(folder: str) -> list:
    """Names in ``folder`` (files and folders), sorted; ``[]`` if it does not exist.

    >>> import tempfile
    >>> d = tempfile.mkdtemp(); _ = write_durably(join(d, "b"), b""); make_folder(join(d, "a"))
    >>> list_folder(d), list_folder(join(d, "missing"))
    (['a', 'b'], [])
    """
    if not is_uri(folder):
        try:
            return sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return []
    from pyarrow import fs

    filesystem, inner = _fs(folder)
    try:
        infos = filesystem.get_file_info(fs.FileSelector(inner, allow_not_found=True))
    except (FileNotFoundError, OSError):
        return []
    return sorted(info.base_name for info in infos)


def remove_file(path: str) -> None:
    """Delete a file; nothing if it is gone already."""
    if not is_uri(path):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        return
    _delete_quietly(path, "delete_file")


def read_bytes(path: str) -> bytes:
    """The contents of the file at ``path``."""
    if not is_uri(path):
        with open(path, "rb") as fh:
            return fh.read()
    filesystem, inner = _fs(path)
    with filesystem.open_input_stream(inner) as stream:
        return stream.read()


def remove_folder(folder: str) -> None:
    """Delete ``folder`` and what it holds; nothing if it is gone already."""
    if not is_uri(folder):
        shutil.rmtree(folder, ignore_errors=True)
        return
    _delete_quietly(folder, "delete_dir")


def _delete_quietly(uri: str, how: str) -> None:
    """``filesystem.<how>`` of a URI's path through pyarrow; nothing if it is gone."""
    filesystem, inner = _fs(uri)
    try:
        getattr(filesystem, how)(inner)
    except (FileNotFoundError, OSError):
        pass
