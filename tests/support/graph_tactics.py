"""Run a graph tactic's test three ways (operators/reduce_kept.py)."""
import pytest

from diffflow.arrangements import columnar, small
from diffflow.operators.reduce_kept import KeptStates


@pytest.fixture(params=["changes", "rebuilds", "numpy"])
def tactic(request, monkeypatch):
    """Every change applied to the state, every change rebuilding it, or (a fresh process
    before the kernels load) whole groups in numpy."""
    if request.param == "numpy":
        monkeypatch.setattr(small, "loaded", lambda: False)
        monkeypatch.setattr(small, "prefer", lambda *args, **kw: True)
    else:
        columnar.load_kernels()
        monkeypatch.setattr(KeptStates, "SMALL", 10**9 if request.param == "changes" else -10**9)
    return request.param
