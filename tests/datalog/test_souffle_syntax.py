"""Soufflé syntax diffflow reads as Soufflé does (issue 41): IPv4 literals, negated groups in
a body, facts aggregating over atoms, atoms named like a functor.

Every expected value is worked out by hand in the comments beside it.
"""
from __future__ import annotations

import pytest

import diffflow as dd
from diffflow.datalog.passes import analyse
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.parser import parse
from tests.support.datalog_reference import evaluate


def _error(source: str) -> DatalogError:
    with pytest.raises(DatalogError) as info:
        analyse(parse(source, "prog.dl"), source)
    return info.value


def _run(source: str, partitions: int = 1, **facts) -> dd.Program:
    program = dd.Program(source, partitions=partitions)
    for name, rows in facts.items():
        program.insert(name, rows)
    program.commit()
    return program


# -- IPv4 literals -------------------------------------------------------------------------

def test_an_ipv4_literal_is_the_number_of_its_four_bytes():
    source = """
        .decl host(ip: number)
        host(0.0.0.7). host(10.1.0.2). host(192.168.0.1). host(255.255.255.254).
        .decl local(ip: number)
        local(x) :- host(x), x != 10.1.0.2, x < 1.0.0.0.
    """
    program = _run(source)
    # 10.1.0.2 = 10 * 2^24 + 1 * 2^16 + 2 = 167837698; 192.168.0.1 = 3232235521 wraps to 32-bit
    # signed: 3232235521 - 2^32 = -1062731775; 255.255.255.254 = 2^32 - 2 wraps to -2
    assert program.relation("host") == {(7,), (167837698,), (-1062731775,), (-2,)}
    # below 1.0.0.0 = 16777216 and not 10.1.0.2: 7 and the two negative ones
    assert program.relation("local") == {(7,), (-1062731775,), (-2,)}


def test_an_ipv4_literal_with_a_part_over_255_is_a_located_error():
    error = _error(".decl host(ip: number)\nhost(10.0.300.1).")
    assert (error.line, error.column) == (2, 6)
    assert "out of range" in error.message and "255" in error.message


# -- negated groups: De Morgan into disjunctive normal form ---------------------------------

NEGATED_GROUPS = """
    .decl u(x: number)
    .decl b(x: number)
    .decl d(x: number)
    .decl neither(x: number)
    .decl not_both(x: number)
    .decl odd_bangs(x: number)
    .decl mixed(x: number)
    neither(x) :- u(x), !(b(x) ; d(x)).
    not_both(x) :- u(x), !(b(x), d(x)).
    odd_bangs(x) :- u(x), !!!(b(x) ; d(x)).
    mixed(x) :- u(x), !(!b(x) ; x >= 3), !(x = 0).
    .decl counted(n: number)
    counted(n) :- n = count : { u(x), !(b(x) ; d(x)) }.
"""


@pytest.mark.parametrize("partitions", [1, 2])
def test_a_negated_group_is_expanded_by_de_morgan(partitions):
    program = _run(NEGATED_GROUPS, partitions, u=[(0,), (1,), (2,), (3,), (4,)],
                   b=[(0,), (1,), (2,), (3,)], d=[(2,), (4,)])
    # u = 0..4, b = 0..3, d = {2, 4}
    assert program.relation("neither") == set()                  # every x is in b or d
    assert program.relation("not_both") == {(0,), (1,), (3,), (4,)}  # b and d: only 2
    assert program.relation("odd_bangs") == set()                 # !!! is !
    # !(!b ; x >= 3) = b(x), x < 3; and x != 0: 1 and 2
    assert program.relation("mixed") == {(1,), (2,)}
    assert program.relation("counted") == {(0,)}                  # as neither: none
    program.remove("b", [(2,), (0,)])
    program.insert("u", [(7,)])
    program.commit()
    # b = {1, 3}, u = {0..4, 7}: neither b nor d: 0 and 7; b and d: none; b, x < 3, x != 0: 1
    assert program.relation("neither") == {(0,), (7,)}
    assert program.relation("not_both") == {(0,), (1,), (2,), (3,), (4,), (7,)}
    assert program.relation("odd_bangs") == {(0,), (7,)}
    assert program.relation("mixed") == {(1,)}
    assert program.relation("counted") == {(2,)}                  # 0 and 7
    facts = {"u": {(0,), (1,), (2,), (3,), (4,), (7,)}, "b": {(1,), (3,)}, "d": {(2,), (4,)}}
    expected = evaluate(NEGATED_GROUPS, facts)
    assert all(program.relation(r) == expected[r] for r in program.relations)


def test_a_negated_group_reads_as_its_expansion():
    from diffflow.datalog.syntax.render import render_rule

    rules = parse("r(x) :- u(x), !(a(x) ; x < 3).\n"
                  "r(x) :- u(x), !(a(x), !c(x)), !!b(x).").rules
    assert [render_rule(r) for r in rules] == [
        "r(x) :- u(x), !a(x), x >= 3.",
        "r(x) :- u(x), (!a(x); c(x)), b(x)."]


# -- facts aggregating over atoms: rules with no body ---------------------------------------

FACT_AGGREGATES = """
    .decl w(x: number)
    .decl total(s: number)
    total(sum x : { w(x) }).
    .decl tagged(k: number, t: symbol, n: number)
    tagged(1, "sum", sum x : { true, w(x) }).
    tagged(2, "count", count : { w(_), true } + 1).
    tagged(3, "none", count : { w(_), false }).
    .decl least(m: number)
    least(min x : { w(x), x > 2 }).
"""


@pytest.mark.parametrize("partitions", [1, 2])
def test_a_fact_aggregating_over_atoms_follows_them(partitions):
    program = _run(FACT_AGGREGATES, partitions, w=[(1,), (4,), (6,)])
    assert program.relation("total") == {(11,)}                   # 1 + 4 + 6
    assert program.relation("tagged") == {(1, "sum", 11), (2, "count", 4), (3, "none", 0)}
    assert program.relation("least") == {(4,)}                    # min of 4 and 6
    program.remove("w", [(4,), (6,)])
    program.commit()
    # w = {1}: sum 1, count 1 + 1, no x > 2 so min has no value: no fact
    assert program.relation("total") == {(1,)}
    assert program.relation("tagged") == {(1, "sum", 1), (2, "count", 2), (3, "none", 0)}
    assert program.relation("least") == set()
    expected = evaluate(FACT_AGGREGATES, {"w": {(1,)}})
    assert all(program.relation(r) == expected[r] for r in program.relations)


def test_a_fact_with_a_variable_outside_its_aggregates_is_still_an_error():
    error = _error(".decl w(x: number)\n.decl r(s: number)\nr(y + count : { w(_) }).")
    assert (error.line, error.column) == (3, 3)
    assert "a fact has only constants, but r has a variable" in error.message


AGGREGATE_OF_AGGREGATE = """
    .decl e(id: number, w: number)
    .decl next(a: number, b: number)
    next(a, b) :- e(a, w1), w2 = min w : { e(_, w), w > w1 }, b = min i : { e(i, v), v = w2 }.
"""


@pytest.mark.filterwarnings("ignore:.*a cross product")  # (the correlation is a comparison)
@pytest.mark.parametrize("partitions", [1, 2])
def test_an_aggregate_correlated_by_a_variable_another_aggregate_assigns(partitions):
    program = _run(AGGREGATE_OF_AGGREGATE, partitions, e=[(0, 1), (1, 4), (2, 1), (3, 2)])
    # the next heavier weight after 1 is 2 (edge 3), after 2 is 4 (edge 1), none after 4
    assert program.relation("next") == {(0, 3), (2, 3), (3, 1)}
    program.insert("e", [(5, 2)])
    program.commit()
    # weight 2 is now also edge 5: the least id stays 3; edge 5 (weight 2) is followed by 1
    assert program.relation("next") == {(0, 3), (2, 3), (3, 1), (5, 1)}
    expected = evaluate(AGGREGATE_OF_AGGREGATE, {"e": {(0, 1), (1, 4), (2, 1), (3, 2), (5, 2)}})
    assert program.relation("next") == expected["next"]


# -- a relation named like a functor Soufflé has no keyword for ----------------------------

FUNCTOR_NAMED = """
    .decl abs(f: number, x: number)
    .decl itou(f: number)
    .decl r(f: number, y: number)
    r(f, abs(x)) :- abs(f, x), abs(x) > 2, !itou(f).
    r(f, y) :- itou(f), y = count : abs(_, _).
    r(f, y) :- itou(f), (abs(f, x) ; abs(x, f)), y = x + 100.
"""


@pytest.mark.parametrize("partitions", [1, 2])
def test_a_relation_may_be_named_like_a_functor(partitions):
    program = _run(FUNCTOR_NAMED, partitions, abs=[(1, -5), (2, 3), (3, 2)], itou=[(2,)])
    # abs(x) > 2 and f not in itou: (1, -5) gives (1, 5); (3, 2) has |2| = 2, not > 2
    # itou(2): count of abs = 3 -> (2, 3); abs(2, 3) -> 3 + 100; abs(3, 2) -> x = 3 -> 103
    assert program.relation("r") == {(1, 5), (2, 3), (2, 103)}
    program.remove("itou", [(2,)])
    program.commit()
    # no itou: only the first rule, and now f = 2 is allowed: abs(2, 3) -> (2, 3)
    assert program.relation("r") == {(1, 5), (2, 3)}
