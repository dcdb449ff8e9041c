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
    (other installed packages your code uses on executors: distribution or import names,
    e.g. ``scikit-learn`` or ``sklearn``) and theirs.

    >>> names = [d.metadata["Name"].lower() for d in packed_distributions()]
    >>> "numpy" in names and "pyspark" not in names and names[0]
    'diffflow'
    """
    from packaging.requirements import InvalidRequirement, Requirement

    wanted = []
    for text in extra:
        try:
            wanted.append(Requirement(text).name)  # ("networkx>=3", "pandas[performance]")
        except InvalidRequirement:
            raise ValueError(f"cannot pack {text!r}: name an installed package, e.g. "
                             "--with scipy") from None
    found, order = {}, []
    queue = [("diffflow", None)] + [(name, None) for name in wanted]
    while queue:
        name, wanted_by = queue.pop(0)
        key = _key(name)
        if key in found or (key in LEFT_OUT and name not in wanted):
            continue
        dist = _installed(name, wanted_by)
        if wanted_by is None and name != "diffflow" and _editable(dist):
            raise ValueError(
                f"cannot pack {name}: it is an editable install (pip install -e), whose code "
                f"stays in its source folder; install it normally (pip install PATH) or put "
                f"its folder on the executors another way (spark.archives, --py-files)")
        found[key] = dist
        order.append(dist)
        for text in dist.requires or ():
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                queue.append((requirement.name, dist.metadata["Name"]))
    return order


def _installed(name: str, wanted_by):
    try:
        return metadata.distribution(name)
    except metadata.PackageNotFoundError:
        pass
    owners = metadata.packages_distributions().get(name, ())  # an import name: sklearn
    if wanted_by is None and owners:
        return metadata.distribution(owners[0])
    needed = f" (needed by {wanted_by})" if wanted_by else ""
    raise ValueError(f"cannot pack {name}{needed}: it is not installed in this Python "
                     f"({sys.executable})")


def _editable(dist) -> bool:
    """Installed with ``pip install -e`` (PEP 610's ``direct_url.json`` says so)."""
    try:
        text = dist.read_text("direct_url.json")
        return bool(text and json.loads(text).get("dir_info", {}).get("editable"))
    except (OSError, ValueError):
        return False


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
    # (POSIX sh only: no dirname, hostname or readlink, which a slim image may lack)
    return f"""#!/bin/sh
# diffflow's Spark archive: run this host's Python {major}.{minor} with the packed packages first.
case "$0" in */*) bin="${{0%/*}}" ;; *) bin=. ;; esac
here=$(CDPATH= cd -- "$bin/.." && pwd)
PYTHONPATH="$here/site${{PYTHONPATH:+:$PYTHONPATH}}"
export PYTHONPATH
# numba looks for the shipped kernels beside their sources, not in a cache folder of its own
unset NUMBA_CACHE_DIR
for python in {want} python3; do
  if command -v "$python" >/dev/null 2>&1 && \\
     "$python" -c 'import sys; sys.exit(sys.version_info[:2] != ({major}, {minor}))' 2>/dev/null
  then
    exec "$python" "$@"
  fi
done
found=$(python3 -c 'import sys; print("python3 is %d.%d" % sys.version_info[:2])' 2>/dev/null \\
        || echo "no python3 either")
echo "diffflow's Spark archive holds packages for Python {major}.{minor}, but this executor \\
($(uname -n 2>/dev/null || echo "its host")) has no {want} on PATH ($found): install Python {major}.{minor} on the executors, \\
or pack with a Python of the executors' version (diffflow spark-pack)" >&2
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
        if relative.suffix == ".pyc":  # (bytecode follows the sources: rewritten, not changed)
            continue
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

    ``out``: also copy it there (a folder: under the archive's name); the copy's path is
    returned then.  ``extra``: other installed packages your code needs on executors (e.g.
    user functors importing ``scipy``).  ``cache``: the folder
    archives are kept in (default :func:`cache_folder`).  ``progress``: a function told what
    is happening, e.g. ``print``.  Use the result with :func:`shipping_settings`, or pass
    ``ship=True`` to :func:`diffflow.runtime.spark.local_session`.

    Example (it copies ~300 MB of packages, so it is not a doctest)::

        archive = pack()
        spark = local_session("spark://head:7077", conf=shipping_settings(archive))
    """
    say = progress or (lambda text: None)
    if out is not None:  # (a bad place to copy to fails before seconds of packing)
        out = Path(out)
        if not out.parent.is_dir():
            raise ValueError(f"cannot write the archive to {out}: no folder {out.parent}")
    if os.environ.get("NUMBA_CACHE_DIR"):
        say(f"note: NUMBA_CACHE_DIR is set, so this Python keeps compiled kernels in "
            f"{os.environ['NUMBA_CACHE_DIR']}, which is not packed: executors compile them")
    dists = packed_distributions(extra)
    own_files = list(_diffflow_files())
    folder = Path(cache) if cache is not None else cache_folder()
    archive_path = folder / f"diffflow-env-{_content_hash(dists, own_files)}.tar.gz"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if archive_path.exists():
            say(f"reusing {archive_path} (same content)")
            os.utime(archive_path)  # (most recently used: the last to be evicted)
        else:
            _write(archive_path, dists, own_files, say)
    except PermissionError as exc:
        raise ValueError(f"cannot keep the archive in {folder} ({exc.strerror}): set "
                         f"DIFFFLOW_CACHE_DIR to a folder you can write") from None
    older = sorted(folder.glob("diffflow-env-*.tar.gz"), key=os.path.getmtime)
    for stale in older[:-KEEP_ARCHIVES]:
        if stale != archive_path:
            stale.unlink(missing_ok=True)
    if out is not None:
        if out.is_dir():
            out = out / archive_path.name
        shutil.copyfile(archive_path, out)
        return out
    return archive_path


def _write(archive_path: Path, dists, own_files, say) -> None:
    """Write the archive: to a temporary file first, renamed when whole."""
    say(f"packing {len(dists)} packages for Python {sys.version_info[0]}."
        f"{sys.version_info[1]} into {archive_path} ...")
    manifest = {"format": FORMAT, "python": list(sys.version_info[:3]),
                "platform": sysconfig.get_platform(),
                "packages": {d.metadata["Name"]: d.version for d in dists},
                "left out": LEFT_OUT}
    handle, partial = tempfile.mkstemp(dir=archive_path.parent, suffix=".partial")
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
        os.chmod(partial, 0o644)  # (mkstemp's 0600: others on the host may submit it too)
        os.replace(partial, archive_path)  # whole or absent, for a concurrent pack
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    say(f"packed {archive_path} ({archive_path.stat().st_size / 2**20:,.0f} MiB)")


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
