"""Soufflé syntax the front end used to reject: ``.decl A, B(...)``, ``.pragma``, ``.plan``.

Expected results are worked out by hand from the facts in each test; error texts follow
Soufflé's wording where it has one (``Invalid execution order in plan ...``).
"""
from __future__ import annotations

import warnings

import pytest

import diffflow as dd
from diffflow.datalog.passes import analyse
from diffflow.datalog.syntax.errors import DatalogError, DatalogWarning
from diffflow.datalog.syntax.parser import parse


def _error(source: str) -> DatalogError:
    with pytest.raises(DatalogError) as info:
        analyse(parse(source, "prog.dl"), source)
    return info.value


# -- .decl A, B(...) -----------------------------------------------------------------------

def test_one_decl_declares_several_relations_with_the_same_attributes_and_qualifiers():
    program = dd.Program(".decl a, b, c(x: number, y: symbol) output\n"
                         "a(1, \"p\"). b(2, \"q\").\n"
                         "c(x, y) :- a(x, y) ; b(x, y).\n")
    program.commit()
    assert [(n, r.attributes, r.types, len(r.outputs)) for n, r in program.relations.items()] \
        == [("a", ["x", "y"], ["number", "symbol"], 1), ("b", ["x", "y"], ["number", "symbol"], 1),
            ("c", ["x", "y"], ["number", "symbol"], 1)]
    assert program.relation("c") == {(1, "p"), (2, "q")}
    # each name keeps its own position, so errors point at the right one
    decls = parse(".decl a,  bb(x: number)").declarations
    assert [(d.relation, d.line, d.column) for d in decls] == [("a", 1, 7), ("bb", 1, 11)]


def test_a_name_declared_twice_in_one_decl_is_an_error_at_the_second():
    e = _error(".decl a, a(x: number)\n")
    assert (e.line, e.column) == (1, 10)
    assert e.message == "relation 'a' is declared twice (first at line 1)"


# -- .pragma -------------------------------------------------------------------------------

PRAGMAS = """.pragma "fact-dir" "in"
.decl e(x: number)
.pragma "output-dir" "out"
.pragma "jobs" "4"
.pragma "no-warn"
.pragma "profile" "p.log"
e(1).
"""


def test_pragmas_anywhere_at_top_level_are_exposed_as_a_dict():
    program = dd.Program(PRAGMAS)
    assert program.pragmas == {"fact-dir": "in", "output-dir": "out", "jobs": "4",
                               "no-warn": "", "profile": "p.log"}
    assert program.warnings == []
    # a pragma without effect in diffflow is noted in the plan
    assert "note: pragma 'profile' has no effect in diffflow (profiling)" in program.plan()


def test_an_unknown_pragma_is_a_located_warning_issued_and_collected():
    source = '.decl e(x: number)\n.pragma "jbos" "2"\n'
    with pytest.warns(DatalogWarning) as caught:
        program = dd.Program(source, filename="p.dl")
    assert len(caught) == 1 and caught[0].message is program.warnings[0]
    assert str(program.warnings[0]) == (
        "p.dl:2:9: warning: unknown pragma 'jbos' (did you mean 'jobs'?); it is ignored\n"
        '    .pragma "jbos" "2"\n'
        "            ^")
    assert isinstance(program.warnings[0], UserWarning)
    assert program.pragmas == {"jbos": "2"}


def test_no_warn_keeps_warnings_collected_but_not_issued():
    source = '.pragma "no-warn"\n.pragma "nonsense" "1"\n.decl e(x: number)\n'
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any issued warning would fail the test
        program = dd.Program(source)
    assert [w.message for w in program.warnings] == ["unknown pragma 'nonsense'; it is ignored"]


def test_a_repeated_pragma_overrides_with_a_warning_as_in_souffle():
    with pytest.warns(DatalogWarning, match="pragma 'jobs' overrides the one at line 1"):
        program = dd.Program('.pragma "jobs" "2"\n.pragma "jobs" "3"\n.decl e(x: number)\n')
    assert program.pragmas["jobs"] == "3"


@pytest.mark.parametrize("pragma, message", [
    ('.pragma "max-rounds" "many"', "pragma 'max-rounds' needs a positive whole number, "
                                    "not 'many'"),
    ('.pragma "jobs" "-1"', "pragma 'jobs' needs a positive whole number or \"auto\", not '-1'"),
])
def test_a_bad_value_for_an_honoured_pragma_is_an_error(pragma, message):
    e = _error(".decl e(x: number)\n" + pragma + "\n")
    assert (e.line, e.column, e.message) == (2, 9, message)


SLOW_CHAIN = """
.decl edge(x: number, y: number)
.decl path(x: number, y: number)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def _chain(program):
    program.insert("edge", [(i, i + 1) for i in range(10)])  # needs about 10 rounds
    program.commit()


def test_max_rounds_pragma_limits_loops_unless_the_caller_gives_max_rounds():
    with pytest.raises(dd.NonConvergenceError, match="3 rounds"):
        _chain(dd.Program('.pragma "max-rounds" "3"' + SLOW_CHAIN))
    program = dd.Program('.pragma "max-rounds" "3"' + SLOW_CHAIN, max_rounds=100)
    _chain(program)
    assert len(program.relation("path")) == 55  # 10 + 9 + ... + 1


def test_pragma_syntax_errors_say_how_to_write_one():
    e = _error(".pragma jobs 4\n")
    assert (e.line, e.column) == (1, 9)
    assert e.hint == 'a pragma is .pragma "key" "value" or .pragma "key", in double quotes'


# -- .plan ---------------------------------------------------------------------------------

PLAN_DECLS = """.decl a(x: number, y: number)
.decl b(y: number, z: number)
.decl c(z: number)
.decl r(x: number, z: number)
"""


def test_a_plan_fixes_the_join_order_and_explain_shows_it():
    rule = "r(x, z) :- a(x, y), b(y, z), c(z).\n"
    greedy = dd.Program(PLAN_DECLS + rule).plan()
    assert "scan a(x, y) → join b(y, z) ⋉ c(z) on (y)" in greedy  # c only filters b
    program = dd.Program(PLAN_DECLS + rule + "  .plan 0: (3, 2, 1)\n")
    text = program.plan()
    assert "(.plan version 0: join order 3, 2, 1)" in text
    assert "scan c(z) → join b(y, z) on (z) → join a(x, y) on (y)" in text
    program.insert("a", [(1, 10), (2, 20)])
    program.insert("b", [(10, 5), (20, 6), (20, 7)])
    program.insert("c", [(5,), (7,)])
    program.commit()
    assert program.relation("r") == {(1, 5), (2, 7)}


def test_a_recursive_rule_uses_version_0_of_its_plan():
    source = SLOW_CHAIN + "  .plan 0: (2, 1)\n"
    program = dd.Program(source)
    assert "scan edge(y, z) → join path(x, y) on (y)" in program.plan()
    _chain(program)
    assert len(program.relation("path")) == 55


@pytest.mark.parametrize("plan, column, message", [
    (".plan 0: (1, 2, 3)", 10, "Invalid execution order in plan (expected 2 atoms, not 3)"),
    (".plan 0: (1, 1)", 10, "Invalid execution order in plan (incomplete)"),
    (".plan 0: (2, 1), 1: (1, 3)", 21, "Invalid execution order in plan (incomplete)"),
    (".plan 0: (1, 2), 2: (2, 1)", 21, "execution plan for version 2: only versions 0..1 "
                                       "permitted"),
])
def test_invalid_plans_are_errors_at_the_order(plan, column, message):
    # two atoms of the rule's own stratum: versions 0 and 1
    source = SLOW_CHAIN.replace("path(x, z) :- path(x, y), edge(y, z).",
                                "path(x, z) :- path(x, y), path(y, z).")
    e = _error(source + plan + "\n")
    assert (e.line, e.column, e.message) == (6, column, message)


def test_a_non_recursive_rule_has_only_version_0():
    e = _error(PLAN_DECLS + "r(x, z) :- a(x, y), b(y, z).\n.plan 1: (2, 1)\n")
    assert (e.line, e.column) == (6, 10)
    assert e.message == "execution plan for version 1: only versions 0 permitted"
    assert e.hint == "a non-recursive clause has one version"


def test_a_plan_applies_to_each_alternative_of_a_disjunction():
    e = _error(PLAN_DECLS + "r(x, z) :- a(x, y), b(y, z) ; a(x, z).\n.plan 0: (2, 1)\n")
    assert e.message == "Invalid execution order in plan (expected 1 atoms, not 2)"
    assert e.hint == "the body atoms are 1: a; list each position once"


def test_a_plan_after_a_fact_is_an_error():
    e = _error(".decl c(z: number)\nc(1). .plan 0: (1)\n")
    assert (e.line, e.column, e.message) == (2, 16, "a fact has no body to plan")
