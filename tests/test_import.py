"""Importing diffflow must stay cheap: no pyspark, no numba, no kernel compilation."""
import subprocess
import sys


def test_import_does_not_load_pyspark_or_compile_kernels():
    code = (
        "import sys, diffflow, diffflow.collection, diffflow.arrangements.columnar, "
        "diffflow.runtime.local, diffflow.operators.reduce\n"
        "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n"
        "assert 'numba' not in sys.modules, 'numba was imported (kernels must compile lazily)'\n"
        "assert 'diffflow.arrangements._kernels' not in sys.modules\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_public_names():
    import diffflow as dd

    for name in ["Dataflow", "col", "count", "sum", "min", "max"]:
        assert hasattr(dd, name)
