"""The SNAP downloader against a server on 127.0.0.1 serving files of the repository: a good
file lands in the cache, verified; a corrupted or different one is rejected and leaves
nothing behind; a server that is not there is reported as such."""
import functools
import gzip
import hashlib
import http.server
import os
import shutil
import threading

import pytest

from diffflow.bench import datasets
from diffflow.bench.download import fetch
from diffflow.cli import main

SHIPPED = os.path.join(datasets._REPO, "data", "graphs", "p2p-Gnutella08.txt.gz")
GRAPH = datasets.entry("p2p-Gnutella08")


@pytest.fixture
def server(tmp_path):
    """``(folder served, base URL)``: an HTTP server on 127.0.0.1 in a thread."""
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(_Quiet, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def catalog_at(monkeypatch, server):
    """The catalog's p2p-Gnutella08 served by the loopback server as ``name``."""
    def point(name):
        monkeypatch.setitem(datasets.CATALOG, "p2p-gnutella08",
                            GRAPH._replace(file="p2p-Gnutella08-test.txt.gz", url=server[1] + name))
    return point


@pytest.mark.slow
def test_download_lands_verified_in_the_cache(capsys, tmp_path, server, catalog_at):
    shutil.copy(SHIPPED, server[0] / "good.txt.gz")
    catalog_at("good.txt.gz")
    cache = tmp_path / "cache"
    status = main(["bench", "graphs", "--graph", "p2p-Gnutella08", "--download", "--quiet",
                   "--data-dir", str(cache), "--algorithms", "reach", "--batches", "1"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert os.listdir(cache) == ["p2p-Gnutella08-test.txt.gz"]
    with gzip.open(cache / "p2p-Gnutella08-test.txt.gz", "rb") as fh:
        assert hashlib.sha256(fh.read()).hexdigest() == GRAPH.text_sha256
    assert "20,777 edges" in out and "downloaded p2p-Gnutella08" in err


def test_without_download_nothing_is_fetched(capsys, tmp_path, server, catalog_at):
    shutil.copy(SHIPPED, server[0] / "good.txt.gz")
    catalog_at("good.txt.gz")
    status = main(["bench", "graphs", "--graph", "p2p-Gnutella08", "--quiet",
                   "--data-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert status == 1 and "--download" in err and server[1] + "good.txt.gz" in err
    assert not (tmp_path / "cache").exists()


def _corrupted(path):
    data = bytearray(open(SHIPPED, "rb").read())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _other_text(path):
    with gzip.open(SHIPPED, "rb") as fh:
        text = fh.read()
    with gzip.open(path, "wb") as fh:
        fh.write(text[:-100])  # a valid gzip file, 100 bytes short of the pinned text


def _truncated(path):
    path.write_bytes(open(SHIPPED, "rb").read()[:-500])


@pytest.mark.parametrize("make,why", [(_corrupted, "gzip"), (_other_text, "not the pinned"),
                                      (_truncated, "gzip")])
def test_a_bad_file_is_rejected_and_leaves_nothing(capsys, tmp_path, server, catalog_at, make, why):
    make(server[0] / "bad.txt.gz")
    catalog_at("bad.txt.gz")
    cache = tmp_path / "cache"
    status = main(["bench", "graphs", "--graph", "p2p-Gnutella08", "--download", "--quiet",
                   "--data-dir", str(cache)])
    err = capsys.readouterr().err
    assert status == 1 and "failed its check" in err and why in err
    assert os.listdir(cache) == []  # no graph, no .part file


def test_fetch_reports_an_http_error_and_an_absent_server(tmp_path, server):
    with pytest.raises(OSError, match="404"):
        fetch(server[1] + "absent.txt.gz", str(tmp_path / "g.txt.gz"))
    with pytest.raises(OSError, match="offline"):
        fetch("http://127.0.0.1:9/nothing.txt.gz", str(tmp_path / "g.txt.gz"), timeout=5)
    assert os.listdir(tmp_path) == ["served"]
