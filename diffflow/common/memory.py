"""Give a finished dataflow's memory back to the operating system.

Two things keep it from going back by itself:

* a dataflow and its collections refer to each other, so one the user
  dropped is freed only by Python's cyclic collector, which big numpy arrays
  never prompt;
* glibc's allocator serves arrays of up to its (self-raising) mmap threshold,
  tens of MB, from the heap, and keeps freed heap pages for reuse.  Three
  R-MAT s17 components runs in one process ended with 810 MiB resident after
  the first flow was closed, 174 MiB after ``malloc_trim``.

:func:`release` does both; the dataflow calls it when a flow that moved many
rows closes, or before a new flow starts while dropped ones may hold memory.
While a flow runs, :func:`trim_if_busy` trims once its traces have taken in many
rows (engines call it after each sweep and run), so a big epoch's freed sort
buffers and merged batches go back before its next sweeps allocate more.
"""
from __future__ import annotations

import gc

_trim = []  # [malloc_trim or None], looked up once


def _malloc_trim():
    if not _trim:
        # imported here: ctypes.util imports subprocess, ~10 ms of every `import diffflow`
        import ctypes

        fn = None
        try:
            libc = ctypes.CDLL("libc.so.6")  # already loaded: no search
        except OSError:
            import ctypes.util

            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c"))
            except OSError:
                libc = None
        if libc is not None:
            fn = getattr(libc, "malloc_trim", None)  # glibc only
        _trim.append(fn)
    return _trim[0]


# rows taken in by traces since the last trim (Spine.insert counts them)
_stored_since_trim = [0]
# traces that took in this many rows have freed many more (sort buffers, merged inputs)
TRIM_AFTER_ROWS = 200_000


def stored(rows: int) -> None:
    """Count ``rows`` taken in by a trace, for :func:`trim_if_busy`."""
    _stored_since_trim[0] += rows


def trim_if_busy(rows: int = TRIM_AFTER_ROWS) -> None:
    """:func:`trim` once traces have taken in ``rows`` rows since the last trim; engines
    call it after every sweep, and with a quarter of that when a run ends.  Trimming
    between the sweeps of a big run lowers its peak too (a transitive closure of 0.5M
    facts: 620 -> 570 bytes per fact, at no measurable cost), while small updates never
    pay for it.

    >>> trim_if_busy()  # harmless at any time
    """
    if _stored_since_trim[0] >= rows:
        _stored_since_trim[0] = 0
        trim()


def trim() -> None:
    """Return free heap pages to the OS (glibc's ``malloc_trim``; elsewhere nothing).

    A run that moved millions of rows frees most of what it allocated, but glibc keeps
    the freed pages for reuse: a transitive closure of 0.5M facts ended with 480 bytes
    resident per fact, 244 after a trim (which took ~4 ms).

    >>> trim()  # harmless at any time
    """
    fn = _malloc_trim()
    if fn is not None:
        fn(0)


def release() -> None:
    """Collect unreachable objects and return free heap pages to the OS (glibc).

    >>> release()  # harmless at any time; costs a garbage collection
    """
    gc.collect()
    trim()
