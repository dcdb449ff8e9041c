"""Batch: an immutable, consolidated, described set of updates.

A batch holds updates ``(row, time, diff)`` whose rows start with
``key_width`` key columns.  Invariants (asserted by :meth:`Batch._check`):

* arrays are C-contiguous int64 of matching lengths;
* updates are sorted by (row, time) and consolidated: no (row, time) pair
  twice and no zero diff;
* the description ``(lower, upper, since)`` covers the contents: every
  update's original time ``t`` had ``lower <= t`` and not ``upper <= t``;
  times have since been advanced by ``since`` (``advance_by(t, since) == t``).
  When ``since`` is the minimum antichain the times lie in ``[lower, upper)``.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.chunked import consolidate_chunks
from diffflow.arrangements.updates import Updates
from diffflow.lattice import Antichain, advance_by


class Batch:
    """A consolidated run of updates with a ``(lower, upper, since)`` description.

    >>> from diffflow.lattice import Antichain
    >>> u = Updates.from_lists([(2, 9), (1, 5), (2, 9)], [(0,), (0,), (0,)], [1, 1, 1])
    >>> b = Batch.from_updates(u, key_width=1, lower=Antichain([(0,)]), upper=Antichain([(1,)]))
    >>> b.rows.tolist(), b.diffs.tolist()
    ([[1, 5], [2, 9]], [1, 2])
    >>> b._check()
    """

    __slots__ = ("rows", "times", "diffs", "key_width", "lower", "upper", "since", "_keys",
                 "_max_time", "_bins", "_step_index", "dead", "dead_rows", "_live_copy",
                 "present")

    def __init__(self, rows, times, diffs, key_width, lower, upper, since=None):
        self.rows, self.times, self.diffs = rows, times, diffs
        self.key_width = key_width
        self.lower, self.upper = lower, upper
        self.since = since if since is not None else Antichain.minimum(times.shape[1])
        self._keys = None
        self._max_time = None
        self._bins = None        # (bin count, bins, how many are filled)
        self._step_index = None  # the moving rows by plan step: diffflow.runtime.rescale.step_index
        # rescaling: bins whose rows left this partition but are still stored here (a
        # bool array over the bins, or None); readers skip them (see live())
        self.dead = None
        self.dead_rows = 0
        self._live_copy = None   # a copy without the dead rows, under way (migrate.prepare)
        # the bins the batch may hold rows of (a bool array over the bins), or None: any.
        # Set on rows a rescaling step imported, which hold a few bins: readers skip the
        # batch for keys of other bins (Spine.gather)
        self.present = None

    _CACHES = ("_keys", "_max_time", "_bins", "_step_index", "_live_copy", "present")

    def __getstate__(self):
        """The updates, description and dead bins, without caches (bins, step indexes,
        copies under way: rebuilt on demand; ``present``: readers then search the batch for
        every key), so checkpoints and parcels do not carry them."""
        return {name: (None if name in self._CACHES else getattr(self, name))
                for name in self.__slots__}

    def __setstate__(self, state):
        if isinstance(state, tuple):  # pickled before __getstate__: (None, {slot: value})
            state = state[1] or {}
            state = {k: v for k, v in state.items() if k not in self._CACHES}
        for name in self.__slots__:
            setattr(self, name, state.get(name, 0 if name == "dead_rows" else None))

    @staticmethod
    def from_updates(updates: Updates, key_width: int, lower, upper, since=None) -> "Batch":
        """Consolidate ``updates`` into a batch with the given description."""
        rows, times, diffs = columnar.consolidate(updates.rows, updates.times, updates.diffs)
        return Batch(rows, times, diffs, key_width, lower, upper, since)

    @staticmethod
    def from_chunks(chunks, width: int, dim: int, key_width: int, lower, upper,
                    consume: bool = False) -> "Batch":
        """Consolidate a list of chunks (as if concatenated, without copying them
        together first) into a batch with the given description (``consume``: empty the
        list as soon as it is read, see :func:`.chunked.consolidate_chunks`).

        >>> u = Updates.from_lists([(2, 9), (1, 5)], [(0,), (0,)], [1, 1])
        >>> Batch.from_chunks([u, u], 2, 1, 1, None, None).diffs.tolist()
        [2, 2]
        """
        rows, times, diffs = consolidate_chunks(chunks, width, dim, consume)
        return Batch(rows, times, diffs, key_width, lower, upper)

    def __len__(self) -> int:
        return len(self.diffs)

    @property
    def keys(self) -> np.ndarray:
        """The key columns, C-contiguous (copied once, then cached: batches are immutable)."""
        if self._keys is None:
            self._keys = self.rows if self.key_width == self.rows.shape[1] else \
                np.ascontiguousarray(self.rows[:, : self.key_width])
        return self._keys

    @property
    def max_time(self) -> np.ndarray:
        """A bound of the batch's times (``(d,)``; cached): their coordinate-wise maximum,
        or for a merged batch whose inputs knew theirs, those bounds advanced as the
        times were (no pass over the rows).

        Every time of the batch is ``<=`` it: readers use it to learn that a
        whole batch lies below a time without looking at its updates.

        >>> u = Updates.from_lists([(1,), (2,)], [(0, 5), (3, 1)], [1, 1])
        >>> Batch.from_updates(u, 1, None, None).max_time.tolist()
        [3, 5]
        """
        if self._max_time is None:
            self._max_time = self.times.max(axis=0) if len(self.diffs) else \
                np.full(self.times.shape[1], np.iinfo(np.int64).min, np.int64)
        return self._max_time

    def bins(self, count: int, upto: int | None = None) -> np.ndarray:
        """The bin of each update's key (``hash % count``, int32; cached: rescaling reads it
        once per step and batches are immutable); with ``upto``, only the first ``upto``
        entries are sure to be computed (a long batch read a slice at a time).

        >>> u = Updates.from_lists([(1,), (2,)], [(0,), (0,)], [1, 1])
        >>> Batch.from_updates(u, 1, None, None).bins(2).tolist() == columnar.partition_of(
        ...     np.array([[1], [2]]), 2).tolist()
        True
        """
        filled = self._bins[2] if self._bins is not None and self._bins[0] == count else 0
        self.fill_bins(count, (len(self) if upto is None else upto) - filled)
        return self._bins[1]

    def fill_bins(self, count: int, budget: int) -> int:
        """Compute up to ``budget`` more bins (a long batch is hashed a slice at a time);
        returns how many were computed."""
        if self._bins is None or self._bins[0] != count:
            self._bins = (count, np.empty(len(self), np.int32), 0)  # bins < 2**31
        _, bins, filled = self._bins
        stop = min(len(self), filled + budget)
        if stop > filled:
            columnar.bin_of_prefix(self.rows, self.key_width, count, bins, filled, stop)
            self._bins = (count, bins, stop)
        return stop - filled

    def bins_ready(self, count: int) -> bool:
        return self._bins is not None and self._bins[0] == count and self._bins[2] == len(self)

    def live_mask(self, positions: np.ndarray | None = None):
        """Which updates (all, or those at ``positions``) are not in a dead bin; ``None``
        when the batch has no dead bins."""
        if self.dead is None:
            return None
        if positions is None:
            return ~self.dead[self.bins(len(self.dead))]
        if not len(positions):
            return np.ones(0, bool)
        # hashed up to the last position only: a merge or a copy reads a long batch a slice
        # at a time, so its bins are hashed as the slices go
        return ~self.dead[self.bins(len(self.dead), int(positions.max()) + 1)[positions]]

    def live(self) -> "Batch":
        """The batch without the updates of dead bins (itself when it has none)."""
        keep = self.live_mask()
        if keep is None:
            return self
        live = Batch(self.rows[keep], self.times[keep], self.diffs[keep], self.key_width,
                     self.lower, self.upper, self.since)
        live.present = self.present
        return live

    def mark_died(self, died) -> "Batch":
        """In a batch built from others while rescaling went on: mark dead the bins in
        ``died`` (a bool mask over bins, or None), whose rows left after they were read;
        returns the batch."""
        if died is not None and len(self):
            dead_rows = int(died[self.bins(len(died))].sum())
            if dead_rows:
                self.dead, self.dead_rows = died, dead_rows
        return self

    @property
    def width(self) -> int:
        return self.rows.shape[1]

    @property
    def dim(self) -> int:
        return self.times.shape[1]

    def updates(self) -> Updates:
        return Updates(self.rows, self.times, self.diffs)

    def extended_to(self, upper: Antichain) -> "Batch":
        """The same updates described up to a later ``upper`` (nothing happened since)."""
        extended = Batch(self.rows, self.times, self.diffs, self.key_width, self.lower, upper,
                         self.since)
        extended._keys, extended._max_time = self._keys, self._max_time
        extended._bins, extended._step_index = self._bins, self._step_index
        extended.dead, extended.dead_rows = self.dead, self.dead_rows
        extended.present = self.present
        return extended

    def advanced(self, frontier: Antichain) -> "Batch":
        """Logical compaction: advance times by ``frontier``, consolidate, drop zeros."""
        if frontier.is_empty() or len(self) == 0 or not frontier.elements.any():
            same = Batch(self.rows, self.times, self.diffs, self.key_width,
                         self.lower, self.upper, frontier)
            same._keys, same._bins, same._step_index = self._keys, self._bins, self._step_index
            same.dead, same.dead_rows, same.present = self.dead, self.dead_rows, self.present
            return same
        source = self.live()
        t = source.times
        if len(t) and _admitted(t.min(axis=0), frontier):
            # every time at or above a frontier element stays as it is (a loop's newest
            # batches, above a compaction frontier that lags behind the rounds)
            advanced = Batch(source.rows, t, source.diffs, self.key_width, self.lower,
                             self.upper, frontier)
            advanced.present, advanced._max_time = self.present, source._max_time
            return advanced
        if len(t) and np.array_equal(t.min(axis=0), t.max(axis=0)):
            # one time (a small epoch's batch, a merged tail): every row moves to the same
            # time, so the rows stay sorted and distinct -- nothing to consolidate
            times = np.empty_like(t)
            times[:] = advance_by(t[0], frontier)
            rows, diffs = source.rows, source.diffs
        else:
            times = advance_by(t, frontier)
            rows, times, diffs = columnar.consolidate(source.rows, times, source.diffs)
        advanced = Batch(rows, times, diffs, self.key_width, self.lower, self.upper, frontier)
        advanced.present = self.present
        return advanced

    def _check(self) -> None:
        """Assert every structural invariant of the batch."""
        n = len(self.diffs)
        for name in ("rows", "times", "diffs"):
            arr = getattr(self, name)
            assert arr.dtype == np.int64, f"{name} must be int64, is {arr.dtype}"
            assert arr.flags.c_contiguous, f"{name} must be C-contiguous"
            assert len(arr) == n, f"{name} has {len(arr)} entries, diffs has {n}"
        assert self.rows.ndim == 2 and self.times.ndim == 2 and self.diffs.ndim == 1
        assert 0 <= self.key_width <= self.rows.shape[1]
        assert columnar.is_consolidated(self.rows, self.times, self.diffs), \
            "batch is not sorted and consolidated"
        assert self.lower.less_equal(self.upper), "lower must be <= upper"
        if n == 0:
            return
        if not self.since.is_empty():
            assert np.array_equal(advance_by(self.times, self.since), self.times), \
                "times are not advanced by since"
        if self.since == Antichain.minimum(self.dim):
            assert np.all(self.lower.admits(self.times)), "a time is below lower"
            if not self.upper.is_empty():
                assert not np.any(self.upper.admits(self.times)), "a time is at or beyond upper"

    def __repr__(self) -> str:
        return (f"Batch({len(self)} updates, key_width={self.key_width}, "
                f"lower={self.lower!r}, upper={self.upper!r}, since={self.since!r})")


def _admitted(time: np.ndarray, frontier: Antichain) -> bool:
    """Whether some element of ``frontier`` is ``<=`` ``time`` (one time, plain Python: the
    frontiers here have a few elements of a few coordinates)."""
    t = time.tolist()
    return any(all(f <= c for f, c in zip(element, t)) for element in frontier.elements.tolist())


def merge(older: Batch, newer: Batch, frontier: Antichain) -> Batch:
    """Merge two adjacent batches into one, compacted to ``frontier``.

    ``frontier`` is the spine's compaction frontier; it is never behind either
    batch's ``since`` (compaction frontiers only advance).  The result
    describes ``[older.lower, newer.upper)``.
    """
    a = older.live() if older.since == frontier else older.advanced(frontier)
    b = newer.live() if newer.since == frontier else newer.advanced(frontier)
    rows, times, diffs = columnar.merge_consolidated(a.rows, a.times, a.diffs,
                                                     b.rows, b.times, b.diffs)
    return inherit(Batch(rows, times, diffs, a.key_width, older.lower, newer.upper, frontier),
                   older, newer)


def inherit(merged: Batch, older: Batch, newer: Batch) -> Batch:
    """What the merge of two batches keeps of their rescaling state: the step index they
    share, if they share one (the empty index of batches a rescaling plan imported,
    :mod:`diffflow.runtime.rescale.step_index`, true of their merge too), else one made of the
    parts of theirs (``StepIndex.merged``), and the union of the bins present in each
    (when both know theirs).  Returns ``merged``."""
    if older._step_index is not None and older._step_index is newer._step_index:
        merged._step_index = older._step_index
    elif older._step_index is not None or newer._step_index is not None:
        index = older._step_index if older._step_index is not None else newer._step_index
        merged._step_index = index.merged(older, newer, merged)  # (parts of the inputs')
    if older.present is not None and newer.present is not None:
        merged.present = older.present | newer.present
    if older._max_time is not None and newer._max_time is not None and len(merged):
        # the inputs' bounds, advanced as their times were: a bound for the merge without a
        # pass over its rows (a first read of a big merged batch's max took ~0.1 s)
        merged._max_time = advance_by(np.maximum(older._max_time, newer._max_time),
                                      merged.since)
    return merged


def died_since(before, now):
    """The bins dead in mask ``now`` but not in mask ``before`` (either may be None: no dead
    bins), or None when there are none.

    >>> died_since(None, np.array([True, False])).tolist(), died_since(None, None)
    ([True, False], None)
    """
    if now is None or now is before:
        return None
    return now if before is None else now & ~before
