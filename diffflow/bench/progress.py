"""Progress bars on stderr (rich), shown only to a person: off when stderr is not a
terminal or with ``--quiet``, so pipes, logs and tests get nothing.

>>> with Progress(enabled=False) as progress:
...     with progress.task("batches", total=3) as advance:
...         advance(); advance(); advance()
"""
from __future__ import annotations

import contextlib
import sys


class Progress:
    """Bars for the steps of one command; a no-op when not ``enabled`` (None: stderr is a
    terminal)."""

    def __init__(self, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._bars = None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import (BarColumn, Progress as Bars,
                                       SpinnerColumn, TextColumn, TimeElapsedColumn)

            self._bars = Bars(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                              TextColumn("{task.fields[count]}"), TimeElapsedColumn(),
                              console=Console(stderr=True), transient=True)
            self._bars.__enter__()
        return self

    def __exit__(self, *exc):
        if self._bars is not None:
            self._bars.__exit__(*exc)
            self._bars = None

    @contextlib.contextmanager
    def task(self, description: str, total: float | None = None, unit: str = ""):
        """A bar for one step; yields ``advance(by=1)`` (``unit="bytes"``: ``set(done,
        total)`` for a download)."""
        if self._bars is None:
            yield _nothing
            return
        bars = self._bars
        task = bars.add_task(description, total=total, count="")

        done = [0]

        def advance(by=1):
            done[0] += by
            bars.update(task, completed=done[0],
                        count=f"{done[0]}/{int(total)}" if total else f"{done[0]}")

        def download(done, size=None):
            text = f"{done / 2**20:.1f}" + (f"/{size / 2**20:.1f} MiB" if size else " MiB")
            bars.update(task, completed=done, total=size, count=text)

        try:
            yield download if unit == "bytes" else advance
        finally:
            bars.remove_task(task)


def _nothing(*args, **kwargs) -> None:
    return None
