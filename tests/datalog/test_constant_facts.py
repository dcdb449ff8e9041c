"""Facts whose arguments are constant expressions: evaluated as Soufflé does.

Every expected value below is computed by hand: 32-bit two's complement wrapping for
``number``, modulo 2^32 for ``unsigned``, truncation toward zero for ``/`` and ``%`` (C),
IEEE doubles for ``float``; an aggregate over a body without atoms holds once or not at all.
"""
from __future__ import annotations

import pytest

import diffflow as dd
from diffflow.datalog.passes import analyse
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.parser import parse


def _facts(decl: str, *facts: str) -> set:
    program = dd.Program(decl + "\n" + "\n".join(facts) + "\n")
    program.commit()
    name = decl.split()[1].split("(")[0]
    return program.relation(name)


def _error(source: str) -> DatalogError:
    with pytest.raises(DatalogError) as info:
        analyse(parse(source, "prog.dl"), source)
    return info.value


def test_arithmetic_and_strings():
    assert _facts(".decl r(x: number, s: symbol)", 'r(1 + 2, "a").', 'r(2 ^ 10, "b").',
                  'r(-(3), "c").', 'r((7 - 10) * 4, "d").') == \
        {(3, "a"), (1024, "b"), (-3, "c"), (-12, "d")}


def test_number_arithmetic_wraps_to_32_bits_after_every_operation():
    assert _facts(".decl r(x: number)", "r(2147483647 + 1).", "r(2 ^ 32 + 5).",
                  "r(65536 * 65536 / 2).", "r(-2147483647 - 2).") == \
        {(-2147483648,), (5,), (0,), (2147483647,)}
    # 65536 * 65536 wraps to 0 before the division, as in Soufflé's 32-bit arithmetic


def test_division_and_remainder_truncate_toward_zero():
    assert _facts(".decl r(q: number, m: number)", "r(-7 / 2, -7 % 2).", "r(7 / -2, 7 % -2).",
                  "r(-7 / -2, -7 % -2).") == {(-3, -1), (-3, 1), (3, -1)}


def test_unsigned_arithmetic_wraps_modulo_2_to_the_32():
    assert _facts(".decl r(x: unsigned)", "r(0u - 1u).", "r(4294967295u + 2u).", "r(7u / 2u).",
                  "r(2 ^ 31 * 2u + 3).") == {(4294967295,), (1,), (3,), (3,)}


def test_float_arithmetic_and_integers_taking_the_float_type():
    assert _facts(".decl r(x: float)", "r(7 / 2).", "r(1.5 * 2 - 0.25).", "r(2 ^ -1).",
                  "r(-7.5 % 2).") == {(3.5,), (2.75,), (0.5,), (-1.5,)}


def test_aggregates_over_constant_bodies():
    # count: 1 if the body holds, else 0; sum: the target or 0; min/max: the target or no fact
    assert _facts(".decl r(tag: symbol, n: number)",
                  'r("count", count : { true }).',
                  'r("count0", count : { 1 > 2 }).',
                  'r("count2", count : { 1 < 2, "a" != "b", true }).',
                  'r("sum", sum 3 : { true }).',
                  'r("sum0", sum 3 : { false }).',
                  'r("sumexpr", sum 2 * 5 + 1 : { 3 = 3 }).',
                  'r("max", max 7 : { true }).',
                  'r("min", min -4 : { 2 >= 2 }).',
                  'r("nomax", max 7 : { false }).',
                  'r("nomin", min 1 : { 1 != 1 }).',
                  'r("plus", count : { true } + sum 10 : { true }).') == \
        {("count", 1), ("count0", 0), ("count2", 1), ("sum", 3), ("sum0", 0),
         ("sumexpr", 11), ("max", 7), ("min", -4), ("plus", 11)}


def test_float_sum_over_an_empty_body_is_zero():
    assert _facts(".decl r(x: float)", "r(sum 2.5 : { false }).", "r(sum 2.5 : { true } * 2).") \
        == {(0.0,), (5.0,)}


def test_evaluated_facts_feed_rules_and_can_be_removed():
    program = dd.Program(".decl e(x: number)\n.decl r(x: number)\ne(3 * 3).\n"
                         "r(x + 1) :- e(x).\n")
    program.commit()
    assert program.relation("r") == {(10,)}
    program.remove("e", [(9,)])
    program.commit()
    assert program.relation("r") == set()


@pytest.mark.parametrize("fact, line_col, message", [
    ("r(1 + x).", (2, 7), "a fact has only constants, but r has a variable"),
    # (with no variable outside it, an aggregate over atoms makes the fact a rule, as in
    # Soufflé: tests/datalog/test_souffle_syntax.py)
    ("r(count : { e(_) } + x).", (2, 22), "a fact has only constants, but r has a variable"),
    ("r(count : { (true ; false) }).", (2, 13), ("the aggregate in this fact of r has a "
                                                "disjunction; a fact can only aggregate over "
                                                "constant conditions")),
    ("r(1 / 0).", (2, 5), "integer division by zero in a fact of r"),
    ('r("a" + 1).', (2, 7), "arithmetic '+' on a symbol"),
    ("r(1.5 + 1).", (2, 7), "type clash: attribute 'x' of r is a number, but this is a float"),
    ("r(count : { true } + 1u).", (2, 20), "type clash in arithmetic: number + unsigned"),
    ("r(4294967296 - 1).", (2, 3), "4294967296 does not fit a 32-bit number"),
])
def test_non_constant_or_ill_typed_facts_are_located_errors(fact, line_col, message):
    e = _error(".decl r(x: number)\n" + fact + "\n.decl e(x: number)\n")
    assert ((e.line, e.column), e.message) == (line_col, message)


def test_negative_integer_exponents_follow_souffle_in_facts_and_rules():
    # Soufflé computes number ^ number through C's pow on doubles, then truncates: a
    # negative exponent gives 0 unless the base is 1 or -1 (0's infinite power is the least
    # number, as x86 converts infinity); Soufflé's tests/evaluation/issue2323 relies on it.
    program = dd.Program('''
        .decl base(a: number, b: number)
        .input base
        .decl power(a: number, b: number, p: number)
        .output power
        power(a, b, a ^ b) :- base(a, b).
        .decl folded(p: number)
        .output folded
        folded(2 ^ -1). folded(-1 ^ -3). folded(1 ^ -7). folded(3 ^ 2).
    ''')
    rows = [(2, -1), (-2, -3), (1, -5), (-1, -3), (-1, -2), (0, -1), (3, 4), (2, 31)]
    program.insert("base", rows)
    program.commit()
    expected = {(2, -1, 0), (-2, -3, 0), (1, -5, 1), (-1, -3, -1), (-1, -2, 1),
                (0, -1, -2**31), (3, 4, 81), (2, 31, -2**31)}
    assert program.relation("power") == expected
    assert program.relation("folded") == {(0,), (-1,), (1,), (9,)}
