"""A real Spark standalone cluster on loopback, for the cluster tests: a master and Workers
started with the pyspark package's ``spark-class``, each Worker on its own loopback address
(127.0.0.2, 127.0.0.3, ...) with its own ``SPARK_LOCAL_IP`` and work folder.

Nothing listens beyond loopback: the master binds 127.0.0.1 (its web UI too, through
``SPARK_LOCAL_IP``), each Worker its own address.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def spark_class() -> tuple:
    """``(spark-class path, SPARK_HOME)`` of the installed pyspark."""
    import pyspark

    home = os.path.dirname(os.path.abspath(pyspark.__file__))
    return os.path.join(home, "bin", "spark-class"), home


def python_without_diffflow(folder) -> dict:
    """Environment settings for hosts whose Python lacks diffflow and every other package:
    ``python``, ``python3`` and ``python3.X`` on a PATH without this venv's ``bin/`` run this
    interpreter's base Python with no site-packages (``-S``), and no ``PYTHONPATH`` leads to
    this checkout."""
    shadow = os.path.join(str(folder), "bin")
    os.makedirs(shadow, exist_ok=True)
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for name in ("python", "python3", version):
        script = os.path.join(shadow, name)
        with open(script, "w") as out:
            out.write(f"#!/bin/sh\nexec {base} -S \"$@\"\n")
        os.chmod(script, 0o755)
    venv_bin = os.path.dirname(os.path.abspath(sys.executable))
    path = [shadow] + [p for p in os.environ.get("PATH", "").split(os.pathsep)
                       if p and os.path.abspath(p) != venv_bin]
    return {"PATH": os.pathsep.join(path), "PYTHONPATH": None, "PYSPARK_PYTHON": None,
            "VIRTUAL_ENV": None}


class StandaloneCluster:
    """``workers`` Workers of ``cores`` cores each; :attr:`url` is the master's URL.
    ``worker_env``: settings of the Workers' environment (and so their executors'); a None
    value removes the variable."""

    def __init__(self, root, workers: int = 2, cores: int = 1, memory: str = "1g",
                 worker_env: dict | None = None):
        self.root, self.cores, self.memory = str(root), cores, memory
        os.makedirs(self.root, exist_ok=True)
        self.worker_env = worker_env or {}
        self.count = workers
        self.master = None
        self.workers: list = []
        self.url = None

    def _start(self, args: list, host: str, log: str, extra_env=None) -> subprocess.Popen:
        script, home = spark_class()
        env = dict(os.environ, SPARK_HOME=home, SPARK_LOCAL_IP=host,
                   SPARK_LOG_DIR=self.root, SPARK_NO_DAEMONIZE="1")
        for key, value in (extra_env or {}).items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        out = open(os.path.join(self.root, log), "w")
        return subprocess.Popen([script, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def start(self) -> "StandaloneCluster":
        port = free_port()
        self.url = f"spark://127.0.0.1:{port}"
        self.master = self._start(["org.apache.spark.deploy.master.Master", "--host",
                                   "127.0.0.1", "--port", str(port), "--webui-port",
                                   str(free_port())], "127.0.0.1", "master.log")
        self._wait_listening("127.0.0.1", port)
        for i in range(self.count):
            self.add_worker()
        return self

    def add_worker(self) -> subprocess.Popen:
        """One more Worker, on the next loopback address."""
        host = f"127.0.0.{2 + len(self.workers)}"
        folder = os.path.join(self.root, f"worker-{len(self.workers)}")
        os.makedirs(folder, exist_ok=True)
        worker = self._start(["org.apache.spark.deploy.worker.Worker", self.url, "--host", host,
                              "--cores", str(self.cores), "--memory", self.memory,
                              "--work-dir", folder, "--webui-port", str(free_port(host))],
                             host, f"worker-{len(self.workers)}.log", self.worker_env)
        self.workers.append(worker)
        return worker

    def _wait_listening(self, host: str, port: int, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((host, port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the Spark master did not listen on {host}:{port} within "
                           f"{seconds:.0f} s; see {self.root}/master.log")

    def stop(self) -> None:
        """Kill every JVM of the cluster (and the executors they started)."""
        for proc in [*self.workers, self.master]:
            if proc is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
