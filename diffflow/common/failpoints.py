"""Named points where a fault test kills this process, as ``kill -9`` would.

``DIFFFLOW_FAILPOINT=NAME:N`` (read once, at import) kills the process with ``SIGKILL`` the
``N``-th time it reaches the point ``NAME`` (``N`` from 1).  The points sit where a crash
is hardest on durable state: after an epoch is logged and before it is computed
(``logged``), part-way through a run (``run``), with a checkpoint's data written but not
its manifest (``checkpoint``), between a rescale's steps (``rescale``), and with an output
file written but not renamed into place (``output``).  Unset, reaching a point costs one
comparison.  Only tests set it (tests/runtime/test_durable_faults.py).

>>> reached("logged")  # (not armed: nothing happens)
"""
from __future__ import annotations

import os
import signal

POINTS = ("logged", "run", "checkpoint", "rescale", "output")


def _armed():
    setting = os.environ.get("DIFFFLOW_FAILPOINT", "")
    name, _, count = setting.partition(":")
    if not name:
        return None
    if name not in POINTS or not count.isdigit() or int(count) < 1:
        raise ValueError(f"DIFFFLOW_FAILPOINT={setting!r}: expected NAME:N with NAME one of "
                         f"{', '.join(POINTS)} and N >= 1")
    return [name, int(count)]


_ARMED = _armed()


def reached(name: str) -> None:
    """Kill this process here if the armed point is ``name`` and its count is up."""
    if _ARMED is None or _ARMED[0] != name:
        return
    _ARMED[1] -= 1
    if _ARMED[1] == 0:
        os.kill(os.getpid(), signal.SIGKILL)
