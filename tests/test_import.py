"""Importing diffflow must stay cheap: no pyspark, no numba, no kernel compilation."""
import subprocess
import sys
import pytest


@pytest.mark.slow
def test_import_does_not_load_pyspark_or_compile_kernels():
    code = (
        "import sys, diffflow, diffflow.api.collection, diffflow.arrangements.columnar, "
        "diffflow.runtime.local, diffflow.operators.reduce\n"
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n"
        "assert 'numba' not in sys.modules, 'numba was imported (kernels must compile lazily)'\n"
        "assert 'diffflow.arrangements._kernels' not in sys.modules\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.slow
def test_an_untraced_first_query_loads_no_tracing_or_dataclasses():
    # cold start: numpy's import is most of the 0.1 s budget; tracing (json, gzip, the
    # event tables) loads only for a traced run, records avoid dataclasses' import, and a
    # few strings are hashed to their symbol ids without pandas (common/string_hash.py)
    code = (
        "import sys\n"
        "import diffflow as dd\n"
        "flow = dd.Dataflow()\n"
        "e = flow.input('e', ['src', 'dst'])\n"
        "out = e.aggregate(by=['src'], n=dd.count()).output()\n"
        "words = flow.input('words', [('w', str), ('n', int)])\n"
        "total = words.aggregate(by=['w'], total=dd.sum('n')).output()\n"
        "e.insert([(1, 2), (1, 3)]); words.insert([('a', 1), ('b', 2), ('a', 3)])\n"
        "flow.advance()\n"
        "print(sorted(out.snapshot()), sorted(total.snapshot()))\n"
        "heavy = ['dataclasses', 'json', 'gzip', 'diffflow.runtime.tracing', 'pandas']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[(1, 2)] [('a', 4), ('b', 2)]", "[]"]


def test_public_names():
    import diffflow as dd

    for name in ["Dataflow", "col", "count", "sum", "min", "max"]:
        assert hasattr(dd, name)


@pytest.mark.slow
def test_submodules_load_on_first_attribute_access():
    # a fresh interpreter: nothing but `import diffflow as dd` before dd.graphs is touched
    code = (
        "import sys\n"
        "import diffflow as dd\n"
        "assert 'diffflow.graphs' not in sys.modules\n"
        "flow = dd.Dataflow()\n"
        "e, r = flow.input('e', ['src', 'dst']), flow.input('r', ['node'])\n"
        "out = dd.graphs.reachable(e, r).output()\n"
        "assert 'pyspark' not in sys.modules and 'numba' not in sys.modules\n"
        "e.insert([(1, 2), (2, 3), (7, 8)]); r.insert([1]); flow.advance()\n"
        "print(sorted(out.snapshot()))\n"
        "assert dd.runtime.local.__name__ == 'diffflow.runtime.local'\n"
        "assert 'graphs' in dir(dd)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[(1,), (2,), (3,)]"


def test_unknown_attribute_is_an_attribute_error():
    import pytest

    import diffflow as dd

    with pytest.raises(AttributeError, match="no attribute 'graph'"):
        dd.graph  # noqa: B018 - a typo of dd.graphs
