"""Components (.comp, .init, type parameters, inheritance, .override): Soufflé's documented
examples through ``diffflow run``, the expansion itself, incremental use, and errors that
point at the component's own text."""
import pytest

import diffflow as dd
from diffflow.datalog.passes import parse_program
from tests.support.helpers import run_datalog

_run = run_datalog  # diffflow run; {output relation: sorted lines}


# -- the examples of souffle-lang.github.io/components ------------------------------------

def test_two_instances_each_get_their_own_relations(tmp_path):
    out = _run(tmp_path, """
        .comp MyComponent {
            .type myType = number
            .decl TheAnswer(x:myType)    // component relation
            TheAnswer(42).               // component fact
        }
        .init myInstance1 = MyComponent
        .init myInstance2 = MyComponent
        myInstance2.TheAnswer(33).

        .decl Test(x:number)
        Test(x) :- myInstance1.TheAnswer(x).
        Test(x) :- myInstance2.TheAnswer(x).
        .output Test
    """)
    assert out == {"Test": ["33", "42"]}


def test_names_a_component_does_not_declare_resolve_where_it_is_instantiated(tmp_path):
    out = _run(tmp_path, """
        .decl Out(x:number)
        .comp A {
           .decl R(x:number)
           .comp Count {
               R(1).                  // fact accessing R outside of Count
               R(x+1):- R(x), x<10.   // rule accessing R outside of Count
           }
           .init myCount = Count      // instantiate Count
           Out(x) :- R(x).            // rule accessing Out outside of A
        }
        .init myA = A
        .output Out
    """)
    assert out == {"Out": sorted(str(i) for i in range(1, 11))}


def test_type_parameters_give_each_instance_its_attribute_types(tmp_path):
    out = _run(tmp_path, """
        .comp ParamComponent<myType> {
            .decl TheAnswer(x:myType)    // component relation
            TheAnswer(42).               // component fact
            .output TheAnswer            // component output directive
        }
        .init numberInstance = ParamComponent<number>
        .init floatInstance = ParamComponent<float>
    """)
    assert out == {"numberInstance.TheAnswer": ["42"], "floatInstance.TheAnswer": ["42"]}
    flat = parse_program(".comp P<T> { .decl a(x: T) }\n.init f = P<float>\n.init s = P<symbol>")
    assert [(d.relation, d.attributes[0].type) for d in flat.declarations] == \
        [("f.a", "float"), ("s.a", "symbol")]


@pytest.mark.parametrize("selector, fact", [("One", "1"), ("Two", "2")])
def test_a_type_parameter_can_name_the_component_to_instantiate(tmp_path, selector, fact):
    out = _run(tmp_path, f"""
        .decl R(x:number)
        .comp Case<Selector> {{
           .comp One {{
             R(1).
           }}
           .comp Two {{
             R(2).
           }}
           .init selection = Selector // instantiation depending on type parameter "Selector"
        }}
        .init myCase = Case<{selector}>
        .output R
    """)
    assert out == {"R": [fact]}


def test_a_component_inherits_its_bases_elements(tmp_path):
    out = _run(tmp_path, """
        .comp Base1 {
            .type myNumber = number
            .decl TheAnswer(x:myNumber)
            TheAnswer(42).
        }
        .comp Base2 {
            TheAnswer(41).
        }
        .comp Sub  : Base1, Base2 { // inherit from Base1 and Base2
            .decl WhatIsTheAnswer(n:myNumber)
            WhatIsTheAnswer(n) :- TheAnswer(n).
            .output WhatIsTheAnswer
        }
        .init mySub = Sub
    """)
    assert out == {"mySub.WhatIsTheAnswer": ["41", "42"]}


def test_override_drops_the_base_rules_of_an_overridable_relation(tmp_path):
    out = _run(tmp_path, """
        .comp Base {
            .decl R(x:number) overridable
            R(1).
            R(x+1) :- R(x), x < 5.
            .output R
        }
        .comp Sub : Base {
            .override R
            R(2).
            R(x+1) :- R(x), x < 4.
        }
        .init mySub = Sub
    """)
    assert out == {"mySub.R": ["2", "3", "4"]}


def test_a_base_takes_the_sub_components_type_parameter():
    p = dd.Program("""
        .comp Graph<N> {
            .decl edge(a: N, b: N)
            .decl reach(a: N, b: N)
            reach(a, b) :- edge(a, b).
            reach(a, c) :- reach(a, b), edge(b, c).
        }
        .comp Named<K> : Graph<K> {
            .decl loops(a: K)
            loops(a) :- reach(a, a).
        }
        .init words = Named<symbol>
        .init ints = Named<number>
    """)
    p.insert("words.edge", [("a", "b"), ("b", "a"), ("b", "c")])
    p.insert("ints.edge", [(1, 2)])
    p.commit()
    assert p.relation("words.loops") == {("a",), ("b",)}
    assert p.relation("ints.loops") == set()
    p.remove("words.edge", [("b", "a")]); p.insert("ints.edge", [(2, 1)]); p.commit()
    assert p.relation("words.loops") == set() and p.relation("ints.loops") == {(1,), (2,)}


# -- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("source, message, at", [
    (".init x = Nope\n", "unknown component 'Nope'", (1, 11)),
    (".comp Pair { }\n.init x = Par\n", "did you mean 'Pair'", (2, 11)),
    (".comp P<T> { }\n.init x = P\n", "takes 1 type parameter(s) (T), got 0", (2, 11)),
    (".comp P { }\n.init x = P\n.init x = P\n", "instance 'x' is initialised twice", (3, 7)),
    (".comp P { }\n.comp P { }\n", "component 'P' is declared twice", (2, 7)),
    (".comp B { .decl r(x: number) }\n.comp S : B { .override r }\n.init s = S\n",
     "'r' is not declared overridable", (2, 25)),
    (".comp B { }\n.comp S : B { .override r }\n.init s = S\n", "no base of 'S' declares 'r'",
     (2, 25)),
    (".comp L : L { }\n.init l = L\n", "inherits from itself", (1, 11)),
    (".comp A {\n  .decl r(x: number)\n  r(y) :- r(x).\n}\n.init a = A\n",
     "variable 'y' in the head of a.r is not bound", (3, 5)),
])
def test_component_errors_point_at_the_text_the_user_wrote(source, message, at):
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(source, filename="c.dl")
    text = str(caught.value)
    assert message in text and f"c.dl:{at[0]}:{at[1]}:" in text, text


# -- issue 41: generic components, composed component types, overrides through parameters ---

_NETS = """
    .comp Links<V> {
        .decl link(a: V, b: V)
        .decl joined(a: V, b: V)
        joined(x, y) :- link(x, y).
        joined(x, z) :- joined(x, y), link(y, z).
    }
    .comp Both<V> : Links<V> {
        link(y, x) :- link(x, y).
    }
    .comp Wrap<V> {
        .init L = Both<V>
        .decl given(a: V, b: V)
        L.link(x, y) :- given(x, y).
        .decl far(a: V, b: V)
        far(x, y) :- L.joined(x, y), x != y.
    }
    .type town <: symbol
    .type Who = [first: symbol, last: symbol]
    .init towns = Wrap<town>
    .init people = Wrap<Who>
"""


@pytest.mark.parametrize("partitions", [1, 2])
def test_a_generic_component_instantiates_a_generic_base_inside_it(partitions):
    # `L.link(...) :- ...` right after a declaration: a qualified head, not a qualifier
    p = dd.Program(_NETS, partitions=partitions)
    p.insert("towns.given", [("a", "b"), ("b", "c")])
    p.insert("people.given", [(("x", "y"), ("z", "w"))])
    p.commit()
    # the links are made symmetric by Both, so a reaches c and c reaches a
    assert p.relation("towns.far") == {(s, t) for s in "abc" for t in "abc" if s != t}
    assert p.relation("people.far") == {(("x", "y"), ("z", "w")), (("z", "w"), ("x", "y"))}
    p.remove("towns.given", [("b", "c")])
    p.commit()
    assert p.relation("towns.far") == {("a", "b"), ("b", "a")}


def test_a_type_of_an_instance_made_inside_a_component_is_named_instance_dot_type(tmp_path):
    out = _run(tmp_path, """
        .comp Num {
            .type T = number
            .decl twice(a: T, b: T) inline
            twice(x, y) :- y = 2 * x, x = x.
        }
        .comp Pairs<Of> {
            .init D = Of
            .type T = [left: D.T, right: D.T]
            .decl twice(a: T, b: T)
            twice([a, b], [c, d]) :- D.twice(a, c), D.twice(b, d), in(a), in(b).
            .decl in(x: D.T)
        }
        .comp NumPairs : Pairs<Num> { }
        .init P = NumPairs
        P.in(1). P.in(5).
        .decl out(a: number, b: number, c: number, d: number)
        out(a, b, c, d) :- P.twice([a, b], [c, d]).
        .output out
    """)
    assert out == {"out": ["1\t1\t2\t2", "1\t5\t2\t10", "5\t1\t10\t2", "5\t5\t10\t10"]}


def test_a_type_argument_named_like_an_instance_inside_is_the_outer_type():
    # (Soufflé's nfsa2fsa: Automaton<..., Word> makes an instance called Word inside)
    p = dd.Program("""
        .type Word <: symbol
        .comp Box<T> { .decl item(x: T) }
        .comp User<TW> {
            .init Word = Box<TW>
            .decl seen(w: TW)
            seen(w) :- Word.item(w).
        }
        .init u = User<Word>
        u.Word.item("hi").
    """)
    p.commit()
    assert p.relation("u.seen") == {("hi",)}
    assert p.analysed.relations["u.seen"].declaration.attributes[0].type == "Word"


def test_override_through_a_base_given_as_a_type_parameter(tmp_path):
    # Soufflé checks `overridable` where it can see the base, i.e. not behind a parameter
    out = _run(tmp_path, """
        .comp Plain {
            .decl R(s: symbol)
            .output R
            R("plain").
        }
        .comp Over<B> : B {
            .override R
            R("over").
        }
        .init o = Over<Plain>
    """)
    assert out == {"o.R": ["over"]}


@pytest.mark.parametrize("source, message, at", [
    # checked on the definition, instantiated or not (as Soufflé does)
    (".comp A { .decl r(x: number) }\n.comp B : A {\n .override r\n}\n",
     "'r' is not declared overridable", (3, 12)),
    (".comp A { .decl r(x: number) }\n.comp B : A { }\n.comp C : B {\n .override r\n}\n",
     "'r' is not declared overridable", (4, 12)),
    (".comp E {\n .decl r(x: number) overridable\n .override r\n}\n",
     "'E' declares 'r' itself (line 2)", (3, 12)),
    # components and instances need names of their own (Soufflé's disjoint_names)
    (".type t <: number\n.comp t { }\n", "component 't' has the name of the type declared at "
     "line 1", (2, 7)),
    (".decl r(x: number)\n.comp C { }\n.init r = C\n", "instance 'r' has the name of the "
     "relation declared at line 1", (3, 7)),
    (".comp C { }\n.init C = C\n", "instance 'C' has the name of the component declared at "
     "line 1", (2, 7)),
])
def test_override_errors_on_component_definitions(source, message, at):
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(source, filename="c.dl")
    text = str(caught.value)
    assert message in text and f"c.dl:{at[0]}:{at[1]}:" in text, text
