"""Run a test once with the numpy tactics (every size) and once with the kernels."""
import pytest

from diffflow.arrangements import small


@pytest.fixture(params=["small", "kernels"], autouse=True)
def tactic(request, monkeypatch):
    state = dict(small._state)
    if request.param == "small":
        monkeypatch.setitem(small._state, "kernels_loaded", False)
        monkeypatch.setitem(small._state, "small_calls", 0)
        monkeypatch.setitem(small._state, "cold_rows", 0)
        monkeypatch.setattr(small, "LOAD_AFTER", 10 ** 12)
        monkeypatch.setattr(small, "COLD_ROWS", 10 ** 15)
    else:
        monkeypatch.setitem(small._state, "kernels_loaded", True)
    yield request.param
    small._state.update(state)
