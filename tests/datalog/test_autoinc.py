"""``autoinc()``: a rule's distinct rows numbered by rank in value order, exact under
updates (diffflow.datalog.transform.counters).  The random differential program "autoinc"
(tests/datalog/test_incremental.py) checks every commit against the reference evaluator."""
import pytest

import diffflow as dd
from tests.support.helpers import run_datalog

SORT = """
// Soufflé's tests/example/sort: quicksort on lists (records), the input indexed by autoinc()
.type value <: number
.type index <: number
.type list = [head : value, tail : list]
.decl ToSort(start : list)
.decl Split(start : list, notdone : list, below : list, above : list)
Split([p,l],l,nil,nil) :- ToSort([p,l]).
Split([p,l],t,[h,b],a) :- Split([p,l],[h,t],b,a), h < p.
Split([p,l],t,b,[h,a]) :- Split([p,l],[h,t],b,a), h >= p.
ToSort(l) :- Split(_,nil,l,_).
ToSort(l) :- Split(_,nil,_,l).
.decl ToCat(a : list, b : list)
ToCat(t,b) :- ToCat([_,t],b).
.decl Cat(a : list, b : list, c : list)
Cat(nil, b, b) :- ToCat(nil, b).
Cat([h,a], b, [h,c]) :- ToCat([h,a],b), Cat(a,b,c).
.decl Sorted(start : list, end : list)
Sorted(nil,nil).
Sorted([h,t],end) :- ToSort([h,t]), Split([h,t],nil,b,a), Sorted(a,s_a), Sorted(b,s_b),
                     Cat(s_b,[h,s_a],end).
ToCat(s_b,[h,s_a]) :- Split([h,_],nil,b,a), Sorted(a,s_a), Sorted(b,s_b).
.decl InputVals(x : value)
.input InputVals
.decl Indexed(x : value, i : index)
Indexed(x, autoinc()) :- InputVals(x).
.decl InList(l : list, i : index)
InList(nil, m) :- m = min x: Indexed(_, x).
InList([h,t], i+1) :- InList(t, i), Indexed(h, i).
ToSort(l) :- InList(l, m), m > max x: Indexed(_, x).
.decl Result(l : list)
Result(s) :- Sorted(l,s), InList(l,m), m > max x: Indexed(_, x).
.decl ToString(l : list, s : symbol)
ToString(t, to_string(h)) :- Result([h,t]).
ToString(t, cat(cat(s, ", "), to_string(h))) :- ToString([h,t], s).
.decl SortedVals(s : symbol)
SortedVals(s) :- ToString(nil, s).
.output SortedVals
"""


@pytest.mark.slow
def test_soufflés_quicksort_on_lists_indexed_by_autoinc(tmp_path):
    values = [10000, -10000, 1, 1, -2, 7, 42, -42, 3, 0, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    out = run_datalog(tmp_path, SORT, {"InputVals": "".join(f"{v}\n" for v in values)})
    # Soufflé's SortedVals.csv
    assert out["SortedVals"] == ["-10000, -42, -2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 42, 10000"]


@pytest.mark.slow
def test_quicksort_follows_updates_of_its_input():
    p = dd.Program(SORT)
    p.insert("InputVals", [(3,), (1,), (2,)])
    p.commit()
    assert p.relation("SortedVals") == {("1, 2, 3",)}
    p.insert("InputVals", [(0,)])
    p.remove("InputVals", [(2,)])
    p.commit()
    assert p.relation("SortedVals") == {("0, 1, 3",)}


def test_one_use_numbers_rows_from_zero_in_value_order_and_renumbers_after_changes():
    p = dd.Program("""
        .decl name(n: symbol)
        .decl numbered(n: symbol, i: number)
        numbered(n, autoinc()) :- name(n).
    """, partitions=3)
    p.insert("name", [("b",), ("é",), ("a",)])
    p.commit()
    assert p.relation("numbered") == {("a", 0), ("b", 1), ("é", 2)}  # symbols by text
    p.changes("numbered")
    p.insert("name", [("ab",)])
    p.commit()
    assert p.relation("numbered") == {("a", 0), ("ab", 1), ("b", 2), ("é", 3)}
    # a row whose rank moves is one removed and one added row
    assert dict(p.changes("numbered")) == {("ab", 1): 1, ("b", 1): -1, ("b", 2): 1,
                                           ("é", 2): -1, ("é", 3): 1}


def test_several_uses_take_turns_so_numbers_are_unique():
    # Soufflé's tests/evaluation/counter: no two rows of B share a number, so C is empty
    p = dd.Program("""
        .decl A (n:number)
        .decl B (a:number, b:number)
        .decl C (a:number, b:number)
        A(0).
        A(i+1) :- A(i), i<100.
        B(autoinc(),i) :- A(i).
        C(i,j) :- B(c,i), B(c,j), i!=j.
        .decl D(x: number)
        D(autoinc()) :- true.
    """)
    p.commit()
    assert p.relation("C") == set()
    assert {c for c, _ in p.relation("B")} == set(range(0, 202, 2))  # use 0 of 2
    assert p.relation("D") == {(1,)}  # use 1 of 2: rank 0


@pytest.mark.parametrize("source, message, at", [
    (".decl A(a:number)\nA(1).\nA(autoinc()) :- A(1).\n", "autoinc() in a recursive rule",
     (3, 3)),
    (".decl F(a:number, b:symbol)\nF(autoinc(), \"AA\").\n",
     "a fact has only constants, but autoinc() numbers a rule's rows", (2, 3)),
    (".decl A(a:number)\n.decl B(a:number)\nB(count : { A(x), x = autoinc() }) :- A(_).\n",
     "autoinc() must be in a rule's head, not inside an aggregate", (3, 23)),
    (".decl A(a:number)\n.decl B(a:number)\nB(x) :- A(_), x = autoinc().\n",
     "autoinc() must be in a rule's head, not in its body", (3, 19)),
    (".decl A(a:number)\n.decl B(a:number)\nB(autoinc() + count : { A(_) }) :- A(_).\n",
     "autoinc() and an aggregate in one head argument", (3, 3)),
    # Soufflé's shape (a kept difference: its global counter read in a body atom)
    (".decl K(a:number)\n.decl R(a:number)\nR(autoinc()) :- K(autoinc()).\n",
     "not in its body: diffflow numbers a rule's rows by their value order", (3, 19)),
    (".decl A(a:number)\n.decl B(a:number) inline\nB(autoinc()) :- A(_).\n"
     ".decl C(a:number)\nC(x) :- B(x).\n", "autoinc() in a rule of inline relation 'B'",
     (3, 3)),
])
def test_misplaced_autoinc_is_located(source, message, at):
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(source, filename="c.dl")
    text = str(caught.value)
    assert message in text and f"c.dl:{at[0]}:{at[1]}:" in text, text


def test_each_alternative_of_a_rule_is_a_use_of_its_own():
    p = dd.Program("""
        .decl e(x: number)
        e(5). e(3). e(9).
        .decl o(a: number, b: number)
        o(x, autoinc()) :- e(x) ; e(y), x = y + 100.
    """)
    p.commit()
    assert p.relation("o") == {(3, 0), (5, 2), (9, 4), (103, 1), (105, 3), (109, 5)}


EXPRESSIONS = """
    .decl e(x: symbol)
    .decl r(x: symbol, n: number)
    .decl s(n: number)
    .decl t(n: number, m: number)
    r(x, autoinc() * 10 + 1) :- e(x).
    s(autoinc() + 100) :- e(_).
    t(autoinc() + n, autoinc()) :- e(x), n = strlen(x).
"""


def test_autoinc_inside_a_head_expression_numbers_the_rows_then_computes():
    # four uses (stride 4, offsets 0..3 in program order); r: ranks 0, 1, 2 of x give
    # 0, 4, 8, then * 10 + 1; s: one row, 1 + 100; t numbers the distinct n (1 and 2):
    # rank 0 gives 2 + 1 and 3, rank 1 gives 6 + 2 and 7
    p = dd.Program(EXPRESSIONS, partitions=2)
    p.insert("e", [("b",), ("a",), ("cc",)]); p.commit()
    assert p.relation("r") == {("a", 1), ("b", 41), ("cc", 81)}
    assert p.relation("s") == {(101,)}
    assert p.relation("t") == {(3, 3), (8, 7)}
    p.remove("e", [("a",)]); p.commit()  # b and cc move up a rank
    assert p.relation("r") == {("b", 1), ("cc", 41)}
    assert p.relation("t") == {(3, 3), (8, 7)}


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 2])
def test_autoinc_inside_expressions_under_random_updates(partitions, monkeypatch):
    from tests.datalog import test_incremental as base
    monkeypatch.setitem(base.PROGRAMS, "autoinc_expressions",
                        (EXPRESSIONS, {"e": [("sym", ["a", "b", "cc", "ddd", "e"])]}))
    base.check_program_against_reference("autoinc_expressions", 3, partitions, steps=5)
