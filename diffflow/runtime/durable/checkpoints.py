"""Checkpoints that are atomic and verified: data first, the manifest last.

A checkpoint of a dataflow after ``E`` closed epochs is a folder ``checkpoint-E`` under
the checkpoint root, holding one state file per partition (written by whoever holds the
partition: this process, or a worker on another host) and ``MANIFEST.json``, written last,
after every data file is flushed to stable storage.  The manifest names the epoch, the
partitions, the routing table, the graph's fingerprint, the format version, and every
file's size and SHA-256; writing it is the commit (a rename on a local disk, a single
object put on an object store, so no rename is needed there).  A folder without a valid
manifest is an interrupted checkpoint and is never read.

Restoring reads the newest checkpoint whose manifest is valid and whose files match it; a
torn or corrupted one is reported and the previous one is used (the last two are kept, and
the write-ahead log keeps the epochs since the older).  See docs/DURABILITY.md.

>>> import tempfile
>>> root = tempfile.mkdtemp()
>>> folder = begin(root, 3)
>>> files = {"part-0.state": storage.write_durably(storage.join(folder, "part-0.state"), b"s")}
>>> commit(folder, epoch=3, partitions=1, files=files, fingerprint="f")
>>> found, problems = newest_valid(root)
>>> found.epoch, found.files["part-0.state"]["size"], problems
(3, 1, [])
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from diffflow.common import failpoints
from diffflow.common.errors import CheckpointError
from diffflow.runtime import storage

FORMAT = "diffflow checkpoint"
VERSION = 1
MANIFEST = "MANIFEST.json"
KEEP = 2  # checkpoints kept: the newest, and one to fall back to


@dataclass
class Manifest:
    """What a committed checkpoint holds (the parsed ``MANIFEST.json``)."""
    folder: str
    epoch: int
    partitions: int
    files: dict                       # name -> {"size": int, "sha256": hex}
    fingerprint: str = ""
    routing: str | None = None        # a file holding the routing table (None: hash % P)
    extra: dict = field(default_factory=dict)

    def path(self, name: str) -> str:
        return storage.join(self.folder, name)

    def partition_files(self) -> list:
        """``(path, manifest entry)`` of each partition's state file, by partition."""
        names = sorted((n for n in self.files if n.startswith("part-")),
                       key=lambda n: int(n[5:].split(".")[0]))
        return [(self.path(n), self.files[n]) for n in names]


def folder_name(epoch: int) -> str:
    """``checkpoint-000000000012``: names sort in epoch order."""
    return f"checkpoint-{epoch:012d}"


def begin(root: str, epoch: int) -> str:
    """A fresh folder for the checkpoint after ``epoch`` epochs (an interrupted one of the
    same epoch is cleared first)."""
    folder = storage.join(root, folder_name(epoch))
    storage.remove_folder(folder)
    storage.make_folder(folder)
    return folder


def write(root: str, epoch: int, partitions: int, write_parts, fingerprint: str = "",
          extra=None) -> str:
    """A whole checkpoint after ``epoch`` epochs under ``root``: a fresh folder, the
    partitions' files (``write_parts(folder)`` writes them durably and gives their manifest
    entries by name), the ``extra()`` files, then the manifest; older ones pruned.  Returns
    its folder."""
    folder = begin(root, epoch)
    files = dict(write_parts(folder))
    files.update(write_extra(folder, extra))
    commit(folder, epoch, partitions, files, fingerprint=fingerprint)
    prune(root)
    return folder


def write_extra(folder: str, source) -> dict:
    """Write the files ``source()`` gives (``{name: bytes}``; ``source`` may be None) into a
    checkpoint being written; their manifest entries."""
    if source is None:
        return {}
    return {name: storage.write_durably(storage.join(folder, name), data)
            for name, data in source().items()}


def commit(folder: str, epoch: int, partitions: int, files: dict, fingerprint: str = "",
           routing: str | None = None, **extra) -> None:
    """Write the manifest: from now on the checkpoint in ``folder`` is valid.  Call it only
    after every file in ``files`` is written durably."""
    storage.sync_folder(folder)  # (the data files' entries first)
    failpoints.reached("checkpoint")
    manifest = {"format": FORMAT, "version": VERSION, "epoch": int(epoch),
                "partitions": int(partitions), "fingerprint": fingerprint,
                "routing": routing, "files": files, "extra": extra}
    storage.commit_file(storage.join(folder, MANIFEST),
                        json.dumps(manifest, indent=1, sort_keys=True).encode())


def read_manifest(folder: str) -> Manifest:
    """The manifest of a checkpoint folder, checked for form and version (not its files:
    :func:`verify` and :func:`read_file` check those)."""
    try:
        raw = storage.read_bytes(storage.join(folder, MANIFEST))
    except (FileNotFoundError, OSError):
        raise CheckpointError(f"{folder}: no {MANIFEST}, so the checkpoint was interrupted "
                              f"before it was complete") from None
    try:
        data = json.loads(raw)
        if data.get("format") != FORMAT:
            raise ValueError("not a diffflow checkpoint manifest")
        if data["version"] != VERSION:
            raise CheckpointError(
                f"{folder} was written in checkpoint format version {data['version']}, and "
                f"this diffflow reads version {VERSION}: resume with the diffflow version "
                f"that wrote it, or start afresh without resume")
        files = {str(k): {"size": int(v["size"]), "sha256": str(v["sha256"])}
                 for k, v in data["files"].items()}
        return Manifest(folder, int(data["epoch"]), int(data["partitions"]), files,
                        str(data.get("fingerprint", "")), data.get("routing"),
                        dict(data.get("extra") or {}))
    except CheckpointError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CheckpointError(f"{folder}/{MANIFEST} is damaged ({exc})") from None


def verify(manifest: Manifest) -> None:
    """Check every file the manifest names is there with its size (cheap: no read)."""
    present = set(storage.list_folder(manifest.folder))
    for name, info in manifest.files.items():
        if name not in present:
            raise CheckpointError(f"{manifest.path(name)} is missing")
        if not storage.is_uri(manifest.folder):
            import os

            size = os.path.getsize(manifest.path(name))
            if size != info["size"]:
                raise CheckpointError(f"{manifest.path(name)} holds {size} bytes, but its "
                                      f"manifest says {info['size']}: the file is damaged")


def read_file(path: str, info: dict) -> bytes:
    """A checkpoint file's bytes, checked against its manifest entry (size and SHA-256)."""
    try:
        data = storage.read_bytes(path)
    except (FileNotFoundError, OSError) as exc:
        raise CheckpointError(f"{path} cannot be read ({exc})") from None
    if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
        raise CheckpointError(f"{path} does not match its manifest (size or SHA-256): the "
                              f"file is damaged")
    return data


def checkpoints(root: str) -> list:
    """The checkpoint folders under ``root``, newest first (valid or not)."""
    names = [n for n in storage.list_folder(root) if n.startswith("checkpoint-")
             and n[len("checkpoint-"):].isdigit()]
    return [storage.join(root, n) for n in sorted(names, reverse=True)]


def newest_valid(root: str, skip: int | None = None) -> tuple:
    """``(manifest or None, problems)``: the newest checkpoint whose manifest and files
    check out, and a sentence for each newer one passed over (torn or damaged).  A
    manifest of another format version is an error, not a fallback.  ``skip``: pass over
    checkpoints at or after that epoch (one found damaged while restoring)."""
    problems = []
    for folder in checkpoints(root):
        try:
            manifest = read_manifest(folder)
            if skip is not None and manifest.epoch >= skip:
                continue
            verify(manifest)
            return manifest, problems
        except CheckpointError as exc:
            if "format version" in str(exc):
                raise
            problems.append(str(exc))
    return None, problems


def prune(root: str, keep: int = KEEP) -> None:
    """Delete all but the newest ``keep`` valid checkpoints, and interrupted ones."""
    kept = 0
    for folder in checkpoints(root):
        try:
            verify(read_manifest(folder))
            valid = True
        except CheckpointError:
            valid = False
        if valid and kept < keep:
            kept += 1
            continue
        storage.remove_folder(folder)
