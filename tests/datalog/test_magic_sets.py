"""Magic sets (``.pragma "magic-transform"``): the outputs hold the same facts as without.

* every program of the random suite (``test_incremental.py``) with ``"magic-transform" "*"``
  and a seeded choice of outputs, over random insert/remove commits at 1 and 3 partitions:
  each output equals the reference evaluator of the untransformed program, and
  ``changes()`` the difference from the previous commit;
* programs whose rules read relations with constants and bound variables -- where magic
  sets restrict something -- checked the same way, and their plans show the adorned copies;
* Soufflé's ``magic_samegen`` shape at a small size, ``no_magic`` and
  ``magic-transform-exclude``, and a pragma naming some relations.
"""
from __future__ import annotations

import random

import pytest

import diffflow as dd
from tests.datalog.test_incremental import FUNCTORS, NODE, PROGRAMS, _schedule
from tests.support.datalog_reference import evaluate
from tests.support.helpers import RUNTIME_OPTIONS

MAGIC = '.pragma "magic-transform" "*"\n'

TC = """
.decl e(x: number, y: number)
.decl tc(x: number, y: number)
tc(x, y) :- e(x, y).
tc(x, z) :- tc(x, y), e(y, z).
"""

# programs where bindings reach a recursive relation: (source, inputs, outputs, adorned)
BOUND = {
    "closure_from_constants": (TC + """
        .decl from1(y: number)
        .decl to3(x: number)
        .decl loop(x: number)
        .decl two(x: number, y: number)
        from1(y) :- tc(1, y).
        to3(x) :- tc(x, 3).
        loop(x) :- e(x, _), tc(x, x).
        two(x, y) :- e(1, x), tc(x, y), y = x + 1 ; tc(y, x), x = 2.
    """, {"e": [NODE, NODE]}, ["from1", "to3", "loop", "two"], ["tc#bf", "tc#fb", "tc#bb"]),
    "negation_and_aggregates_read_whole": (TC + """
        .decl node(x: number)
        .decl reached(y: number)
        .decl unreached(x: number)
        .decl fan(n: number)
        node(x) :- e(x, _) ; e(_, x).
        reached(y) :- tc(0, y).
        unreached(x) :- node(x), !tc(0, x).
        fan(n) :- n = count : { tc(2, _) }.
    """, {"e": [NODE, NODE]}, ["reached", "unreached", "fan"], ["tc#bf"]),
    "same_generation_asked": ("""
        .decl parent(c: number, p: number)
        .decl node(x: number)
        .decl sg(x: number, y: number)
        .decl asked()
        .decl cousins(y: number)
        node(x) :- parent(x, _) ; parent(_, x).
        sg(x, x) :- node(x).
        sg(x, y) :- parent(x, a), sg(a, b), parent(y, b).
        asked() :- sg(4, 5).
        cousins(y) :- sg(3, y), y != 3.
    """, {"parent": [NODE, NODE]}, ["asked", "cousins"], ["sg#bb", "sg#bf"]),
    "mutual_recursion_from_a_start": ("""
        .decl edge(x: number, y: number)
        .decl even(x: number, y: number)
        .decl odd(x: number, y: number)
        .decl even_from0(y: number)
        even(x, x) :- edge(x, _).
        even(x, z) :- odd(x, y), edge(y, z).
        odd(x, z) :- even(x, y), edge(y, z).
        even_from0(y) :- even(0, y).
    """, {"edge": [NODE, NODE]}, ["even_from0"], ["even#bf", "odd#bf"]),
    "records_keyed": ("""
        .type Id = [c: number, n: number]
        .decl s(a: number, b: number, p: number, q: number)
        .decl ids(a: Id, b: Id)
        .decl r2(p: number, u: number)
        .decl first(p: number)
        ids([a, b], [p, q]) :- s(a, b, p, q).
        r2(p, u) :- ids([x, y], [p, q]), ids([x, y], [u, v]), (p > u ; (p = u, q > v)).
        first(u) :- r2(1, u).
    """, {"s": [NODE, ("num", range(0, 2)), NODE, ("num", range(0, 2))]}, ["r2", "first"],
        []),
}


def _check(source, inputs, outputs, partitions, seed, functors=None, commits=4):
    rng = random.Random(f"magic-{seed}-{partitions}")
    program = dd.Program(MAGIC + source, partitions=partitions, outputs=outputs,
                         functors=functors, **RUNTIME_OPTIONS)
    facts = {n: set() for n in inputs}
    previous = {r: set() for r in outputs}
    for step, ops in enumerate(_schedule(rng, inputs, commits)):
        for op, relation, rows in ops:
            getattr(program, op)(relation, rows)
            facts[relation] = facts[relation] | set(rows) if op == "insert" \
                else facts[relation] - set(rows)
        program.commit()
        expected = evaluate(source, facts, functors=functors)
        for relation in outputs:
            got = program.relation(relation)
            assert got == expected[relation], (seed, partitions, step, relation)
            want = sorted([(f, 1) for f in got - previous[relation]] +
                          [(f, -1) for f in previous[relation] - got])
            assert sorted(program.changes(relation)) == want, (step, relation)
            previous[relation] = got
    return program


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_random_programs_keep_their_outputs_under_magic_sets(name, partitions):
    source, inputs = PROGRAMS[name]
    plain = dd.Program(source, functors=FUNCTORS.get(name))
    computed = [r for r, rel in plain.relations.items() if rel.clauses]
    rng = random.Random(name)
    outputs = sorted(rng.sample(computed, min(2, len(computed))))
    _check(source, inputs, outputs, partitions, name, FUNCTORS.get(name)).close()


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("name", sorted(BOUND))
def test_bound_reads_are_computed_as_far_as_asked_and_exactly(name, partitions):
    source, inputs, outputs, adorned = BOUND[name]
    program = _check(source, inputs, outputs, partitions, name)
    plan = program.plan()
    for relation in adorned:
        assert f"stratum {relation}" in plan or f", {relation}" in plan, (relation, plan)
    assert "cross product" not in plan
    program.close()


def test_magic_samegen_asks_one_pair_of_a_binary_tree():
    # Soufflé's tests/evaluation/magic_samegen at height 7 (its own is 15)
    source = MAGIC + """
        .decl samegen(x: number, y: number)
        .decl node(x: number)
        .decl parent(x: number, y: number)
        .decl query()
        samegen(x, x) :- node(x).
        samegen(x, y) :- parent(x, a), samegen(a, b), parent(y, b).
        query() :- samegen(64, 127).
    """
    program = dd.Program(source, outputs=["query"])
    program.insert("node", [(i,) for i in range(1, 128)])
    program.insert("parent", [(i, i // 2) for i in range(2, 128)])
    program.commit()
    assert program.relation("query") == {()} and program.changes("query") == [((), 1)]
    assert "samegen#bb" in program.plan() and "samegen" in program.analysed.on_demand
    program.remove("parent", [(127, 63)])  # 127 leaves the tree: no longer level with 64
    program.commit()
    assert program.relation("query") == set() and program.changes("query") == [((), -1)]


def test_only_the_named_relations_and_their_readers_are_transformed():
    source = TC + """
        .decl u(x: number, y: number)
        .decl from1(y: number)
        .decl uses(y: number)
        u(x, y) :- e(x, y), x < y.
        from1(y) :- tc(1, y).
        uses(y) :- u(1, y).
    """
    named = dd.Program('.pragma "magic-transform" "tc"\n' + source, outputs=["from1", "uses"])
    plan = named.plan()
    assert "tc#bf" in plan and "u#bf" not in plan
    excluded = dd.Program(MAGIC + '.pragma "magic-transform-exclude" "tc"\n' + source,
                          outputs=["from1", "uses"])
    assert "tc#bf" not in excluded.plan() and "u#bf" in excluded.plan()
    no_magic = dd.Program(MAGIC + source.replace(".decl tc(x: number, y: number)",
                                                 ".decl tc(x: number, y: number) no_magic"),
                          outputs=["from1"])
    assert "tc#bf" not in no_magic.plan()
    for program in (named, excluded, no_magic):
        program.insert("e", [(1, 2), (2, 3), (0, 1)])
        program.commit()
        assert program.relation("from1") == {(2,), (3,)}


def test_with_every_relation_read_magic_sets_are_not_applied_and_the_plan_says_so():
    program = dd.Program(MAGIC + TC + ".decl q(y: number)\nq(y) :- tc(1, y).\n")
    assert "tc#bf" not in program.plan()
    assert "magic sets not applied: every relation is read whole" in program.plan()


def test_naming_a_relation_transforms_its_readers_too():
    source = ('.pragma "magic-transform" "tc"\n' + TC +
              ".decl u(x: number, y: number)\n.decl q(y: number)\n"
              "u(x, y) :- tc(x, y).\nq(y) :- u(1, y).\n")
    program = dd.Program(source, outputs=["q"])
    assert {"u#bf", "tc#bf"} <= set(program.relations)
    program.insert("e", [(1, 2), (2, 3), (4, 5)])
    program.commit()
    assert program.relation("q") == {(2,), (3,)}


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_recursion_whose_value_depends_on_rounds_is_not_adorned(partitions):
    # the choice keeps, per x, the first candidate in value order among those of its round
    source = """
        .decl e(x: number, y: number)
        .decl r(x: number, y: number)
        .decl c(x: number, y: number) choice-domain x
        .decl q(x: number, y: number)
        r(x, y) :- e(x, y).
        r(x, y) :- c(x, y).
        c(x, y) :- r(x, w), r(w, y), w < 50.
        c(x, y) :- r(x, y), y > 100.
        q(x, y) :- c(x, 9), c(x, y).
    """
    facts = [(1, 5), (5, 9), (1, 150)]
    plain = dd.Program(source, partitions=partitions, outputs=["q"])
    magic = dd.Program(MAGIC + source, partitions=partitions, outputs=["q"])
    asked = dd.Program(source, partitions=partitions, outputs=[])
    for p in (plain, magic, asked):
        p.insert("e", facts)
        p.commit()
    assert plain.relation("q") == magic.relation("q") == {(1, 9)}
    assert asked.query("c(1, y)") == [(1, 9)] and asked.query("q(1, y)") == [(1, 9)]


def test_a_pragma_naming_no_relation_warns_at_the_pragma():
    with pytest.warns(dd.DatalogWarning, match=r"p\.dl:6:9: warning: pragma 'magic-transform' "
                                               r"names 'tcc', which is no relation \(did you "
                                               r"mean 'tc'\?\)"):
        dd.Program(TC + '.pragma "magic-transform" "tcc"\n', filename="p.dl", outputs=["tc"])


def test_head_bindings_do_not_bind_through_arithmetic_so_magic_sets_stay_finite():
    # gen is asked for 0; its recursive rule reads gen(x + 1).  Were x + 1 bound by the
    # asked x alone, gen would be asked for 1, 2, 3, ... forever (Soufflé's magic_infbinding
    # shape); asked values bind arithmetic only after an atom has bound them.
    program = dd.Program(MAGIC + """
        .decl seed(x: number)
        .input seed
        .decl valid(x: number)
        .input valid
        .decl gen(x: number)
        gen(x) :- seed(x).
        gen(x) :- gen(x + 1), valid(x).
        .decl query()
        .output query
        query() :- gen(0).
    """, outputs=["query"], max_rounds=100)
    program.insert("seed", [(3,)])
    program.insert("valid", [(0,), (1,), (2,), (5,)])
    program.commit()
    assert program.relation("query") == {()}
    assert "gen#b#magic(#e1) :- gen#b#magic(x), valid(x)" in program.plan()
    program.remove("valid", [(1,)])  # 0 <- 1 <- 2 <- 3 is broken
    program.commit()
    assert program.relation("query") == set()
