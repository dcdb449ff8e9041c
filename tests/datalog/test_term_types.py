"""Term types: analysis records the type of every term, and everyone reads that record.

Before, the compiler, the folding of constant facts and the reference evaluator each
derived the type of a term again, and not alike: an aggregate's target such as
``(1 + 2) + x`` over floats was computed as an integer by the compiler (compiling failed
with "wrap32 needs an int, got float"), and ``sum 3 : {...}`` in a float head gave
integers.  Now :mod:`diffflow.datalog.analysis.types` decides, analysis records it in
``Clause.term_types``, and the compiler and the reference evaluator read it.
"""
from __future__ import annotations

import glob
import os

import pytest

import diffflow as dd
from diffflow.datalog.passes import analyse
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.parser import parse
from diffflow.datalog.syntax.preprocess import preprocess
from tests.support import paths
from tests.support.datalog_reference import evaluate

ROOT = str(paths.REPO)
PROGRAMS = sorted(glob.glob(os.path.join(ROOT, "queries", "*", "prog.dl")) +
                  glob.glob(os.path.join(ROOT, "tests", "fixtures", "datalog", "[0-9]*.dl")))
BASE = {"number", "unsigned", "float", "symbol"}
_LITERALS = (ast.Atom, ast.Negation, ast.Comparison, ast.Boolean, ast.Disjunction)


def _terms(clause):
    for term in clause.head.args:
        yield from ast.walk_terms(term, aggregates=True)
    for lit in clause.literals:
        yield from ast.walk_terms(*ast.literal_terms(lit), aggregates=True)


@pytest.mark.parametrize("path", PROGRAMS, ids=os.path.basename)
def test_every_term_of_every_clause_has_a_recorded_base_type(path):
    with open(path) as f:
        source = preprocess(f.read(), path)
    analysed = analyse(parse(source, path), source)
    for relation in analysed.relations.values():
        for clause in relation.clauses:
            for term in _terms(clause):
                if not isinstance(term, _LITERALS):
                    assert clause.type_of(term) in BASE, (path, term)
            for arg, kind in zip(clause.head.args, relation.types):
                assert clause.type_of(arg) == kind


def test_the_record_follows_the_context_of_each_term():
    analysed = analyse(parse(".decl e(x: float, n: number)\n.decl r(x: float, n: number)\n"
                             "r(x * 2, n + 1) :- e(x, n), s = sum 3 : { e(_, _) }, s > 1, "
                             "x < 2 + 3, 1 < 2u."))
    (clause,) = analysed.relations["r"].clauses
    head_x, head_n = clause.head.args
    assert {clause.type_of(t) for t in ast.walk_terms(head_x)} == {"float"}
    assert {clause.type_of(t) for t in ast.walk_terms(head_n)} == {"number"}
    assign, compare_s, compare_x, constants = clause.literals[1:]
    # s is assigned a sum of a plain integer: a number, and so is its target
    assert clause.type_of(assign.right) == clause.type_of(assign.right.target) == "number"
    assert clause.type_of(compare_x.right.left) == "float"      # 2 next to a float x
    assert clause.type_of(constants.left) == "unsigned"          # 1 next to 2u


def _check(source, facts):
    program = dd.Program(source)
    for name, rows in facts.items():
        program.insert(name, rows)
    program.commit()
    got = {name: program.relation(name) for name in ("r",)}
    assert got == {name: evaluate(source, facts)[name] for name in got}
    return got["r"]


def test_an_aggregate_target_with_constants_and_a_float_is_a_float():
    source = ".decl e(x: float)\n.decl r(s: float)\nr(s) :- s = sum (1 + 2) + x : { e(x) }."
    assert _check(source, {"e": [(1.5,), (0.5,)]}) == {(8.0,)}


def test_a_sum_of_an_integer_constant_in_a_float_head_is_a_float():
    source = ".decl e(x: number)\n.decl r(s: float)\nr(sum 3 : { e(_) }) :- e(_)."
    (row,) = _check(source, {"e": [(1,), (2,)]})
    assert row == (6.0,) and isinstance(row[0], float)


def test_a_variable_assigned_an_integer_in_an_aggregate_body_wraps_as_a_number():
    source = (".decl e(x: number)\n.decl r(n: number)\n"
              "r(n) :- n = count : { e(x), y = 2147483647 + 1, y > 0 }.")
    assert _check(source, {"e": [(1,)]}) == {(0,)}  # 2^31 wraps to -2^31


@pytest.mark.parametrize("partitions", [1, 2])
def test_a_variable_assigned_a_plain_integer_takes_its_type_from_the_clause(partitions):
    # Soufflé's numeric constants are polymorphic: x = 2147483647 + 1 is an unsigned where x
    # fills an unsigned attribute (no wrap), 7 / 2 a float division where x fills a float
    # one, and 3000000000 an unsigned where x is compared with one
    source = """
        .decl e(y: unsigned)
        .input e
        .decl u(x: unsigned)
        u(x) :- x = range(1, 3).
        u(x) :- x = 2147483647 + 1.
        .decl f(x: float)
        f(x) :- x = 7 / 2.
        .decl c(y: unsigned)
        c(y) :- e(y), x = 3000000000, x < y.
        .decl n(x: number)
        n(x) :- x = 2147483647 + 1.
    """
    facts = {"e": [(4000000000,), (5,)]}
    program = dd.Program(source, partitions=partitions)
    program.insert("e", facts["e"])
    program.commit()
    expected = {"u": {(1,), (2,), (2147483648,)}, "f": {(3.5,)}, "c": {(4000000000,)},
                "n": {(-2147483648,)}}
    assert {name: program.relation(name) for name in expected} == expected
    reference = evaluate(source, facts)
    assert {name: reference[name] for name in expected} == expected
    program.remove("e", [(4000000000,)])
    program.commit()
    assert program.relation("c") == set()


# -- issue 41: Soufflé's deprecated type declarations -------------------------------------------

_DEPRECATED = """.number_type Count
.symbol_type Name
.type Tag
.type Label = Name | Tag
.decl n(x: Count)
.decl s(x: Name)
.decl t(x: Tag)
.decl l(x: Label)
n(x + 1) :- n(x), x < 3.
.input n
l(x) :- s(x).
l(x) :- t(x).
"""


@pytest.mark.parametrize("partitions", [1, 2])
def test_deprecated_type_declarations_are_subtypes_with_a_located_warning(partitions):
    with pytest.warns(dd.DatalogWarning) as caught:
        p = dd.Program(_DEPRECATED, filename="d.dl", partitions=partitions)
    assert [str(w.message).splitlines()[0] for w in caught] == [
        "d.dl:1:1: warning: deprecated type declaration '.number_type Count', read as "
        "'.type Count <: number' (as Soufflé does); write that instead",
        "d.dl:2:1: warning: deprecated type declaration '.symbol_type Name', read as "
        "'.type Name <: symbol' (as Soufflé does); write that instead",
        "d.dl:3:1: warning: deprecated type declaration '.type Tag', read as "
        "'.type Tag <: symbol' (as Soufflé does); write that instead"]
    p.insert("n", [(0,)])
    p.insert("s", [("a",)])
    p.insert("t", [("b",)])
    p.commit()
    assert p.relation("n") == {(0,), (1,), (2,), (3,)}
    assert p.relation("l") == {("a",), ("b",)}
    p.remove("t", [("b",)])
    p.commit()
    assert p.relation("l") == {("a",)}


def test_deprecated_type_declarations_warn_from_the_cli_unless_w(tmp_path, capsys):
    from diffflow.cli import main

    (tmp_path / "d.dl").write_text(_DEPRECATED.replace(".input n", "n(0).\n.output n"))
    assert main(["run", str(tmp_path / "d.dl"), "-D", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("warning: deprecated type declaration") == 3
    assert main(["run", "-w", str(tmp_path / "d.dl"), "-D", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "\n0\n1\n2\n3\n" in captured.out
