"""Subtypes as Soufflé checks them (issue 41): a head variable's type must be a subtype of
its attribute's; a type is declared once; no subtype of a record type.  Programs of the
shapes of Soufflé's semantic tests extended_subtypes3, type_system12, type_system14,
type_system15 and type_dupl, written here."""
import pytest

import diffflow as dd

_TYPES = """
.type Fruit <: symbol
.type Apple <: Fruit
.type Veg <: symbol
.type Food = Fruit | Veg
.type Crop = Apple | Veg
"""


def _error(source: str) -> dd.DatalogError:
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(source, filename="s.dl")
    return caught.value


@pytest.mark.parametrize("rule, at, message", [
    # a Fruit need not be an Apple
    ("apple(f) :- fruit(f).", (11, 7), "'f' is of type Fruit here (from fruit at line 11), "
     "which is not a subtype of Apple, the type of attribute 'a' of apple"),
    # a union is no subtype of one of its members; a negation does not narrow the type
    ("fruit(x) :- !veg(x), food(x).", (11, 7), "'x' is of type Food here"),
    # an atom with a computed argument does not type its variables
    ('veg(x) :- fruit(x), veg(cat("", x)).', (11, 5), "'x' is of type Fruit here"),
    # x = y: one type
    ("apple(y) :- fruit(x), y = x.", (11, 7), "'y' is of type Fruit here"),
])
def test_a_head_variable_must_have_a_subtype_of_its_attribute(rule, at, message):
    e = _error(_TYPES + _DECLS + rule + "\n")
    assert (e.line, e.column) == at and e.message.startswith(message), str(e)
    assert "as in Soufflé" in e.hint


_DECLS = """.decl fruit(f: Fruit)
.decl apple(a: Apple)
.decl veg(v: Veg)
.decl food(x: Food)
"""


@pytest.mark.parametrize("partitions", [1, 2])
def test_subtypes_that_fit_run_incrementally(partitions):
    p = dd.Program(_TYPES + _DECLS + """
        .decl crop(c: Crop)
        .decl cheap(x: Fruit)
        .input fruit, apple, veg
        fruit(a) :- apple(a).                    // Apple <: Fruit
        food(f) :- fruit(f).                     // Fruit <: Food
        food(v) :- veg(v).
        crop(a) :- apple(a).                     // Apple is a member of Crop
        cheap(f) :- food(f), fruit(f).           // the meet of Food and Fruit: Fruit
        cheap(y) :- fruit(x), y = x.
        cheap(cat(f, "!")) :- fruit(f).          // a computed value: any symbol type
        cheap(as(x, Fruit)) :- veg(x).           // converted explicitly
    """, partitions=partitions)
    p.insert("apple", [("pink lady",)])
    p.insert("veg", [("leek",)])
    p.commit()
    assert p.relation("food") == {("pink lady",), ("leek",)}
    assert p.relation("crop") == {("pink lady",)}
    assert p.relation("cheap") == {("pink lady",), ("pink lady!",), ("leek",)}
    p.remove("apple", [("pink lady",)])
    p.insert("fruit", [("fig",)])
    p.commit()
    assert p.relation("cheap") == {("fig",), ("fig!",), ("leek",)}
    assert p.relation("crop") == set()


@pytest.mark.parametrize("source, at, message", [
    (".type T <: symbol\n.type T <: symbol\n", (2, 7),
     "type 'T' is declared twice (first at line 1)"),
    (".type L = [h: number, t: L]\n.type Sub <: L\n", (2, 7),
     "subtype 'Sub' of 'L', which is a record or ADT type"),
    # Soufflé's disjoint_names2: a relation may not have a type's name, in a component too
    (".type t <: symbol\n.decl t(x: number)\n", (2, 7),
     "relation 't' has the name of the type declared at line 1"),
    (".comp C {\n .type u <: symbol\n .decl u(x: number)\n}\n.init i = C\n", (3, 8),
     "relation 'i.u' has the name of the type declared at line 2"),
])
def test_type_declaration_errors(source, at, message):
    e = _error(source)
    assert (e.line, e.column) == at and e.message.startswith(message), str(e)


def test_an_alias_of_a_record_type_is_the_record_type():
    p = dd.Program(".type L = [h: number, t: L]\n.type M = L\n.decl a(x: L)\n.decl b(x: M)\n"
                   "a([1, nil]).\nb(x) :- a(x).\n")
    p.commit()
    assert len(p.relation("b")) == 1
