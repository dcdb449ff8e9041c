"""A file fetched over HTTP(S) lands in place only when whole and right: it is written to a
temporary file beside its destination, checked (the length the server announced, a complete
gzip stream, then the pinned size and sha256 of the text inside), and only then renamed to
its name.  A failed check removes the temporary file and says which check failed; a
destination is never left half written.

Only :func:`fetch` touches the network, and only the ``--download`` flag calls it.

>>> import gzip, tempfile
>>> folder = tempfile.mkdtemp()
>>> with gzip.open(os.path.join(folder, "a.txt.gz"), "wb") as fh:
...     _ = fh.write(b"1 2\\n")
>>> gzip_text_digest(os.path.join(folder, "a.txt.gz"))[0]
4
"""
from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
import zlib

CHUNK = 1 << 16


def gzip_text_digest(path: str) -> tuple:
    """``(size, sha256)`` of the text inside gzip file ``path``; ValueError when it is not
    a complete gzip file."""
    digest, size = hashlib.sha256(), 0
    try:
        with gzip.open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"not a complete gzip file ({exc})") from None
    return size, digest.hexdigest()


def verify(path: str, text_size: int | None, text_sha256: str | None) -> None:
    """Check the gzip file ``path`` against the pinned size and sha256 of its text (None:
    not pinned, only the gzip stream is checked); ValueError saying what differs."""
    size, sha = gzip_text_digest(path)
    if text_size is not None and size != text_size:
        raise ValueError(f"its text is {size:,} bytes, not the pinned {text_size:,}")
    if text_sha256 is not None and sha != text_sha256:
        raise ValueError(f"its text's sha256 is {sha}, not the pinned {text_sha256}")


def fetch(url: str, dest: str, text_size: int | None = None, text_sha256: str | None = None,
          progress=None, timeout: float = 60) -> str:
    """Download ``url`` to ``dest`` (a ``.gz``), verified (:func:`verify`) before it is
    renamed into place; returns ``dest``.  ``progress(done, total)`` is called as bytes
    arrive (``total`` None when the server does not say).  Raises OSError when the server
    cannot be reached or answers with an error, ValueError when the file fails a check;
    either way nothing is left at ``dest``."""
    folder = os.path.dirname(os.path.abspath(dest))
    os.makedirs(folder, exist_ok=True)
    fd, part = tempfile.mkstemp(prefix=f".{os.path.basename(dest)}.", suffix=".part",
                                dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            received, total = _copy(url, out, progress, timeout)
        if total is not None and received != total:
            raise ValueError(f"got {received:,} bytes; the server announced {total:,}")
        try:
            verify(part, text_size, text_sha256)
        except ValueError as exc:
            raise ValueError(f"the file from {url} failed its check: {exc}. Nothing was "
                             f"kept; try again, or download it by hand to {dest}") from None
        os.replace(part, dest)
    finally:
        if os.path.exists(part):
            os.remove(part)
    return dest


def _copy(url, out, progress, timeout) -> tuple:
    """Stream ``url`` into the open file ``out``: ``(bytes received, bytes announced)``."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            received = 0
            while chunk := response.read(CHUNK):
                out.write(chunk)
                received += len(chunk)
                if progress:
                    progress(received, total)
    except urllib.error.HTTPError as exc:
        raise OSError(f"downloading {url}: the server answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise OSError(f"could not download {url} ({reason}): offline? Download it by hand "
                      f"and pass --data-dir, the folder you put it in") from None
    return received, total
