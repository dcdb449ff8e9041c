"""Relations declared ``inline``: unfolded into the rules that use them, never materialised.

* the same programs with and without ``inline`` agree on every other relation, over seeded
  random insert/remove epochs, and both agree with the reference evaluator run on the program
  without ``inline`` (the reference never sees an inline relation);
* an inline pair relation over two large inputs is never built: the compiled graph is the
  graph of the rule written out by hand, node for node;
* Soufflé's restrictions are located errors (IO relation, cycles, aggregates, negation that
  would introduce variables, negated ``_``), and reading an inline relation says it is inline.
"""
from __future__ import annotations

import random

import pytest

import diffflow as dd
from diffflow.datalog.passes import analyse
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.parser import parse
from tests.support.datalog_reference import evaluate

NODE = range(0, 6)

PROGRAMS = {
    # positive uses with constants, repeated variables, wildcards and expressions in heads
    "positive": ("""
        .decl e(x: number, y: number)
        .decl s(x: number)
        .decl hop2(x: number, z: number) inline
        .decl loop(x: number) inline
        .decl shifted(x: number, y: number) inline
        .decl r(x: number, z: number)
        .decl q(x: number)
        .decl t(x: number)
        hop2(x, z) :- e(x, y), e(y, z).
        loop(x) :- e(x, x).
        loop(x) :- s(x), x > 3.
        .decl twice(x: number)
        twice(x) :- hop2(x, x), loop(x).
        shifted(x + 1, y) :- e(x, y), x < y.
        shifted(y, y) :- s(y).
        r(x, z) :- hop2(x, z), !loop(x).
        q(x) :- hop2(x, 3) ; hop2(_, x), s(x).
        t(y) :- shifted(y, y).
    """, {"e": [NODE, NODE], "s": [NODE]}),
    # negated uses (De Morgan) with computed variables, facts of an inline relation, recursion
    "negation_and_recursion": ("""
        .decl e(x: number, y: number)
        .decl s(x: number)
        .decl small(x: number) inline
        .decl near(x: number, y: number) inline
        .decl path(x: number, y: number)
        .decl far(x: number, y: number)
        .decl lonely(x: number)
        small(0). small(1). small(2).
        near(x, y) :- e(x, y), y2 = y * 2, !small(y2).
        near(x, x) :- s(x).
        path(x, y) :- near(x, y).
        path(x, z) :- path(x, y), near(y, z).
        far(x, y) :- path(x, y), !near(x, y), !small(x).
        lonely(x) :- s(x), !near(x, 3), !small(x).
    """, {"e": [NODE, NODE], "s": [NODE]}),
    # aggregates inside inline clauses (correlated with the use), symbol constants in heads
    "aggregates_and_symbols": ("""
        .decl e(x: number, y: number)
        .decl n(x: number)
        .decl s(k: symbol, x: number)
        .decl deg(x: number, c: number) inline
        .decl busy(x: number) inline
        .decl kind(x: number, k: symbol) inline
        .decl r1(x: number, c: number)
        .decl r2(x: number)
        .decl r3(x: number)
        .decl r4(x: number, k: symbol)
        .decl r5(x: number)
        deg(x, c) :- n(x), c = count : { e(x, _) }.
        busy(x) :- n(x), 2 <= count : { e(x, _) }.
        kind(x, "a") :- e(x, _).
        kind(x, k) :- s(k, x).
        r1(x, c) :- deg(x, c), c > 0.
        r2(x) :- n(x), !busy(x).
        r3(x) :- n(x), kind(x, "b").
        r4(x, k) :- n(x), kind(x, k), !kind(x, "a").
        r5(x) :- n(x), max y : { e(x, y) } = m, deg(m, 2).
    """, {"e": [NODE, NODE], "n": [NODE], "s": [["a", "b", "c"], NODE]}),
}


def _without_inline(source: str) -> str:
    return source.replace(") inline", ")")


def _schedule(rng, inputs, commits):
    present = {name: set() for name in inputs}
    for _ in range(commits):
        ops = []
        for name, columns in inputs.items():
            inserts = [tuple(rng.choice(list(c)) for c in columns) for _ in range(rng.randint(0, 8))]
            removes = [rng.choice(sorted(present[name]))
                       for _ in range(rng.randint(0, 4)) if present[name]]
            ops += [("insert", name, inserts), ("remove", name, removes)]
            present[name] |= set(inserts)
            present[name] -= set(removes)
        rng.shuffle(ops)
        yield ops


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_inline_agrees_with_the_materialised_program(name, seed):
    source, inputs = PROGRAMS[name]
    inlined = dd.Program(source)
    plain = dd.Program(_without_inline(source))
    inline_names = set(plain.relations) - set(inlined.relations)
    assert inline_names and inline_names == set(inlined.analysed.inlined)
    facts = {n: set() for n in inputs}
    rng = random.Random(f"{name}-{seed}")
    for ops in _schedule(rng, inputs, commits=6):
        for op, relation, rows in ops:
            getattr(inlined, op)(relation, rows)
            getattr(plain, op)(relation, rows)
            facts[relation] = facts[relation] | set(rows) if op == "insert" \
                else facts[relation] - set(rows)
        inlined.commit()
        plain.commit()
        reference = evaluate(_without_inline(source), facts)
        for relation in inlined.relations:
            got = inlined.relation(relation)
            assert got == plain.relation(relation) == reference[relation], (relation, facts)


def test_an_inline_pair_relation_is_never_built():
    decls = (".decl n(x: number)\n.decl m(x: number)\n.decl link(x: number, y: number)\n"
             ".decl r(x: number, y: number)\n")
    inlined = dd.Program(decls + ".decl pair(x: number, y: number) inline\n"
                         "pair(x, y) :- n(x), m(y).\n"
                         "r(x, y) :- pair(x, y), link(x, y).\n")
    by_hand = dd.Program(decls + "r(x, y) :- n(x), m(y), link(x, y).\n")
    assert "pair" not in inlined._compiled.collections
    assert "pair" not in inlined._compiled.inputs and "pair" not in inlined._compiled.outputs
    assert len(inlined.flow.graph.nodes) == len(by_hand.flow.graph.nodes)
    plan = inlined.plan().replace("#1", "").replace("#2", "").splitlines()
    assert plan[-1] == "note: pair is inline: unfolded into the rules of r, never computed"
    assert plan[:-1] == by_hand.plan().splitlines()
    # pair would hold 10^4 x 10^4 facts; unfolded, n joins link (10^4 facts) and then m
    inlined.insert("n", [(i,) for i in range(10_000)])
    inlined.insert("m", [(i,) for i in range(10_000)])
    inlined.insert("link", [(i, i + 1) for i in range(10_000)])
    inlined.commit()
    assert inlined.size("r") == 9_999  # every link but (9999, 10000)


def test_explain_plan_shows_the_unfolded_clauses():
    program = dd.Program(".decl e(x: number, y: number)\n.decl r(x: number)\n"
                         ".decl both(x: number) inline\n"
                         "both(x) :- e(x, 1).\nboth(x) :- e(1, x).\n"
                         "r(x) :- both(x), !e(x, x).\n")
    text = program.plan()
    assert "r(x) :- e(x, 1), !e(x, x)." in text
    assert "r(x) :- e(1, x), !e(x, x)." in text
    assert "note: both is inline: unfolded into the rules of r, never computed" in text


def test_reading_or_changing_an_inline_relation_says_it_is_inline():
    program = dd.Program(".decl e(x: number)\n.decl i(x: number) inline\n.decl r(x: number)\n"
                         "i(x) :- e(x).\nr(x) :- i(x).\n")
    for call in (lambda: program.relation("i"), lambda: program.insert("i", [(1,)]),
                 lambda: dd.Program(program.source, outputs=["i"])):
        with pytest.raises(ValueError, match="relation 'i' is declared inline: it is unfolded "
                                             "into the rules that use it and never computed"):
            call()
    assert "i" not in program.relations


def test_inline_exclude_pragma_and_no_inline_keep_relations_materialised():
    source = ('.pragma "inline-exclude" "a"\n.decl e(x: number)\n'
              ".decl a(x: number) inline\n.decl b(x: number) inline no_inline\n"
              ".decl c(x: number) inline\n"
              "a(x) :- e(x).\nb(x) :- e(x).\nc(x) :- e(x).\n.decl r(x: number)\n"
              "r(x) :- a(x), b(x), c(x).\n")
    program = dd.Program(source)
    assert set(program.analysed.inlined) == {"c"}
    program.insert("e", [(4,)])
    program.commit()
    assert program.relation("a") == program.relation("b") == program.relation("r") == {(4,)}


def _error(source: str) -> DatalogError:
    with pytest.raises(DatalogError) as info:
        analyse(parse(source, "prog.dl"), source)
    return info.value


@pytest.mark.parametrize("source, where, message", [
    (".decl a(x: number)\n.decl b(x: number, y: number) inline\n.output b\nb(x, x) :- a(x).\n",
     (2, 7), "IO relation b cannot be inlined"),
    (".decl i(x: number)\n.decl m(x: number) inline\n.decl n(x: number) inline\n"
     ".decl o(x: number) inline\nn(x) :- m(x).\nm(x) :- o(x).\no(x) :- n(x).\nm(x) :- i(x).\n",
     (2, 7), "Cannot inline cyclically dependent relations {m, n, o}"),
    (".decl e(x: number)\n.decl i(x: number) inline\n.decl r(n: number)\ni(x) :- e(x).\n"
     "r(n) :- n = count : { i(_) }.\n",
     (5, 23), "Cannot inline relations that appear in aggregator"),
    (".decl c(x: number)\n.decl d(x: number, y: number)\n.decl b(x: number) inline\n"
     "b(x) :- d(x, y), !c(y).\n.decl a(x: number)\na(x) :- c(x), !b(x).\n",
     (6, 15), "Cannot inline negated relation which may introduce new variables"),
    (".decl c(x: number)\n.decl e(x: number) inline\ne(x) :- c(x).\n.decl a(x: number)\n"
     "a(x) :- c(x), !e(_).\n",
     (5, 18), "Cannot inline negated atom containing an unnamed variable"),
])
def test_souffle_restrictions_are_located_errors(source, where, message):
    e = _error(source)
    assert ((e.line, e.column), e.message) == (where, message)


def test_an_inline_clause_is_checked_where_it_is_unfolded():
    # as in Soufflé: a(x, y) :- x = y + 1 is fine where y is bound by the use, b is not
    source = (".decl a(x: number, y: number) inline\na(x, y) :- x = y + 1.\n"
              ".decl b(x: number, y: number) inline\nb(x, y) :- 0 < x, 0 < y.\n"
              ".decl r0(x: number)\nr0(x) :- a(x, 0).\n")
    program = dd.Program(source)
    program.commit()
    assert program.relation("r0") == {(1,)}
    # c(x, 0) unfolds to x = 1, 0 < 0, which can never hold: diffflow drops that clause, but
    # r0 is still computed by rules (takes no facts)
    never = dd.Program(source.replace("r0(x) :- a(x, 0).\n", "r0(x) :- c(x, 0).\n") +
                       ".decl c(x: number, y: number) inline\nc(x, y) :- x = 1, 0 < y.\n")
    with pytest.raises(ValueError, match="relation 'r0' is computed by rules"):
        never.insert("r0", [(1,)])
    never.commit()
    assert never.relation("r0") == set() and "r0: always empty" in never.plan()
    # b(x, 0) would also never hold (0 < 0), but its x is not bound: an error all the same,
    # as in Soufflé (issue 41, inline_ungrounded)
    for constant in (0, 1):
        e = _error(source + f"r0(x) :- b(x, {constant}).\n")
        assert (e.line, e.column) == (7, 12)  # the use's x, which b's 0 < x became
        assert e.message == "variable 'x' in a comparison is not bound by a positive atom"
    assert e.hint.endswith("; this is where inline b is unfolded into the rule at line 7")
