"""Timing helpers the bench scripts share (bench/ is on the path of each script it runs)."""
from __future__ import annotations

import time


def best(fn, repeat: int) -> float:
    """The fastest of ``repeat`` calls of ``fn()``, in seconds.

    >>> best(lambda: None, 3) >= 0
    True
    """
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)
