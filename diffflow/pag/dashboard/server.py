"""``diffflow pag serve``: a local web server showing a PAG as it grows.

A thread reads the trace -- once, or following it as it grows (:func:`~..follow.follow`) --
into a :class:`Dashboard`; the page (``static/``) asks ``/api/state`` and
``/api/timeline/{snapshot}`` for JSON and listens on ``/events`` (server-sent events) for a
new version, so updates are pushed, not polled.  Starlette serves it (a small, maintained
ASGI framework; uvicorn runs it) and the charts are Plotly's, whose script ships inside the
installed ``plotly`` package and is served from here: nothing comes from the network.
Malformed trace lines are listed in the page and on stderr, and the server keeps going;
each browser tab has its own queue, so a slow or closed tab holds up no other.

>>> dash = Dashboard()
>>> from diffflow.pag.edges import Edges; from diffflow.pag.api import PAG
>>> dash.add(PAG(Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Processing")]), epochs=True))
>>> state = dash.state(); state["version"], [s["snapshot"] for s in state["snapshots"]]
(1, [1])
"""
from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

from diffflow.api.features import Feature
from diffflow.pag.api import PAG
from diffflow.pag.dashboard.colors import COLORS
from diffflow.pag.dashboard.views import khop, overview, thresholds_text, timeline
from diffflow.pag.edges import Edges
from diffflow.runtime.events import TraceError

STATIC = Path(__file__).with_name("static")


#: snapshots a dashboard keeps by default: the newest ones (as Spark's UI keeps its last
#: 1,000 jobs), so a dashboard following a long run holds a bounded PAG
RETAIN = 1000
#: malformed trace lines the page lists (the newest; every one is also on stderr)
ERRORS_SHOWN = 1000


class Dashboard:
    """The PAG read so far (its newest ``retain`` snapshots; None: all), its views, a version
    that grows with every change, the trace's errors, and the queues of the pages listening.

    >>> from diffflow.pag.edges import Edges; from diffflow.pag.api import PAG
    >>> dash = Dashboard(retain=2)
    >>> for s in (1, 2, 3):
    ...     dash.add(PAG(Edges.from_rows([(s, 0, 0, 0, 0, 5, 0, "Processing")]), epochs=True))
    >>> [s["snapshot"] for s in dash.state()["snapshots"]], dash.state()["dropped"]
    ([2, 3], 1)
    """

    def __init__(self, live: bool = True, retain: int | None = RETAIN, **thresholds):
        if retain is not None and (isinstance(retain, bool) or not isinstance(retain, int)
                                   or retain < 1):
            raise ValueError(f"the dashboard keeps at least 1 snapshot (retain), got {retain!r}")
        self.thresholds = thresholds   # of diffflow.pag.checks.violations (pag serve's options)
        self.live = live               # the trace may still grow (--follow): the page says so
        self.retain = retain
        self.dropped = 0               # snapshots dropped to keep the newest ``retain``
        self.floor = None              # snapshots up to this one were dropped
        self.parts: dict = {}         # the PAG of each batch of closed snapshots, by number
        self.where: dict = {}         # snapshot -> the number of its part
        self.added = 0                # batches added so far (the next part's number)
        self.view = overview(PAG(Edges.empty(), epochs=True))
        self.version = 0
        self.errors: list = []
        self.lock = threading.Lock()
        self.listeners: set = set()   # (event loop, asyncio.Queue) of each open page
        self.khops: dict = {}
        self.stopping = threading.Event()   # set when the server stops: streams end

    def add(self, pag: PAG) -> None:
        """Take newly closed snapshots (or a whole trace) and tell every page.  Closed
        snapshots never change, so only the new ones are analysed: the cost follows what
        arrived, not the length of the run."""
        if self.floor is not None:   # (late events of a dropped snapshot stay dropped)
            pag = PAG(pag.edges.take(np.flatnonzero(pag.edges.snap > self.floor)), pag.epochs,
                      pag.window_ns)
        snapshots = {int(x) for x in np.unique(pag.edges.snap).tolist()}
        if not snapshots:
            return
        with self.lock:
            late = snapshots & set(self.where)
        if late:   # events of a snapshot shown already: analyse everything again, once
            with self.lock:
                pag = PAG(Edges.concat([p.edges for p in self.parts.values()] + [pag.edges]),
                          pag.epochs, pag.window_ns)
                if self.floor is not None:   # (what was dropped stays dropped)
                    pag = PAG(pag.edges.take(np.flatnonzero(pag.edges.snap > self.floor)),
                              pag.epochs, pag.window_ns)
                self.parts, self.where, self.khops = {}, {}, {}
                self.view = overview(PAG(Edges.empty(), epochs=True))
        view = overview(pag, **self.thresholds)
        with self.lock:
            self.parts[self.added] = pag
            for snapshot in np.unique(pag.edges.snap).tolist():
                self.where[int(snapshot)] = self.added
            self.added += 1
            old = self.view
            self.view = {"epochs": pag.epochs,
                         "snapshots": old["snapshots"] + view["snapshots"],
                         "metrics": old["metrics"] + view["metrics"],
                         "violations": sorted(old["violations"] + view["violations"],
                                              key=lambda v: -(v["duration_ns"] or 0))}
            self._drop_old()
            self.version += 1
        self._notify()

    def _drop_old(self) -> None:
        """Keep the newest ``retain`` snapshots: forget the older ones' views and the parts
        that hold only older ones (a part straddling the cut stays until it is all older)."""
        if self.retain is None or len(self.where) <= self.retain:
            return
        ordered = sorted(self.where)
        self.floor = ordered[-self.retain - 1]   # the newest snapshot dropped
        for snapshot in ordered[:-self.retain]:
            del self.where[snapshot]
        self.dropped += len(ordered) - self.retain
        live = set(self.where.values())
        self.parts = {i: part for i, part in self.parts.items() if i in live}
        self.khops = {key: v for key, v in self.khops.items() if key[0] > self.floor}
        floor = self.floor
        self.view = {**self.view, **{
            name: [r for r in self.view[name] if r["snapshot"] is None or r["snapshot"] > floor]
            for name in ("snapshots", "metrics", "violations")}}

    def error(self, message: str) -> None:
        """A malformed trace line: on stderr and in the page."""
        print(message, file=sys.stderr, flush=True)
        with self.lock:
            self.errors = self.errors[-(ERRORS_SHOWN - 1):] + [message]
            self.version += 1
        self._notify()

    def state(self) -> dict:
        with self.lock:
            return {"version": self.version, **self.view, "errors": list(self.errors),
                    "retain": self.retain, "dropped": self.dropped,
                    "colors": COLORS, "live": self.live, "thresholds": dict(self.thresholds),
                    "thresholds_text": thresholds_text(self.thresholds)}

    def khop(self, snapshot: int, k: int) -> dict:
        """The k-hop wait explanation of a snapshot (computed once: snapshots never change)."""
        key = (snapshot, k)
        if key not in self.khops:
            self.khops[key] = khop(self._part(snapshot), snapshot, k)
        return self.khops[key]

    def timeline(self, snapshot: int) -> dict:
        return timeline(self._part(snapshot), snapshot)

    def _part(self, snapshot: int) -> PAG:
        with self.lock:
            index = self.where.get(snapshot)
            return self.parts[index] if index is not None else PAG(Edges.empty(), epochs=True)

    def _notify(self) -> None:
        for loop, queue in list(self.listeners):
            try:
                loop.call_soon_threadsafe(_offer, queue, self.version)
            except RuntimeError:   # that page's loop is gone
                self.listeners.discard((loop, queue))


def _offer(queue, version) -> None:
    if queue.full():   # a page that is behind needs only the newest version
        queue.get_nowait()
    queue.put_nowait(version)


def read_trace(dashboard: Dashboard, path, format: str, window=None,  # noqa: A002
               follow: bool = False, poll: float = 0.1, stop=None,
               until_idle=None) -> threading.Thread:
    """Start a thread feeding ``dashboard`` from the trace at ``path`` (following it until
    the ``stop`` event is set, when given, or it is idle for ``until_idle`` seconds)."""
    def run():
        try:
            if follow:
                from diffflow.pag.follow import follow as follow_trace

                fmt = _wait_for_trace(path, format, poll, stop)
                if fmt is None:
                    return
                if fmt == "spark":
                    raise TraceError(f"{path}: --follow reads diffflow and st2 traces; a "
                                     f"Spark event log is analysed once it is written")
                for pag in follow_trace(path, fmt, window=window, poll=poll,
                                        on_error=dashboard.error, until_idle=until_idle,
                                        stopped=None if stop is None else stop.is_set):
                    if len(pag.edges):
                        dashboard.add(pag)
            else:
                from diffflow.pag.api import load

                dashboard.add(load(path, format, window=window))
        except TraceError as exc:   # the page says what went wrong; the server stays up
            dashboard.error(str(exc))
        except Exception as exc:
            dashboard.error(f"{path}: {type(exc).__name__}: {exc}")
    thread = threading.Thread(target=run, name="pag-reader", daemon=True)
    thread.start()
    return thread


def _wait_for_trace(path, format, poll, stop):   # noqa: A002
    """The trace's format once it has a first line (``None``: stopped before); the page is
    up meanwhile, and stderr says what it waits for."""
    from diffflow.pag.api import detect_format
    from diffflow.pag.follow import wait_for_trace

    if not wait_for_trace(path, poll=poll, stopped=None if stop is None else stop.is_set,
                          who="diffflow pag serve"):
        return None
    return detect_format(path) if format == "auto" else format


def app(dashboard: Dashboard):
    """The Starlette application serving ``dashboard``."""
    from starlette.applications import Starlette
    from starlette.responses import FileResponse, JSONResponse, StreamingResponse
    from starlette.routing import Route

    async def index(request):
        return FileResponse(STATIC / "index.html")

    async def asset(request):
        name = request.path_params["name"]
        if name == "plotly.min.js":
            return FileResponse(_plotly_script(), media_type="text/javascript")
        path = STATIC / name
        if path.parent != STATIC or not path.is_file():
            return JSONResponse({"error": f"no asset {name}"}, status_code=404)
        return FileResponse(path)

    async def state(request):
        return JSONResponse(dashboard.state())

    async def snapshot_timeline(request):
        snapshot = int(request.path_params["snapshot"])
        if snapshot not in dashboard.where:
            return JSONResponse({"error": f"no snapshot {snapshot}"}, status_code=404)
        return JSONResponse(dashboard.timeline(snapshot))

    async def snapshot_khop(request):
        try:
            k = int(request.query_params.get("k", "3"))
        except ValueError:
            k = 0
        if not 1 <= k <= 20:
            return JSONResponse({"error": "k is a number of hops from 1 to 20"}, status_code=400)
        snapshot = int(request.path_params["snapshot"])
        if snapshot not in dashboard.where:
            return JSONResponse({"error": f"no snapshot {snapshot}"}, status_code=404)
        # a Datalog pattern over the snapshot: off the event loop, so other pages go on
        return JSONResponse(await asyncio.to_thread(dashboard.khop, snapshot, k))

    async def events(request):
        queue: asyncio.Queue = asyncio.Queue(maxsize=1)
        entry = (asyncio.get_running_loop(), queue)
        dashboard.listeners.add(entry)

        async def stream():
            try:
                yield f"event: version\ndata: {json.dumps(dashboard.version)}\n\n"
                idle = 0.0
                while not dashboard.stopping.is_set():
                    try:
                        version = await asyncio.wait_for(queue.get(), timeout=0.5)
                    except asyncio.TimeoutError:
                        idle += 0.5
                        if idle >= 15:   # a closed tab shows up when this write fails
                            idle = 0.0
                            yield ": keep-alive\n\n"
                        continue
                    idle = 0.0
                    yield f"event: version\ndata: {json.dumps(version)}\n\n"
            finally:
                dashboard.listeners.discard(entry)
        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    return Starlette(routes=[
        Route("/", index), Route("/assets/{name}", asset), Route("/api/state", state),
        Route("/api/timeline/{snapshot:int}", snapshot_timeline),
        Route("/api/khop/{snapshot:int}", snapshot_khop), Route("/events", events)])


def _plotly_script() -> Path:
    import plotly

    return Path(plotly.__file__).with_name("package_data") / "plotly.min.js"


def check_port(host: str, port) -> int:
    """The port to listen on, checked before anything is announced: a number from 1 to
    65535 that no one else holds (0: any free port)."""
    import socket

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"the dashboard's port must be a number from 1 to 65535, got {port!r}")
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ValueError(f"cannot listen on {host}:{port} ({exc.strerror}): another "
                             f"program holds it; pick another port") from None
        return probe.getsockname()[1]


def _server(dashboard: Dashboard, host: str, port: int):
    """A uvicorn server whose stop (Ctrl-C, or :meth:`Background.stop`) also ends the
    pages' event streams, so it does not wait for open tabs."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            dashboard.stopping.set()
            super().handle_exit(sig, frame)

    return Server(uvicorn.Config(app(dashboard), host=host, port=port, log_level="warning",
                                 timeout_graceful_shutdown=2))


class Background:
    """The dashboard of a running dataflow's own trace, served from threads until
    :meth:`stop` (``Dataflow(trace="run.trace", dashboard=8765)``: :class:`LiveDashboard`)."""

    def __init__(self, path, port: int, host: str = "127.0.0.1"):
        port = check_port(host, port)
        self.dashboard, self.halt = Dashboard(), threading.Event()
        read_trace(self.dashboard, path, "diffflow", follow=True, stop=self.halt)
        self.server = _server(self.dashboard, host, port)
        self.thread = threading.Thread(target=self.server.run, name="pag-dashboard",
                                       daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)   # the address is live when the dataflow starts
        print(f"diffflow: the dashboard of {path} is at http://{host}:{port}/", file=sys.stderr,
              flush=True)

    def stop(self) -> None:
        self.halt.set()
        self.dashboard.stopping.set()
        self.server.should_exit = True
        self.thread.join(timeout=10)


class LiveDashboard(Feature):
    """The dashboard as a feature of a dataflow (:mod:`diffflow.api.features`):
    ``value`` is ``(trace path, port)``; it serves from the dataflow's creation to its
    ``close()``."""

    def __init__(self, access, value):
        path, port = value
        self.server = Background(path, port)

    def close(self) -> None:
        self.server.stop()


def serve(dashboard: Dashboard, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run the server until Ctrl-C (uvicorn stops it cleanly)."""
    port = check_port(host, port)
    print(f"diffflow pag serve: http://{host}:{port}/  (Ctrl-C stops)", file=sys.stderr,
          flush=True)
    _server(dashboard, host, port).run()


__all__ = ["Background", "Dashboard", "app", "check_port", "read_trace", "serve"]
