"""Ship diffflow to Spark executors that do not have it: one archive for ``spark.archives``.

:func:`pack` copies diffflow, with numba's compiled kernels, and the installed packages it
needs on executors into ``site/`` of a ``.tar.gz``, beside ``bin/python``: a script that runs
the executor's own Python of the same minor version with ``site/`` first on its path.  Spark
unpacks the archive in each executor's working folder under the name after ``#`` in
``spark.archives``, and ``spark.pyspark.python`` names the script there
(:func:`shipping_settings`).  docs/SPARK.md §7 says why it is built this way rather than with
venv-pack or conda-pack.

What is left out: pyspark and py4j (Spark puts its own on executors' paths) and the
driver-only packages (the dashboard's web server, charts), and every package's own test
suite.  What the executors need: Linux on the same machine architecture and a Python of the
same minor version on ``PATH`` (binary wheels are built per minor version); the script says so
when there is none.

An archive is built once per content: its name carries a hash of what goes in (the packages'
versions and file hashes, diffflow's files and cached kernels), and :func:`pack` reuses one
it finds in the cache folder.
"""
from __future__ import annotations

import hashlib
from importlib import metadata
import io
import json
import os
import shutil
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

__all__ = ["ENV_FOLDER", "cache_folder", "pack", "packed_distributions", "shipping_settings"]

FORMAT = 1  # bump when the archive's layout changes: old cached archives are not reused
ENV_FOLDER = "diffflow_env"  # the folder executors unpack the archive into (after '#')
# not shipped: Spark's own Python side, and what only the driver uses
LEFT_OUT = {"pyspark": "Spark puts its own pyspark on executors' paths",
            "py4j": "Spark puts its own py4j on executors' paths",
            "starlette": "the dashboard's web server runs on the driver",
            "uvicorn": "the dashboard's web server runs on the driver",
            "plotly": "charts are drawn on the driver",
            "matplotlib": "charts are drawn on the driver"}
KEEP_ARCHIVES = 3  # archives kept in the cache folder, newest first


def _key(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def packed_distributions(extra=()) -> list:
    """The installed distributions an executor needs: diffflow's requirements and theirs
    (markers evaluated here, extras not followed), less :data:`LEFT_OUT`, plus ``extra``
    (names of other installed packages your code uses on executors) and theirs.

    >>> names = [d.metadata["Name"].lower() for d in packed_distributions()]
    >>> "numpy" in names and "pyspark" not in names and names[0]
    'diffflow'
    """
    from packaging.requirements import Requirement

    found, order = {}, []
    queue = [("diffflow", None)] + [(name, None) for name in extra]
    while queue:
        name, wanted_by = queue.pop(0)
        key = _key(name)
        if key in found or (key in LEFT_OUT and name not in extra):
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            needed = f" (needed by {wanted_by})" if wanted_by else ""
            raise ValueError(f"cannot pack {name}{needed}: it is not installed in this "
                             f"Python ({sys.executable})") from None
        found[key] = dist
        order.append(dist)
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                queue.append((requirement.name, dist.metadata["Name"]))
    return order


def _package_folder() -> Path:
    return Path(__file__).resolve().parents[1]  # (diffflow/runtime/spark_pack.py)


def _diffflow_files():
    """(path in site/, file) of diffflow's package folder: sources, data, compiled kernels."""
    root = _package_folder()
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in sorted(files):
            path = Path(folder, name)
            yield PurePosixPath("diffflow", path.relative_to(root).as_posix()), path


def _installed_files(dist):
    """(path in site/, file) of an installed distribution, from its RECORD, without the files
    installed outside site-packages (scripts) or its test suite."""
    if dist.files is None:
        raise ValueError(f"cannot pack {dist.metadata['Name']}: it was installed without a "
                         "file list (RECORD); reinstall it with pip")
    for entry in dist.files:
        relative = PurePosixPath(str(entry))
        if relative.parts[0] == ".." or "tests" in relative.parts[1:-1]:
            continue
        path = Path(dist.locate_file(entry))
        if path.is_file():
            yield relative, path


def _diffflow_metadata(dist) -> dict:
    """diffflow's dist-info, so ``importlib.metadata`` finds it on executors (an editable
    install's RECORD lists no package files, so the folder is copied as it is)."""
    info = f"diffflow-{dist.version}.dist-info"
    # as_string: an egg-info (a source checkout on the path) has PKG-INFO, not METADATA
    return {PurePosixPath(info, "METADATA"): dist.metadata.as_string().encode(),
            PurePosixPath(info, "INSTALLER"): b"diffflow spark-pack\n"}


def _launcher(version) -> bytes:
    major, minor = version[:2]
    want = f"python{major}.{minor}"
    return f"""#!/bin/sh
# diffflow's Spark archive: run this host's Python {major}.{minor} with the packed packages first.
here=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
PYTHONPATH="$here/site${{PYTHONPATH:+:$PYTHONPATH}}"
export PYTHONPATH
for python in {want} python3; do
  if command -v "$python" >/dev/null 2>&1 && \\
     "$python" -c 'import sys; sys.exit(sys.version_info[:2] != ({major}, {minor}))' 2>/dev/null
  then
    exec "$python" "$@"
  fi
done
echo "diffflow's Spark archive holds packages for Python {major}.{minor}, but this executor \\
($(hostname)) has no {want} on PATH: install Python {major}.{minor} on the executors, or \\
pack with a Python of the executors' version (diffflow spark-pack)" >&2
exit 127
""".encode()


def _content_hash(dists, own_files) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([FORMAT, list(sys.version_info[:2]), sysconfig.get_platform(),
                              sorted(LEFT_OUT)]).encode())
    for dist in dists[1:]:
        digest.update(f"\n{dist.metadata['Name']} {dist.version}\n".encode())
        digest.update((dist.read_text("RECORD") or "").encode())  # every file's own hash
    for relative, path in own_files:
        digest.update(f"\n{relative}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def cache_folder() -> Path:
    """Where built archives are kept: ``$DIFFFLOW_CACHE_DIR``, else ``$XDG_CACHE_HOME/diffflow``,
    else ``~/.cache/diffflow``; archives go in its ``spark-pack`` folder.

    >>> cache_folder().name
    'spark-pack'
    """
    base = os.environ.get("DIFFFLOW_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "diffflow")
    return Path(base, "spark-pack")


def _add(archive, name: str, data: bytes | None = None, path: Path | None = None,
         mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    if path is not None:
        stat = path.stat()
        info.size, info.mode, info.mtime = stat.st_size, stat.st_mode & 0o777, stat.st_mtime
        with open(path, "rb") as source:
            archive.addfile(info, source)
    else:
        info.size, info.mode = len(data), mode
        archive.addfile(info, io.BytesIO(data))


def pack(out=None, *, extra=(), cache=None, progress=None) -> Path:
    """Build (or reuse) the archive that ships diffflow to Spark executors; return its path.

    ``out``: also copy it there.  ``extra``: names of other installed packages your code
    needs on executors (e.g. user functors importing ``scipy``).  ``cache``: the folder
    archives are kept in (default :func:`cache_folder`).  ``progress``: a function told what
    is happening, e.g. ``print``.  Use the result with :func:`shipping_settings`, or pass
    ``ship=True`` to :func:`diffflow.runtime.spark.local_session`.

    Example (it copies ~300 MB of packages, so it is not a doctest)::

        archive = pack()
        spark = local_session("spark://head:7077", conf=shipping_settings(archive))
    """
    say = progress or (lambda text: None)
    dists = packed_distributions(extra)
    own_files = list(_diffflow_files())
    folder = Path(cache) if cache is not None else cache_folder()
    archive_path = folder / f"diffflow-env-{_content_hash(dists, own_files)}.tar.gz"
    if archive_path.exists():
        say(f"reusing {archive_path} (same content)")
    else:
        say(f"packing {len(dists)} packages for Python {sys.version_info[0]}."
            f"{sys.version_info[1]} into {archive_path} ...")
        folder.mkdir(parents=True, exist_ok=True)
        manifest = {"format": FORMAT, "python": list(sys.version_info[:3]),
                    "platform": sysconfig.get_platform(),
                    "packages": {d.metadata["Name"]: d.version for d in dists},
                    "left out": LEFT_OUT}
        handle, partial = tempfile.mkstemp(dir=folder, suffix=".partial")
        os.close(handle)
        try:
            # level 1: several times faster than the default for ~10 % more bytes
            with tarfile.open(partial, "w:gz", compresslevel=1,
                              format=tarfile.PAX_FORMAT) as archive:
                _add(archive, "bin/python", _launcher(sys.version_info), mode=0o755)
                _add(archive, "diffflow-env.json",
                     json.dumps(manifest, indent=1, sort_keys=True).encode())
                for relative, data in _diffflow_metadata(dists[0]).items():
                    _add(archive, f"site/{relative}", data)
                for relative, path in own_files:
                    _add(archive, f"site/{relative}", path=path)
                for dist in dists[1:]:
                    for relative, path in _installed_files(dist):
                        _add(archive, f"site/{relative}", path=path)
            os.replace(partial, archive_path)  # whole or absent, for a concurrent pack
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
        older = sorted(folder.glob("diffflow-env-*.tar.gz"), key=os.path.getmtime)
        for stale in older[:-KEEP_ARCHIVES]:
            stale.unlink(missing_ok=True)
        say(f"packed {archive_path} ({archive_path.stat().st_size / 2**20:,.0f} MiB)")
    if out is not None:
        shutil.copyfile(archive_path, out)
        return Path(out)
    return archive_path


def shipping_settings(archive) -> dict:
    """The Spark settings that make executors run the archive :func:`pack` built.

    >>> shipping_settings("/tmp/env.tar.gz")["spark.pyspark.python"]
    './diffflow_env/bin/python'
    """
    location = str(archive)
    if "://" not in location:
        location = os.path.abspath(location)
    return {"spark.archives": f"{location}#{ENV_FOLDER}",
            "spark.pyspark.python": f"./{ENV_FOLDER}/bin/python"}
