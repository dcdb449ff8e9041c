"""Datalog min/max through recursion under random inserts/removes vs the reference."""
import pytest

from tests.datalog import test_incremental as base
from tests.support.both_tactics import tactic  # noqa: F401  (autouse: small tactics and kernels)

NODE = ("num", range(0, 8))
W = ("num", range(0, 5))
FW = ("float", [0.0, 0.5, 1.25, 2.0, 3.5])

EXTRA = {
    "widest_path": ("""
        .decl edge(x: number, y: number, w: number)
        .decl source(x: number)
        .decl cand(x: number, c: number)
        .decl width(x: number, c: number)
        cand(x, 100) :- source(x).
        cand(y, d) :- width(x, d), edge(x, y, w), d <= w.
        cand(y, w) :- width(x, d), edge(x, y, w), w < d.
        width(x, c) :- cand(x, _), c = max v : { cand(x, v) }.
    """, {"edge": [NODE, NODE, W], "source": [NODE]}),
    "components_max_and_sizes": ("""
        .decl edge(x: number, y: number)
        .decl node(x: number)
        .decl label(x: number, l: number)
        .decl cc(x: number, l: number)
        .decl size(l: number, n: number)
        .decl lonely(x: number)
        node(x) :- edge(x, _) ; edge(_, x).
        label(x, x) :- node(x).
        label(y, l) :- cc(x, l), (edge(x, y) ; edge(y, x)).
        cc(x, l) :- label(x, _), l = max m : { label(x, m) }.
        size(l, n) :- cc(_, l), n = count : { cc(_, l) }.
        lonely(x) :- cc(x, x), !edge(x, _).
    """, {"edge": [NODE, NODE]}),
    "sssp_two_hops_and_unreached": ("""
        .decl edge(x: number, y: number, w: number)
        .decl source(x: number)
        .decl cand(x: number, d: number)
        .decl dist(x: number, d: number)
        .decl far(x: number)
        .decl node(x: number)
        .decl unreached(x: number)
        node(x) :- edge(x, _, _) ; edge(_, x, _).
        cand(x, 0) :- source(x).
        cand(y, d + w) :- dist(x, d), edge(x, y, w).
        cand(z, d + w + v) :- dist(x, d), edge(x, y, w), edge(y, z, v).
        dist(x, d) :- cand(x, _), d = min c : { cand(x, c) }.
        far(x) :- dist(x, d), d > 3.
        unreached(x) :- node(x), !dist(x, _).
    """, {"edge": [NODE, NODE, W], "source": [("num", range(0, 3))]}),
    "float_min_recursion": ("""
        .decl edge(x: number, y: number, w: float)
        .decl source(x: number)
        .decl cand(x: number, d: float)
        .decl dist(x: number, d: float)
        cand(x, 0.0) :- source(x).
        cand(y, d + w) :- dist(x, d), edge(x, y, w).
        dist(x, d) :- cand(x, _), d = min c : { cand(x, c) }.
    """, {"edge": [NODE, NODE, FW], "source": [("num", range(0, 3))]}),
    "min_not_recursive_over_joins": ("""
        .decl e(x: number, y: number)
        .decl v(x: number, w: number)
        .decl lo(x: number, m: number)
        .decl hi(x: number, m: number)
        .decl both(x: number, a: number, b: number)
        lo(x, m) :- e(x, _), m = min w : { e(x, y), v(y, w) }.
        hi(x, m) :- e(x, _), m = max w : { e(x, y), v(y, w) }.
        both(x, a, b) :- lo(x, a), hi(x, b), a != b.
    """, {"e": [NODE, NODE], "v": [NODE, ("num", range(-3, 4))]}),
}


@pytest.fixture(autouse=True)
def _extra_programs(monkeypatch):
    for k, v in EXTRA.items():
        monkeypatch.setitem(base.PROGRAMS, k, v)


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", sorted(EXTRA) + ["shortest_paths", "components"])
def test_extra_programs(name, seed, partitions):
    base.check_program_against_reference(name, 100 + seed, partitions, steps=10)
