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

NODE = ("num", range(6))
SMALL = ("num", range(4))

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
    """, {"item": [NODE], "link": [NODE, NODE], "stock": [SMALL, ("num", range(9))],
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
    """, {"up": [("num", range(7))]}),
    # witnesses of min and max: side variables, a target expression's variables, one
    # bound only inside an aggregate nested in a count, one also injected into an inner count
    "witnesses": ("""
        .decl s(n: number, h: number)
        .decl e(a: number, b: number)
        .decl g(k: number)
        .decl tallest(n: number, h: number)
        .decl lightest(a: number, b: number, w: number)
        .decl above(k: number, n: number, h: number)
        .decl reach(c: number, w: number)
        .decl also(m: number, w: number)
        tallest(n, h) :- h = max x : { s(n, x) }.
        lightest(a, b, w) :- w = min a + b : { e(a, b) }.
        above(k, n, h) :- g(k), h = min x : { s(n, x), x > k }.
        reach(c, w) :- c = count : { e(x, _), x > min y : { s(y, w) } }.
        also(m, w) :- m = max x : { e(x, w), x < count : { s(_, w) } }.
    """, {"s": [SMALL, SMALL], "e": [SMALL, SMALL], "g": [SMALL]}),
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


# -- witnesses -----------------------------------------------------------------------------

def _witnesses_by_hand(facts):
    """The witness relations computed directly from the facts (no Datalog)."""
    s, e, g = facts["s"], facts["e"], facts["g"]
    out = {}
    top = max((h for _, h in s), default=None)
    out["tallest"] = {(n, h) for n, h in s if h == top}
    low = min((a + b for a, b in e), default=None)
    out["lightest"] = {(a, b, a + b) for a, b in e if a + b == low}
    out["above"] = set()
    for k, in g:
        hs = [h for _, h in s if h > k]
        out["above"] |= {(k, n, h) for n, h in s if hs and h == min(hs)}
    first = min((y for y, _ in s), default=None)
    count = len({x for x, _ in e if first is not None and x > first})
    out["reach"] = {(count, w) for y, w in s if y == first}
    out["also"] = set()
    for w in {w for _, w in e}:
        xs = [x for x, w2 in e if w2 == w and x < len([1 for _, v in s if v == w])]
        if xs:
            out["also"].add((max(xs), w))
    best = max((m for m, _ in out["also"]), default=None)
    out["also"] = {(m, w) for m, w in out["also"] if m == best}
    return out


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 2])
def test_witnesses_under_random_updates_against_a_direct_computation(partitions):
    import random
    source, inputs = PROGRAMS["witnesses"]
    rng = random.Random(41)
    program = dd.Program(source, partitions=partitions)
    facts = {name: set() for name in inputs}
    for step in range(6):
        for name, columns in inputs.items():
            rows = {tuple(rng.choice(list(values)) for _, values in columns) for _ in range(3)}
            if step % 3 == 2 and facts[name]:  # every third step removes some rows too
                gone = set(rng.sample(sorted(facts[name]), min(2, len(facts[name]))))
                program.remove(name, sorted(gone))
                facts[name] -= gone
            program.insert(name, sorted(rows - facts[name]))
            facts[name] |= rows
        program.commit()
        want = _witnesses_by_hand(facts)
        for name, rows in want.items():
            assert program.relation(name) == rows, (step, name)
    program.close()


def test_witnesses_by_hand():
    p = _rows(PROGRAMS["witnesses"][0], {
        "s": {(1, 3), (2, 3), (3, 1)}, "e": {(0, 2), (1, 1), (3, 0)}, "g": {(0,), (2,)}})
    assert p.relation("tallest") == {(1, 3), (2, 3)}  # both reach the max 3
    assert p.relation("lightest") == {(0, 2, 2), (1, 1, 2)}  # 0+2 and 1+1 tie; 3+0 is 3
    # above 0: the lowest height is 1 (n = 3); above 2: 3 (n = 1 and 2)
    assert p.relation("above") == {(0, 3, 1), (2, 1, 3), (2, 2, 3)}
    # the lowest s name is 1 (w = 3); e rows with x > 1: 3 (one distinct x)
    assert p.relation("reach") == {(1, 3)}
    p.remove("s", [(2, 3)]); p.commit()  # a witness goes: its rows go
    assert p.relation("tallest") == {(1, 3)}
    assert p.relation("above") == {(0, 3, 1), (2, 1, 3)}
    p.insert("s", [(0, 7)]); p.commit()  # a new extremum replaces them
    assert p.relation("tallest") == {(0, 7)}
    assert p.relation("reach") == {(2, 7)}  # lowest name 0 now, e's x > 0: 1 and 3


def test_a_target_variable_is_local_even_when_the_rule_binds_it():
    # as in Soufflé: max x ranges over all of f, not the f(x) of the rule's x
    p = _rows("""
        .decl e(x: number)
        .decl f(x: number)
        .decl r(x: number, m: number)
        r(x, m) :- e(x), m = max x : { f(x) }.
    """, {"e": {(1,), (2,)}, "f": {(1,), (5,)}})
    assert p.relation("r") == {(1, 5), (2, 5)}


@pytest.mark.parametrize("rule, message, at", [
    # count, sum and mean have no witness (Soufflé: "Witness problem")
    ("r(x, n) :- n = count : { e(x, _) }.", "variable 'x' is bound only inside this count",
     (4, 28)),
    ("r(x, n) :- n = sum y : { e(x, y) }.", "only min and max have witnesses", (4, 28)),
    # a witness of a min inside a max's body that uses the max's variable
    ("r(x, n) :- n = max y : { e(y, _), y < min z : { e(z, x), z > y } }.",
     "uses that body's variable 'y' is not supported", (4, 39)),
    # Soufflé's mutually dependent aggregates
    ("r(x, n) :- e(x, n), 0 = count : { e(a, n), a < x }, 0 = count : { e(x, b), b < n }.",
     "mutually dependent aggregates", (4, 25)),
])
def test_scope_errors_are_located(rule, message, at):
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(".decl e(a: number, b: number)\n.decl r(a: number, b: number)\n\n"
                   + rule + "\n", filename="w.dl")
    text = str(caught.value)
    assert message in text and f"w.dl:{at[0]}:{at[1]}:" in text, text
