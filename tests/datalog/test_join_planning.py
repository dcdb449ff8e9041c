"""Join planning: atoms that share a variable -- directly, through record patterns, through
equalities, in every branch of a disjunction -- are joined on it; real cross products warn;
joins are ordered by the sizes of the first commit.

Each plan assertion is paired with the facts the plan computes, checked against the
reference evaluator over random inserts and removes at 1 and 3 partitions.
"""
from __future__ import annotations

import random
import re
import warnings

import pytest

import diffflow as dd
from diffflow.cli import main
from tests.datalog.test_incremental import NODE, check_random_commits
from tests.support.datalog_reference import evaluate
from tests.support.helpers import RUNTIME_OPTIONS

# the shape of the replicated-data-type program: ids are records matched by patterns
# in two atoms of one rule, with a disjunction of comparisons
RECORDS = """
.type Id = [c: number, n: number]
.decl s(a: Id, b: Id)
.decl r2(p: number, u: number)
r2(p, u) :- s([x, y], [p, q]), s([x, y], [u, v]), (p > u ; (p = u, q > v)).
"""

EQUALITIES = """
.decl a(x: number, k: number)
.decl b(y: number, w: number)
.decl next(x: number, w: number)
.decl same(x: number, w: number)
.decl either(x: number, w: number)
next(x, w) :- a(x, _), b(y, w), x = y + 1.
same(x, w) :- a(x, k), b(y, w), k = y.
either(x, w) :- a(x, _), b(y, w), (x = y ; x = y + 2).
"""


def _joins(plan: str) -> list:
    return re.findall(r"join ([^→]*?) on \(([^)]*)\)", plan)


def test_record_patterns_shared_by_two_atoms_are_the_join_key():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cross-product warning either
        program = dd.Program(RECORDS)
    plan = program.plan()
    assert "cross product" not in plan
    keys = [k for _, k in _joins(plan)]
    assert keys == ["x, y", "x, y, u"], plan  # the second branch also joins on p = u


@pytest.mark.parametrize("partitions", [1, 3])
def test_record_keyed_joins_compute_the_rule(partitions):
    source = RECORDS + """
        .decl flat(a: number, b: number, p: number, q: number)
        s([a, b], [p, q]) :- flat(a, b, p, q).
    """
    inputs = {"flat": [NODE, ("num", range(0, 2)), NODE, ("num", range(0, 3))]}
    check_random_commits(source, inputs, ["r2"], partitions, f"records-{partitions}").close()


def test_equalities_join_on_what_one_side_computes():
    program = dd.Program(EQUALITIES)
    plan = program.plan()
    assert "cross product" not in plan
    joins = _joins(plan)
    # x = y + 1: b computes y + 1 as x; k = y and x = y: a's side names its k (or x) y,
    # and b joins on its own column (sharing b's index); x = y + 2: as the first
    assert [k for _, k in joins] == ["x", "y", "y", "x"], plan
    assert "x = (y + 1)" in joins[0][0]


@pytest.mark.parametrize("partitions", [1, 3])
def test_equality_keyed_joins_compute_the_rules(partitions):
    inputs = {"a": [NODE, NODE], "b": [NODE, NODE]}
    check_random_commits(EQUALITIES, inputs, ["next", "same", "either"], partitions,
                  f"equalities-{partitions}").close()


def test_a_real_cross_product_warns_at_its_rule_once_and_still_runs():
    source = (".decl a(x: number)\n.decl b(y: number)\n.decl r(x: number, y: number)\n"
              ".decl lt(x: number, y: number)\n.decl flag()\n.decl g(x: number)\n"
              "r(x, y) :- a(x), b(y).\n"
              "lt(x, y) :- a(x), b(y), x < y.\n"
              "g(x) :- a(x), flag().\n")
    with pytest.warns(dd.DatalogWarning) as caught:
        program = dd.Program(source, filename="cp.dl")
    texts = [str(w.message) for w in caught]
    assert len(texts) == 2, texts  # r and lt; joining a nullary flag() is not a product
    assert texts[0].startswith("cp.dl:7:1: warning: the rule for r joins b(y) with the atoms "
                               "before it on no variable: a cross product")
    assert texts[1].startswith("cp.dl:8:1: warning: the rule for lt joins b(y)")
    program.insert("a", [(1,), (2,)])
    program.insert("b", [(2,)])
    program.commit()
    assert program.relation("r") == {(1, 2), (2, 2)} and program.relation("lt") == {(1, 2)}


def test_subsumptive_rules_compare_pairs_without_a_warning():
    source = (".decl d(x: number, v: number)\nd(x, v1) <= d(x, v2) :- v2 < v1.\n"
              ".decl t(a: symbol, b: number)\nt(_, b1) <= t(_, b2) :- b1 <= b2.\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dd.Program(source)


def test_joins_start_from_the_smaller_relation_once_sizes_are_known():
    # (small(y, w) binds w, which big does not: a join, not a filter of big)
    source = (".decl big(x: number, y: number)\n.decl small(y: number, w: number)\n"
              ".decl r(x: number, w: number)\nr(x, w) :- big(x, y), small(y, w).\n")
    program = dd.Program(source)
    assert "scan big(x, y) → join small(y, w) on (y)" in program.plan()
    program.insert("big", [(i, i % 7) for i in range(300)])
    program.insert("small", [(3, 0)])
    flow_before = program.flow
    program.commit()
    plan = program.plan()
    assert "scan small(y, w) ~1 → join big(x, y) ~300 on (y)" in plan
    assert program.flow is not flow_before  # re-planned before anything ran
    after = program.flow
    assert program.relation("r") == {(i, 0) for i in range(300) if i % 7 == 3}
    assert program.changes("r") == sorted(((i, 0), 1) for i in range(300) if i % 7 == 3)
    program.insert("small", [(4, 1)])
    program.commit()  # orders stay after the first commit
    assert program.flow is after and program.plan() == plan
    assert program.changes("r") == sorted(((i, 1), 1) for i in range(300) if i % 7 == 4)


def test_a_plan_order_is_kept_whatever_the_sizes():
    source = (".decl big(x: number, y: number)\n.decl small(y: number)\n"
              ".decl r(x: number)\nr(x) :- big(x, y), small(y).\n.plan 0: (1, 2)\n")
    program = dd.Program(source)
    program.insert("big", [(i, i) for i in range(50)])
    program.insert("small", [(3,)])
    program.commit()
    # a .plan is taken as written: no filter joined first, no order by size
    assert "scan big(x, y) → join small(y) on (y)" in program.plan()
    assert program.relation("r") == {(3,)}


def test_an_atom_that_only_filters_another_is_joined_to_it_first():
    source = (".decl a(x: number, y: number)\n.decl b(y: number, z: number)\n"
              ".decl c(z: number)\n.decl r(x: number, z: number)\n"
              "r(x, z) :- a(x, y), b(y, z), c(z).\n")
    program = dd.Program(source)
    assert "scan a(x, y) → join b(y, z) ⋉ c(z) on (y)" in program.plan()
    program.insert("a", [(1, 10), (2, 20)])
    program.insert("b", [(10, 5), (20, 6), (20, 7)])
    program.insert("c", [(5,), (7,)])
    program.commit()
    assert program.relation("r") == {(1, 5), (2, 7)} and len(program.changes("r")) == 2
    program.remove("c", [(5,)])
    program.insert("c", [(6,)])
    program.commit()
    assert program.changes("r") == [((1, 5), -1), ((2, 6), 1)]


@pytest.mark.parametrize("partitions", [1, 3])
def test_filtered_joins_compute_the_rules(partitions):
    source = (".decl a(x: number, y: number)\n.decl b(y: number, z: number)\n"
              ".decl c(z: number)\n.decl d(x: number, z: number)\n"
              ".decl r(x: number, z: number)\n.decl loop(x: number)\n"
              "r(x, z) :- a(x, y), b(y, z), c(z), d(x, z), !c(x).\n"
              "loop(y) :- c(y).\nloop(y) :- loop(x), a(x, y), c(x).\n")
    inputs = {"a": [NODE, NODE], "b": [NODE, NODE], "c": [NODE], "d": [NODE, NODE]}
    program = check_random_commits(source, inputs, ["r", "loop"], partitions,
                                   f"filters-{partitions}")
    assert "⋉" in program.plan()
    program.close()


def test_explain_plan_shows_estimates_with_facts_and_magic_relations(tmp_path, capsys):
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "big.facts").write_text("".join(f"{i}\t{i % 5}\n" for i in range(40)))
    (tmp_path / "facts" / "small.facts").write_text("1\t9\n")
    prog = tmp_path / "p.dl"
    prog.write_text(".decl big(x: number, y: number)\n.input big\n"
                    ".decl small(y: number, w: number)\n.input small\n"
                    ".decl r(x: number, w: number)\n.output r\n"
                    "r(x, w) :- big(x, y), small(y, w).\n")
    assert main(["explain-plan", str(prog)]) == 0
    assert "scan big(x, y) → join small(y, w) on (y)" in capsys.readouterr().out
    assert main(["explain-plan", str(prog), "-F", str(tmp_path / "facts")]) == 0
    assert "scan small(y, w) ~1 → join big(x, y) ~40 on (y)" in capsys.readouterr().out


def test_rules_with_one_body_join_it_once():
    source = (".decl likes(a: symbol, b: symbol)\n.decl mutual(a: symbol, b: symbol)\n"
              ".decl both(a: symbol, b: symbol)\n.decl other(a: symbol, b: symbol)\n"
              "mutual(x, y), mutual(y, x) :- likes(x, y), likes(y, x), x != y.\n"
              "both(p, q) :- likes(p, q), likes(q, p), p != q.\n"
              "other(p, q) :- likes(p, q), likes(q, p), p = q.\n")
    program = dd.Program(source)
    plan = program.plan()
    assert plan.count("the joins of the rule at <program>:5, shared") == 2  # mutual's, both
    assert plan.count("scan likes") == 2  # mutual's first clause and other (another body)
    program.insert("likes", [("a", "b"), ("b", "a"), ("c", "c"), ("a", "c")])
    program.commit()
    assert program.relation("mutual") == program.relation("both") == {("a", "b"), ("b", "a")}
    assert program.relation("other") == {("c", "c")}
    program.remove("likes", [("b", "a")])
    program.commit()
    assert program.relation("both") == program.relation("mutual") == set()


def test_a_shared_cross_product_warns_at_each_rule():
    source = (".decl a(x: number)\n.decl b(x: number)\n.decl r(x: number, y: number)\n"
              ".decl s(x: number, y: number)\nr(x, y) :- a(x), b(y).\ns(x, y) :- a(x), b(y).\n")
    with pytest.warns(dd.DatalogWarning) as caught:
        program = dd.Program(source, filename="two.dl")
    assert [str(w.message).split(": warning")[0] for w in caught] == ["two.dl:5:1", "two.dl:6:1"]
    assert "the joins of the rule at two.dl:5, shared" in program.plan()


def test_adt_branch_fields_shared_by_two_atoms_are_the_join_key():
    source = (".type Shape = Dot {x: number} | Box {w: number, h: number}\n"
              ".decl s(a: Shape, n: number)\n.decl t(b: Shape, m: number)\n"
              ".decl r(w: number, n: number, m: number)\n"
              "r(w, n, m) :- s($Box(w, h), n), t($Box(w, h), m).\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        program = dd.Program(source)
    assert [k for _, k in _joins(program.plan())] == ["w, h"]
    from diffflow.datalog.values.structures import AdtValue

    box, dot = AdtValue("Box", (2, 3)), AdtValue("Dot", (2,))
    program.insert("s", [(box, 1), (dot, 5), (AdtValue("Box", (2, 4)), 6)])
    program.insert("t", [(box, 7), (dot, 8)])
    program.commit()
    assert program.relation("r") == {(2, 1, 7)}


REDUCED = """
.decl a(k: number, y: number, v: number)
.decl b(y: number, z: number)
.decl c(z: number, w: number)
.decl r(v: number, w: number)
r(v, w) :- a(5, y, v), b(y, z), c(z, w).
"""


def _reduced_facts(seed):
    rng = random.Random(seed)
    a = {(5, rng.randrange(2000), rng.randrange(9)) for _ in range(2000)}
    b = {(rng.randrange(2000), rng.randrange(10000)) for _ in range(20000)}
    c = {(rng.randrange(10000), rng.randrange(10)) for _ in range(50)}
    return a, b, c


def _reduced_rows(a, b, c):
    by_y, by_z = {}, {}
    for y, z in b:
        by_y.setdefault(y, []).append(z)
    for z, w in c:
        by_z.setdefault(z, []).append(w)
    return {(v, w) for k, y, v in a if k == 5 for z in by_y.get(y, ()) for w in by_z.get(z, ())}


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 3])
def test_a_later_atom_that_filters_strongly_reduces_an_earlier_one_first(partitions):
    # a(5, y, v) goes first (a constant); c keeps ~50 of b's 10,000 z values, so b is
    # joined to c's z values before a meets it: a ⋈ b never holds the rows c drops
    a, b, c = _reduced_facts(partitions)
    program = dd.Program(REDUCED, partitions=partitions, **RUNTIME_OPTIONS)
    for name, rows in (("a", a), ("b", b), ("c", c)):
        program.insert(name, sorted(rows))
    program.commit()
    assert re.search(r"join b\(y, z\) ~[\d,]+ ⋉ \{z : c\(z, w\) ~50\} on \(y\)",
                     program.plan())
    assert program.relation("r") == _reduced_rows(a, b, c)
    assert len(program.changes("r")) == len(program.relation("r"))
    rng = random.Random(7)
    for _ in range(3):  # c's values change: the semijoin's distinct values follow
        gone = set(rng.sample(sorted(c), 5))
        new = {(rng.randrange(10000), rng.randrange(10)) for _ in range(5)} - c
        moved = set(rng.sample(sorted(b), 20))
        before = program.relation("r")
        program.remove("c", sorted(gone))
        program.insert("c", sorted(new))
        program.remove("b", sorted(moved))
        c, b = (c - gone) | new, b - moved
        program.commit()
        after = _reduced_rows(a, b, c)
        assert program.relation("r") == after
        assert sorted(program.changes("r")) == sorted(
            [(row, 1) for row in after - before] + [(row, -1) for row in before - after])
    program.close()


def test_no_semijoin_without_sizes_or_with_a_plan():
    plain = dd.Program(REDUCED)
    assert "⋉" not in plain.plan()
    planned = dd.Program(REDUCED.replace("c(z, w).", "c(z, w).\n.plan 0: (1, 2, 3)"))
    a, b, c = _reduced_facts(0)
    for name, rows in (("a", a), ("b", b), ("c", c)):
        planned.insert(name, sorted(rows))
    planned.commit()
    assert "⋉" not in planned.plan() and planned.relation("r") == _reduced_rows(a, b, c)


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 3])
def test_semijoins_wherever_atoms_meet_keep_the_random_programs_exact(monkeypatch, partitions):
    # every later atom that shares a variable reduces the earlier one, whatever the sizes:
    # the random suite's rules stay exact at every commit (facts, changes, sizes)
    from diffflow.datalog.lower import join_order, joins
    from tests.datalog.test_incremental import PROGRAMS, check_program_against_reference

    reduced = []

    def every(order, sizes, distinct=None):
        found = real(order, {a.relation: 10**9 for a in order}, lambda rel, at: 1)
        reduced.extend(found)
        return found
    real = join_order.semijoin_reducers
    monkeypatch.setattr(joins, "semijoin_reducers", every)
    monkeypatch.setattr(join_order, "semijoin_reducers", every)  # (the re-plan's check)
    monkeypatch.setattr(join_order, "SEMIJOIN_SHARE", 1.0)
    for name in sorted(PROGRAMS):
        check_program_against_reference(name, 2, partitions, steps=3)
    source = (".decl a(x: number, y: number)\n.decl b(y: number, z: number)\n"
              ".decl c(z: number, w: number)\n.decl r(x: number, w: number)\n"
              ".decl loop(x: number, y: number)\n"
              "r(x, w) :- a(x, y), b(y, z), c(z, w), !b(w, x).\n"
              "loop(x, y) :- a(x, y).\nloop(x, z) :- loop(x, y), b(y, z), c(z, _).\n")
    inputs = {"a": [NODE, NODE], "b": [NODE, NODE], "c": [NODE, NODE]}
    program = check_random_commits(source, inputs, ["r", "loop"], partitions, f"sip-{partitions}")
    assert "⋉ c(z, _)" in program.plan()
    assert len(reduced) >= 8  # (eqrel's, same_generation's and the rules above)


STARTING_ALIKE = """
.decl a(x: number, y: number)
.decl b(y: number, z: number)
.decl c(z: number, w: number)
.decl d(z: number, w: number)
.decl r1(x: number, w: number)
.decl r2(x: number, w: number)
.decl q(x: number, w: number)
.decl r3(x: number, w: number)
r1(x, w) :- a(x, y), b(y, z), c(z, w).
r2(u, w) :- a(u, v), b(v, t), d(t, w).
q(x, w) :- a(x, y), b(y, z), q(z, w).
q(x, w) :- d(x, w).
r3(x, w) :- a(x, y), b(y, z), q(z, w), w > 3.
"""


def _joins_built(program) -> int:
    return sum(node.kind == "join" for node in program.flow.graph.nodes)


def test_rules_that_start_alike_join_their_first_atoms_once():
    program = dd.Program(STARTING_ALIKE)
    plan = program.plan()
    # r2, q's recursive rule (inside its loop) and r3 (after it) read r1's a ⋈ b
    assert plan.count("a(x, y) ⋈ b(y, z): the rows of the rule at <program>:10, shared") == 2
    assert plan.count("a(u, v) ⋈ b(v, t): the rows of the rule at <program>:10, shared") == 1
    # a ⋈ b is built once instead of four times; each rule's own last join stays
    assert _joins_built(program) == 1 + 4


@pytest.mark.parametrize("partitions", [1, 3])
def test_shared_first_joins_keep_every_rule_exact(partitions):
    inputs = {"a": [NODE, NODE], "b": [NODE, NODE], "c": [NODE, NODE], "d": [NODE, NODE]}
    program = check_random_commits(STARTING_ALIKE, inputs, ["r1", "r2", "q", "r3"], partitions,
                            f"prefixes-{partitions}")
    assert "shared" in program.plan()
    program.close()


def test_a_disjunction_shares_its_first_joins_between_its_clauses():
    program = dd.Program(".decl a(x: number, y: number)\n.decl b(y: number, z: number)\n"
                         ".decl c(z: number, w: number)\n.decl d(z: number, w: number)\n"
                         ".decl r(x: number, w: number)\n"
                         "r(x, w) :- a(x, y), b(y, z), (c(z, w) ; d(z, w)).\n")
    assert "a(x, y) ⋈ b(y, z): the rows of another clause of this rule, shared" in program.plan()
    program.insert("a", [(1, 2)])
    program.insert("b", [(2, 3), (2, 4)])
    program.insert("c", [(3, 5)])
    program.insert("d", [(4, 6), (9, 9)])
    program.commit()
    assert program.relation("r") == {(1, 5), (1, 6)}


def test_filters_with_wildcards_count_each_match_and_subsumption_keeps_its_columns():
    # a filter's _ is no variable: as in Soufflé, a count over several atoms counts the
    # distinct bindings of the named variables (y, z), however many c rows match each;
    # subsumption names its _ internally, and those are not projected away
    source = (".decl b(y: number, z: number)\n.decl c(z: number, w: number)\n"
              ".decl n(k: number)\nn(k) :- k = count : { b(y, z), c(z, _) }.\n"
              ".decl r(x: number, y: number)\nr(y, z) :- b(y, z).\n"
              "r(x, _) <= r(x, y) :- y > 5.\n")
    program = dd.Program(source)
    program.insert("b", [(1, 2), (3, 2), (1, 7)])
    program.insert("c", [(2, 5), (2, 6), (2, 7)])
    program.commit()
    assert program.relation("n") == {(2,)}  # (1, 2) and (3, 2): 3 c rows each with z = 2
    assert program.relation("r") == {(1, 7), (3, 2)}


EXISTS = """
.decl a(x: number, k: number)
.decl c(y: number)
.decl d(y: number, z: number)
.decl r(x: number)
.decl s(x: number, y: number)
r(x) :- a(x, _), c(y), d(y, _).
s(x, y) :- a(x, _), c(y), d(y, _).
"""


@pytest.mark.parametrize("partitions", [1, 3])
def test_an_atom_only_asked_whether_it_holds_joins_as_one_row(partitions):
    # r needs nothing of c(y), d(y, _) but that they hold (Soufflé's independent_body shape):
    # one row, no product and no warning; s needs y, so its join is a real product.
    with pytest.warns(dd.DatalogWarning) as caught:
        program = check_random_commits(EXISTS, {"a": [NODE, NODE], "c": [NODE], "d": [NODE, NODE]},
                                ["r", "s"], partitions, f"exists-{partitions}")
    assert [str(w.message).split(":")[1] for w in caught] == ["8"]   # s only
    (r_joins,) = [j for j in _joins(program.plan().split("r(x) :-")[1].split("\n  s(")[0])]
    assert r_joins[1].startswith("nothing: one row if"), program.plan()  # (either side)
    program.close()
