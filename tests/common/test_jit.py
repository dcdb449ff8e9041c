"""Kernels declared with ``diffflow.common.jit.kernel`` load from numba's on-disk cache without
numba's lowering registries (no ``numba.np.arraymath``, so no ``scipy.linalg``), give the same
answers as when compiled, and compile and save on a cache miss."""
import os
import shutil
import subprocess
import sys

from tests.support.paths import REPO
import pytest

LOAD = """
import sys
import numpy as np
from diffflow.arrangements import columnar
rng = np.random.default_rng(0)
rows = rng.integers(0, 1000, (5000, 2))
K = columnar._k()  # from here the kernels serve every size
r, t, d = columnar.consolidate(rows, np.zeros((5000, 1), np.int64), np.ones(5000, np.int64))
q, gr, gt, gd = columnar.gather_prefix(r, t, d, 1, np.arange(0, 1000, 7)[:, None])
registries = ("numba.np.arraymath", "numba.np.linalg", "scipy.linalg")
print(len(r), int(d.sum()), len(q), int(gr.sum()), sum(K.sortedness.stats.cache_hits.values()),
      sorted(m for m in registries if m in sys.modules))
"""


def _run(code, cwd=REPO, path=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *map(str, path)]))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, cwd=cwd, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.split(maxsplit=5)


@pytest.mark.slow
def test_cached_kernels_load_without_the_compilers_registries():
    first = _run(LOAD)   # may compile, if the cache is stale
    second = _run(LOAD)  # loads from the cache
    assert second[:4] == first[:4]
    assert second[4] == "1"  # sortedness came from the cache
    assert second[5].strip() == "[]"


# a kernel module of its own, and a run that prints its answer, cache hits and misses
TWICE = "from diffflow.common.jit import kernel\n\n\n@kernel\ndef twice(x):\n    return 2 * x\n"
TWICE_RUN = ("import twice_kernel as m\n"
             "print(m.twice(21), sum(m.twice.stats.cache_hits.values()),"
             " sum(m.twice.stats.cache_misses.values()))")


@pytest.mark.slow
def test_a_cache_miss_compiles_and_saves(tmp_path):
    (tmp_path / "twice_kernel.py").write_text(TWICE)
    assert _run(TWICE_RUN, tmp_path, [tmp_path]) == ["42", "0", "1"]
    assert _run(TWICE_RUN, tmp_path, [tmp_path]) == ["42", "1", "0"]
    assert any(p.suffix == ".nbi" for p in (tmp_path / "__pycache__").iterdir())


@pytest.mark.slow
def test_the_cache_stays_fresh_when_the_source_is_copied_elsewhere(tmp_path):
    # what shipping kernels to Spark executors relies on: a new folder, a new mtime, same text
    first = tmp_path / "first"
    first.mkdir()
    (first / "twice_kernel.py").write_text(TWICE)
    assert _run(TWICE_RUN, first, [first]) == ["42", "0", "1"]
    moved = tmp_path / "moved"
    shutil.copytree(first, moved)
    os.utime(moved / "twice_kernel.py", (1_000_000_000, 1_000_000_000))
    assert _run(TWICE_RUN, moved, [moved]) == ["42", "1", "0"]
    with open(moved / "twice_kernel.py", "a") as source:  # changed text: compiled again
        source.write("# changed\n")
    assert _run(TWICE_RUN, moved, [moved]) == ["42", "0", "1"]


CHAIN = """
import sys
import numpy as np
from diffflow.operators import _chain_kernels as C
z = lambda *a: np.array(a, np.int64)
totals = C.chain_totals(z(0, 1), z(2), z(0, 2), z(1, 3), z(1, 1), z(0, 1), z(1), z(1))
rule = C.chain_rule(True, z(0, 1), z(2), z(0, 1), z(5), z(0, 1), z(2), z(1), z(0, 1), z(2),
                    z(1), z(0, 0), z(), z(), z())
registries = ("numba.np.arraymath", "numba.np.linalg", "scipy.linalg")
print([a.tolist() for a in totals], [a.tolist() for a in rule],
      sorted(m for m in registries if m in sys.modules))
"""


@pytest.mark.slow
def test_chain_kernels_load_without_the_compilers_registries():
    # the reduce rules over rounds: key 0, new round 2; totals at rounds 2 and 3 (input 1 then
    # 2, output 1); the min rule's one changed row (value 5) present from round 2: +5 there
    _run(CHAIN)  # may compile
    out = " ".join(_run(CHAIN)).strip()
    assert out == ("[[0, 0], [2, 3], [1, 2], [1, 1]] [[0], [2], [5], [1], [False]] []"), out
