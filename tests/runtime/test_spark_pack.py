"""``diffflow spark-pack``: the archive that ships diffflow to Spark executors runs diffflow on
a Python without site-packages, is built once per content, says what is missing on a host
without the right Python, and the options that use it refuse what cannot work.  (The cluster
tests run real executors on it: ``test_spark_cluster.py``.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from diffflow.cli import main
from diffflow.runtime.spark import _executor_python, _ship
from diffflow.runtime.spark_slots import executor_python_problem
from diffflow.runtime.spark_pack import (ENV_FOLDER, KEEP_ARCHIVES, pack, packed_distributions,
                                         shipping_settings)
from tests.support.standalone import python_without_diffflow


@pytest.fixture(scope="module")
def packed(tmp_path_factory, shipped_archive):
    archive, cache = shipped_archive  # (cache named as DIFFFLOW_CACHE_DIR's)
    unpacked = tmp_path_factory.mktemp("executor") / ENV_FOLDER
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="tar")
    return archive, cache, unpacked


@pytest.mark.slow
def test_the_packages_are_diffflows_requirements_without_sparks_and_the_drivers():
    names = {d.metadata["Name"].lower() for d in packed_distributions()}
    assert {"diffflow", "numpy", "numba", "llvmlite", "pyarrow", "pandas", "lark",
            "cloudpickle"} <= names
    assert not names & {"pyspark", "py4j", "starlette", "uvicorn", "plotly", "matplotlib",
                        "pytest"}
    assert "networkx" in {d.metadata["Name"].lower()
                          for d in packed_distributions(extra=["networkx"])}
    with pytest.raises(ValueError, match="cannot pack no-such-package: it is not installed"):
        packed_distributions(extra=["no-such-package"])
    # a requirement's text and an import name find the installed distribution
    for text in ("networkx>=3", "hypothesis[cli]", "attr"):
        names = [d.metadata["Name"].lower() for d in packed_distributions(extra=[text])]
        assert {"networkx>=3": "networkx", "hypothesis[cli]": "hypothesis",
                "attr": "attrs"}[text] in names
    with pytest.raises(ValueError, match="cannot pack 'a b': name an installed package"):
        packed_distributions(extra=["a b"])


def test_an_editable_package_is_refused_with_what_to_do(tmp_path, monkeypatch):
    # an editable install's RECORD lists a .pth, not the code: shipping it would ship nothing
    info = tmp_path / "mycode-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mycode\nVersion: 1.0\n")
    (info / "RECORD").write_text("__editable__.mycode-1.0.pth,,\n")
    (info / "direct_url.json").write_text(
        json.dumps({"url": "file:///src/mycode", "dir_info": {"editable": True}}))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="cannot pack mycode: it is an editable install "
                                         r"\(pip install -e\)"):
        packed_distributions(extra=["mycode"])


def test_a_bad_place_for_the_archive_fails_before_packing(tmp_path):
    said = []
    with pytest.raises(ValueError, match="cannot write the archive to .*: no folder"):
        pack(tmp_path / "missing" / "env.tar.gz", cache=tmp_path, progress=said.append)
    assert said == [] and not list(tmp_path.glob("*.tar.gz"))


@pytest.mark.slow
def test_the_archive_runs_diffflow_on_a_python_without_packages(packed, tmp_path):
    archive, cache, unpacked = packed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env.update({k: v for k, v in python_without_diffflow(tmp_path).items() if v is not None})
    code = ("import sys, numpy as np, diffflow as dd\n"
            "flow = dd.Dataflow()\n"
            "edges = flow.input('edges', ['src', 'dst'])\n"
            "out = edges.aggregate(by=['src'], n=dd.count()).output()\n"
            "edges.insert([(1, 2), (1, 3), (2, 3)]); flow.advance()\n"
            "print(sorted(out.snapshot()), dd.__file__, 'site' in sys.modules, sep='|')\n")
    done = subprocess.run([str(unpacked / "bin" / "python"), "-c", code], capture_output=True,
                          text=True, env=env, cwd=unpacked.parent, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    counts, where, site = done.stdout.strip().split("|")
    assert (counts, site) == ("[(1, 2), (2, 1)]", "False")  # (no site-packages at all)
    assert where == str(unpacked / "site" / "diffflow" / "__init__.py")
    manifest = json.loads((unpacked / "diffflow-env.json").read_text())
    assert manifest["python"][:2] == list(sys.version_info[:2])
    assert "pyspark" not in manifest["packages"] and "numpy" in manifest["packages"]
    # built once per content: the same archive again, without packing, and kept the longest
    older = [cache / f"diffflow-env-{n}.tar.gz" for n in ("a", "b", "c")]
    for stale in older:
        stale.write_bytes(b"")
    current, _ = reused(lambda said: pack(cache=cache, progress=said.append))
    assert current.exists() and not older[0].exists()  # (the oldest went)
    assert len(list(cache.glob("diffflow-env-*.tar.gz"))) <= KEEP_ARCHIVES
    assert current.stat().st_mode & 0o777 == 0o644


def reused(pack_once, tries: int = 5):
    """``pack_once(said)`` twice in a row: the second reuses the first's archive, saying so
    (in ``said``, returned with the archive).

    The content is this checkout's files *and its cached kernels*, which the suite's other
    processes add to as they compile (a fresh clone starts with none): a kernel cached
    between the two calls makes a new archive, rightly, and the pair is tried again.
    """
    for _ in range(tries):
        first = pack_once([])
        said: list = []
        if pack_once(said) == first:
            assert said[0] == f"reusing {first} (same content)", said
            return first, said
    raise AssertionError(f"the archive was packed anew on each of {tries} tries")


@pytest.mark.slow
def test_a_host_without_the_right_python_is_told_what_to_install(packed, tmp_path):
    _, _, unpacked = packed
    empty = tmp_path / "bin"
    empty.mkdir()
    done = subprocess.run([str(unpacked / "bin" / "python"), "-c", "pass"], capture_output=True,
                          text=True, env={"PATH": f"{empty}:/nonexistent"}, timeout=60)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert done.returncode == 127
    assert f"holds packages for Python {version}" in done.stderr
    assert f"no python{version} on PATH (no python3 either): install Python {version} on the " \
           "executors" in done.stderr


@pytest.mark.slow
def test_the_command_reuses_the_cached_archive_and_prints_how_to_use_it(packed, tmp_path,
                                                                        monkeypatch, capsys):
    _, cache, _ = packed
    monkeypatch.setenv("DIFFFLOW_CACHE_DIR", str(cache.parent))
    copy = tmp_path / "env.tar.gz"

    def command(said: list):
        assert main(["spark-pack", str(copy)]) == 0
        out, err = capsys.readouterr()
        assert out == f"{copy}\n"
        said += err.splitlines()
        (made,) = [line.split()[1] for line in said if line.split()[0] in ("reusing", "packed")]
        return Path(made)

    archive, said = reused(command)
    assert f"--conf spark.archives={copy}#{ENV_FOLDER} " \
           f"--conf spark.pyspark.python=./{ENV_FOLDER}/bin/python" in "\n".join(said)
    assert copy.read_bytes() == archive.read_bytes()


def test_the_archives_message_reaches_the_driver():
    class Context:
        pythonExec, master = "./diffflow_env/bin/python", "spark://head:7077"
    failure = Exception(
        "An error occurred while calling collectAndServe.\n: org.apache.spark.SparkException: "
        "Error from python worker:\n  diffflow's Spark archive holds packages for Python 3.11, "
        "but this executor (node7) has no python3.11 on PATH (python3 is 3.9): install Python "
        "3.11 on the executors, \n  or pack with a Python of the executors' version (diffflow "
        "spark-pack)\nPYTHONPATH was: ...\n\tat org.apache.spark...")
    assert executor_python_problem(Context(), failure) == (
        "diffflow's Spark archive holds packages for Python 3.11, but this executor (node7) has "
        "no python3.11 on PATH (python3 is 3.9): install Python 3.11 on the executors, or pack "
        "with a Python of the executors' version (diffflow spark-pack)")
    missing = executor_python_problem(Context(), Exception("No module named 'diffflow'"))
    assert "Ship diffflow with the job (diffflow run --ship" in missing


def test_a_shipped_sessions_python_does_not_outlive_it(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    _executor_python("spark://head:7077", f"./{ENV_FOLDER}/bin/python")
    assert os.environ["PYSPARK_PYTHON"] == f"./{ENV_FOLDER}/bin/python"
    _executor_python("local[2]", None)  # a local session after it runs this interpreter
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    _executor_python("spark://head:7077", None)  # and a cluster session, Spark's default
    assert "PYSPARK_PYTHON" not in os.environ
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python")  # the user's own stays
    _executor_python("spark://head:7077", "./x")
    _executor_python("local[2]", None)
    assert os.environ["PYSPARK_PYTHON"] == "/opt/python"


def test_shipping_settings_name_the_archive_and_its_python(tmp_path):
    archive = tmp_path / "env.tar.gz"
    assert shipping_settings(archive) == {
        "spark.archives": f"{archive}#{ENV_FOLDER}",
        "spark.pyspark.python": f"./{ENV_FOLDER}/bin/python"}
    assert shipping_settings("hdfs://nn/envs/env.tar.gz")["spark.archives"] == \
        f"hdfs://nn/envs/env.tar.gz#{ENV_FOLDER}"


def test_shipping_keeps_the_users_archives_and_refuses_a_second_python(tmp_path):
    archive = tmp_path / "env.tar.gz"
    archive.write_bytes(b"")
    settings = {"spark.archives": "/data/extra.zip#extra"}
    _ship(settings, str(archive))
    assert settings["spark.archives"] == f"/data/extra.zip#extra,{archive}#{ENV_FOLDER}"
    with pytest.raises(ValueError, match="sets spark.pyspark.python to the archive's Python; "
                                         "drop one of them"):
        _ship({"spark.pyspark.python": "/opt/py"}, str(archive))
    with pytest.raises(ValueError, match="no archive to ship at .*: build one with "
                                         "`diffflow spark-pack`"):
        _ship({}, str(tmp_path / "missing.tar.gz"))


def test_ship_without_spark_is_refused_before_anything_runs(tmp_path, capsys):
    program = tmp_path / "p.dl"
    program.write_text(".decl a(x: number)\n.output a\na(1).\n")
    for option in (["--ship"], ["--ship-with", "networkx"]):
        assert main(["run", str(program), "-D", str(tmp_path), *option]) == 1
        assert "--ship sends diffflow to Spark's executors: it needs --spark MASTER" in \
            capsys.readouterr().err
    assert not (tmp_path / "a.csv").exists()
