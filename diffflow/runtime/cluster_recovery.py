"""Checkpoints and recovery of :class:`~diffflow.runtime.cluster.ClusterRuntime` (a part
of it, kept apart for size): when to checkpoint, how a checkpoint is written and taken up,
and how a lost worker is replaced -- fresh workers, the last checkpoint restored (or the
one before it, when a file of the last is damaged), the logged inputs since replayed.

>>> AUTO_EPOCHS, AUTO_ROWS
(1000, 1000000)
"""
from __future__ import annotations

import tempfile
import warnings

from diffflow.common.errors import CheckpointError, WorkerLost
from diffflow.runtime.durable import checkpoints
from diffflow.runtime.engine import merge_pointstamps

#: epochs, and input rows, of the recovery log after which a runtime without
#: ``checkpoint_every`` checkpoints by itself: a lost worker then replays at most that much,
#: and the driver keeps at most about twice that (the log before the previous checkpoint)
AUTO_EPOCHS = 1000
AUTO_ROWS = 1_000_000


def logged_rows(entries) -> int:
    """Input rows in one epoch's log entries (what :data:`AUTO_ROWS` counts)."""
    return sum(len(entry[3]) for entry in entries if entry[0] == "rows")


class Recovery:
    """The checkpoint and recovery methods of a cluster runtime (its attributes are set
    by :class:`~diffflow.runtime.cluster.ClusterRuntime`)."""

    # -- checkpoints and recovery --------------------------------------------------------------
    def _maybe_checkpoint(self) -> None:
        if self.log_open:
            return
        if self.checkpoint_every is not None:
            due = self.closed - self.checkpoint_epoch >= self.checkpoint_every
        else:
            due = self.auto_checkpoint and self._can_checkpoint() and (
                len(self.log_closed) >= AUTO_EPOCHS or self.log_rows >= AUTO_ROWS)
        if due:
            self.checkpoint()

    def _can_checkpoint(self) -> bool:
        """Whether a checkpoint can go where every worker reads it (Spark says otherwise
        on a cluster without shared storage)."""
        return True

    def checkpoint(self) -> str:
        """Write every partition's state now (after a run, nothing staged) as a committed
        checkpoint (:mod:`~diffflow.runtime.durable.checkpoints`); returns its folder."""
        if self.checkpoint_dir is None:
            self.checkpoint_dir = tempfile.mkdtemp(prefix="diffflow-checkpoint-")
            self._own_checkpoint_dir = True
        folder = checkpoints.write(
            self.checkpoint_dir, self.closed, self.parts,
            lambda into: self.transport.call_all("checkpoint", [(into, self.closed)] * self.parts),
            self.fingerprint, self.checkpoint_extra)
        self._use_checkpoint(checkpoints.read_manifest(folder))
        return folder

    def _use_checkpoint(self, manifest, resumed: bool = False) -> None:
        """Recover from ``manifest``'s checkpoint from now on; the one before it, with the
        log between them, is kept for a fallback (not when ``resumed``: no log of it)."""
        self.previous_checkpoint = None if resumed or self.checkpoint_path is None else (
            self.checkpoint_files, self.checkpoint_epoch, self.checkpoint_path,
            self.log_closed)
        self.checkpoint_path = manifest.folder
        self.checkpoint_files = manifest.partition_files()
        self.checkpoint_epoch = manifest.epoch
        self.log_closed, self.log_rows = [], 0

    def restore_checkpoint(self, manifest) -> None:
        """Start from a committed checkpoint (a resumed dataflow): every worker restores its
        partition (re-binned if it was written at another partition count), and this
        runtime continues after its epoch.  Raises CheckpointError for a damaged file."""
        self._use_checkpoint(manifest, resumed=True)
        self.transport.call_all("restore", [(self.checkpoint_files,)] * self.parts)
        self.closed = self.computed = manifest.epoch
        reports = self.transport.call_all("pointstamps", [()] * self.parts)
        self.frontiers = self.topology.frontiers(*merge_pointstamps(reports))

    def _fresh_workers(self) -> None:
        """New workers told the symbols, routing, rescaling plan and tracing (no state)."""
        self._synced_symbols = len(self.symbols._text)
        self.transport.restart(dict(self.symbols._text), self.parts)
        if not self.routing.is_default:
            self.transport.call_all("routing", [(self.routing,)] * self.parts)
        if self._plan[0] is not None:  # the plan under way: its steps' indexes
            self.transport.call_all("plan", [self._plan] * self.parts)
        if self.trace_log is not None:  # the interrupted run's events are dropped
            self.trace_log.take()
        self._start_tracing()

    def _restore_or_fall_back(self) -> None:
        """Every worker restores the last checkpoint; if a file of it is damaged, fresh
        workers restore the one before it, and the log from there is replayed too (a
        damaged file is never loaded: each is checked against its manifest as it is read)."""
        try:
            self.transport.call_all("restore", [(self.checkpoint_files,)] * self.parts)
            return
        except CheckpointError as exc:
            if self.previous_checkpoint is None:
                raise
            damaged = exc
        files, epoch, folder, log = self.previous_checkpoint
        warnings.warn(f"{damaged}; recovering from the checkpoint before it (epoch {epoch}, "
                      f"{folder})", RuntimeWarning, stacklevel=2)
        self.checkpoint_files, self.checkpoint_epoch, self.checkpoint_path = files, epoch, folder
        self.log_closed, self.previous_checkpoint = log + self.log_closed, None
        self.log_rows = sum(logged_rows(entries) for _, entries in self.log_closed)
        self._fresh_workers()  # (some may have restored part of the damaged one)
        self.transport.call_all("restore", [(files,)] * self.parts)

    def _recover(self, run: bool = True) -> None:
        """Fresh workers, the last checkpoint restored, the inputs since replayed."""
        self.recoveries += 1
        for attempt in range(3):
            try:
                self._fresh_workers()
                if self.checkpoint_path is not None:  # re-binned if written at another P
                    self._restore_or_fall_back()
                self._keys_lost = True  # (what was noted since the last take is gone)
                self._send_recording(range(self.parts))
                for node_ids, entries in self.log_closed:
                    for entry in entries:
                        self._apply_entry(entry)
                    self.transport.call_all("close_epoch", [(node_ids,)] * self.parts)
                for entry in self.log_open:
                    self._apply_entry(entry)
                if run:
                    self._run()
                return
            except WorkerLost:
                if attempt == 2:
                    raise
