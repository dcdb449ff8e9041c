"""Spine: one partition's trace of a collection, as an LSM of immutable batches.

Design
------
A spine is a list of batches, oldest first, whose descriptions tile the
history: ``batches[i].upper == batches[i + 1].lower``.  New batches are
appended at the end; afterwards, while the second-to-last batch is no more
than twice the size of the last, the two are merged; so is any batch under
``SMALL_BATCH`` updates (a loop seals a tiny batch per round, and lookups
should not search one per round).  Sizes therefore decrease geometrically
from old to new, a spine of ``n`` updates has ``O(log n)`` batches, and every
update takes part in ``O(log n)`` merges, each linear, plus merges of at most
``SMALL_BATCH`` updates: inserting ``n`` updates costs amortised ``O(n log n)``.

Fuelled merges
--------------
A merge of ``EAGER_MERGE`` rows or more is not done at once: it is started
(:class:`~diffflow.arrangements.merging.FuelledMerge`) and every later insert
pays ``FUEL`` rows of its work per inserted row, so an insert's cost follows
its own size, not the trace's (Differential Dataflow's fuel).  Its two inputs
stay in :attr:`batches` meanwhile (readers read both) and take part in no
other merge; a finished merge replaces them.  A merge must keep pace with the
tail: the tail reaches a merge's size after a sixth of its rows have been
inserted (the geometric rule), by which time ``FUEL = 8`` has done it.  When a
run ends the engine calls :meth:`Spine.idle`, which gives ``IDLE_FUEL`` rows of
work per row inserted during the run: a big epoch's merges end with it instead
of holding their inputs and half-written results until later inserts pay.

Logical compaction
------------------
Readers tell the spine (through :meth:`set_compaction`) the frontier beyond
which they will ever look.  Updates at times the frontier cannot tell apart
may then be advanced (``advance_by``) and consolidated.  The spine applies its
frontier whenever it merges, so compaction costs nothing extra and happens at
amortised rates; :meth:`compact` forces it everywhere (checkpoints, tests).

Lookups
-------
:meth:`gather` finds the updates of many keys at once: one vectorised binary
search per batch (``O(m log n)`` for ``m`` keys), never per-key Python.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.batch import Batch, merge
from diffflow.arrangements.merging import FuelledMerge
from diffflow.arrangements.updates import Updates, concat
from diffflow.common import memory, memory_budget
from diffflow.lattice import Antichain

# Batches below this many updates are merged with the next one regardless of the
# geometric rule (see Spine.insert).
SMALL_BATCH = 256
# merges of fewer rows happen at once (a few milliseconds); bigger ones are fuelled
EAGER_MERGE = 1 << 17
# rows of merge work each inserted row pays to every merge under way
FUEL = 8
# rows of merge work per row inserted since the last run, given when a run ends (the
# dataflow is idle then): merges under way finish sooner and give their inputs' memory back
IDLE_FUEL = 8
# a spine with more batches than this finishes its merges at once (a safety valve: the
# fuel keeps merges ahead of the tail, so it should never open)
MAX_BATCHES = 64


def is_import(batch: Batch) -> bool:
    """Rows imported by rescaling (diffflow.runtime.rescale.migrate): described ``[minimum, minimum)``.

    >>> m = Antichain.minimum(1)
    >>> is_import(Batch.from_updates(Updates.from_lists([(1,)], [(0,)], [1]), 1, m, m))
    True
    """
    return batch.lower == batch.upper == Antichain.minimum(batch.dim)


class Spine:
    """A geometric LSM of batches for one partition of an arrangement.

    >>> s = Spine(width=2, key_width=1, dim=1)
    >>> batch = s.insert_updates(Updates.from_lists([(1, 10), (2, 20)], [(0,), (0,)], [1, 1]),
    ...                          upper=Antichain([(1,)]))
    >>> q, rows, times, diffs = s.gather(np.array([[2], [3]]))
    >>> q.tolist(), rows.tolist()
    ([0], [[2, 20]])
    """

    def __init__(self, width: int, key_width: int, dim: int):
        self.width, self.key_width, self.dim = width, key_width, dim
        self.batches: list[Batch] = []
        self.since = Antichain.minimum(dim)
        self.upper = Antichain.minimum(dim)
        self.merges: list[FuelledMerge] = []  # under way, each of two adjacent batches
        self.inserted = 0  # rows inserted since the last idle()
        memory_budget.SPINES.add(self)  # (what a memory limit counts as held)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["merges"] = []  # a checkpoint keeps the inputs; merges start again
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("merges", [])
        self.__dict__.setdefault("inserted", 0)
        memory_budget.SPINES.add(self)

    def __len__(self) -> int:
        return sum(len(b) for b in self.batches)

    def held_bytes(self) -> int:
        """Bytes of the batches' arrays and of the buffers of merges under way (what a
        memory limit counts, :mod:`diffflow.common.memory_budget`).

        >>> s = Spine(width=2, key_width=1, dim=1)
        >>> _ = s.insert_updates(Updates.from_lists([(1, 10)], [(0,)], [1]), Antichain([(1,)]))
        >>> s.held_bytes()  # one row: 2 row columns, 1 time, 1 diff
        32
        """
        total = 0
        for b in self.batches:
            total += b.rows.nbytes + b.times.nbytes + b.diffs.nbytes
        for m in self.merges:
            total += m.buffer_bytes()
        return total

    def insert(self, batch: Batch) -> None:
        """Append a batch whose ``lower`` is the spine's ``upper``; merge geometrically
        (big merges a slice at a time, paid for by this and later inserts)."""
        if batch.lower != self.upper:
            raise ValueError(f"batch lower {batch.lower!r} does not continue spine upper {self.upper!r}")
        self.upper = batch.upper
        self.inserted += len(batch)
        memory.stored(len(batch))
        if len(batch) == 0 and self.batches:
            self._extend_last(batch.upper)
            return
        if batch.lower == batch.upper and self.batches and not is_import(batch):
            # a late batch (updates a sweep delivered after the frontier had passed their
            # times: cluster runtimes, in loops) joins the newest batch at once, whose lower
            # covers them, as a small tail would
            for m in [m for m in self.merges if m.holds(self.batches[-1])]:
                at = self._position(m)
                if at is None:
                    self.merges.remove(m)
                else:
                    m.work(1 << 62)
                    self._finish(m, at)
            batch = merge(self.batches.pop(), batch, self.since)
        self.batches.append(batch)
        if self.merges:
            self.work(FUEL * len(batch))
        self._cascade(len(self.batches) - 1)
        if len(self.batches) > MAX_BATCHES and self.merges:
            self.finish_merges()

    def _wants_merge(self, older: Batch, newer: Batch) -> bool:
        # geometric merging; and a tiny batch per loop round would leave ~log2(rounds)
        # batches for every lookup to search, so small tails merge at once (both
        # batches are small then, so compacting them too costs little)
        if is_import(older) and not is_import(newer):
            # rescaling's imports sit in front, out of size order: they join the spine's
            # own batches once comparable in size, not each one the biggest batch
            return len(newer) <= 2 * len(older) and len(older) <= 2 * len(newer)
        return len(older) <= 2 * len(newer) or len(older) < SMALL_BATCH

    def _cascade(self, i: int) -> None:
        """Merge the batches at ``i - 1`` and ``i``, then the result with its older
        neighbour, and so on while the geometric rule asks: small merges at once, a big one
        fuelled (which ends the cascade, as does a batch under a merge)."""
        batches = self.batches
        while 1 <= i < len(batches):
            older, newer = batches[i - 1], batches[i]
            if self.in_merge(older) or self.in_merge(newer) or \
                    not self._wants_merge(older, newer):
                return
            if len(older) + len(newer) >= EAGER_MERGE:
                self.merges.append(FuelledMerge(older, newer, self.since))
                return
            batches[i - 1:i + 1] = [merge(older, newer, self.since)]
            i -= 1

    def settle(self) -> None:
        """Start every merge the geometric rule asks for, anywhere in the spine (after
        batches were put in other places than the end: rescaling's imports).

        >>> s = Spine(width=1, key_width=1, dim=1)
        >>> _ = s.insert_chunks([Updates.from_lists([(1,)], [(0,)], [1])], Antichain([(1,)]))
        >>> nowhere = Antichain.minimum(1)  # an import's description
        >>> imported = Batch.from_updates(Updates.from_lists([(2,)], [(0,)], [1]), 1,
        ...                               nowhere, nowhere)
        >>> s.batches.insert(0, imported); s.settle(); [b.rows.tolist() for b in s.batches]
        [[[1], [2]]]
        >>> s._check()
        """
        for i in range(len(self.batches) - 1, 0, -1):
            self._cascade(min(i, len(self.batches) - 1))

    def absorb_imports(self) -> int:
        """Start merging rescaling's imports into the spine's own batches, whatever their
        sizes (fuelled when big), and return how many imports are left (0 while the spine
        has no own batch for them to join).

        The geometric rule leaves an import out of size order for good (an import of 2.4M
        rows in front of a 5M-row batch never becomes "comparable"), and every read searches
        it; once no plan runs no import follows, so each is worth merging.  The imports
        merge with each other first, the smallest adjacent pair first (Huffman's order:
        every row is rewritten about log(imports) times), and the last one with the oldest
        own batch: the spine's biggest is rewritten once.

        >>> s = Spine(width=1, key_width=1, dim=1)
        >>> for x in (1, 2, 3):
        ...     _ = s.insert_chunks([Updates.from_lists([(x,)], [(0,)], [1])], Antichain([(x,)]))
        >>> nowhere = Antichain.minimum(1)
        >>> for x in (9, 8):
        ...     s.batches.insert(0, Batch.from_updates(Updates.from_lists([(x,)], [(0,)], [1]),
        ...                                            1, nowhere, nowhere))
        >>> s.absorb_imports(), [b.rows.ravel().tolist() for b in s.batches]
        (1, [[8, 9], [1, 2, 3]])
        >>> s.absorb_imports(), [b.rows.ravel().tolist() for b in s.batches]
        (0, [[1, 2, 3, 8, 9]])
        """
        batches = self.batches
        imports = self.imports_in_front()
        if not imports or imports == len(batches):  # none, or nothing to join yet
            return 0
        free = [i for i in range(max(imports - 1, 1))  # (import pairs, or the last + own)
                if not (self.in_merge(batches[i]) or self.in_merge(batches[i + 1]))]
        if free:
            i = min(free, key=lambda j: len(batches[j]) + len(batches[j + 1]))
            older, newer = batches[i], batches[i + 1]
            if len(older) + len(newer) >= EAGER_MERGE:
                self.merges.append(FuelledMerge(older, newer, self.since))
            else:
                batches[i:i + 2] = [merge(older, newer, self.since)]
        return self.imports_in_front()

    def imports_in_front(self) -> int:
        """How many of rescaling's imports lead the spine (imports are always in front).

        >>> Spine(width=1, key_width=1, dim=1).imports_in_front()
        0
        """
        n = 0
        while n < len(self.batches) and is_import(self.batches[n]):
            n += 1
        return n

    def work(self, fuel: int, background: bool = False) -> None:
        """Give every merge under way ``fuel`` rows of work; put finished ones in place of
        their inputs, and merge on from there as the geometric rule asks.  Merges into
        rescaling's imports get a quarter of it, unless it is ``background`` work.

        >>> import diffflow.arrangements.spine as spine_module
        >>> eager, spine_module.EAGER_MERGE = spine_module.EAGER_MERGE, 2
        >>> s = Spine(width=1, key_width=1, dim=1)
        >>> for t in range(2):
        ...     _ = s.insert_chunks([Updates.from_lists([(t,)], [(t,)], [1])], Antichain([(t + 1,)]))
        >>> len(s.merges), len(s.batches)   # a merge under way; readers read both inputs
        (1, 2)
        >>> s.in_merge(s.batches[0]), s.work(10), len(s.merges), len(s.batches)
        (True, None, 0, 1)
        >>> s.finish_merges()  # (nothing under way any more: does nothing)
        >>> spine_module.EAGER_MERGE = eager
        """
        for m in list(self.merges):
            at = self._position(m)
            if at is None:  # an input was replaced (rescaling): the rule starts it again
                self.merges.remove(m)
                continue
            # a merge into rescaling's imports (in front, out of the tail's way) is
            # background work: a quarter of an insert's fuel, so a migration's epochs stay
            # cheap, and all of the background's
            if m.work(-(-fuel // 4) if is_import(m.older) and not background else fuel):
                self._finish(m, at)
                self._cascade(at + 1)  # the result as the older of a pair, then the newer
                self._cascade(min(at, len(self.batches) - 1))

    def idle(self) -> None:
        """Work on the merges under way while the dataflow is idle (a run has ended):
        :data:`IDLE_FUEL` rows per row inserted since the last call, so the work follows
        what the run changed, and a big epoch's merges end with it rather than holding
        their inputs and half-written results until later inserts pay for them.

        >>> s = Spine(width=1, key_width=1, dim=1)
        >>> _ = s.insert_chunks([Updates.from_lists([(1,)], [(0,)], [1])], Antichain([(1,)]))
        >>> s.idle(); s.inserted
        0
        """
        fuel, self.inserted = IDLE_FUEL * self.inserted, 0
        for _ in range(3):  # (a merge that ends may start the next one up the spine)
            if not (self.merges and fuel):
                return
            self.work(fuel, background=True)

    def finish_merges(self) -> None:
        """Finish every merge under way now (see :meth:`work` for an example)."""
        while self.merges:
            self.work(1 << 62)

    def in_merge(self, batch: Batch) -> bool:
        """Whether ``batch`` is an input of a merge under way (see :meth:`work`)."""
        return any(m.holds(batch) for m in self.merges)

    def _position(self, m: FuelledMerge):
        """Where ``m``'s inputs are in :attr:`batches` (adjacent), or None if they are not."""
        for i in range(len(self.batches) - 1):
            if self.batches[i] is m.older:
                return i if self.batches[i + 1] is m.newer else None
        return None

    def _finish(self, m: FuelledMerge, at: int) -> None:
        self.merges.remove(m)
        self.batches[at:at + 2] = [m.result(self.batches[at].lower, self.batches[at + 1].upper)]

    def _extend_last(self, upper: Antichain) -> None:
        """Describe the newest batch up to ``upper`` (a merge reading it reads the same rows)."""
        last = self.batches[-1]
        self.batches[-1] = last.extended_to(upper)
        for m in self.merges:
            if m.newer is last:
                m.newer = self.batches[-1]

    def insert_updates(self, updates: Updates, upper: Antichain) -> Batch:
        """Consolidate ``updates`` into a batch ``[self.upper, upper)`` and insert it."""
        batch = Batch.from_updates(updates, self.key_width, self.upper, upper)
        self.insert(batch)
        return batch

    def insert_chunks(self, chunks, upper: Antichain, consume: bool = False) -> Batch:
        """:meth:`insert_updates` of a list of chunks (consolidated without concatenating;
        ``consume``: the list is emptied once read, so the chunks can be freed early).

        >>> s = Spine(width=1, key_width=1, dim=1)
        >>> u = Updates.from_lists([(4,), (2,)], [(0,), (0,)], [1, 1])
        >>> s.insert_chunks([u, u.negated(), u], upper=Antichain([(1,)])).rows.tolist()
        [[2], [4]]
        """
        batch = Batch.from_chunks(chunks, self.width, self.dim, self.key_width, self.upper, upper,
                                  consume)
        self.insert(batch)
        return batch

    def extend_to(self, upper: Antichain) -> None:
        """Nothing happened before ``upper``: move the spine's upper on (what inserting an
        empty batch does, without building one).

        >>> s = Spine(width=1, key_width=1, dim=1)
        >>> _ = s.insert_chunks([Updates.from_lists([(4,)], [(0,)], [1])], Antichain([(1,)]))
        >>> s.extend_to(Antichain([(5,)])); s.upper == Antichain([(5,)]), len(s)
        (True, 1)
        """
        if not self.batches:
            self.insert_chunks([], upper)
            return
        self._extend_last(upper)
        self.upper = upper

    def set_compaction(self, frontier: Antichain) -> None:
        """Allow times to be advanced to ``frontier`` (frontiers only move forward)."""
        self.since = frontier

    def compact(self) -> None:
        """Apply the compaction frontier to every batch now, and merge them into one."""
        self.merges = []  # everything merges now
        if not self.batches:
            return
        merged = self.batches[0].live()
        if merged.since != self.since:
            merged = merged.advanced(self.since)
        for batch in self.batches[1:]:
            merged = merge(merged, batch, self.since)
        self.batches = [merged]

    def _asked(self, query_keys: np.ndarray, width: int | None):
        """``(width, queries)`` checked, then per non-empty batch ``(batch, queries,
        picked)``: the queries to search it for, ``picked`` their indices into
        ``query_keys`` (None: all of them).  Bins a batch does not hold (``present``) or
        that moved away (``dead``) are not asked for."""
        width = self.key_width if width is None else width
        query_keys = np.ascontiguousarray(query_keys, dtype=np.int64)
        if query_keys.ndim != 2 or query_keys.shape[1] != width or not \
                self.key_width <= width <= self.width:
            raise ValueError(f"gather: query keys of shape {query_keys.shape} do not match "
                             f"key width {width}")
        return width, query_keys, self._batches_asked(query_keys)

    def _batches_asked(self, query_keys):
        query_bins = None  # (a found row's key is its query's: one hash per query, at most)
        for batch in self.batches if len(query_keys) else ():  # (no query: search nothing)
            if not len(batch):
                continue
            masks = [m for m in (batch.present, batch.dead) if m is not None]
            if not masks:
                yield batch, query_keys, None
                continue
            if query_bins is None:  # (masks: one entry per bin)
                query_bins = np.empty(len(query_keys), np.int32)
                columnar.bin_of_prefix(query_keys, self.key_width, len(masks[0]), query_bins)
            asked = np.ones(len(query_keys), bool) if batch.present is None else \
                batch.present[query_bins]
            if batch.dead is not None:
                asked &= ~batch.dead[query_bins]
            picked = np.flatnonzero(asked)
            if len(picked):
                yield batch, query_keys[picked], picked

    def gather(self, query_keys: np.ndarray, width: int | None = None):
        """All updates whose key equals one of ``query_keys`` (an ``(m, key_width)`` array).

        Returns ``(query_index, rows, times, diffs)``; ``query_index[i]`` is the
        query row that update ``i`` matched.  With ``width``, the queries are
        sorted row prefixes of that many columns (``key_width <= width <=
        self.width``): e.g. whole rows, to read the multiplicities of a few
        ``(key, value)`` pairs without reading their keys' other values.
        """
        width, query_keys, asked = self._asked(query_keys, width)
        parts = []
        for batch, queries, picked in asked:
            # (batches hold valid arrays: no checks per call)
            found = columnar.gather_prefix_unchecked(batch.rows, batch.times, batch.diffs,
                                                     width, queries)
            if picked is not None:
                found = (picked[found[0]],) + tuple(found[1:])
            if len(found[0]):
                parts.append(found)
        if not parts:
            return (np.zeros(0, np.int64), np.zeros((0, self.width), np.int64),
                    np.zeros((0, self.dim), np.int64), np.zeros(0, np.int64))
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate(x) for x in zip(*parts))

    def multiplicities(self, query_rows: np.ndarray, width: int | None = None) -> np.ndarray:
        """Per query, the sum of the diffs :meth:`gather` would return for it (over every
        batch and time), without copying the updates: a row's multiplicity once all its
        history counts.  ``width`` as for :meth:`gather` (whole rows, usually).

        >>> from diffflow.lattice import Antichain
        >>> s = Spine(2, 1, 1)
        >>> _ = s.insert_updates(Updates.from_lists([(1, 5), (1, 5), (2, 7)], [(0,), (0,), (0,)],
        ...                                         [1, 2, -1]), Antichain([(1,)]))
        >>> s.multiplicities(np.array([[1, 5], [2, 7], [3, 0]]), width=2).tolist()
        [3, -1, 0]
        """
        width, query_keys, asked = self._asked(query_keys=query_rows, width=width)
        out = np.zeros(len(query_keys), np.int64)
        for batch, queries, picked in asked:
            if picked is None:
                columnar.add_prefix_sums_unchecked(batch.rows, batch.diffs, width, queries, out)
            else:
                part = np.zeros(len(picked), np.int64)
                columnar.add_prefix_sums_unchecked(batch.rows, batch.diffs, width, queries,
                                                   part)
                out[picked] += part
        return out

    def to_updates(self) -> Updates:
        """Every update in the spine, consolidated."""
        chunks = [b.live().updates() for b in self.batches]
        return concat(chunks, self.width, self.dim).consolidated()

    def _check(self) -> None:
        """Assert the spine's invariants and those of all its batches."""
        lower = None
        for batch in self.batches:
            batch._check()
            assert batch.key_width == self.key_width and batch.width == self.width
            if lower is not None:
                assert batch.lower == lower, "batch descriptions must tile the history"
            lower = batch.upper
        if self.batches:
            assert self.batches[-1].upper == self.upper
        inputs = [id(b) for m in self.merges for b in (m.older, m.newer)]
        assert len(inputs) == len(set(inputs)), "a batch is an input of two merges"

    def __repr__(self) -> str:
        sizes = [len(b) for b in self.batches]
        return f"Spine(width={self.width}, key_width={self.key_width}, batches={sizes})"
