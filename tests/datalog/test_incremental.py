"""Datalog programs under random inserts and removes: incremental == from scratch == oracle.

Every program runs with 1 and 3 partitions over seeded random update
sequences.  At every commit each relation must equal the plain reference
evaluator (``tests/support/datalog_reference.py``) on the accumulated facts,
``changes()`` must be exactly the difference from the previous commit, and at
the last commit a fresh ``Program`` loaded with the accumulated facts must
agree with the incrementally maintained one.
"""
import random
import warnings

import pytest

import diffflow as dd
from tests.support.datalog_reference import evaluate
from tests.support.helpers import RUNTIME_OPTIONS

# every loop test here runs with compiled rounds forced on and off (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("compiled_rounds_both_ways")

NUM = ("num", range(-3, 5))
NODE = ("num", range(0, 6))
SYM = ("sym", ["a", "b", "c", "d"])
WEIGHT = ("num", range(0, 4))

PROGRAMS = {
    "closure_and_negation": ("""
        .decl edge(x: number, y: number)
        .decl node(x: number)
        .decl path(x: number, y: number)
        .decl unreachable(x: number, y: number)
        .decl cyclic()
        node(x) :- edge(x, _) ; edge(_, x).
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
        unreachable(x, y) :- node(x), node(y), !path(x, y).
        cyclic() :- path(x, x).
    """, {"edge": [NODE, NODE]}),
    "same_generation": ("""
        .decl parent(p: number, c: number)
        .decl sg(x: number, y: number)
        sg(x, y) :- parent(p, x), parent(p, y), x != y.
        sg(x, y) :- parent(a, x), sg(a, b), parent(b, y).
    """, {"parent": [NODE, NODE]}),
    "aggregates": ("""
        .decl e(x: number, y: number)
        .decl k(x: number)
        .decl deg(x: number, n: number)
        .decl stats(x: number, s: number, lo: number, hi: number)
        .decl total(n: number, s: number)
        .decl heavy(x: number)
        deg(x, n) :- k(x), n = count : e(x, _).
        stats(x, s, lo, hi) :- k(x), s = sum y : { e(x, y) }, lo = min y : { e(x, y) },
                               hi = max y + x : { e(x, y), y != x }.
        total(n, s) :- n = count : { e(_, _) }, s = sum y * 2 : { e(_, y), y > 0 }.
        heavy(x) :- k(x), count : { e(x, y), e(y, _) } > 1.
    """, {"e": [NUM, NUM], "k": [NUM]}),
    "arithmetic": ("""
        .decl a(x: number)
        .decl b(y: number)
        .decl r(x: number, y: number, p: number, q: number, m: number)
        .decl big(x: number)
        .decl pw(x: number)
        r(x, y, x * y - 3, x / y, x % y) :- a(x), b(y), y != 0.
        big(x * 1000000 * 3000) :- a(x).
        pw(-(x ^ 3) + 2147483647) :- a(x), x > 0.
    """, {"a": [NUM], "b": [NUM]}),
    "mutual_recursion": ("""
        .decl edge(x: number, y: number)
        .decl start(x: number)
        .decl even(x: number)
        .decl odd(x: number)
        even(x) :- start(x).
        even(y) :- odd(x), edge(x, y).
        odd(y) :- even(x), edge(x, y).
    """, {"edge": [NODE, NODE], "start": [NODE]}),
    "shortest_paths": ("""
        .decl edge(x: number, y: number, w: number)
        .decl source(x: number)
        .decl cand(x: number, d: number)
        .decl dist(x: number, d: number)
        cand(x, 0) :- source(x).
        cand(y, d + w) :- dist(x, d), edge(x, y, w).
        dist(x, d) :- cand(x, _), d = min c : { cand(x, c) }.
    """, {"edge": [NODE, NODE, WEIGHT], "source": [NODE]}),
    "components": ("""
        .decl edge(x: number, y: number)
        .decl node(x: number)
        .decl label(x: number, l: number)
        .decl cc(x: number, l: number)
        node(x) :- edge(x, _) ; edge(_, x).
        label(x, x) :- node(x).
        label(y, l) :- cc(x, l), (edge(x, y) ; edge(y, x)).
        cc(x, l) :- label(x, _), l = min m : { label(x, m) }.
    """, {"edge": [NODE, NODE]}),
    "symbols_and_facts": ("""
        .type Name <: symbol
        .decl likes(a: Name, b: Name)
        .decl mutual(a: Name, b: Name)
        .decl fan(a: Name)
        .decl popular(a: Name, n: number)
        .decl seed(a: Name)
        .decl anyone()
        seed("a").
        seed("zed").
        mutual(x, y), mutual(y, x) :- likes(x, y), likes(y, x), x != y.
        fan(x) :- likes(x, "b") ; seed(x), !likes(x, _).
        popular(b, n) :- likes(_, b), n = count : { likes(_, b) }, n >= 2.
        anyone() :- likes(_, _).
    """, {"likes": [SYM, SYM]}),
    "functors": ("""
        .type Word <: symbol
        .decl w(s: Word, n: number)
        .decl u(v: unsigned)
        .decl text(s: symbol, len: number, tag: symbol, cut: symbol)
        .decl nums(n: number, b: number, l: number, x: number)
        .decl bits(v: unsigned, s: unsigned, c: number, f: float)
        .decl picked(s: symbol, k: number)
        .decl longest(n: number)
        text(s, strlen(s), cat(s, "#", to_string(n)), substr(s, n, 2)) :- w(s, n).
        nums(n, (n band 6) bor (n bshl 3) bxor bnot n, n land 1 lor lnot n,
             max(n, 2, -n) + min(abs(n), 3) + (n bshr 1) + (n bshru 28)) :- w(_, n).
        bits(v bshru 1u, itou(utoi(v) * 3) band 255u, as(v, number) + ftoi(utof(v) / 2.0),
             itof(utoi(v)) * 0.5) :- u(v).
        picked(s, to_number(to_string(n)) * 2) :- w(s, n), contains("a", s), !match("b.*", s).
        longest(n) :- n = max strlen(s) : { w(s, _) }.
        .decl ordered(a: symbol, b: symbol, lo: symbol)
        ordered(a, b, min(a, b, "c")) :- w(a, _), w(b, _), a < b, b <= "cab".
    """, {"w": [("sym", ["a", "ba", "bé", "cab", "", "abc"]), ("num", range(-2, 4))],
          "u": [("num", [0, 1, 7, 255, 4294967295, 2147483648])]}),
    "eqrel": ("""
        .decl e(x: number, y: number)
        .decl f(x: number, y: number)
        .decl same(x: number, y: number) eqrel
        .decl congruent(x: number, y: number) eqrel
        .decl classes(n: number)
        same(x, y) :- e(x, y).
        congruent(x, y) :- e(x, y), x < 2.
        congruent(x, y) :- congruent(a, b), f(a, x), f(b, y).
        classes(n) :- n = count : { same(x, y), x <= y }.
    """, {"e": [NODE, NODE], "f": [NODE, NODE]}),
    "subsumption": ("""
        .decl edge(x: number, y: number, w: number)
        .decl source(x: number)
        .decl dist(x: number, d: number)
        .decl pair(a: symbol, b: number)
        .decl top(a: symbol, b: number)
        dist(x, 0) :- source(x).
        dist(y, d + w) :- dist(x, d), edge(x, y, w), d + w < 20.
        dist(x, d1) <= dist(x, d2) :- d2 < d1.
        top(a, b) :- pair(a, b).
        top(_, b1) <= top(_, b2) :- b1 <= b2.
    """, {"edge": [NODE, NODE, WEIGHT], "source": [NODE],
          "pair": [SYM, ("num", range(0, 3))]}),
    # a row may dominate the row it was derived from: that row goes, what it derived stays
    "subsumed_support": ("""
        .decl edge(x: number, y: number)
        .decl far(a: number, b: number)
        far(a, b) :- edge(a, b).
        far(a, b) :- far(a, c), edge(c, b).
        far(a, b) <= far(a, c) :- c > b.
    """, {"edge": [NODE, NODE]}),
    "choice": ("""
        .decl edge(v: symbol, u: symbol)
        .decl root(v: symbol)
        .decl st(v: symbol, u: symbol) choice-domain u
        .decl match(a: symbol, b: number) choice-domain a, b
        .decl pick(a: symbol, b: number, c: number) choice-domain (a, b)
        .decl few(a: symbol, b: number)
        .limitsize few(n=3)
        .decl w(a: symbol, b: number)
        st("r", v) :- root(v).
        st(v, u) :- st(_, v), edge(v, u).
        match(a, b) :- w(a, b).
        pick(a, b, c) :- w(a, b), w(_, c).
        few(a, b) :- w(a, b).
        .decl lim(v: symbol, u: symbol)
        .limitsize lim(n=4)
        lim(v, u) :- edge(v, u).
        lim(v, w) :- lim(v, u), edge(u, w).
    """, {"edge": [SYM, SYM], "root": [SYM],
          "w": [("sym", ["a", "b", "bé", "ab", ""]), ("num", range(-1, 3))]}),
    "range": ("""
        .decl n(x: number)
        .decl f(x: float)
        .decl counts(x: number, i: number)
        .decl down(x: number, i: number)
        .decl halves(i: float)
        .decl stepped(x: number, i: number)
        .decl hit(x: number)
        .decl shifted(v: number)
        counts(x, i) :- n(x), i = range(0, x).
        down(x, i) :- n(x), i = range(x, -2).
        halves(i) :- f(a), i = range(a, 3.0, 0.75).
        stepped(x, i) :- n(x), n(s), i = range(x, 9, s).
        hit(x) :- n(x), x = range(0, 3).
        shifted(range(1, x) * 10) :- n(x).
        .decl chain(x: number)
        chain(x) :- n(x), x < 0.
        chain(y) :- chain(x), y = range(x + 1, x + 3), y < 4.
    """, {"n": [("num", range(-3, 6))], "f": [("float", [0.0, 1.5, -0.25, 3.0, 4.5])]}),
    "component_instances": ("""
        .comp Graph<N> {
            .decl edge(a: N, b: N)
            .decl reach(a: N, b: N)
            reach(a, b) :- edge(a, b).
            reach(a, c) :- reach(a, b), edge(b, c).
        }
        .comp Cycles<N> : Graph<N> {
            .decl on_cycle(a: N) overridable
            on_cycle(a) :- reach(a, a).
        }
        .comp Loops<N> : Cycles<N> {
            .override on_cycle
            on_cycle(a) :- edge(a, a).
        }
        .init g = Cycles<number>
        .init h = Loops<symbol>
        .decl both(a: number)
        both(a) :- g.on_cycle(a), g.reach(a, b), b > a.
    """, {"g.edge": [NODE, NODE], "h.edge": [SYM, SYM]}),
    "records_and_adts": ("""
        .type Pair = [a: number, b: number]
        .type Path = [last: number, rest: Path]
        .type Shape = Dot {x: number} | Seg {p: Pair, n: number} | Nothing {}
        .decl edge(a: number, b: number)
        .decl tagged(p: Pair, s: symbol)
        .decl pair(p: Pair)
        pair([a, b]) :- edge(a, b).
        .decl path(p: Path, n: number)
        path([b, [a, nil]], 1) :- edge(a, b), a < b.
        path([c, p], n + 1) :- path(p, n), p = [b, _], edge(b, c), b < c.
        .decl starts(a: number, n: number)
        starts(a, n) :- path(p, n), p = [_, [_, r]], r = nil, path([_, [a, nil]], 1).
        .decl labelled(a: number, s: symbol)
        labelled(a, s) :- tagged([a, b], s), pair([b, a]).
        .decl untagged(p: Pair)
        untagged(p) :- pair(p), !tagged(p, "x").
        .decl nil_tag(s: symbol)
        nil_tag(s) :- tagged(nil, s).
        .decl shape(s: Shape)
        shape($Dot(a)) :- edge(a, a).
        shape($Seg(p, a + b)) :- pair(p), p = [a, b], a != b.
        shape($Nothing()) :- edge(_, _), !pair([0, 0]).
        .decl dots(x: number)
        dots(x) :- shape($Dot(x)).
        .decl segs(a: number, n: number)
        segs(a, n) :- shape($Seg([a, _], n)).
        .decl nothing()
        nothing() :- shape($Nothing).
        .decl firsts(a: number, s: number)
        firsts(a, s) :- edge(a, _), s = sum b : { pair([a, b]) }.
        .decl ordered(n: number)
        ordered(n) :- n = count : { tagged(p, _), p = [a, b], a < b }.
        .functor first(p: Pair): number
        .functor pair(n: number, m: number): Pair stateful
        .decl made(p: Pair)
        made(@pair(b, a)) :- edge(a, b), a != b.
        .decl heads(y: number)
        heads(@first(p)) :- made(p).
        .decl untouched(a: number)
        untouched(a) :- edge(a, _), !pair([_, a]), !shape($Seg([a, _], _)).
        .decl lonely(n: number)
        lonely(n) :- n = count : { edge(a, _), !tagged([a, _], _) }.
    """, {"edge": [NODE, NODE],
          "tagged": [("pair", [(0, 1), (1, 0), (2, 3), (1, 1), None]), SYM]}),
    "autoinc": ("""
        .decl edge(a: number, b: number)
        .decl name(n: symbol)
        .decl numbered(n: symbol, i: number)
        numbered(n, autoinc()) :- name(n).
        .decl reach(a: number, b: number)
        reach(a, b) :- edge(a, b).
        reach(a, c) :- reach(a, b), edge(b, c).
        .decl hop(id: number, a: number, b: number, again: number)
        hop(autoinc(), a, b, autoinc()) :- reach(a, b), a < b.
        .decl pairs(i: number, j: number)
        pairs(i, j) :- numbered(_, i), hop(j, _, _, _), i = j.
    """, {"edge": [NODE, NODE], "name": [SYM]}),
    "mean": ("""
        .decl e(x: number, y: number)
        .decl u(x: number, w: unsigned)
        .decl avg(x: number, m: float)
        avg(x, m) :- e(x, _), m = mean y : { e(x, y) }.
        .decl spread(m: float)
        spread(m) :- m = mean y - x : { e(x, y), x < y }.
        .decl uavg(x: number, m: float)
        uavg(x, m) :- u(x, _), m = mean w : u(x, w).
        .decl above(x: number, y: number)
        above(x, y) :- avg(x, m), e(x, y), itof(y) > m.
    """, {"e": [NODE, NUM], "u": [NODE, ("num", range(0, 5))]}),
    "unions_and_user_functors": ("""
        .type Small <: number
        .type Big <: number
        .type Num = Small | Big
        .type Name <: symbol
        .type Label <: symbol
        .type Tag = Name | Label
        .functor shout(s: symbol): symbol
        .functor twice(n: number): number
        .decl n(x: Num, t: Tag)
        .decl loud(t: Tag, y: number)
        loud(@shout(t), @twice(x)) :- n(x, t).
        .decl small(x: Small, t: Label)
        small(as(x, Small), as(t, Label)) :- n(x, t), x < 2.
    """, {"n": [NUM, SYM]}),
    "floats": ("""
        .decl m(x: number, f: float)
        .decl scaled(x: number, g: float)
        .decl best(x: number, g: float)
        scaled(x, f * 2.5 - 1.0) :- m(x, f), f >= 0.5.
        best(x, g) :- m(x, _), g = max f / 2.0 : { m(x, f) }.
    """, {"m": [NODE, ("float", [0.0, 0.5, 1.25, -2.0, 3.5])]}),
}


# the Python functions of programs with .functor declarations
FUNCTORS = {"unions_and_user_functors": {"shout": lambda s: s.upper() + "!",
                                         "twice": lambda n: 2 * n},
            "records_and_adts": {"first": lambda p: p[0], "pair": lambda n, m: (n, m)}}


def _random_row(rng, columns):
    return tuple(rng.choice(list(values)) for _, values in columns)


def _schedule(rng, inputs, commits=5):
    """A list of commits; each a list of (op, relation, rows)."""
    present = {name: set() for name in inputs}
    plan = []
    for _ in range(commits):
        ops = []
        for name, columns in inputs.items():
            inserts = [_random_row(rng, columns) for _ in range(rng.randint(0, 6))]
            removes = [rng.choice(sorted(present[name], key=repr))
                       for _ in range(rng.randint(0, 3)) if present[name]]
            removes += [_random_row(rng, columns)]  # possibly absent: must change nothing
            ops.append(("insert", name, inserts))
            ops.append(("remove", name, removes))
            present[name] |= set(inserts)
            present[name] -= set(removes)
        rng.shuffle(ops)
        plan.append(ops)
    return plan


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_incremental_matches_reference(name, seed, partitions):
    check_program_against_reference(name, seed, partitions)


def _quietly(make, *args, **kw):
    """``make(...)`` without the cross-product warnings these programs earn on purpose."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*a cross product", category=dd.DatalogWarning)
        return make(*args, **kw)


def check_program_against_reference(name, seed, partitions, steps=None):
    """Random commits of ``PROGRAMS[name]`` on the suite's runtime, checked at every commit."""
    source, inputs = PROGRAMS[name]
    rng = random.Random(f"{name}-{seed}")
    functors = FUNCTORS.get(name)
    program = _quietly(dd.Program, source, partitions=partitions, functors=functors,
                       **RUNTIME_OPTIONS)
    facts = {n: set() for n in inputs}
    previous = {r: set() for r in program.relations}
    for step, ops in enumerate(_schedule(rng, inputs, steps or 5)):
        for op, relation, rows in ops:
            getattr(program, op)(relation, rows)
            if op == "insert":
                facts[relation] |= set(rows)
            else:
                facts[relation] -= set(rows)
        program.commit()
        expected = evaluate(source, facts, functors=functors)
        for relation in program.relations:
            got = program.relation(relation)
            assert got == expected[relation], (name, seed, partitions, step, relation)
            change = dict(program.changes(relation))
            want = {row: +1 for row in got - previous[relation]}
            want.update({row: -1 for row in previous[relation] - got})
            assert change == want, (name, step, relation)
            assert program.size(relation) == len(got)
            previous[relation] = got
    fresh = _quietly(dd.Program, source, partitions=partitions, functors=functors)  # local, from scratch
    for relation, rows in facts.items():
        fresh.insert(relation, sorted(rows, key=repr))
    fresh.commit()
    for relation in program.relations:
        assert fresh.relation(relation) == program.relation(relation), relation
    program.close()


def test_reference_evaluator_knows_soufflé_arithmetic():
    # hand-computed: C-style truncation and 32-bit wrap-around
    got = evaluate(PROGRAMS["arithmetic"][0], {"a": {(-7,), (2,)}, "b": {(2,)}})
    assert (-7, 2, -17, -3, -1) in got["r"]
    assert (2 * 1000000 * 3000 - 2**32,) in got["big"]  # 6e9 wraps once
    assert got["pw"] == {(2147483647 - 8,)}


def test_a_negative_cycle_through_min_does_not_converge_and_says_so():
    program = dd.Program(PROGRAMS["shortest_paths"][0], max_rounds=50)
    program.insert("source", [(0,)])
    program.insert("edge", [(0, 1, 1), (1, 0, 0)]); program.commit()
    assert program.relation("dist") == {(0, 0), (1, 1)}
    program.insert("edge", [(1, 2, 1), (2, 1, -3)])  # the cycle 1 -> 2 -> 1 weighs -2
    with pytest.raises(dd.NonConvergenceError, match="50 rounds"):
        program.commit()


def test_a_runtime_failure_names_the_rule_that_failed():
    program = dd.Program(".decl e(x: number)\n.decl r(x: number)\nr(x / y) :- e(x), e(y).\n",
                         filename="div.dl")
    program.insert("e", [(0,), (1,)])
    with pytest.raises(dd.OperatorError, match=r"built at div\.dl:3\).*division by zero") as e:
        program.commit()
    assert not str(e.value).startswith("internal error")  # (the data's, not a bug)


def check_random_commits(source, inputs, relations, partitions, seed, steps=4, **options):
    """A program over seeded random commits (``options`` go to ``Program``), each checked
    against the reference evaluator on ``relations``; the program, for more checks."""
    rng = random.Random(seed)
    program = dd.Program(source, partitions=partitions, **options, **RUNTIME_OPTIONS)
    facts = {n: set() for n in inputs}
    for step, ops in enumerate(_schedule(rng, inputs, steps)):
        for op, relation, rows in ops:
            getattr(program, op)(relation, rows)
            facts[relation] = facts[relation] | set(rows) if op == "insert" \
                else facts[relation] - set(rows)
        program.commit()
        expected = evaluate(source, facts)
        for relation in relations:
            assert program.relation(relation) == expected[relation], (step, relation)
    return program


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_program_without_change_feeds_keeps_its_answers_and_holds_no_changes(partitions):
    """``Program(changes=False)``: every commit's relations still equal the reference
    evaluator's, no output holds a change feed (nothing waits to be read), and asking for
    changes says why there are none."""
    source, inputs = PROGRAMS["closure_and_negation"]
    program = check_random_commits(source, inputs, ["node", "path", "unreachable", "cyclic"],
                                   partitions, "no-feeds", steps=6, changes=False)
    runtime = program.flow._reader()
    for out in program._compiled.outputs.values():
        assert runtime.take_output_changes(out.node.id) == []
    with pytest.raises(ValueError, match=r"changes of path: .*Program\(\.\.\., changes=False\)"):
        program.changes("path")
    with pytest.raises(ValueError, match="keeps no change feeds"):
        program.changes_by_epoch("path")
    program.close()
