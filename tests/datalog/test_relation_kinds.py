"""eqrel, subsumptive rules, choice-domain and .limitsize: Soufflé's documented examples
through ``diffflow run``, their incremental behaviour, value order, and their errors.

The random differential programs ("eqrel", "subsumption", "choice" in
tests/datalog/test_incremental.py) check every commit against the reference
evaluator; these tests pin down semantics by hand-computed outcomes.
"""
import pytest

import diffflow as dd
from tests.support.helpers import run_datalog

_run = run_datalog  # diffflow run; {output relation: sorted lines}


# -- the examples of Soufflé's documentation ----------------------------------------------

def test_choice_spanning_tree_from_soufflés_documentation(tmp_path):
    # souffle-lang.github.io/choice; its output table prints the root "r" as "root"
    out = _run(tmp_path, """
        .decl edge(v:symbol, u:symbol)
        edge("L1","L2"). edge("L2","L10"). edge("L2","L3").
        edge("L3","L4"). edge("L4","L8"). edge("L3","L6").
        edge("L6","L8"). edge("L8","L2").

        .decl st(v:symbol, u:symbol) choice-domain u
        st("r","L1").
        st(v,u) :- st(_, v), edge(v,u).
        .output st
    """)
    assert out["st"] == sorted(["r\tL1", "L1\tL2", "L2\tL10", "L2\tL3", "L3\tL4", "L4\tL8",
                                "L3\tL6"])


def test_choice_advisor_example_picks_one_professor_per_student_and_year(tmp_path):
    out = _run(tmp_path, """
        .decl student(s:symbol, majr:symbol, year:number)
        .decl professor(s:symbol, majr:symbol)
        .decl advisor(s:symbol, year:number, p:symbol) choice-domain (s, year)
        .input student, professor
        .output advisor
        advisor(s, y, p) :- student(s, m, y), professor(p, m).
    """, {"student": "ann\tcs\t1\nann\tcs\t2\nbob\tmath\t1\n",
          "professor": "zed\tcs\nabe\tcs\nkim\tmath\n"})
    # one professor per (student, year): the first by name
    assert out["advisor"] == ["ann\t1\tabe", "ann\t2\tabe", "bob\t1\tkim"]


def test_choice_with_two_domains_orders_a_set_into_a_list(tmp_path):
    # the documentation's total order, seeded with a head element
    out = _run(tmp_path, """
        .decl d(x:symbol)
        d("c"). d("a"). d("b").
        .decl list(prev:symbol, next:symbol) choice-domain prev, next
        list("", n) :- d(n), n = "a".
        list(p, n) :- d(n), list(_, p).
        .output list
    """)
    # each element has one successor and one predecessor; a greedy pass in value order
    # takes the smallest free pair each time
    assert out["list"] == sorted(["\ta", "a\tb", "b\tc"])


def test_limitsize_from_soufflés_documentation_stops_at_47(tmp_path):
    out = _run(tmp_path, """
        .decl A(x:number)
        A(1).
        A(x+1) :- A(x), x< 1000.
        .output A

        .limitsize A(n=47)
    """)
    assert sorted(int(v) for v in out["A"]) == list(range(1, 48))


def test_eqrel_from_soufflés_documentation_equals_the_explicit_rules(tmp_path):
    both = """
        .decl rel1(x: number)
        .decl rel2(x: number)
        rel1(1). rel1(2). rel2(7).
        .decl equivalence(x: number, y: number)
        equivalence(a, b) :- rel1(a), rel2(b).
        equivalence(a, a) :- equivalence(a, _).     // reflexivity
        equivalence(a, b) :- equivalence(b, a).     // symmetry
        equivalence(a, c) :- equivalence(a, b), equivalence(b, c).  // transitivity
        .decl eqrel_fast(x : number, y : number) eqrel
        eqrel_fast(a,b) :- rel1(a), rel2(b).
        .output equivalence, eqrel_fast
    """
    out = _run(tmp_path, both)
    assert out["eqrel_fast"] == out["equivalence"]
    assert len(out["eqrel_fast"]) == 9  # one class {1, 2, 7}: every ordered pair


def test_subsumption_builds_a_shortest_path_tree(tmp_path):
    out = _run(tmp_path, """
        .decl graph(from:number, to:number)
        graph(1, 2). graph(1, 3). graph(3, 4). graph(2, 5). graph(4, 6). graph(5, 6).
        graph(6, 7).
        .decl tree(from:number, to:number, hops:number)
        tree(1, 2, 1). tree(1, 3, 1).
        tree(from, to, c + 1) :- tree(_, from, c), graph(from, to).
        tree(from, to, c1) <= tree(_, to, c2) :- c1 > c2.
        tree(from1, to, c) <= tree(from2, to, c) :- from1 > from2.
        .output tree
    """)
    # 6 is two hops from both 4 and 5: the smaller parent, 4, stays
    assert out["tree"] == sorted(["1\t2\t1", "1\t3\t1", "3\t4\t2", "2\t5\t2", "4\t6\t3",
                                  "6\t7\t4"])


def test_a_tuple_never_subsumes_itself_and_wildcards_compare_the_rest(tmp_path):
    out = _run(tmp_path, """
        .decl c(x: number)
        .decl d(x: number, y: number)
        c(1). d(1, 1).
        c(x1) <= c(x2) :- d(x1, x2), x1 <= x2.
        .decl e(x: number, y: number)
        e(1, 1). e(1, 2).
        e(_, y1) <= e(_, y2) :- y1 <= y2.
        .decl f(x: number)
        f(1). f(2).
        f(x1) <= f(x2) :- x1 <= x2.
        .decl g(x: number)
        g(3).
        g(n) <= g(n) :- g(n).
        .output c, e, f, g
    """)
    assert out == {"c": ["1"], "e": ["1\t2"], "f": ["2"], "g": ["3"]}


def test_inside_recursion_what_a_dominated_row_derived_stays(tmp_path):
    # w(1, 4) comes from w(1, 2) and dominates it: Soufflé deletes w(1, 2) and keeps w(1, 4)
    out = _run(tmp_path, """
        .decl e(a:number,b:number)
        e(1,2). e(2,4).
        .decl w(a:number,b:number)
        .output w
        w(a,b) :- e(a,b).
        w(a,b) :- w(a,c), e(c,b).
        w(a,b) <= w(a,c) :- c > b.
    """)
    assert out["w"] == ["1\t4", "2\t4"]


def test_a_recursive_limitsize_keeps_what_it_took_first(tmp_path):
    # the first round holds (1,0) and (2,1): the limit is reached, (2,0) never comes in
    out = _run(tmp_path, """
        .decl edge(x:number, y:number)
        edge(2,1). edge(1,0).
        .decl limr(x:number,y:number)
        .limitsize limr(n=2)
        .output limr
        limr(x,y) :- edge(x,y).
        limr(x,z) :- limr(x,y), edge(y,z).
    """)
    assert out["limr"] == ["1\t0", "2\t1"]


# -- incremental behaviour -----------------------------------------------------------------

def test_removing_a_link_splits_an_equivalence_class():
    p = dd.Program(".decl link(a: symbol, b: symbol)\n.decl same(a: symbol, b: symbol) eqrel\n"
                   "same(a, b) :- link(a, b).\n")
    p.insert("link", [("x", "y"), ("y", "z")]); p.commit()
    assert len(p.relation("same")) == 9 and len(dict(p.changes("same"))) == 9
    p.remove("link", [("y", "z")]); p.commit()
    assert p.relation("same") == {("x", "x"), ("x", "y"), ("y", "x"), ("y", "y")}
    assert dict(p.changes("same")) == {("z", "z"): -1, ("x", "z"): -1, ("z", "x"): -1,
                                       ("y", "z"): -1, ("z", "y"): -1}


def test_a_choice_changes_only_when_its_row_goes_or_a_smaller_candidate_comes():
    p = dd.Program(".decl offer(k: symbol, v: symbol)\n"
                   ".decl pick(k: symbol, v: symbol) choice-domain k\n"
                   "pick(k, v) :- offer(k, v).\n")
    p.insert("offer", [("k", "m"), ("k", "x")]); p.commit()
    assert dict(p.changes("pick")) == {("k", "m"): +1}
    p.insert("offer", [("k", "z")]); p.commit()  # a larger candidate: nothing changes
    assert dict(p.changes("pick")) == {}
    p.remove("offer", [("k", "m")]); p.commit()  # the chosen row goes: the next one
    assert dict(p.changes("pick")) == {("k", "m"): -1, ("k", "x"): +1}
    p.insert("offer", [("k", "B")]); p.commit()  # smaller by text ("B" < "x")
    assert dict(p.changes("pick")) == {("k", "x"): -1, ("k", "B"): +1}


def test_symbols_are_chosen_in_text_order_not_by_their_ids():
    words = ["zeta", "b", "bé", "a", "ab", "", "Z", "é"]
    p = dd.Program(".decl w(s: symbol)\n.decl one(k: number, s: symbol) choice-domain k\n"
                   ".decl three(s: symbol)\n.limitsize three(n=3)\n"
                   "one(0, s) :- w(s).\nthree(s) :- w(s).\n", partitions=3)
    p.insert("w", [(s,) for s in words]); p.commit()
    assert p.relation("one") == {(0, "")}
    assert p.relation("three") == {("",), ("Z",), ("a",)}
    p.remove("w", [("",), ("Z",)]); p.commit()
    assert p.relation("three") == {("a",), ("ab",), ("b",)}
    assert sorted(words, key=lambda s: s.encode()) == sorted(words)  # code point = UTF-8


def test_a_dominated_row_comes_back_when_what_dominated_it_goes():
    p = dd.Program(".decl cost(k: number, c: float)\n.decl best(k: number, c: float)\n"
                   "best(k, c) :- cost(k, c).\nbest(k, c1) <= best(k, c2) :- c2 < c1.\n")
    p.insert("cost", [(1, 2.5), (1, 0.5), (2, 9.0)]); p.commit()
    assert p.relation("best") == {(1, 0.5), (2, 9.0)}
    p.remove("cost", [(1, 0.5)]); p.commit()
    assert p.relation("best") == {(1, 2.5), (2, 9.0)}


def test_limitsize_keeps_the_first_rows_as_rows_come_and_go():
    p = dd.Program(".decl e(x: number)\n.decl r(x: number)\n.limitsize r(n=2)\nr(x) :- e(x).\n")
    p.insert("e", [(5,), (3,), (9,)]); p.commit()
    assert p.relation("r") == {(3,), (5,)}
    p.remove("e", [(3,)]); p.insert("e", [(-1,)]); p.commit()
    assert p.relation("r") == {(-1,), (5,)}


def test_the_plan_says_what_each_declaration_adds():
    p = dd.Program(".decl e(x: number, y: number)\n.decl s(x: number, y: number) eqrel\n"
                   ".decl c(x: number, y: number) choice-domain x\n.limitsize c(n=4)\n"
                   "s(x, y) :- e(x, y).\nc(x, y) :- e(x, y).\nc(x, y) <= c(x, z) :- z < y.\n")
    plan = p.plan()
    assert "s: equivalence closure (eqrel)" in plan
    assert "c: minus the candidates its subsumptive rules dominate" in plan
    assert "c: one row per choice-domain value" in plan and "first 4 rows" in plan


def test_a_repeated_choice_key_or_attribute_counts_once(tmp_path):
    # as in Soufflé: (x, x) is the key x; x, x, x is one key x; (x, y), (y, x) one key
    out = _run(tmp_path, """
        .decl a(x: symbol, y: symbol) choice-domain (x, x)
        .decl b(x: symbol, y: symbol) choice-domain x, x, x
        .decl c(x: symbol, y: symbol) choice-domain (x, y), (y, x)
        .decl e(x: symbol, y: symbol)
        e("p", "q"). e("p", "r"). e("s", "q").
        a(x, y) :- e(x, y).
        b(x, y) :- e(x, y).
        c(x, y) :- e(x, y).
        .output a, b, c
    """)
    assert out["a"] == out["b"] == ["p\tq", "s\tq"]  # the first y per x
    assert out["c"] == ["p\tq", "p\tr", "s\tq"]  # every (x, y) pair is its own key


# -- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("source, message, at", [
    (".decl s(x: number, y: symbol) eqrel\n", "eqrel relation 's' must have two attributes "
     "of one type", (1, 7)),
    (".decl s(x: number) eqrel\n", "two attributes", (1, 7)),
    (".decl c(x: number, y: number) choice-domain z\n", "names 'z', which is not one of its "
     "attributes", (1, 45)),
    (".decl s(x: number, y: number) eqrel choice-domain x\n", "eqrel and has a "
     "choice-domain", (1, 51)),
    (".decl s(x: number, y: number) eqrel\ns(a, b) <= s(a, c) :- c < b.\n",
     "cannot also have subsumptive rules or .limitsize", (1, 7)),
    (".decl s(x: number, y: number) eqrel\n.limitsize s(n=3)\n", "whole equivalence "
     "closure", (1, 7)),
    (".decl r(x: number)\n.limitsize r(size=3)\n", "needs one parameter n=<count>", (2, 12)),
    (".decl r(x: number)\n.limitsize r(n=lots)\n", "needs one parameter", (2, 12)),
    (".decl r(x: number)\n.limitsize r(n=2)\n.limitsize r(n=3)\n", "given twice", (3, 12)),
    (".decl r(x: number)\n.decl q(x: number)\nr(x) <= q(y) :- x < y.\n",
     "compares tuples of one relation", (3, 9)),
    (".decl r(x: number)\nr(x) < r(y) :- x < y.\n", "a subsumptive rule is written", (2, 6)),
    (".decl r(x: number)\nr(x) <= r(y) :- x < z.\n", "'z'", (2, 21)),
    (".decl r(x: number) inline\n.decl e(x: number)\nr(x) :- e(x).\n.limitsize r(n=1)\n",
     "inline relation 'r' cannot", (1, 7)),
])
def test_declaration_errors_are_located_and_named(source, message, at):
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(source, filename="k.dl")
    text = str(caught.value)
    assert message in text and f"k.dl:{at[0]}:{at[1]}:" in text, text
