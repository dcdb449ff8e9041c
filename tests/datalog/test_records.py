"""Records ``[a, b]``, ``nil`` and algebraic data types ``$Branch(...)``: Soufflé's
documented examples through ``diffflow run``, fact files, the Python API, updates, every
runtime, and located errors.

The random differential program "records_and_adts" (tests/datalog/test_incremental.py)
checks every commit against the reference evaluator; these tests pin semantics by
hand-computed outcomes.
"""
import pytest

import diffflow as dd
from diffflow.datalog.values.structures import AdtValue
from tests.support.helpers import RUNTIME_OPTIONS, run_datalog
from tests.support.datalog_reference import evaluate

_run = run_datalog  # diffflow run; {output relation: sorted lines}


# -- the examples of Soufflé's documentation and test suite -----------------------------------

def test_a_list_of_records_from_soufflés_documentation(tmp_path):
    out = _run(tmp_path, """
        .type List = [head : number, tail : List]
        .decl A(x : List)
        A(nil).
        A([1,nil]).
        A([2,[3,nil]]).
        .output A
    """)
    assert out["A"] == sorted(["nil", "[1, nil]", "[2, [3, nil]]"])


def test_records_built_recursively_and_flattened(tmp_path):
    # souffle-lang.github.io/types: "transfers the lists into a set called Flatten"
    out = _run(tmp_path, """
        .type IntList = [next: IntList, x: number]
        .decl L(l: IntList)
        L([nil,10]).
        L([r1,x+10]) :- L(r1), r1=[r2,x], x < 30.
        .decl Flatten(x: number)
        Flatten(x) :- L([_,x]).
        .output Flatten, L
    """)
    assert out["Flatten"] == ["10", "20", "30"]
    assert out["L"] == sorted(["[nil, 10]", "[[nil, 10], 20]", "[[[nil, 10], 20], 30]"])


def test_nested_record_patterns_bind_their_parts(tmp_path):
    # Soufflé's tests/evaluation/rec_lists2: r.csv is 3 and 5
    out = _run(tmp_path, """
        .type N <: number
        .type list = [ x : number , y : list ]
        .decl p ( x : list )
        p([1,[2,nil]]).
        p([2,[3,nil]]).
        .decl r ( x : number )
        .output r ()
        r(a+b) :- p ([a,[b,nil]]).
    """)
    assert out["r"] == ["3", "5"]


def test_adt_values_from_soufflés_documentation(tmp_path):
    out = _run(tmp_path, """
        .type Expression = Number { x : number }
                         | Variable { v : symbol}
                         | Add {e_1 : Expression, e_2 :Expression}
                         | Imaginary {}
        .decl A(x:Expression)
        A($Number(10)).
        A($Add($Number(10),$Imaginary())).
        A($Add($Number(10), $Variable("x"))).
        A($Number(x+1)) :- A($Number(x)), x < 20.
        .output A
    """)
    assert out["A"] == sorted(["$Add($Number(10), $Imaginary)", "$Add($Number(10), $Variable(x))"]
                              + [f"$Number({n})" for n in range(10, 21)])


def test_records_through_inline_relations(tmp_path):
    # Soufflé's tests/evaluation/inline_records: d.csv is "good job" and "Hello"
    out = _run(tmp_path, """
        .type Thing <: symbol
        .type Conn = [first : Thing, second : Thing]
        .decl a(x:Conn, y:Conn) inline
        a(["Hello", "Goodbye"], ["temporary", "value"]).
        a(["temporary", "value"], ["NO", "NO"]).
        a(["can", "do"], ["my", "value"]).
        .decl b(x:Conn, y:Conn) inline
        b(["good job", "bad job"], ["can", "do"]).
        b(x, y) :- a(x, y), x != ["temporary", "value"].
        .decl c(x:Conn) inline
        c(x) :- a(z, y), b(x, z), x != y.
        .decl d(x:Thing)
        d(x) :- c([x, _]).
        .output d()
    """)
    assert out["d"] == ["Hello", "good job"]


def test_an_enumeration_read_from_a_fact_file(tmp_path):
    # Soufflé's tests/evaluation/adt-enum
    days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "San"]
    out = _run(tmp_path, """
        .type Day = Mon {} | Tue {} | Wed {} | Thu {} | Fri {} | Sat {} | San {}
        .decl DayBeforeInTheWeek(x: Day, y: Day)
        .input DayBeforeInTheWeek
        .decl BeforeInTheWeek(x: Day, y: Day)
        BeforeInTheWeek(x, y) :- DayBeforeInTheWeek(x, y).
        BeforeInTheWeek(x, z) :- DayBeforeInTheWeek(x, y), BeforeInTheWeek(y, z).
        .output BeforeInTheWeek
    """, {"DayBeforeInTheWeek": "".join(f"${a}\t${b}\n" for a, b in zip(days, days[1:]))})
    assert out["BeforeInTheWeek"] == sorted(f"${a}\t${b}" for i, a in enumerate(days)
                                            for b in days[i + 1:])


def test_records_and_trees_read_from_fact_files_and_written_back(tmp_path):
    # Soufflé's tests/semantic/load_simple_record and load_adt3
    out = _run(tmp_path, """
        .type tuple = [f: number, s: number, t: symbol]
        .decl A(x: tuple)
        .input A()
        .decl B(x: tuple)
        B(x) :- A(x).
        .output B()
        .type Tree = Empty {} | Node {t1: Tree, val: unsigned, t2: Tree}
        .decl TreeHeight, TO(t : Tree, height: unsigned)
        .input TreeHeight
        TO(t, h) :- TreeHeight(t, h).
        .output TO
        .decl Left(v: unsigned)
        Left(v) :- TreeHeight($Node($Node(_, v, _), _, _), _).
        .output Left
    """, {"A": "[1, 2, meow]\n[1, 3, blue]\n[2, 4, apple]\nnil\n",
          "TreeHeight": "$Empty\t0\n$Node($Empty, 1, $Empty)\t1\n"
                        "$Node($Node($Empty, 1, $Empty), 2, $Node($Empty, 1, $Empty))\t2\n"})
    assert out["B"] == sorted(["[1, 2, meow]", "[1, 3, blue]", "[2, 4, apple]", "nil"])
    assert out["TO"] == sorted(["$Empty\t0", "$Node($Empty, 1, $Empty)\t1",
                                "$Node($Node($Empty, 1, $Empty), 2, $Node($Empty, 1, $Empty))"
                                "\t2"])
    assert out["Left"] == ["1"]


def test_adt_access_by_branch_pattern_and_by_value(tmp_path):
    # Soufflé's tests/semantic/adt_access, cases 1-3
    out = _run(tmp_path, """
        .type ADT1 = br1 {x : number, y :number}
        .decl A(e:ADT1)
        A($br1(1, 2)).
        .decl test1()
        test1() :- A($br1(1, 2)).
        .type ADT3 = br3 {x : number, y :number}
        .decl C(e:ADT3)
        C($br3(1, 2)).
        .decl D(e:number,b:number)
        D(left,right) :- C($br3(left, right)).
        .decl test3()
        test3() :- D(1,2).
        .output test1, test3
    """)
    assert out == {"test1": ["()"], "test3": ["()"]}


# -- the Python API and updates ------------------------------------------------------------------

SHAPES = """
    .type Pair = [a: number, b: symbol]
    .type Shape = Dot {p: Pair} | Line {from: Pair, to: Pair} | Empty {}
    .decl shape(s: Shape)
    .input shape
    .decl dot_names(b: symbol)
    dot_names(b) :- shape($Dot([_, b])).
    .decl ends(p: Pair)
    ends(p) :- shape($Line(p, _)).
    ends(p) :- shape($Line(_, p)).
    .decl empty()
    empty() :- shape($Empty).
"""


@pytest.mark.parametrize("partitions", [1, 3])
def test_records_and_adt_values_in_and_out_of_the_python_api(partitions):
    p = dd.Program(SHAPES, partitions=partitions, **RUNTIME_OPTIONS)
    line = AdtValue("Line", ((1, "a"), (2, "b")))
    p.insert("shape", [(AdtValue("Dot", ((0, "x"),)),), (line,), (AdtValue("Empty"),)])
    p.commit()
    assert p.relation("dot_names") == {("x",)}
    assert p.relation("ends") == {((1, "a"),), ((2, "b"),)}
    assert p.relation("empty") == {()}
    assert (line,) in p.relation("shape")
    assert dict(p.changes("ends")) == {((1, "a"),): +1, ((2, "b"),): +1}
    p.remove("shape", [(line,), (AdtValue("Empty"),)])
    p.commit()
    assert p.relation("ends") == set() and p.relation("empty") == set()
    assert dict(p.changes("ends")) == {((1, "a"),): -1, ((2, "b"),): -1}
    p.close()


def test_a_record_attribute_is_a_key_for_joins_and_negation():
    p = dd.Program("""
        .type Edge = [from: number, to: number]
        .decl e(x: Edge, w: number)
        .decl blocked(x: Edge)
        .input e, blocked
        .decl open(x: Edge, w: number)
        open(x, w) :- e(x, w), !blocked(x).
        .decl heavy(a: number)
        heavy(a) :- open([a, _], w), w > 5.
    """, partitions=2)
    p.insert("e", [((1, 2), 7), ((2, 3), 9), ((3, 1), 1)])
    p.insert("blocked", [((2, 3),)])
    p.commit()
    assert p.relation("open") == {((1, 2), 7), ((3, 1), 1)}
    assert p.relation("heavy") == {(1,)}
    p.remove("blocked", [((2, 3),)])
    p.commit()
    assert p.relation("heavy") == {(1,), (2,)}


def test_a_growing_list_is_maintained_under_removal():
    # every path from a node as a list of the nodes visited; removing an edge drops the
    # lists through it
    p = dd.Program("""
        .type Nodes = [n: number, rest: Nodes]
        .decl edge(a: number, b: number)
        .input edge
        .decl walk(last: number, path: Nodes)
        walk(b, [b, [a, nil]]) :- edge(a, b).
        walk(c, [c, p]) :- walk(b, p), edge(b, c), b < c.
        .decl longest(n: number)
        longest(n) :- n = count : { walk(_, _) }.
    """, partitions=3)
    p.insert("edge", [(1, 2), (2, 3), (3, 4)])
    p.commit()
    assert (4, (4, (3, (2, (1, None))))) in p.relation("walk")
    assert p.relation("longest") == {(6,)}
    p.remove("edge", [(2, 3)])
    p.commit()
    assert p.relation("walk") == {(2, (2, (1, None))), (4, (4, (3, None)))}


def test_bad_record_values_in_the_api_change_nothing():
    p = dd.Program(SHAPES)
    with pytest.raises(ValueError, match="row 0 attribute 's'.*branches are \\$Dot"):
        p.insert("shape", [((1, "a"),)])
    with pytest.raises(ValueError, match="\\$Dot has 1 field"):
        p.insert("shape", [(AdtValue("Dot", ()),)])
    p.commit()
    assert p.relation("shape") == set()


def test_a_malformed_record_in_a_fact_file_is_located(tmp_path):
    (tmp_path / "A.facts").write_text("[1, x]\n[2 y]\n")
    p = dd.Program(".type P = [a: number, b: symbol]\n.decl A(p: P)\n.input A\n")
    with pytest.raises(dd.DatalogError) as caught:
        p.load_facts(tmp_path)
    text = str(caught.value)
    assert "A.facts:2:" in text and "should be a P" in text, text


# -- errors ------------------------------------------------------------------------------------------

RECORDS = ".type P = [a: number, b: symbol]\n.type T = A {x: number} | B {}\n"


@pytest.mark.parametrize("source, message, at", [
    (RECORDS + ".decl r(p: P)\nr([1]).\n", "record type P has 2 field(s) (a, b), but this "
     "record has 1", (4, 3)),
    (RECORDS + ".decl r(p: P)\nr([1, 2]).\n", "field 'b' of P is a symbol, but this is a "
     "number", (4, 7)),
    (RECORDS + ".decl r(p: number)\nr([1, \"a\"]).\n", "attribute 'p' of r is a number, but this is a record", (4, 3)),
    (RECORDS + ".decl r(p: T)\nr($C(1)).\n", "unknown branch $C", (4, 3)),
    (RECORDS + ".decl r(p: T)\nr($A(1, 2)).\n", "$A has 1 field(s) (x), got 2", (4, 3)),
    (RECORDS + ".decl r(p: T)\nr(nil).\n", "attribute 'p' of r is a T, but this is a record", (4, 3)),
    (RECORDS + ".decl r(p: P)\n.decl s(x: number)\ns(1) :- r(p), r(q), p < q.\n",
     "< of P values: records and ADT values compare only with = and !=", (5, 23)),
    (RECORDS + ".decl r(p: P)\n.decl s(x: number)\ns(x) :- r([x]).\n",
     "record type P has 2 field(s) (a, b), but this pattern has 1", (5, 11)),
    (RECORDS + ".decl r(p: T)\n.decl s(x: number)\ns(x) :- r($A(x, y)).\n",
     "$A has 1 field(s) (x), but this pattern has 2", (5, 11)),
    (RECORDS + ".decl r(p: P)\n.decl s(x: number)\ns(x) :- r(p), x = p + 1.\n",
     "arithmetic '+' of a record or ADT value", (5, 21)),
    (RECORDS + ".decl s(x: number)\ns(1) :- s(x), s(y), [x, y] != [y, x].\n",
     "cannot infer the record type", (4, 28)),
    (RECORDS + ".type U = C {} | A {y: number}\n", "branch 'A' is already a branch of 'T'",
     (3, 18)),
    (RECORDS + ".type V = P | number\n", "union type 'V' has a record or ADT member", (3, 7)),
    (RECORDS + ".decl r(p: P)\nr(1).\n", "a number where a P is expected", (4, 3)),
    (".type P = [a: number, a: symbol]\n", "field 'a' appears twice", (1, 23)),
])
def test_record_and_adt_errors_are_located_and_named(source, message, at):
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(source, filename="k.dl")
    text = str(caught.value)
    assert message in text and f"k.dl:{at[0]}:{at[1]}:" in text, text


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["cluster", "processes"])
def test_records_made_on_partition_workers_reach_every_worker_and_the_program(runtime):
    # records built on one worker are joined on another (rows move by their key) and
    # decoded by the program: their components travel with the symbols
    source = """
        .type Path = [last: number, rest: Path]
        .type Label = Named {name: symbol, path: Path} | Anonymous {}
        .decl edge(a: number, b: number)
        .decl path(p: Path)
        path([b, [a, nil]]) :- edge(a, b).
        path([c, p]) :- path(p), p = [b, _], edge(b, c), b < c.
        .decl label(l: Label)
        label($Named(cat("to", to_string(b)), p)) :- path(p), p = [b, _].
        .decl names(n: symbol, first: number)
        names(n, a) :- label($Named(n, [_, [a, nil]])).
    """
    local = dd.Program(source)
    other = dd.Program(source, partitions=3, runtime=runtime)
    try:
        for program in (local, other):
            program.insert("edge", [(1, 2), (2, 3), (3, 4), (2, 4)])
            program.commit()
        for relation in ("path", "label", "names"):
            assert other.relation(relation) == local.relation(relation), relation
        assert ("to4", 3) in other.relation("names")
        for program in (local, other):
            program.remove("edge", [(2, 3)])
            program.commit()
        assert other.relation("label") == local.relation("label")
        assert ("to4", 3) in other.relation("names")  # (3, 4) alone still gives it
    finally:
        other.close()


# -- user-defined functors of records and ADT values ------------------------------------------

def _length(values):
    return 0 if values is None else 1 + _length(values[1])


def _build(n):
    return None if n == 0 else (n, _build(n - 1))


def _area(shape):
    return 3.0 * shape.args[0] ** 2 if shape.branch == "Circle" else float(shape.args[0] ** 2)


FUNCTORS = """
    .type List = [h: number, t: List]
    .type Shape = Circle {r: number} | Square {s: number}
    .functor length(l: List): number stateful
    .functor build(n: number): List stateful
    .functor area(s: Shape): float
    .decl sizes(k: number)
    .input sizes
    .decl r(l: List)
    r(@build(2)).
    r(@build(k)) :- sizes(k).
    .decl n(k: number, len: number)
    n(k, @length(l)) :- r(l), l = [k, _].
    .decl a(x: float)
    a(@area($Circle(k))) :- sizes(k).
    a(@area($Square(k))) :- sizes(k).
"""


@pytest.mark.parametrize("partitions", [1, 3])
def test_user_functors_take_and_return_records_and_adt_values(partitions):
    # (stateful or not: a Python functor gets and returns values, so Soufflé's stateful
    # marker, which gives C++ functors the record table, changes nothing)
    p = dd.Program(FUNCTORS, partitions=partitions,
                   functors={"length": _length, "build": _build, "area": _area})
    p.insert("sizes", [(4,), (1,)])
    p.commit()
    assert p.relation("r") >= {((4, (3, (2, (1, None)))),), ((2, (1, None)),)}
    assert p.relation("n") == {(1, 1), (2, 2), (4, 4)}
    assert p.relation("a") == {(3.0,), (1.0,), (48.0,), (16.0,)}
    p.remove("sizes", [(4,)])
    p.commit()
    assert p.relation("n") == {(1, 1), (2, 2)}


def test_a_functor_returning_a_wrong_record_names_itself():
    p = dd.Program(FUNCTORS, functors={"length": _length, "build": lambda n: (n,),
                                       "area": _area})
    p.insert("sizes", [(3,)])
    with pytest.raises(dd.DiffflowError, match=r"functor @build returned \(2,\), not a List"):
        p.commit()


def test_patterns_inside_aggregate_bodies_bind_their_parts():
    p = dd.Program("""
        .type L = [h: number, t: L]
        .type T = A {x: number} | B {}
        .decl lst(l: L)
        .decl t(v: T)
        .decl k(x: number)
        .input lst, t, k
        .decl singles(s: number)
        singles(s) :- s = sum x : { lst([x, nil]) }.
        .decl heads(h: number, n: number)
        heads(h, n) :- k(h), n = count : { lst([h, _]) }.
        .decl big_a(n: number)
        big_a(n) :- n = count : { t($A(x)), x > 1 }.
        .decl ground(n: number)
        ground(n) :- n = count : { lst(l), l = [1, nil] }.
    """, partitions=2)
    p.insert("lst", [((1, None),), ((2, (3, None)),), ((5, None),), ((2, None),)])
    p.insert("t", [(AdtValue("A", (3,)),), (AdtValue("B"),), (AdtValue("A", (1,)),)])
    p.insert("k", [(2,), (5,), (7,)])
    p.commit()
    assert p.relation("singles") == {(1 + 5 + 2,)}
    assert p.relation("heads") == {(2, 2), (5, 1), (7, 0)}
    assert p.relation("big_a") == {(1,)} and p.relation("ground") == {(1,)}
    p.remove("lst", [((2, None),)])
    p.commit()
    assert p.relation("singles") == {(6,)} and (2, 1) in p.relation("heads")


def test_subsumptive_rules_with_records_in_their_atoms():
    p = dd.Program("""
        .type P = [a: number, b: number]
        .decl best(p: P, d: number)
        best([1, 0], 5). best([1, 0], 3). best([2, 0], 7).
        best([x, 0], d1) <= best([x, 0], d2) :- d1 > d2.
        .decl low(k: number, p: P)
        .input low
        low(k, [_, b]) <= low(k, [_, c]) :- b > c.
    """)
    p.insert("low", [(1, (1, 5)), (1, (2, 2)), (2, (3, 3))])
    p.commit()
    assert p.relation("best") == {((1, 0), 3), ((2, 0), 7)}
    assert p.relation("low") == {(1, (2, 2)), (2, (3, 3))}
    p.remove("low", [(1, (2, 2))])
    p.commit()
    assert p.relation("low") == {(1, (1, 5)), (2, (3, 3))}


def test_a_comma_delimited_fact_file_with_records(tmp_path):
    # a delimiter inside [...] or a quoted symbol does not split (as Soufflé reads records)
    out = _run(tmp_path, """
        .type P = [a: number, b: symbol]
        .decl r(p: P, x: number)
        .input r(delimiter=",")
        .decl second(b: symbol, x: number)
        second(b, x) :- r([_, b], x).
        .output second
    """, {"r": '[1, a],2\n[2, "x,y"],4\n'})
    assert out["second"] == ["a\t2", "x,y\t4"]


def test_record_and_adt_types_inside_components(tmp_path):
    # souffle-lang.github.io/types: a branch name is the instance's ($component.Symbol), and
    # a component's types may use its parameters, its other types and themselves
    out = _run(tmp_path, """
        .type OuterType = Number { n: number } | Symbol { s: symbol }
        .comp MyComponent {
            .type InnerType = Number { n: number } | Symbol { s: symbol }
        }
        .init component = MyComponent
        .decl Relation(x:component.InnerType)
        Relation($component.Symbol("x")).
        .decl Outer(x: OuterType)
        Outer($Symbol("y")).
        .comp Lists<T> {
            .type Id <: number
            .type L = [x: T, n: L]
            .type E = A {x: Id} | B {e: E}
            .decl l(v: L)
            .decl e(v: E)
            l([1, nil]).
            l([x, r]) :- l(r), r = [y, _], x = y + 1, x < 4.
            e($A(1)). e($B(e)) :- e(e), e = $A(_).
        }
        .init N = Lists<number>
        .output Relation, Outer, N.l, N.e
    """)
    assert out["Relation"] == ["$component.Symbol(x)"] and out["Outer"] == ["$Symbol(y)"]
    assert out["N.l"] == ["[1, nil]", "[2, [1, nil]]", "[3, [2, [1, nil]]]"]
    assert out["N.e"] == ["$N.A(1)", "$N.B($N.A(1))"]


def test_inline_relations_whose_heads_build_records():
    p = dd.Program("""
        .type P = [a: number, b: number]
        .decl e(x: number, y: number)
        .decl pr(p: P) inline
        pr([x, y]) :- e(x, y).
        .decl q(x: number)
        q(x) :- pr([x, _]).
        .decl q2(x: number)
        q2(x) :- pr(p), p = [x, y], x < y.
    """)
    p.insert("e", [(1, 2), (3, 3), (2, 1)])
    p.commit()
    assert p.relation("q") == {(1,), (2,), (3,)} and p.relation("q2") == {(1,)}


def test_a_user_type_named_like_a_functor_signature_placeholder_is_a_type():
    # (intrinsic functors' signatures say "T" for "the numeric type of the call")
    p = dd.Program("""
        .type T = A {x: number} | B {}
        .functor wrap(n: number): T
        .functor g(t: T): number
        .decl e(n: number)
        e(1).
        .decl o(t: T)
        o(@wrap(n)) :- e(n).
        .decl h(x: number)
        h(@g(t)) :- o(t).
    """, functors={"wrap": lambda n: AdtValue("A", (n,)), "g": lambda t: t.args[0] + 10})
    p.commit()
    assert p.relation("o") == {(AdtValue("A", (1,)),)} and p.relation("h") == {(11,)}
    with pytest.raises(dd.DatalogError, match="argument 1 of @g must be a T, but this is a "
                                              "number"):
        dd.Program(".type T = A {x: number} | B {}\n.functor g(t: T): number\n"
                   ".decl h(x: number)\nh(@g(5)).", functors={"g": lambda t: 1})


def test_plain_symbol_fields_next_to_records_may_hold_brackets_and_quotes(tmp_path):
    out = _run(tmp_path, """
        .type L = [x: number, rest: L]
        .decl g(s: symbol, s2: symbol, l: L)
        .input g
        .output g
    """, {"g": 'a\tb"c\t[1, nil]\nq[\tx]\t[2, [3, nil]]\n'})
    assert out["g"] == ['a\tb"c\t[1, nil]', "q[\tx]\t[2, [3, nil]]"]


def test_an_unbound_variable_inside_a_negated_record_is_named():
    with pytest.raises(dd.DatalogError, match="variable 'y' in the negation !e is not bound"):
        dd.Program(".type L = [h: number, t: L]\n.decl e(l: L)\n.decl o(x: number)\n"
                   "o(1) :- e(_), !e([y, nil]).")


def test_a_negated_pattern_means_no_row_matches_it():
    p = dd.Program("""
        .type L = [h: number, t: L]
        .type T = A {x: number} | B {}
        .decl lst(l: L)
        .decl t(v: T)
        .decl n(x: number)
        .input lst, t, n
        .decl no_list(x: number)
        no_list(x) :- n(x), !lst([x, _]).
        .decl not_second(x: number)
        not_second(x) :- n(x), !lst([_, [x, _]]).
        .decl no_a(x: number)
        no_a(x) :- n(x), !t($A(x)).
        .decl free(c: number)
        free(c) :- c = count : { n(x), !lst([x, _]) }.
    """, partitions=2)
    p.insert("n", [(1,), (2,), (3,)])
    p.insert("lst", [((1, None),), ((5, (3, None)),)])
    p.insert("t", [(AdtValue("A", (2,)),)])
    p.commit()
    assert p.relation("no_list") == {(2,), (3,)} and p.relation("not_second") == {(1,), (2,)}
    assert p.relation("no_a") == {(1,), (3,)} and p.relation("free") == {(2,)}
    assert "lst#not1" in p.relations  # (the helper relation of the first negated pattern)
    p.remove("lst", [((1, None),)])
    p.commit()
    assert p.relation("no_list") == {(1,), (2,), (3,)} and p.relation("free") == {(3,)}


@pytest.mark.parametrize("partitions", [1, 2])
def test_an_empty_record_type_has_one_value_built_by_rules_and_facts(partitions):
    # a record type of no field: [] is its one value besides nil (Soufflé's records0 shape)
    p = dd.Program("""
        .type none = []
        .decl a(x: none)
        a([]). a([]).
        .decl b(x: none)
        b([]) :- a(_).
        b(nil).
        .decl n(c: number)
        n(c) :- c = count : { b(_) }.
    """, partitions=partitions)
    p.commit()
    assert p.relation("a") == {((),)}
    assert p.relation("b") == {((),), (None,)}
    assert p.relation("n") == {(2,)}
    p.close()


def test_an_internal_failure_at_run_time_says_so_and_names_the_rule(monkeypatch):
    from diffflow.datalog.values import structures

    def broken(self, symbols, *values, rows=0):
        raise TypeError("simulated bug")

    monkeypatch.setattr(structures._Pack, "__call__", broken)
    p = dd.Program(".type P = [a: number]\n.decl e(x: number)\n.input e\n"
                   ".decl r(p: P)\nr([x]) :- e(x).\n")
    p.insert("e", [(1,)])
    with pytest.raises(dd.OperatorError) as info:
        p.commit()
    message = str(info.value)
    assert message.startswith("internal error (a bug in diffflow; please report it): ")
    assert "r([x]) :- e(x)." in message and ":5)" in message
    assert message.endswith("TypeError: simulated bug")


@pytest.mark.filterwarnings("ignore:.*cross product")
@pytest.mark.parametrize("partitions", [1, 2])
def test_ord_of_records_adt_values_and_numbers(partitions):
    # Soufflé's ord takes a value of any type: a number is itself, an unsigned or a float
    # its bits (of a 32-bit float), nil 0; a record or an ADT value a number that tells it
    # apart (here from its hash-based id, not Soufflé's table index: a kept difference)
    import struct

    p = dd.Program("""
        .type R = [x: number, y: number]
        .type T = I {x: number, next: T} | K {}
        .decl r(x: R)
        .input r
        .decl t(x: T)
        t($I(1, $I(2, $K()))).
        t(n) :- t($I(_, n)).
        .decl ords(n: number)
        ords(ord(x)) :- r(x).
        ords(ord(x)) :- t(x).
        .decl same(n: number)
        same(1) :- r(x), r(y), x != y, ord(x) = ord(y).
        .decl scalars(a: number, b: number, c: number, d: number)
        scalars(ord(-5), ord(4294967295u), ord(1.5), ord(n)) :- r(n), n = nil.
    """, partitions=partitions)
    p.insert("r", [((1, 2),), ((2, 3),), (None,)])
    p.commit()
    float_bits = struct.unpack("<i", struct.pack("<f", 1.5))[0]
    assert p.relation("scalars") == {(-5, -1, float_bits, 0)}
    assert len(p.relation("ords")) == 6  # 3 records (nil: 0) and 3 ADT values, all apart
    assert (0,) in p.relation("ords") and p.relation("same") == set()
    p.remove("r", [((2, 3),)])
    p.commit()
    assert len(p.relation("ords")) == 5
    with pytest.raises(dd.DatalogError, match=r"ord of \[\.\.\.\]: its record type is not known"):
        dd.Program(".decl o(n: number)\no(ord([1, 2])).")


@pytest.mark.parametrize("partitions", [1, 2])
def test_records_no_declared_type_names_are_compared_element_by_element(partitions):
    # Soufflé types [a, b] with no declared record type as an anonymous record: a variable
    # only ever equal to record terms stands for them, and comparisons of record terms
    # are comparisons of their elements (by hand: each rule says what it derives)
    source = """
        .decl e(x: number, y: number)
        .input e
        .decl same(z: number)
        same(z) :- e(x, y), r = [x, y], s = r, s = [v, w], w = z, z = v.
        .decl k(a: number)
        k(a) :- [a, "s"] = [1, "s"].
        k(a) :- [[a, [a]]] = [[2, [2]]], [[a, 1.5]] != [[3, 1.5]].
        k(a) :- [9, a] = [8, 4].
        k(4) :- [1, 2.5] != [1, 2].
        k(5) :- [] != [].
        k(c) :- a = [1, [b, c]], [1, x] = a, x = [7, 6], b = 7.
        k(8) :- _ = [1].
    """
    facts = {"e": [(1, 1), (1, 2), (3, 3)]}
    program = dd.Program(source, partitions=partitions)
    program.insert("e", facts["e"])
    program.commit()
    assert program.relation("same") == {(1,), (3,)}  # the pairs with x = y
    assert program.relation("k") == {(1,), (2,), (4,), (6,), (8,)}
    reference = evaluate(source, facts)
    assert reference["same"] == {(1,), (3,)} and reference["k"] == program.relation("k")
    program.remove("e", [(3, 3)])
    program.commit()
    assert program.relation("same") == {(1,)}


@pytest.mark.parametrize("stage", ["analysis", "compiler"])
def test_an_internal_failure_while_building_a_rule_says_so_and_names_the_rule(monkeypatch,
                                                                             stage):
    from diffflow.datalog.analysis.clauses import ClauseChecks
    from diffflow.datalog.lower.joins import ClauseCompiler

    def broken(*args, **kwargs):
        raise KeyError("simulated bug")

    if stage == "analysis":
        monkeypatch.setattr(ClauseChecks, "check_built_records", broken)
    else:
        monkeypatch.setattr(ClauseCompiler, "compare", broken)
    with pytest.raises(dd.DatalogError) as info:
        dd.Program(".decl e(x: number)\n.decl r(x: number)\nr(x) :- e(x), x > 1.\n",
                   filename="bug.dl")
    message = str(info.value)
    assert message.startswith("bug.dl:3:") and "internal error (a bug in diffflow; please " \
        "report it)" in message and "KeyError: 'simulated bug'" in message, message
