"""How long the coordinator waits for a partition worker's reply, and what it says when
that runs out.

A worker answers every command in order, and a dead one is noticed at once (its
connection closes: :class:`~diffflow.common.errors.WorkerLost`, then recovery).  A worker
that is alive but never answers -- waiting for a peer that never sends, say -- would
keep the coordinator waiting for ever, so a reply is awaited at most
:func:`reply_timeout` seconds (``DIFFFLOW_REPLY_TIMEOUT``; default
:data:`DEFAULT_REPLY_TIMEOUT`, far longer than any command of a healthy run; ``0``: no
bound).  Then :class:`~diffflow.common.errors.WorkerTimeout` names the partition, the
command and what the worker was doing: its threads' stacks, asked for over the
listener its I/O tasks use (:func:`worker_stacks`; that works on any host, and while the
worker's main thread is stuck).

>>> reply_timeout({"DIFFFLOW_REPLY_TIMEOUT": "90"}), reply_timeout({"DIFFFLOW_REPLY_TIMEOUT": "0"})
(90.0, None)
"""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback

from diffflow.common.errors import WorkerTimeout

#: seconds the coordinator waits for one reply unless ``DIFFFLOW_REPLY_TIMEOUT`` says
#: otherwise: a whole run of an epoch is one reply when workers agree on progress among
#: themselves, so this is generous
DEFAULT_REPLY_TIMEOUT = 1800.0
#: seconds to wait for a silent worker's stacks (its I/O thread may not get the
#: interpreter while compiled code holds it)
STACKS_WAIT = 10.0


def reply_timeout(environ=None) -> float | None:
    """Seconds to wait for a worker's reply (``None``: without bound), from
    ``DIFFFLOW_REPLY_TIMEOUT`` in ``environ`` (by default the process's)."""
    text = (os.environ if environ is None else environ).get("DIFFFLOW_REPLY_TIMEOUT", "")
    if not text.strip():
        return DEFAULT_REPLY_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        raise ValueError(f"DIFFFLOW_REPLY_TIMEOUT={text!r}: expected seconds (0: wait "
                         f"without bound)") from None
    return seconds if seconds > 0 else None


def await_reply(conn, bound: float | None, since: float, p: int, cmd: str,
                address=None, authkey: bytes | None = None) -> None:
    """Return once ``conn`` (partition ``p``'s, sent ``cmd`` at ``since``, a
    ``time.monotonic()``) has a reply or has closed; raise :class:`WorkerTimeout` once
    ``bound`` seconds have passed since then without either.  ``address`` and ``authkey``
    reach the worker's listener for its stacks."""
    if bound is None:
        return
    left = since + bound - time.monotonic()
    if left > 0 and conn.poll(left):
        return
    stacks = None if address is None else worker_stacks(address, authkey)
    raise WorkerTimeout(timeout_message(p, cmd, bound, stacks), p, cmd)


def timeout_message(p: int, cmd: str, bound: float, stacks: str | None) -> str:
    """What went wrong, where, and what to do, for a worker silent for ``bound`` seconds.

    >>> print(timeout_message(2, "sweep", 60, None))  # doctest: +NORMALIZE_WHITESPACE
    partition worker 2 did not answer the coordinator's 'sweep' within 60 s, yet its
    connection is open. The dataflow's workers are let go (a next advance restarts them
    from the last checkpoint). If the worker was busy with legitimate work (an epoch
    that big), allow more time: DIFFFLOW_REPLY_TIMEOUT=SECONDS (0: no bound). Otherwise
    it is stuck; its threads' stacks show where. It did not send its stacks within 10 s
    either (busy in compiled code, or stopped).
    """
    message = (f"partition worker {p} did not answer the coordinator's {cmd!r} within "
               f"{bound:.0f} s, yet its connection is open. The dataflow's workers are let "
               f"go (a next advance restarts them from the last checkpoint). If the worker "
               f"was busy with legitimate work (an epoch that big), allow more time: "
               f"DIFFFLOW_REPLY_TIMEOUT=SECONDS (0: no bound). Otherwise it is stuck; its "
               f"threads' stacks show where.")
    if stacks is None:
        return message + (f" It did not send its stacks within {STACKS_WAIT:.0f} s either "
                          f"(busy in compiled code, or stopped).")
    return message + f" Its threads' stacks:\n{stacks}"


def worker_stacks(address, authkey: bytes, wait: float = STACKS_WAIT) -> str | None:
    """The stacks of the worker listening at ``address`` (:func:`thread_stacks`, asked over
    its I/O listener), or ``None`` when it does not send them within ``wait`` seconds.
    (In a thread: connecting needs the worker's listener thread, which may not run.)"""
    from multiprocessing.connection import Client

    found: list = []

    def ask():
        try:
            conn = Client(tuple(address), authkey=authkey)
            try:
                conn.send(("io",))  # (as an I/O task introduces itself)
                conn.send(("stacks",))
                if conn.poll(wait):
                    found.append(conn.recv())
            finally:
                conn.close()
        except (EOFError, OSError):
            pass

    thread = threading.Thread(target=ask, daemon=True, name="diffflow-worker-stacks")
    thread.start()
    thread.join(wait)
    return found[0] if found else None


def thread_stacks(serving: tuple | None = None) -> str:
    """The stacks of this process's other threads, named, the main thread's first;
    ``serving``: ``(command, since)``, the coordinator's command the main thread is
    serving (``None``: waiting for one)."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    if serving is None:
        lines = ["waiting for the coordinator's next command"]
    else:
        lines = [f"serving {serving[0]!r} for {time.monotonic() - serving[1]:.0f} s"]
    frames = sys._current_frames()
    frames.pop(threading.get_ident(), None)  # (this thread: the one answering)
    main = threading.main_thread().ident
    for ident, frame in sorted(frames.items(), key=lambda item: item[0] != main):
        lines.append(f"thread {names.get(ident, ident)!r}:")
        lines.append("".join(traceback.format_stack(frame)).rstrip())
    return "\n".join(lines)
