"""Aggregates inside aggregates, ``range`` and constraint-only bodies, witnesses, scopes.

Soufflé's semantics, pinned by hand-computed outcomes (each test says how) and by random
inserts/removes checked at every commit against the reference evaluator
(``tests/support/datalog_reference.py``), at one partition and at two.
"""
import pytest

import diffflow as dd
from diffflow.common.errors import DatalogWarning
from tests.datalog import test_incremental as base
from tests.support.datalog_reference import evaluate

# (a correlated body joined on no variable is a cross product, and is warned about)
pytestmark = pytest.mark.filterwarnings("ignore", category=DatalogWarning)

NODE = ("num", range(0, 6))
SMALL = ("num", range(0, 4))

PROGRAMS = {
    # a sum of counts, a min of sums correlated by the rule's variable, a max of counts
    "nested_aggregates": ("""
        .decl item(p: number)
        .decl link(a: number, b: number)
        .decl stock(p: number, q: number)
        .decl sale(p: number, m: number, q: number)
        .decl degrees(s: number)
        .decl half_gone(p: number, m: number)
        .decl busiest(n: number)
        degrees(s) :- s = sum d : { item(p), d = count : { link(p, _) } }.
        half_gone(p, m) :- stock(p, q),
            m = min c : { sale(_, c, _), t = sum v : { sale(p, k, v), k <= c }, 2 * t >= q }.
        busiest(n) :- n = max d : { item(p), d = count : { link(p, x), item(x) } }.
    """, {"item": [NODE], "link": [NODE, NODE], "stock": [SMALL, ("num", range(0, 9))],
          "sale": [SMALL, SMALL, SMALL]}),
    # range(...) in an aggregate's body, with and without atoms; a body of constraints only
    "range_in_aggregates": ("""
        .decl up(n: number)
        .decl evens(n: number, c: number)
        .decl below(n: number, s: number)
        .decl one(n: number, s: number)
        evens(n, c) :- up(n), c = count : { i = range(0, n), i % 2 = 0 }.
        below(n, s) :- up(n), s = sum i : { up(i), j = range(i, n), j = i + 1 }.
        one(n, s) :- up(n), s = sum k : { k = n * 2, k > 3 }.
    """, {"up": [("num", range(0, 7))]}),
}


@pytest.fixture(autouse=True)
def _programs(monkeypatch):
    for k, v in PROGRAMS.items():
        monkeypatch.setitem(base.PROGRAMS, k, v)


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 2])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_under_random_updates(name, partitions):
    base.check_program_against_reference(name, 7, partitions, steps=4)


def _rows(source, facts):
    program = dd.Program(source)
    for name, rows in facts.items():
        program.insert(name, sorted(rows))
    program.commit()
    return program


# -- nested aggregates ---------------------------------------------------------------------

def test_nested_aggregates_by_hand():
    source, _ = PROGRAMS["nested_aggregates"]
    facts = {"item": {(1,), (2,), (3,)}, "link": {(1, 2), (1, 3), (2, 3), (4, 1)},
             "stock": {(1, 6), (2, 2)},
             "sale": {(1, 1, 1), (1, 2, 1), (1, 3, 2), (2, 1, 0), (2, 3, 1)}}
    p = _rows(source, facts)
    # counts of links out of items 1, 2, 3: 2, 1, 0; their sum 3
    assert p.relation("degrees") == {(3,)}
    # item 1 (stock 6): sales to month 1, 2, 3 sum to 1, 2, 4; 2 * 4 >= 6 first at month 3;
    # item 2 (stock 2): 0 at month 1 (2 * 0 < 2), 0 at 2, 1 at 3 (2 >= 2): month 3
    assert p.relation("half_gone") == {(1, 3), (2, 3)}
    # links into items: from 1 two (2, 3), from 2 one (3): the max is 2
    assert p.relation("busiest") == {(2,)}
    p.insert("sale", [(2, 2, 1)]); p.commit()  # item 2 reaches 1 at month 2 now
    assert p.relation("half_gone") == {(1, 3), (2, 2)}
    assert evaluate(source, {**facts, "sale": facts["sale"] | {(2, 2, 1)}})["half_gone"] == \
        p.relation("half_gone")


def test_a_body_with_an_aggregate_inside_ranges_over_distinct_bindings():
    # as Soufflé materialises it: count : { b(x, _), x > min ... } counts the distinct x
    # (one: 2), not the four b rows; without an inner aggregate the rows are counted
    p = _rows("""
        .decl b(x: number, y: number)
        .decl d(y: number)
        .decl r(n: number, m: number)
        r(n, m) :- n = count : { b(x, _), x > min y : { d(y) } }, m = count : { b(x, _) }.
    """, {"b": {(2, 1), (2, 2), (2, 3), (2, 4)}, "d": {(1,)}})
    assert p.relation("r") == {(1, 4)}


# -- range(...) and constraint-only bodies -------------------------------------------------

def test_range_and_constraint_only_bodies_by_hand():
    source, _ = PROGRAMS["range_in_aggregates"]
    p = _rows(source, {"up": {(0,), (3,), (5,)}})
    # even numbers below n: 0 -> none, 3 -> 0, 2; 5 -> 0, 2, 4
    assert p.relation("evens") == {(0, 0), (3, 2), (5, 3)}
    # i in up with i + 1 in [i, n): n = 5: i = 0 and 3 (0+1 < 5, 3+1 < 5): 3; n = 3: i = 0
    assert p.relation("below") == {(0, 0), (3, 0), (5, 3)}
    # one binding k = 2n when 2n > 3: 6 and 10; else the empty sum 0
    assert p.relation("one") == {(0, 0), (3, 6), (5, 10)}


def test_soufflés_shapes_range_with_an_injected_bound_and_a_constant_sum():
    p = _rows("""
        .decl t(n: number, m: number)
        t(n, m) :- x = 2, n = count : { _y = range(x, 10) }, m = sum s : { s = 1 }.
    """, {})
    assert p.relation("t") == {(8, 1)}  # 2..9: eight values; one binding s = 1
