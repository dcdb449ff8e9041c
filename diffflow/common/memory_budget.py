"""A process-wide budget for the engine's arrays: refuse a big allocation before it happens.

numpy raises ``MemoryError`` only when the operating system refuses an allocation; with
overcommit (Linux's default) it rarely does, and the kernel's OOM killer ends the process
instead, later, when the pages are touched.  With a limit set (:func:`set_limit`, which
``Dataflow(memory_limit=...)`` and ``diffflow run --memory-limit`` reach), the functions
that allocate the engine's big arrays call :func:`reserve` first, with the bytes they are
about to allocate: when the bytes the traces hold (:func:`held`), what the caller already
holds for the same step (``pending``) and the new bytes together exceed the limit,
:class:`~diffflow.common.errors.MemoryLimitError` is raised and nothing is allocated.  The
partition engine turns it into an error naming the operator and its line (or rule).

What counts: every trace's batches (each :class:`~diffflow.arrangements.spine.Spine`
registers itself in :data:`SPINES`; outputs keep theirs in spines too) and the buffers of
their merges under way, plus the allocation asked for.  Summing the traces costs about
0.75 us a batch (1.5 ms for 500 traces of 4 batches), more than a 1 MiB allocation
(~70 us), so a check sums them only when it must: it adds what was reserved since the
last sum to that sum (an upper bound while the traces grow only by reserved allocations)
and sums again only when that bound would pass the limit, or every
:data:`RECOUNT_EVERY` checks (traces also grow by small unchecked batches).  Python objects, queued chunks between operators
and numpy's temporaries are not counted: the limit is a guard against one runaway step
(a cross join, a huge range), not an exact accounting of the process.

Requests under :data:`CHECK_FROM` bytes are not checked (a check would cost more than
they do), and with no limit (the default) :func:`reserve` returns at once.

>>> set_limit(parse_size("1MiB"))
>>> reserve(4 << 20, "a test buffer")
Traceback (most recent call last):
...
diffflow.common.errors.MemoryLimitError: a test buffer needs 4.0 MiB, which with ... would pass the memory limit of 1.0 MiB
>>> set_limit(None); reserve(4 << 20, "a test buffer")  # no limit: nothing is checked
"""
from __future__ import annotations

import re
import weakref

from diffflow.common.errors import MemoryLimitError

#: requests smaller than this are not checked (bytes)
CHECK_FROM = 1 << 20

#: every live trace of the process (spines add themselves; weak: dropped ones leave)
SPINES: "weakref.WeakSet" = weakref.WeakSet()

#: checks after which the traces are summed again even when the bound fits
RECOUNT_EVERY = 64

_limit: list = [None]  # bytes, or None: no limit
# [held at the last sum (None: sum at the next check), bytes reserved since, checks since]
_known: list = [None, 0, 0]

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 10 ** 3, "kib": 1 << 10, "m": 1 << 20,
          "mb": 10 ** 6, "mib": 1 << 20, "g": 1 << 30, "gb": 10 ** 9, "gib": 1 << 30,
          "t": 1 << 40, "tb": 10 ** 12, "tib": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]*)\s*$")


def parse_size(size) -> int | None:
    """Bytes from an int or a string with a unit: ``"512MiB"``, ``"2GB"``, ``"1.5GiB"``
    (``KiB``/``MiB``/``GiB``/``TiB`` and the bare ``K``/``M``/``G``/``T`` are powers of
    1024, ``KB``/``MB``/``GB``/``TB`` powers of 1000; no unit: bytes).  None stays None.

    >>> parse_size("512MiB"), parse_size("2GB"), parse_size("1.5GiB"), parse_size(4096)
    (536870912, 2000000000, 1610612736, 4096)
    >>> parse_size("lots")
    Traceback (most recent call last):
    ...
    ValueError: memory limit 'lots' is not a size: give bytes (an int) or a number with a unit, e.g. '512MiB', '2GB', '1.5GiB'
    """
    if size is None:
        return None
    if isinstance(size, bool):
        raise ValueError(f"memory limit {size!r} is not a size: give bytes (an int) or a "
                         f"string such as '512MiB'")
    if isinstance(size, int):
        nbytes = size
    else:
        found = _SIZE.match(size) if isinstance(size, str) else None
        unit = found and _UNITS.get(found.group(2).lower())
        if not unit:
            raise ValueError(f"memory limit {size!r} is not a size: give bytes (an int) or a "
                             f"number with a unit, e.g. '512MiB', '2GB', '1.5GiB'")
        nbytes = int(float(found.group(1)) * unit)
    if nbytes <= 0:
        raise ValueError(f"memory limit {size!r} must be more than 0 bytes")
    return nbytes


def format_size(nbytes: int) -> str:
    """``nbytes`` for people, in binary units.

    >>> format_size(512), format_size(3 << 20), format_size(int(26.7 * (1 << 30)))
    ('512 B', '3.0 MiB', '26.7 GiB')
    """
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def set_limit(nbytes: int | None) -> None:
    """Set the process's limit in bytes (None: no limit).

    >>> set_limit(1 << 30); limit()
    1073741824
    >>> set_limit(None); limit() is None
    True
    """
    _limit[0] = nbytes
    _known[0] = None


def limit() -> int | None:
    """The process's limit in bytes, or None (see :func:`set_limit`)."""
    return _limit[0]


class limited:
    """``with limited(nbytes):`` the limit is ``nbytes`` inside the block, as it was after
    (the local runtime runs a dataflow's epochs under the dataflow's limit).  None leaves
    the limit as it is.

    >>> with limited(1 << 20):
    ...     limit()
    1048576
    >>> limit() is None
    True
    """

    def __init__(self, nbytes: int | None):
        self.nbytes, self.before = nbytes, None

    def __enter__(self):
        self.before = _limit[0]
        if self.nbytes is not None:
            set_limit(self.nbytes)
        return self

    def __exit__(self, *exc):
        set_limit(self.before)


def held() -> int:
    """Bytes the process's traces hold: their batches and their merges' buffers.

    >>> held() >= 0
    True
    """
    total = 0
    for spine in list(SPINES):
        total += spine.held_bytes()
    return total


def reserve(nbytes: int, what: str, *details, pending: int = 0) -> None:
    """Check that ``nbytes`` more (for ``what``, e.g. ``"merging {:,} updates"``, formatted
    with ``details`` only for an error: callers pay no formatting) fit under the limit, with
    :func:`held` and ``pending`` (bytes the caller already holds for the same step); raise
    :class:`~diffflow.common.errors.MemoryLimitError` if not.  Call it before allocating; it
    does nothing without a limit or for fewer than :data:`CHECK_FROM` bytes.

    >>> reserve(10 ** 12, "{:,} bytes: nothing happens, no limit is set", 10 ** 12)
    """
    cap = _limit[0]
    if cap is None or nbytes < CHECK_FROM:
        return
    known = _known
    if known[0] is not None and known[2] < RECOUNT_EVERY \
            and known[0] + known[1] + pending + nbytes <= cap:
        known[1] += nbytes
        known[2] += 1
        return
    kept = held()
    known[:] = [kept, nbytes, 0]
    if kept + pending + nbytes > cap:
        what = what.format(*details) if details else what
        raise MemoryLimitError(
            f"{what} needs {format_size(nbytes)}, which with the {format_size(kept + pending)} "
            f"already held would pass the memory limit of {format_size(cap)}",
            nbytes, kept + pending, cap, what)
