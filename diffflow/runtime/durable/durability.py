"""A durable dataflow: every closed epoch logged before it is computed, checkpoints every
``k`` epochs, and resuming where a crashed process stopped.

:class:`Durability` is what ``Dataflow(checkpoint_dir=..., durable=True)`` keeps beside its
runtime (any runtime).  Under the checkpoint root:

* ``DATAFLOW.json``: the fingerprint of the dataflow that writes here (written once, first);
* ``wal/``: the write-ahead log (:mod:`.wal`), one record per closed epoch: its input
  changes and the symbols they use, on stable storage before the epoch is computed;
* ``checkpoint-E/``: committed checkpoints (:mod:`.checkpoints`), the last two.

Resuming (``resume=True``) restores the newest valid checkpoint -- passing over a torn or
damaged one to the one before, and saying so -- then replays the logged epochs after it,
one by one, as :meth:`~diffflow.Dataflow.advance` computed them.  The dataflow must be the
same one (its fingerprint is checked).  See docs/DURABILITY.md for what survives what.

>>> import tempfile, diffflow as dd
>>> root = tempfile.mkdtemp()
>>> def build():
...     flow = dd.Dataflow(checkpoint_dir=root, durable=True, resume=True)
...     a = flow.input("a", ["x"]); return flow, a, a.distinct().output()
>>> flow, a, out = build(); a.insert([1, 2]); flow.advance(); a.insert([3]); flow.advance()
>>> del flow  # (a crash: nothing closed or flushed)
>>> flow, a, out = build(); flow.resume(), sorted(out.snapshot())
(2, [(1,), (2,), (3,)])
"""
from __future__ import annotations

import itertools
import json
import warnings

from diffflow.runtime import storage
from diffflow.runtime.durable import checkpoints, state_format
from diffflow.runtime.durable.checkpoints import CheckpointError
from diffflow.runtime.durable.fingerprint import graph_fingerprint
from diffflow.runtime.durable.wal import WriteAheadLog

IDENTITY = "DATAFLOW.json"
EXTRA = "owner.state"  # a checkpoint's file of what the dataflow's owner keeps (see extra)
#: checkpoints of a durable dataflow when ``checkpoint_every`` is not given: a resume
#: replays at most this many epochs
DEFAULT_EVERY = 100


class DurabilityError(CheckpointError):
    """An epoch could not be made durable (its log record could not be written)."""


class Durability:
    """The durable side of one dataflow (see the module docstring)."""

    def __init__(self, root: str, graph, symbols, checkpoint_every: int | None = None):
        self.root, self.symbols = root, symbols
        self.fingerprint = graph_fingerprint(graph)
        self.every = checkpoint_every or DEFAULT_EVERY
        self.log = None
        self.logged_symbols = 0
        self.checkpointed = 0  # epoch of the newest checkpoint
        self.notes: list = []  # what a resume passed over, for people
        # what the dataflow's owner keeps beside it (a Program: its facts), saved with each
        # checkpoint; after a resume, as the checkpoint had it, and the epochs replayed since
        self.extra_source = None  # () -> dict
        self.extra: dict = {}
        self.replayed: list = []

    # -- starting ----------------------------------------------------------------------------
    def start(self, runtime, resume: bool):
        """Begin logging; with ``resume``, first restore and return the logged epochs to
        replay, ``[(entries, symbols), ...]`` (entries: ``(node id, rows, diffs)``)."""
        storage.make_folder(self.root)
        identity = self._identity()
        if identity is not None and self._holds_nothing():
            identity = None  # (started, but no epoch was ever logged: a fresh start)
        if identity is None:
            storage.commit_file(storage.join(self.root, IDENTITY), json.dumps(
                {"format": checkpoints.FORMAT, "version": checkpoints.VERSION,
                 "fingerprint": self.fingerprint}).encode())
        elif not resume:
            raise CheckpointError(
                f"{self.root} already holds the state of a durable dataflow: pass "
                f"resume=True to continue it, or give an empty checkpoint_dir to start afresh")
        elif identity.get("fingerprint") != self.fingerprint:
            raise CheckpointError(
                f"{self.root} holds the state of another dataflow (its operators, inputs or "
                f"parameters differ from this one's), so it cannot be resumed here: build "
                f"the same dataflow as the run that wrote it, or use another checkpoint_dir")
        replay = self._restore(runtime) if identity is not None else []
        # (the first record carries every symbol known: some were interned by inserts
        # before the dataflow started, and a checkpoint may not hold them)
        self.logged_symbols = 0
        self.log = WriteAheadLog(self.root, start=self.checkpointed + len(replay))
        return replay

    def _holds_nothing(self) -> bool:
        return not checkpoints.checkpoints(self.root) and \
            not WriteAheadLog.read(self.root, after=0)

    def _identity(self) -> dict | None:
        try:
            raw = storage.read_bytes(storage.join(self.root, IDENTITY))
        except (FileNotFoundError, OSError):
            return None
        try:
            data = json.loads(raw)
            if data.get("version") != checkpoints.VERSION:
                raise CheckpointError(
                    f"{self.root} was written in checkpoint format version "
                    f"{data.get('version')}, and this diffflow reads version "
                    f"{checkpoints.VERSION}: resume with the diffflow version that wrote it")
            return data
        except (ValueError, AttributeError) as exc:
            if isinstance(exc, CheckpointError):
                raise
            raise CheckpointError(f"{self.root}/{IDENTITY} is damaged ({exc})") from None

    def _restore(self, runtime) -> list:
        skip = None
        while True:
            manifest, passed = checkpoints.newest_valid(self.root, skip)
            self.notes += passed
            if manifest is None:
                break
            try:
                runtime.restore_checkpoint(manifest)
                break
            except CheckpointError as exc:
                self.notes.append(str(exc))
                skip = manifest.epoch
        if manifest is not None and manifest.fingerprint != self.fingerprint:
            raise CheckpointError(f"{manifest.folder} was written by another dataflow")
        if manifest is not None and EXTRA in manifest.files:
            try:
                self.extra = state_format.loads(checkpoints.read_file(
                    manifest.path(EXTRA), manifest.files[EXTRA]))
            except state_format.StateFormatError as exc:
                raise CheckpointError(f"{manifest.path(EXTRA)}: {exc}") from None
        self.checkpointed = 0 if manifest is None else manifest.epoch
        for note in self.notes:
            warnings.warn(f"resuming: passed over a checkpoint: {note}", stacklevel=4)
        replay = []
        for epoch, payload in WriteAheadLog.read(self.root, after=self.checkpointed):
            if epoch != self.checkpointed + len(replay):
                break  # (a gap: nothing after it can be replayed in order)
            try:
                record = state_format.loads(payload)
            except state_format.StateFormatError as exc:
                raise CheckpointError(f"the write-ahead log's record of epoch {epoch} in "
                                      f"{self.root} cannot be read ({exc})") from None
            replay.append((record["entries"], record["symbols"]))
        self.replayed = replay
        return replay

    # -- every epoch -------------------------------------------------------------------------
    def log_epoch(self, epoch: int, entries: list) -> None:
        """Log closed ``epoch``'s input changes durably (before it is computed)."""
        text = self.symbols._text
        fresh = dict(itertools.islice(text.items(), self.logged_symbols, None))
        payload = state_format.dumps({"entries": entries, "symbols": fresh})
        try:
            self.log.append(epoch, payload)
        except OSError as exc:
            raise DurabilityError(
                f"epoch {epoch} could not be logged under {self.root} ({exc.strerror or exc}), "
                f"so nothing of it was applied: its rows are still staged, and advance() "
                f"logs them again once the storage takes writes (free space, or fix access)"
            ) from exc
        self.logged_symbols = len(text)

    def after_run(self, runtime, epochs: int) -> None:
        """Checkpoint when ``every`` epochs were computed since the last checkpoint."""
        if epochs - self.checkpointed < self.every:
            return
        self.checkpoint(runtime, epochs)

    def checkpoint(self, runtime, epochs: int) -> None:
        runtime.checkpoint_dir, runtime.fingerprint = self.root, self.fingerprint
        runtime.checkpoint_extra = self._extra_files
        try:
            runtime.checkpoint()
        except OSError as exc:  # (the log still holds every epoch: nothing is lost)
            warnings.warn(f"the checkpoint after epoch {epochs - 1} could not be written "
                          f"under {self.root} ({exc.strerror or exc}); the write-ahead log "
                          f"still holds every epoch since the last one, so nothing is lost, "
                          f"and the next checkpoint tries again", stacklevel=4)
            self.checkpointed = epochs  # (try again after another `every` epochs)
            return
        self.checkpointed = epochs
        # a new segment from here on, so that the log's files each hold a bounded stretch
        # of epochs and those a kept checkpoint covers can go
        self.log.close()
        self.log = WriteAheadLog(self.root, start=epochs)
        kept = [checkpoints.read_manifest(f).epoch for f in checkpoints.checkpoints(self.root)]
        if kept:
            WriteAheadLog.prune(self.root, min(kept), keep=self.log.path)

    def _extra_files(self) -> dict:
        extra = {} if self.extra_source is None else self.extra_source()
        return {EXTRA: state_format.dumps(extra)} if extra else {}

    def close(self) -> None:
        if self.log is not None:
            self.log.close()
