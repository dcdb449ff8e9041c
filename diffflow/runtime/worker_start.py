"""How a partition worker process starts, and what it does ahead of use.

* :func:`worker_command`: its command line.  A worker started in the background (ahead of
  the rescaling step that needs it: :mod:`~diffflow.runtime.start_ahead`) imports diffflow,
  builds its engine and loads its kernels in threads of :func:`lowest_priority`, so that
  its start takes only what the running dataflow leaves of the processors.
* :func:`load_kernel_step` / :func:`load_while_idle`: numba's kernels loaded ahead of use
  (:func:`~diffflow.operators.kernel_cache.load_cached_kernels`), a kernel at a time, so
  that no epoch pays for loading them on first use: numba itself with ``init``, then the
  kernels while the worker is idle (an update epoch of reachability + components on worker
  processes used to take ~1 s once, about its fifth, for loading them).

>>> worker_command("127.0.0.1", 5000, b"k", "127.0.0.1")[1:4]
['-m', 'diffflow.runtime.worker', '127.0.0.1']
"""
from __future__ import annotations

import os
import sys
import threading

#: seconds without a command after which a worker counts as idle (and loads kernels)
IDLE_WAIT = 0.002

_LOADING: list = []  # this process's kernel loading: [generator], [] before, [None] once done


def load_kernel_step() -> bool:
    """Load the next of the kernels numba's cache holds
    (:func:`~diffflow.operators.kernel_cache.load_cached_kernels`); whether any is left.
    Loading ahead only saves time: if it fails, kernels load on first use as before."""
    if not _LOADING:
        from diffflow.operators.kernel_cache import load_cached_kernels

        _LOADING.append(load_cached_kernels())
    if _LOADING[0] is None:
        return False
    try:
        next(_LOADING[0])
        return True
    except Exception:  # noqa: BLE001 - StopIteration (done), or a cache that cannot load
        _LOADING[0] = None
        return False


def load_while_idle(conn) -> bool:
    """Load kernels while a worker is idle: after :data:`IDLE_WAIT` seconds with no command
    on ``conn`` (so not between the commands of one epoch), a kernel at a time (a few ms
    each) until none is left or a command comes; returns whether any is left to load.
    (Not a slice per command: a worker answering a stream of short requests, an
    explanation's index reads, would load one slice after each and make the next wait.)"""
    try:
        while not conn.poll(IDLE_WAIT):
            if not load_kernel_step():
                break
    except (EOFError, OSError):
        return False  # (the coordinator hung up: the worker ends)
    return not (_LOADING and _LOADING[0] is None)


def lowest_priority() -> None:
    """Run the calling thread (and the threads it starts) only when the processors have
    nothing else to do: Linux's ``SCHED_IDLE`` policy (``nice`` 19 where it is missing;
    elsewhere nothing changes).  ``nice`` alone is not enough: beside a running dataflow,
    a busy thread at ``nice`` 19 made its epochs ~1.6x longer (its processes, waking up
    after every exchange, wait for the processor), one at ``SCHED_IDLE`` ~1.05-1.25x.  A
    thread cannot leave that policy without privileges, so only threads that end call it,
    and the thread serving the dataflow waits for them (never the other way round: it
    would wait for the interpreter's lock, held by a thread that may not run)."""
    if not sys.platform.startswith("linux"):
        return
    me = threading.get_native_id()
    try:
        os.sched_setscheduler(me, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        try:
            os.setpriority(os.PRIO_PROCESS, me, 19)
        except OSError:
            pass


def in_background(fn) -> None:
    """Run ``fn`` in a thread of its own and wait for it; raise what it raised."""
    failure = []

    def run():
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="diffflow-background")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


# A worker started in the background (ahead of a rescaling step) imports diffflow in a
# thread of the lowest priority (:func:`lowest_priority`, as it can before the import), so
# that its start takes only what the running dataflow leaves of the processors; its main
# thread, which serves the dataflow, waits for it and keeps its priority.  numpy first, in
# the main thread: its BLAS starts threads that live as long as the process.
_BACKGROUND_START = """\
import os, sys, threading
import numpy
def imports():
    if sys.platform.startswith("linux"):
        try:
            os.sched_setscheduler(threading.get_native_id(), os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError):
            pass
    import diffflow.runtime.worker
thread = threading.Thread(target=imports)
thread.start()
thread.join()
from diffflow.runtime.worker import main
main(sys.argv[1:])
"""


def worker_command(host: str, port: int, authkey: bytes, bind_host: str, parent=None,
                   background: bool = False) -> list:
    """The command line of a worker process (:func:`diffflow.runtime.worker.main`);
    ``background``: it starts
    at the lowest priority (ahead of a rescaling step: :mod:`~diffflow.runtime.start_ahead`),
    loading its modules in a thread of :func:`lowest_priority`.

    >>> worker_command("127.0.0.1", 5000, b"k", "127.0.0.1")[1:4]
    ['-m', 'diffflow.runtime.worker', '127.0.0.1']
    """
    args = [host, str(port), authkey.hex(), bind_host] + ([] if parent is None else [str(parent)])
    start = ["-c", _BACKGROUND_START] if background else ["-m", "diffflow.runtime.worker"]
    return [sys.executable, *start, *args]
