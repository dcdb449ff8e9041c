"""The pool of partition workers, and how worker processes start on this machine.

* :class:`WorkerPool` -- idle workers, connected and waiting for a dataflow; a dataflow
  takes what it needs (launching what the pool lacks) and gives them back, reset;
* :class:`ProcessLauncher` -- starts workers as processes on this machine
  (:class:`~diffflow.runtime.spark_slots.SparkLauncher` starts them as Spark tasks);
* :func:`process_pool` -- this process's pool of local worker processes.

:class:`~diffflow.runtime.transports.SocketTransport` drives the workers it takes.
"""
from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import threading
import time

from diffflow.common.errors import WorkerLost
from diffflow.runtime.wire import no_delay
from diffflow.runtime.worker_start import worker_command


class ProcessLauncher:
    """Starts partition worker processes on this machine (``python -m ...worker``)."""

    def __init__(self):
        self.procs: list = []
        self.pool = None

    def launch(self, count: int, address: tuple, authkey: bytes, bind_host: str,
               background: bool = False) -> None:
        """Start ``count`` workers that connect to ``address``; ``background``: at the lowest
        priority until they serve (:func:`~diffflow.runtime.worker_start.worker_command`)."""
        env = dict(os.environ, SPARK_LOCAL_IP=bind_host)
        for _ in range(count):
            self.procs.append(subprocess.Popen(
                worker_command(address[0], address[1], authkey, bind_host,
                               background=background), env=env, stdin=subprocess.DEVNULL))

    def check(self) -> None:
        """Nothing to tell: a worker process that fails to start never connects."""

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        self.procs = []


class WorkerPool:
    """Idle partition workers, connected and waiting for a dataflow.

    Starting a worker costs seconds (a process, imports, numba's cached
    kernels; on Spark a task each), so a finished dataflow hands its
    workers back (``reset``) and the next one takes them.  Workers exit when
    the pool's connection to them closes, e.g. when this process ends.
    """

    def __init__(self, launcher, bind_host: str = "127.0.0.1", start_timeout: float = 180.0):
        from multiprocessing.connection import Listener

        self.launcher, self.bind_host, self.start_timeout = launcher, bind_host, start_timeout
        launcher.pool = self  # (a launcher may retire idle workers to free what they hold)
        self.authkey = os.urandom(16)
        self.listener = Listener((bind_host, 0), authkey=self.authkey)
        self.idle: list = []  # [(conn, peer address, pid)]
        self.lock = threading.Lock()  # the idle list's (a launcher's thread may retire them)
        self._launching = threading.Lock()  # one launch at a time (held for seconds)
        self.taken = 0  # workers dataflows hold now
        self._counting = threading.Lock()  # (for taken)
        self.closed = False

    @property
    def address(self) -> tuple:
        return self.listener.address

    def take(self, count: int, background: bool = False) -> list:
        """``count`` workers, launching what the pool lacks (``background``: at the lowest
        priority until they serve, for a start ahead of a rescaling step).  Launches run
        one at a time; the idle list stays free meanwhile (workers given back go there)."""
        with self._launching:
            while True:
                with self.lock:
                    self.idle = [w for w in self.idle if _idle_and_alive(w[0])]
                    missing = count - len(self.idle)
                    if missing <= 0:
                        taken, self.idle = self.idle[:count], self.idle[count:]
                        break
                self._add(self._launch(missing, background))
        with self._counting:
            self.taken += len(taken)
        return taken

    def fill(self, count: int) -> int:
        """At least ``count`` idle workers, launching what the pool lacks in the background,
        kernels loaded (ahead of a restart: :mod:`~diffflow.runtime.start_ahead`); returns
        how many were launched."""
        with self._launching:
            with self.lock:
                self.idle = [w for w in self.idle if _idle_and_alive(w[0])]
                missing = count - len(self.idle)
            fresh = self._launch(missing, True) if missing > 0 else []
        for conn, _, _ in fresh:  # (not one launch at a time: takes may go on meanwhile)
            conn.send(("warm", ()))
        self._add([w for w in fresh if _answered(w[0])])
        return len(fresh)

    def _add(self, fresh: list) -> None:
        with self.lock:
            if self.closed:  # (closed meanwhile: nothing will take them)
                for conn, _, _ in fresh:
                    conn.close()
            else:
                self.idle.extend(fresh)

    def _launch(self, count: int, background: bool) -> list:
        """Launch ``count`` workers and wait for them to connect (even for a start ahead
        that was cancelled meanwhile: they go to the pool, none is left astray)."""
        if background:
            self.launcher.launch(count, self.address, self.authkey, self.bind_host,
                                 background=True)
        else:
            self.launcher.launch(count, self.address, self.authkey, self.bind_host)
        return self._accept(count, quiet=background)

    def _accept(self, count: int, quiet: bool = False) -> list:
        """``count`` workers' connections, as they come (within :attr:`start_timeout`);
        unless ``quiet`` (nobody waits: a start in the background), slow starts are told."""
        sock = self.listener._listener._socket  # accept() has no timeout argument
        started = time.monotonic()
        deadline = started + self.start_timeout
        found = []
        told = 0.0
        while len(found) < count:
            self.launcher.check()  # (a launch that failed says why at once)
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                raise WorkerLost(f"only {len(found)} of {count} partition workers started "
                                 f"within {self.start_timeout:.0f} s")
            if not quiet and now - started > 10 and now - told > 10:  # (executors starting)
                print(f"diffflow: waiting for {count - len(found)} of {count} partition "
                      f"worker(s) to start ({now - started:.0f} s of {self.start_timeout:.0f})",
                      file=sys.stderr, flush=True)
                told = now
            sock.settimeout(min(left, 0.5))
            try:
                conn = no_delay(self.listener.accept())
            except socket.timeout:
                continue
            finally:
                sock.settimeout(None)
            _, address, pid = conn.recv()
            found.append((conn, address, pid))
        return found

    def give_back(self, workers: list) -> None:
        """Reset workers and keep them for the next dataflow (dead ones are dropped)."""
        with self._counting:  # (a start ahead gives back from its own thread)
            self.taken = max(0, self.taken - len(workers))
        for conn, address, pid in workers:
            try:
                if self.closed:  # (nothing will take it: let it end, and what it holds)
                    conn.send(("shutdown", ()))
                    conn.close()
                    continue
                conn.send(("reset", ()))
                if conn.poll(30) and conn.recv()[0] == "ok":
                    with self.lock:
                        self.idle.append((conn, address, pid))
                    continue
            except (EOFError, OSError):
                pass
            conn.close()

    def retire_idle(self) -> int:
        """End every idle worker (what it holds, e.g. a Spark slot, is freed); how many.
        The caller holds :attr:`lock`."""
        idle, self.idle = self.idle, []
        for conn, _, _ in idle:
            try:
                conn.send(("shutdown", ()))
            except (EOFError, OSError):
                pass
            conn.close()
        return len(idle)

    def close(self) -> None:
        """End the idle workers; those dataflows hold end when given back."""
        self.closed = True
        for conn, _, _ in self.idle:
            conn.close()
        self.idle = []
        self.listener.close()
        self.launcher.stop()


def _idle_and_alive(conn) -> bool:
    """An idle worker never writes first, so anything readable is the EOF of a dead one.

    This works for workers on other hosts too, unlike checking a process id.
    """
    try:
        return not conn.closed and not conn.poll()
    except (EOFError, OSError):
        return False


def _answered(conn) -> bool:
    """Whether a worker answered its last command (a dead one's connection is closed)."""
    try:
        return conn.recv() is not None
    except (EOFError, OSError):
        conn.close()
        return False


_PROCESS_POOL: WorkerPool | None = None


def process_pool() -> WorkerPool:
    """The pool of local worker processes this process shares between dataflows.

    Created on first use (no process starts until a dataflow takes workers)
    and closed when this process exits.

    >>> process_pool() is process_pool(), process_pool().address[0]
    (True, '127.0.0.1')
    """
    global _PROCESS_POOL
    if _PROCESS_POOL is None:
        _PROCESS_POOL = WorkerPool(ProcessLauncher())
        atexit.register(_PROCESS_POOL.close)  # workers and sockets end with us, quietly
    return _PROCESS_POOL
