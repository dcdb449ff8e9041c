"""Golden tests of the Datalog parser, plus positions, DNF expansion and the query library.

Every ``tests/fixtures/datalog/*.dl`` is parsed with its base name as the file name:

* ``NN_name.dl`` must parse; ``parse(text, name).to_data()`` is compared with
  ``NN_name.ast.json`` (pretty-printed JSON, ``at`` = "line:col" of each node), and
  the program must also pass :func:`~diffflow.datalog.analysis.analyser.analyse`;
* ``err_name.dl`` must fail; ``str(DatalogError)`` is compared with ``err_name.error.txt``.

Regenerate the expected files with ``DIFFFLOW_UPDATE_GOLDEN=1 pytest tests/datalog/test_parser.py``
and then read every changed file: a golden file is only worth what its review was.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import diffflow as dd
from diffflow.datalog.passes import analyse
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.parser import parse
from tests.support import paths

FIXTURES = paths.FIXTURES / "datalog"
QUERIES = paths.QUERIES
UPDATE = os.environ.get("DIFFFLOW_UPDATE_GOLDEN") == "1"

PROGRAMS = sorted(p for p in FIXTURES.glob("*.dl") if not p.name.startswith("err_"))
SYNTAX_ERRORS = sorted(FIXTURES.glob("err_*.dl"))


def _read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as f:  # keep tabs and line ends exact
        return f.read()


def _write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _render_ast(path: Path) -> str:
    data = parse(_read(path), path.name).to_data()
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _render_error(path: Path) -> str:
    with pytest.raises(DatalogError) as info:
        parse(_read(path), path.name)
    return str(info.value) + "\n"


def _check_golden(expected_path: Path, actual: str) -> None:
    if UPDATE:
        _write(expected_path, actual)
        return
    assert expected_path.exists(), \
        f"{expected_path.name} is missing; run with DIFFFLOW_UPDATE_GOLDEN=1 and review it"
    assert actual == _read(expected_path)


def test_fixtures_present():
    assert len(PROGRAMS) >= 12 and len(SYNTAX_ERRORS) >= 5
    expected = {p.with_suffix(".ast.json").name for p in PROGRAMS} | \
               {p.with_suffix(".error.txt").name for p in SYNTAX_ERRORS}
    present = {p.name for p in FIXTURES.iterdir() if not p.name.endswith(".dl")}
    assert present <= expected, f"stale expected files: {sorted(present - expected)}"


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_golden_ast(path):
    _check_golden(path.with_suffix(".ast.json"), _render_ast(path))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_golden_programs_pass_analysis(path):
    source = _read(path)
    analysed = analyse(parse(source, path.name), source)
    assert analysed.relations


@pytest.mark.parametrize("path", SYNTAX_ERRORS, ids=lambda p: p.stem)
def test_golden_syntax_error(path):
    text = _render_error(path)
    _check_golden(path.with_suffix(".error.txt"), text)
    # the header is file:line:col and the caret sits under that column
    header, source_line, caret = text.splitlines()[:3]
    where = header.split(": error: ")[0]
    name, line, column = where.rsplit(":", 2)
    assert name == path.name
    original = _read(path).splitlines()[int(line) - 1]
    assert source_line == "    " + original.expandtabs(4)
    assert caret == "    " + " " * len(original[: int(column) - 1].expandtabs(4)) + "^"


# -- positions -----------------------------------------------------------------------------

def _at(node) -> tuple:
    return node.line, node.column


def test_positions_of_items():
    source = (".type Node <: symbol\n"
              "  .decl edge(x: Node, y: Node)\n"
              ".input edge, other(delimiter=\",\")\n"
              "edge(\"a\", \"b\").\n")
    program = parse(source, "p.dl")
    assert program.filename == "p.dl"
    assert _at(program.types[0]) == (1, 7)                # the type's name
    decl = program.declarations[0]
    assert _at(decl) == (2, 9)                            # the relation's name
    assert [_at(a) for a in decl.attributes] == [(2, 14), (2, 23)]
    assert [(d.relation, _at(d)) for d in program.directives] == [("edge", (3, 8)),
                                                                    ("other", (3, 14))]
    fact = program.rules[0]
    assert _at(fact) == _at(fact.head) == (4, 1)
    assert [_at(a) for a in fact.head.args] == [(4, 6), (4, 11)]


def test_positions_in_a_rule_body():
    source = ("p(x, y) :-\n"
              "    e(x, z),\n"
              "\t!f(z),\n"
              "    y = z * 2 + 1, (g(y) ; h(y)),\n"
              "    n = count : { e(x, _) }.\n")
    rule = parse(source).rules[0]
    (conj,) = rule.body
    atom, negation, assign, group, count = conj.literals
    assert _at(conj) == _at(atom) == (2, 5)
    assert _at(atom.args[1]) == (2, 10)
    assert _at(negation) == (3, 2) and _at(negation.atom) == (3, 3)   # a tab is one column
    assert _at(assign) == (4, 7)                                       # the operator
    assert _at(assign.left) == (4, 5)
    plus = assign.right
    assert (plus.op, _at(plus)) == ("+", (4, 15))
    assert (plus.left.op, _at(plus.left)) == ("*", (4, 11))
    assert _at(plus.right) == (4, 17)
    assert _at(group) == (4, 20)                                       # the '('
    assert [_at(alt) for alt in group.alternatives] == [(4, 21), (4, 28)]
    aggregate = count.right
    assert (aggregate.function, _at(aggregate)) == ("count", (5, 9))
    assert _at(aggregate.body[0]) == (5, 19)
    assert _at(aggregate.body[0].args[1]) == (5, 24)


def test_positions_after_block_comments_and_crlf():
    source = "/* one\r\n two */ p(1).\r\n\r\n// x\r\nq(  -2).\r\n"
    program = parse(source)
    p, q = program.rules
    assert _at(p) == (2, 9)
    assert _at(q) == (5, 1)
    assert (q.head.args[0].value, _at(q.head.args[0])) == (-2, (5, 5))  # folded at the '-'


def test_negative_constants_fold_but_negated_variables_do_not():
    (rule,) = parse("r(v) :- e(x), v = - 5 - -x.").rules
    minus = rule.body[0].literals[1].right
    assert minus.op == "-"
    assert isinstance(minus.left, ast.Number) and minus.left.value == -5
    assert _at(minus.left) == (1, 19)
    assert isinstance(minus.right, ast.Negative) and _at(minus.right) == (1, 25)
    assert isinstance(minus.right.operand, ast.Var)
    # an unsigned constant is not folded: -5u stays a Negative the analysis rejects
    (fact,) = parse("u(-5u).").rules
    (arg,) = fact.head.args
    assert isinstance(arg, ast.Negative) and arg.operand.unsigned and arg.operand.value == 5


def test_literal_values():
    (fact,) = parse('e(0x1F, 0b101, 42u, 0xFFu, 1.5e3, 2E-1, -0.5, "a\\"b\\\\c\\td\\q").').rules
    values = [(type(a).__name__, a.value) for a in fact.head.args]
    assert values == [("Number", 31), ("Number", 5), ("Number", 42), ("Number", 255),
                      ("Float", 1500.0), ("Float", 0.2), ("Float", -0.5),
                      ("String", 'a"b\\c\td\\q')]
    assert [getattr(a, "unsigned", None) for a in fact.head.args] == \
        [False, False, True, True, None, None, None, None]


def test_multiple_heads_share_one_body():
    rules = parse("a(x), b(x, 1) :- e(x) ; f(x).").rules
    assert [r.head.relation for r in rules] == ["a", "b"]
    assert [_at(r) for r in rules] == [(1, 1), (1, 7)]
    assert rules[0].body == rules[1].body
    assert [[l.relation for l in alt.literals] for alt in rules[0].body] == [["e"], ["f"]]


def test_to_data_round_trips_through_json():
    program = parse(_read(FIXTURES / "17_mixed_program.dl"), "m.dl")
    data = program.to_data()
    assert json.loads(json.dumps(data)) == data
    assert "filename" not in data
    assert data["at"] == "1:1" and data["node"] == "Program"


# -- DNF expansion --------------------------------------------------------------------------

_DECLS = "".join(f".decl {r}(x: number)\n" for r in "abcdefghr")


def _clauses(body: str) -> list:
    source = _DECLS + f"r(x) :- {body}.\n"
    analysed = analyse(parse(source), source)
    return [" ".join(_show(l) for l in c.literals) for c in analysed.relations["r"].clauses]


def _show(literal) -> str:
    if isinstance(literal, ast.Atom):
        return literal.relation
    if isinstance(literal, ast.Negation):
        return "!" + literal.atom.relation
    if isinstance(literal, ast.Comparison):
        return f"x{literal.op}{literal.right.value}"
    raise AssertionError(literal)


@pytest.mark.parametrize("body, expected", [
    ("a(x)", ["a"]),
    ("a(x) ; b(x)", ["a", "b"]),
    ("a(x), (b(x) ; c(x))", ["a b", "a c"]),
    ("(a(x) ; b(x)), (c(x) ; d(x) ; e(x))", ["a c", "a d", "a e", "b c", "b d", "b e"]),
    ("a(x) ; b(x), (c(x) ; (d(x) ; e(x), (f(x) ; g(x))))",
     ["a", "b c", "b d", "b e f", "b e g"]),
    ("((a(x)))", ["a"]),
    ("a(x), !h(x), (x > 1 ; x < 0), (b(x) ; c(x))",
     ["a !h x>1 b", "a !h x>1 c", "a !h x<0 b", "a !h x<0 c"]),
])
def test_dnf_expansion(body, expected):
    assert _clauses(body) == expected


def test_dnf_clauses_keep_the_rule_and_head():
    source = _DECLS + "r(x) :- a(x), (b(x) ; c(x)).\nr(x) :- d(x).\n"
    analysed = analyse(parse(source), source)
    clauses = analysed.relations["r"].clauses
    assert len(clauses) == 3
    assert [c.rule.line for c in clauses] == [10, 10, 11]  # nine .decl lines come first
    assert all(c.head.relation == "r" for c in clauses)
    assert all(c.var_types == {"x": "number"} for c in clauses)


# -- the query library ----------------------------------------------------------------------

QUERY_PROGRAMS = sorted(QUERIES.glob("*/prog.dl")) if QUERIES.is_dir() else []


@pytest.mark.skipif(not QUERY_PROGRAMS, reason="no queries/ folder")
@pytest.mark.parametrize("path", QUERY_PROGRAMS, ids=lambda p: p.parent.name)
def test_query_library_parses_and_analyses(path):
    from diffflow.datalog.syntax.preprocess import preprocess

    source = preprocess(_read(path), str(path))  # (magic_samegen's #ifndef)
    program = parse(source, str(path))
    assert program.declarations and program.rules
    analysed = analyse(program, source)
    assert any(r.outputs for r in analysed.relations.values())


# -- known bugs (see the report) -------------------------------------------------------------

@pytest.mark.parametrize("expression", ["-2 ^ 2", "-x ^ 2"])
def test_unary_minus_binds_looser_than_power(expression):
    (rule,) = parse(f"r(v) :- e(x), v = {expression}.").rules
    value = rule.body[0].literals[1].right
    assert isinstance(value, ast.Negative), value
    assert isinstance(value.operand, ast.BinaryOp) and value.operand.op == "^"
    assert _at(value) == (1, 19)


def test_analyse_does_not_change_the_syntax_tree():
    source = ".decl e(x: number) input output\n.decl r(x: number)\nr(x) :- e(x).\n"
    program = parse(source)
    before = program.to_data()
    first = analyse(program, source)
    assert program.to_data() == before
    second = analyse(program, source)
    assert len(first.relations["e"].outputs) == len(second.relations["e"].outputs) == 1


def test_expression_inside_a_negated_atom():
    import diffflow as dd

    program = dd.Program(".decl e(x: number)\n.decl r(x: number)\n"
                         "r(x) :- e(x), !e(x + 1).\ne(1). e(2). e(5).\n")
    program.commit()
    assert program.relation("r") == {(2,), (5,)}


@pytest.mark.slow
def test_a_fresh_process_loads_the_parse_tables_from_the_cache(tmp_path):
    # building the LALR tables is most of a small `diffflow run`; a second process must not
    import subprocess
    import sys

    code = ("import sys\n"
            "from lark.parsers import lalr_analysis\n"
            "if sys.argv[1] == 'cached':\n"
            "    def refuse(self):\n"
            "        raise AssertionError('the LALR tables were built again')\n"
            "    lalr_analysis.LALR_Analyzer.compute_lalr = refuse\n"
            "from diffflow.datalog.syntax import parser\n"
            "print(parser.parse('.decl e(x: number)\\ne(1).').rules[0].head.relation)\n")
    env = dict(os.environ, PYTHONPATH=str(paths.REPO), XDG_CACHE_HOME=str(tmp_path))
    for mode in ("any", "cached"):
        result = subprocess.run([sys.executable, "-c", code, mode], capture_output=True,
                                text=True, env=env, cwd=paths.REPO, check=False)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "e"


# -- issue 41: annotations and doc comments are read past; .lattice is read with a warning -----

_ANNOTATED = """/// a doc comment for Pair
@[doc = "pairs ] of [numbers"]
.type Pair = [
  /// first
  @[field(a)] a: number,
  @[weird {=} (=) [=]] b: number
]
//! an inner doc comment
/** a block doc comment */
@[xcomp {
  .comp Nope { .decl nope(x: number) }   // any tokens, even Datalog
}]
.comp Box {
  @[xdecl] .decl item(p: Pair)
  @[xrule] item([1, 2]).
}
@[xinit(.init b = Box)]
.init b = Box
.decl e(x: number, tag: symbol)
.input e
@[x(M)] @[y()] .decl sum(n: number)
@[head] sum(x + y) :-
  @![inner = "note"]
  b.item([x, y]), e(x, "@[not an annotation]").  // @[nor this]
"""


@pytest.mark.parametrize("partitions", [1, 2])
def test_annotations_and_doc_comments_are_read_past(partitions):
    p = dd.Program(_ANNOTATED, partitions=partitions)
    assert "nope" not in " ".join(p.relations) and "Nope.nope" not in p.relations
    p.insert("e", [(1, "@[not an annotation]"), (1, "other")])
    p.commit()
    assert p.relation("sum") == {(3,)}
    p.remove("e", [(1, "@[not an annotation]")])
    p.commit()
    assert p.relation("sum") == set()


def test_an_annotation_never_closed_is_an_error_at_its_at_sign():
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(".decl e(x: number)\n  @[doc = (1]\ne(1).\n", filename="a.dl")
    assert str(caught.value).startswith("a.dl:2:3: error: this annotation is never closed")


def test_a_lattice_declaration_is_read_with_a_warning_its_use_is_an_error():
    lattice = ".type T = One {} | Two {}\n.lattice T<> {\n  Bottom -> $One(),\n  Top -> $Two()\n}\n"
    with pytest.warns(dd.DatalogWarning) as caught:
        dd.Program(lattice + ".decl e(x: number)\n", filename="l.dl")
    assert str(caught[0].message).startswith("l.dl:2:1: warning: lattice 'T' is read but ignored")
    with pytest.raises(dd.DatalogError) as error:
        dd.Program(lattice + ".decl r(x: T<>)\n", filename="l.dl")
    assert str(error.value).startswith("l.dl:6:13: error: lattice attributes (x: L<>): not "
                                       "supported yet")
