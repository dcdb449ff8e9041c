"""Error messages of the Datalog front end: file, line, column, text and hint.

Each test checks the complete message (``file:line:col: error: ...``, the source
line, the caret and the hint) or, for data errors that have no position, the
exact text and that nothing was changed.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import diffflow as dd
from diffflow.datalog.passes import analyse
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.parser import parse


def _error(source: str, filename: str = "prog.dl") -> DatalogError:
    """The DatalogError that parsing and analysing ``source`` raises."""
    with pytest.raises(DatalogError) as info:
        analyse(parse(source, filename), source)
    return info.value


def _check(error: DatalogError, line: int, column: int, *text: str) -> None:
    """``text`` are the lines of the whole message; the position is checked separately."""
    assert (error.filename, error.line, error.column) == ("prog.dl", line, column)
    assert str(error) == "\n".join(text)
    assert text[0].startswith(f"prog.dl:{line}:{column}: error: {error.message}")


EDGE_PATH = ".decl edge(x: number, y: number)\n.decl path(x: number, y: number)\n"


# -- names, arity, declarations --------------------------------------------------------------

def test_unknown_relation_suggests_the_closest_name():
    e = _error(EDGE_PATH + "path(x, y) :- edg(x, y).\n")
    _check(e, 3, 15,
           "prog.dl:3:15: error: unknown relation 'edg' (did you mean 'edge'?)",
           "    path(x, y) :- edg(x, y).",
           "                  ^",
           "  hint: declare it first, e.g. .decl edg(x: number)")
    assert e.message == "unknown relation 'edg' (did you mean 'edge'?)"
    assert e.hint == "declare it first, e.g. .decl edg(x: number)"
    assert e.source_line == "path(x, y) :- edg(x, y)."


def test_unknown_relation_without_a_close_name_has_no_suggestion():
    e = _error(EDGE_PATH + "path(x, y) :- edge(x, y), banana(y).\n")
    _check(e, 3, 27,
           "prog.dl:3:27: error: unknown relation 'banana'",
           "    path(x, y) :- edge(x, y), banana(y).",
           "                              ^",
           "  hint: declare it first, e.g. .decl banana(x: number)")


def test_unknown_relation_in_a_head_and_in_a_directive():
    e = _error(EDGE_PATH + "pth(x, y) :- edge(x, y).\n")
    assert (e.line, e.column, e.message) == (3, 1, "unknown relation 'pth' (did you mean 'path'?)")
    e = _error(EDGE_PATH + ".output pathh\n")
    _check(e, 3, 9,
           "prog.dl:3:9: error: unknown relation 'pathh' (did you mean 'path'?)",
           "    .output pathh",
           "            ^",
           "  hint: declare it first, e.g. .decl pathh(x: number)")


def test_arity_mismatch_shows_the_declaration():
    e = _error(EDGE_PATH + "path(x, y) :- edge(x, y, z).\n")
    _check(e, 3, 15,
           "prog.dl:3:15: error: edge has 2 attribute(s) but is used with 3",
           "    path(x, y) :- edge(x, y, z).",
           "                  ^",
           "  hint: declared at line 1: .decl edge(x: number, y: number)")


def test_arity_mismatch_in_a_head():
    e = _error(EDGE_PATH + "\n\npath(x) :- edge(x, _).\n")
    _check(e, 5, 1,
           "prog.dl:5:1: error: path has 2 attribute(s) but is used with 1",
           "    path(x) :- edge(x, _).",
           "    ^",
           "  hint: declared at line 2: .decl path(x: number, y: number)")


def test_unknown_type_suggests_a_base_type():
    e = _error(".decl e(x: number, name: simbol)\n")
    _check(e, 1, 20,
           "prog.dl:1:20: error: unknown type 'simbol' (did you mean 'symbol'?)",
           "    .decl e(x: number, name: simbol)",
           "                       ^",
           "  hint: use number, unsigned, float, symbol or a .type you declare")


def test_unknown_type_suggests_a_declared_type():
    e = _error(".type Node <: symbol\n.decl e(x: Nod)\n")
    assert (e.line, e.column) == (2, 9)
    assert e.message == "unknown type 'Nod' (did you mean 'Node'?)"


def test_unknown_base_of_a_type_declaration():
    e = _error(".type Id <: nubmer\n")
    _check(e, 1, 7,
           "prog.dl:1:7: error: unknown type 'nubmer' (did you mean 'number'?)",
           "    .type Id <: nubmer",
           "          ^",
           "  hint: use number, unsigned, float, symbol or a .type you declare")


def test_union_of_different_base_types():
    e = _error(".type A <: number\n.type B <: symbol\n.type C = A | B\n")
    _check(e, 3, 7,
           "prog.dl:3:7: error: union type 'C' mixes ['number', 'symbol']; unions are of "
           "subtypes of one base type (as in Soufflé)",
           "    .type C = A | B",
           "          ^")


def test_duplicate_declaration_names_the_first():
    e = _error(EDGE_PATH + "\n.decl edge(a: number)\n")
    _check(e, 4, 7,
           "prog.dl:4:7: error: relation 'edge' is declared twice (first at line 1)",
           "    .decl edge(a: number)",
           "          ^")


def test_duplicate_attribute():
    e = _error(".decl e(x: number, x: symbol)\n")
    _check(e, 1, 9,
           "prog.dl:1:9: error: attribute 'x' appears twice in 'e'",
           "    .decl e(x: number, x: symbol)",
           "            ^")


def test_unknown_qualifier():
    e = _error(".decl e(x: number) fancy\n")
    _check(e, 1, 7,
           "prog.dl:1:7: error: unknown qualifier 'fancy' on 'e'",
           "    .decl e(x: number) fancy",
           "          ^",
           "  hint: supported: input, output, printsize, inline, no_inline and the ignored "
           "data-structure hints btree, brie")


def test_unknown_directive_parameter():
    e = _error(EDGE_PATH + '.input edge(IO=file, fielname="e.tsv")\n')
    _check(e, 3, 8,
           "prog.dl:3:8: error: unknown parameter 'fielname' in .input edge",
           '    .input edge(IO=file, fielname="e.tsv")',
           "           ^",
           "  hint: supported: IO, attributeNames, compress, delimiter, filename, format, "
           "headers, rfc4180")


def test_unsupported_io_kinds():
    e = _error(EDGE_PATH + ".output path(IO=sqlite)\n")
    _check(e, 3, 9,
           "prog.dl:3:9: error: unsupported IO='sqlite' in .output path",
           "    .output path(IO=sqlite)",
           "            ^",
           "  hint: use IO=file or IO=jsonfile (or IO=stdout or IO=json for outputs)")
    e = _error(EDGE_PATH + ".input edge(IO=stdout)\n")
    assert (e.line, e.column, e.message) == (3, 8, "unsupported IO='stdout' in .input edge")


# -- binding -----------------------------------------------------------------------------------

BINDING_HINT = ("  hint: add an atom that contains '{0}' to the body, or assign it with "
                "{0} = <expression>")


def test_unbound_head_variable():
    e = _error(EDGE_PATH + "path(x, z) :- edge(x, y).\n")
    _check(e, 3, 9,
           "prog.dl:3:9: error: variable 'z' in the head of path is not bound by a positive atom",
           "    path(x, z) :- edge(x, y).",
           "            ^",
           BINDING_HINT.format("z"))


def test_unbound_variable_in_a_negation():
    e = _error(EDGE_PATH + "path(x, y) :-\n    edge(x, y),\n    !edge(y, z).\n")
    _check(e, 5, 14,
           "prog.dl:5:14: error: variable 'z' in the negation !edge is not bound by a positive "
           "atom",
           "        !edge(y, z).",
           "                 ^",
           BINDING_HINT.format("z"))


def test_unbound_variable_in_a_comparison():
    e = _error(EDGE_PATH + "path(x, y) :- edge(x, y), x < limit.\n")
    _check(e, 3, 31,
           "prog.dl:3:31: error: variable 'limit' in a comparison is not bound by a positive atom",
           "    path(x, y) :- edge(x, y), x < limit.",
           "                                  ^",
           BINDING_HINT.format("limit"))


def test_variables_bound_only_by_each_other_are_unbound():
    e = _error(EDGE_PATH + "path(1, 2) :- edge(_, _), y = z, y < 3.\n")
    assert (e.line, e.column) == (3, 27)
    assert e.message == "variable 'y' in a comparison is not bound by a positive atom"


def test_unbound_variable_inside_an_aggregate():
    e = _error(EDGE_PATH + "path(x, n) :- edge(x, _), n = count : { edge(x, _), !edge(_, w) }.\n")
    # '_' in a negation is fine; 'w' is bound nowhere
    assert (e.line, e.column) == (3, 62)
    assert e.message == "variable 'w' in the negation !edge is not bound by a positive atom"


def test_wildcard_in_a_head():
    e = _error(EDGE_PATH + "path(x, _) :- edge(x, y).\n")
    _check(e, 3, 9,
           "prog.dl:3:9: error: '_' in the head of path: a head needs a value for every attribute",
           "    path(x, _) :- edge(x, y).",
           "            ^",
           "  hint: use a variable bound in the body or a constant")


def test_variable_in_a_fact():
    e = _error(EDGE_PATH + "edge(1, y).\n")
    _check(e, 3, 9,
           "prog.dl:3:9: error: a fact has only constants, but edge has a variable",
           "    edge(1, y).",
           "            ^",
           "  hint: write a rule with a body to derive facts from others")


def test_expression_inside_a_body_atom_needs_bound_variables():
    source = EDGE_PATH + "path(x, z) :- edge(x, y), edge(y, y + 1), z = y + 1.\n"
    analyse(parse(source), source)  # accepted: edge(y, #e), #e = y + 1
    e = _error(EDGE_PATH + "path(x, y) :- edge(x, y + 1).\n")
    assert (e.line, e.column) == (3, 23)  # the unbound 'y' inside the expression
    assert e.message.startswith("variable 'y' in ")
    assert e.message.endswith(" is not bound by a positive atom")
    assert str(e).splitlines()[1:3] == ["    path(x, y) :- edge(x, y + 1).",
                                        "                          ^"]


# -- types --------------------------------------------------------------------------------------

NS = ".decl e(x: number)\n.decl s(x: symbol)\n.decl r(x: number)\n"


def test_variable_used_as_number_and_symbol():
    e = _error(NS + "r(x) :- e(x), s(x).\n")
    _check(e, 4, 17,
           "prog.dl:4:17: error: type clash: variable 'x' is a number (attribute 'x' of e at "
           "line 4) but a symbol here",
           "    r(x) :- e(x), s(x).",
           "                    ^",
           "  hint: a variable has one type; rename one of the uses or convert explicitly")


def test_string_constant_in_a_number_column():
    e = _error(NS + 'e("seven").\n')
    _check(e, 4, 3,
           "prog.dl:4:3: error: type clash: a string where a number is expected",
           '    e("seven").',
           "      ^")
    e = _error(NS + 'r(x) :- e(x), e("a").\n')
    assert (e.line, e.column, e.message) == \
        (4, 17, "type clash: a string where a number is expected")


def test_number_constant_in_a_symbol_column():
    e = _error(NS + 'r(x) :- e(x), s("a"), s(1).\n')
    _check(e, 4, 25,
           "prog.dl:4:25: error: type clash: a number where a symbol is expected",
           '    r(x) :- e(x), s("a"), s(1).',
           "                            ^",
           '  hint: write symbols in double quotes, e.g. "a"')


def test_head_attribute_of_another_type():
    e = _error(".decl e(x: number)\n.decl f(x: float)\nf(x) :- e(x).\n")
    _check(e, 3, 3,
           "prog.dl:3:3: error: type clash: attribute 'x' of f is a float, but this is a number",
           "    f(x) :- e(x).",
           "      ^")


def test_arithmetic_on_a_symbol():
    e = _error(NS + "r(y) :- s(x), y = x + 1.\n")
    _check(e, 4, 21,
           "prog.dl:4:21: error: arithmetic '+' on a symbol",
           "    r(y) :- s(x), y = x + 1.",
           "                        ^",
           "  hint: + joins two symbols (as cat does; Soufflé's too); to_string(x) makes a "
           "symbol of a number")
    e = _error(NS + "r(1) :- s(x), y = -x, y = x.\n")
    assert (e.line, e.column, e.message) == (4, 19, "unary minus of a symbol")


def test_mixed_number_types_in_arithmetic():
    e = _error(".decl e(x: number)\n.decl f(x: float)\nf(y) :- e(x), y = x * 1.5.\n")
    _check(e, 3, 21,
           "prog.dl:3:21: error: type clash in arithmetic: number * float",
           "    f(y) :- e(x), y = x * 1.5.",
           "                        ^",
           "  hint: both sides need the same type; diffflow, like Soufflé, does not convert "
           "between number, unsigned, float and symbol")


def test_symbol_compared_with_a_number():
    e = _error(".decl s(x: symbol)\n.decl r(x: symbol)\nr(x) :- s(x), x = 1.\n")
    _check(e, 3, 17,
           "prog.dl:3:17: error: type clash in comparison: a number and a symbol",
           "    r(x) :- s(x), x = 1.",
           "                    ^",
           '  hint: write symbols in double quotes, e.g. "a"')


def test_sum_of_a_symbol():
    e = _error(".decl s(x: symbol)\n.decl r(n: number)\nr(n) :- n = sum x : s(x).\n")
    assert (e.line, e.column) == (3, 17)
    assert e.message == "sum of a symbol is not supported"
    assert e.hint == "aggregate a number, unsigned or float (as Soufflé)"


def test_constant_out_of_32_bit_range_in_the_program_text():
    e = _error(".decl e(x: number)\ne(2147483648).\n")
    _check(e, 2, 3,
           "prog.dl:2:3: error: 2147483648 does not fit a 32-bit number",
           "    e(2147483648).",
           "      ^",
           "  hint: use unsigned (e.g. 4000000000u) or float for larger values")
    e = _error(".decl e(x: number)\ne(-2147483649).\n")
    assert (e.line, e.column, e.message) == (2, 3, "-2147483649 does not fit a 32-bit number")
    e = _error(".decl u(x: unsigned)\nu(4294967296u).\n")
    assert (e.line, e.column, e.message, e.hint) == \
        (2, 3, "4294967296 does not fit a 32-bit unsigned", None)
    e = _error(".decl e(x: number)\ne(5u).\n")
    assert e.message == "type clash: an unsigned constant where a number is expected"
    # the extremes themselves are fine
    analyse(parse(".decl e(x: number)\ne(-2147483648).\ne(2147483647).\n"))


def test_constant_out_of_range_in_an_assignment():
    e = _error(".decl e(x: number)\n.decl r(x: number)\nr(y) :- e(_), y = 3000000000.\n")
    assert (e.line, e.column) == (3, 19)
    assert e.message == "3000000000 does not fit a 32-bit number"


# -- stratification --------------------------------------------------------------------------

def test_negation_through_recursion():
    e = _error(".decl e(x: number)\n.decl p(x: number)\n.decl q(x: number)\n"
               "p(x) :- e(x), !q(x).\nq(x) :- p(x).\n")
    _check(e, 4, 15,
           "prog.dl:4:15: error: negation of 'q' is in a cycle through 'p' — the program is not "
           "stratifiable",
           "    p(x) :- e(x), !q(x).",
           "                  ^",
           "  hint: 'q' depends on 'p'; break the cycle (compute 'q' in an earlier stratum)")


def test_negation_through_a_longer_cycle_and_of_itself():
    e = _error(".decl e(x: number)\n.decl p(x: number)\n.decl q(x: number)\n.decl t(x: number)\n"
               "p(x) :- e(x), !t(x).\nq(x) :- p(x).\nt(x) :- q(x).\n")
    assert (e.line, e.column) == (5, 15)
    assert e.message == ("negation of 't' is in a cycle through 'q', 'p' — the program is not "
                         "stratifiable")
    e = _error(".decl e(x: number)\n.decl p(x: number)\np(x) :- e(x), !p(x).\n")
    assert (e.line, e.column) == (3, 15)
    assert e.message == "negation of 'p' is in a cycle — the program is not stratifiable"


@pytest.mark.parametrize("aggregate, column", [("count : { p(_, _) }", 35),
                                               ("sum y : { p(_, y) }", 35),
                                               ("sum y : p(_, y)", 33)])
def test_count_and_sum_through_recursion_are_rejected(aggregate, column):
    function = aggregate.split()[0]
    source = (".decl e(x: number, y: number)\n.decl p(x: number, y: number)\n"
              "p(x, y) :- e(x, y).\n"
              f"p(x, n) :- e(x, _), n = {aggregate}.\n")
    e = _error(source)
    line = f"p(x, n) :- e(x, _), n = {aggregate}."
    _check(e, 4, column,
           f"prog.dl:4:{column}: error: the {function} aggregate of 'p' is in a cycle — the "
           f"program is not stratifiable",
           "    " + line,
           "    " + " " * (column - 1) + "^",
           "  hint: 'p' depends on 'p'; break the cycle (compute 'p' in an earlier stratum); "
           "min and max may recur, count and sum may not")


def test_count_through_a_two_relation_cycle_is_rejected():
    e = _error(".decl e(x: number)\n.decl p(x: number)\n.decl q(x: number)\n"
               "p(x) :- e(x).\np(n) :- e(_), n = count : q(_).\nq(x) :- p(x).\n")
    assert (e.line, e.column) == (5, 27)
    assert e.message == ("the count aggregate of 'q' is in a cycle through 'p' — the program is "
                         "not stratifiable")


@pytest.mark.parametrize("function", ["min", "max"])
def test_min_and_max_through_recursion_are_accepted(function):
    source = (".decl edge(x: number, y: number, w: number)\n.decl cand(x: number, l: number)\n"
              ".decl best(x: number, l: number)\n"
              "cand(1, 0).\n"
              "cand(y, l) :- best(x, dx), edge(x, y, w), l = dx + w.\n"
              f"best(x, d) :- cand(x, _), d = {function} l : {{ cand(x, l) }}.\n")
    analysed = analyse(parse(source, "prog.dl"), source)
    recursive = [s.relations for s in analysed.strata if s.recursive]
    assert recursive == [["cand", "best"]]
    assert analysed.notes == [f"best: {function} through recursion via cand (monotonic "
                              f"aggregation; the fixpoint of iterating from empty)"]
    if function == "min":  # and it computes: shortest distances from node 1
        program = dd.Program(source)
        program.insert("edge", [(1, 2, 5), (2, 3, 1), (1, 3, 9)])
        program.commit()
        assert program.relation("best") == {(1, 0), (2, 5), (3, 6)}


def test_aggregate_body_restrictions():
    e = _error(".decl e(x: number)\n.decl f(x: number)\n"
               "f(c) :- e(x), c = min y : { e(y), z = count : e(z), w > 1 }.\n")
    assert (e.line, e.column) == (3, 53)
    assert e.message == "variable 'w' in a comparison is not bound by a positive atom"


# -- syntax ----------------------------------------------------------------------------------

def test_unexpected_token():
    e = _error(EDGE_PATH + ".decl cost(x: number y: number)\n")
    _check(e, 3, 22,
           "prog.dl:3:22: error: unexpected 'y'; expected ',' or ')'",
           "    .decl cost(x: number y: number)",
           "                         ^")


def test_unexpected_token_after_a_head():
    e = _error(EDGE_PATH + "path(x, y), :- edge(x, y).\n")
    assert (e.line, e.column) == (3, 13)
    assert e.message == "unexpected ':-'; expected a name"


def test_unexpected_token_in_a_directive():
    e = _error(EDGE_PATH + ".input edge(delimiter)\n")
    _check(e, 3, 22,
           "prog.dl:3:22: error: unexpected ')'; expected '='",
           "    .input edge(delimiter)",
           "                         ^")


def test_unexpected_end_of_input():
    e = _error(EDGE_PATH + "path(x, y) :- edge(x, y)")
    _check(e, 3, 25,
           "prog.dl:3:25: error: unexpected end of the program (is a '.' missing at the end of "
           "a rule?)",
           "    path(x, y) :- edge(x, y)",
           "                            ^")
    e = _error(EDGE_PATH + ".decl cost(x: number")
    assert (e.line, e.column) == (3, 21)
    assert e.message.startswith("unexpected end of the program")


def test_unterminated_string():
    e = _error('.decl s(x: symbol)\ns("abc).\ns("d").\n')
    _check(e, 2, 3,
           "prog.dl:2:3: error: unexpected character '\"'",
           '    s("abc).',
           "      ^",
           "  hint: unterminated string: a string ends with '\"' on the same line")


def test_unexpected_characters_with_hints():
    e = _error(EDGE_PATH + "path(x, y) :- edge(x, y) && x > 1.\n")
    _check(e, 3, 26,
           "prog.dl:3:26: error: unexpected character '&'",
           "    path(x, y) :- edge(x, y) && x > 1.",
           "                             ^")
    e = _error(".decl s(x: symbol)\ns('a').\n")
    _check(e, 2, 3,
           "prog.dl:2:3: error: unexpected character \"'\"",
           "    s('a').",
           "      ^",
           '  hint: strings use double quotes: "text"')
    # parse() alone does not preprocess (dd.Program does: see test_datalog_preprocess.py)
    e = _error('#define N 3\n.decl e(x: number)\n')
    assert (e.line, e.column) == (1, 1)
    assert e.hint == ("a C preprocessor directive: dd.Program runs the preprocessor; call "
                      "diffflow.datalog.syntax.preprocess.preprocess() on text given to parse()")


def test_caret_under_the_column_after_tabs():
    e = _error(EDGE_PATH + "\tpath(x, y) :-\tedge(x, y), x ~ y.\n")
    _check(e, 3, 30,
           "prog.dl:3:30: error: unexpected character '~'",
           "        path(x, y) :-   edge(x, y), x ~ y.",
           "                                      ^")


def test_error_message_uses_the_file_name():
    with pytest.raises(DatalogError) as info:
        parse("p(x) :- q(x)", "dir/sub/rules.dl")
    assert info.value.filename == "dir/sub/rules.dl"
    assert str(info.value).startswith("dir/sub/rules.dl:1:13: error: unexpected end")
    with pytest.raises(DatalogError) as info:
        parse("p(x) :- q(x)")
    assert str(info.value).startswith("<program>:1:13: error:")


def test_program_from_file_names_the_file(tmp_path):
    path = tmp_path / "bad.dl"
    path.write_text(EDGE_PATH + "path(x, y) :- edge(x, y), !path(y, z).\n", encoding="utf-8")
    with pytest.raises(DatalogError) as info:
        dd.Program.from_file(path)
    assert str(info.value).startswith(f"{path}:3:36: error: variable 'z' in the negation")


# -- known bugs (see the report) -------------------------------------------------------------

def test_expected_tokens_after_a_complete_atom():
    e = _error(EDGE_PATH + "path(x, y) :- edge(x, y) path(x, z) :- path(x, y), edge(y, z).\n")
    assert (e.line, e.column) == (3, 26)
    assert "expected" in e.message
    for token in ("','", "'.'", "';'"):
        assert token in e.message
    for token in ("'%'", "')'", "'*'"):
        assert token not in e.message


def test_a_missing_dot_is_reported_at_the_end_of_its_line_not_on_the_next():
    e = _error(EDGE_PATH + "path(x, y) :- edge(x, y)  // no dot\n\npath(x, z) :- path(x, y), "
                           "edge(y, z).\n")
    assert (e.line, e.column) == (3, 25)
    assert e.message == "expected '.' after this rule"
    e = _error(".decl e(x:number)\ne(1)\ne(2).\n")
    assert (e.line, e.column, e.message) == (2, 5, "expected '.' after this fact")


def test_expected_tokens_have_readable_names():
    e = _error(".decl e(x: number)\n/* a comment that is never closed\ne(1).\n")
    assert (e.line, e.column) == (2, 1)
    assert "__anon" not in e.message.lower()
    assert "QUALIFIER" not in e.message and "a qualifier" in e.message  # after a .decl
    assert "':-'" not in e.message  # a rule cannot start with ':-'
    assert e.hint == "unterminated comment: close it with */"


# -- Program: facts from Python ---------------------------------------------------------------

DATA = ".decl e(x: number, s: symbol)\n.decl u(x: unsigned)\n.decl r(x: number)\n" \
       "r(x) :- e(x, _).\n"


@pytest.fixture
def program():
    p = dd.Program(DATA)
    p.insert("e", [(1, "a"), (2, "b")])
    p.commit()
    p.changes("r")
    return p


def _unchanged(p):
    p.commit()
    assert p.relation("e") == {(1, "a"), (2, "b")}
    assert p.relation("r") == {(1,), (2,)}
    assert p.changes("r") == []


@pytest.mark.parametrize("rows, message", [
    ([(3, "c"), (4,)], "e has 2 attributes, but row 1 (4,) has 1"),
    ([(3, "c", 5)], "e has 2 attributes, but row 0 (3, 'c', 5) has 3"),
    ([(3, "c"), (4, 5)], "e: row 1 attribute 's' should be a symbol, got 5"),
    ([("x", "c")], "e: row 0 attribute 'x' should be a number, got 'x'"),
    ([(1.5, "c")], "e: row 0 attribute 'x' should be a number, got 1.5"),
    ([(True, "c")], "e: row 0 attribute 'x' should be a number, got True"),
    ([3], "e: row 0 is 3, not a tuple of 2 values"),
])
def test_bad_rows_raise_and_change_nothing(program, rows, message):
    with pytest.raises(ValueError) as info:
        program.insert("e", rows)
    assert str(info.value) == message
    with pytest.raises(ValueError) as info:
        program.remove("e", rows)
    assert str(info.value) == message
    _unchanged(program)


def test_numbers_outside_32_bits_raise_and_change_nothing(program):
    cases = [("e", [(3, "c"), (2**31, "d")],
              "e: row 1 attribute 'x' = 2147483648 does not fit a 32-bit number"),
             ("e", [(-(2**31) - 1, "d")],
              "e: row 0 attribute 'x' = -2147483649 does not fit a 32-bit number"),
             ("u", [(-1,)], "u: row 0 attribute 'x' = -1 does not fit a 32-bit unsigned"),
             ("u", [(2**32,)], "u: row 0 attribute 'x' = 4294967296 does not fit a 32-bit "
                               "unsigned"),
             ("u", np.array([[1], [2**33]]),
              "u: row 1 attribute 'x' = 8589934592 does not fit a 32-bit unsigned")]
    for name, rows, message in cases:
        with pytest.raises(ValueError) as info:
            program.insert(name, rows)
        assert str(info.value) == message
    _unchanged(program)
    program.commit()
    assert program.relation("u") == set()
    # the extremes fit
    assert program.insert("e", [(-(2**31), "lo"), (2**31 - 1, "hi")]) == 2
    assert program.insert("u", [(0,), (2**32 - 1,)]) == 2
    program.commit()
    assert program.relation("u") == {(0,), (2**32 - 1,)}
    assert program.changes("r") == [((-(2**31),), 1), ((2**31 - 1,), 1)]


def test_array_of_the_wrong_width(program):
    with pytest.raises(ValueError) as info:
        program.insert("u", np.array([[1, 2]]))
    assert str(info.value) == "u has 1 attributes, got rows of width 2"
    program.commit()
    assert program.relation("u") == set()


def test_unknown_and_computed_relations(program):
    with pytest.raises(KeyError) as info:
        program.insert("ee", [(1, "a")])
    assert info.value.args[0] == "unknown relation 'ee' (did you mean 'e'?); relations: e, u, r"
    with pytest.raises(ValueError) as info:
        program.insert("r", [(5,)])
    assert str(info.value) == ("relation 'r' is computed by rules and takes no facts; declare "
                               "it .input to add facts to it as well")
    _unchanged(program)


# -- the CLI: facts files ----------------------------------------------------------------------

CLI_PROGRAM = (".decl edge(x: number, y: number)\n.input edge\n"
               ".decl path(x: number, y: number)\n.output path\n"
               "path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), edge(y, z).\n")


def _run_cli(tmp_path, facts: str, program: str = CLI_PROGRAM):
    from diffflow.cli import main

    prog = tmp_path / "prog.dl"
    prog.write_text(program, encoding="utf-8")
    facts_dir = tmp_path / "facts"
    facts_dir.mkdir()
    (facts_dir / "edge.facts").write_text(facts, encoding="utf-8")
    out = tmp_path / "out"
    status = main(["run", str(prog), "-F", str(facts_dir), "-D", str(out)])
    return status, str(facts_dir / "edge.facts"), out


@pytest.mark.parametrize("facts, line, value", [
    ("1\t2\n3\tx\n", 2, "'x'"),
    ("1\t2\n2\t3\n3\t2.5\n", 3, "'2.5'"),
    ("1\t2\n3\t\n", 2, "''"),
    ("1\t2\n3\t1e3\n", 2, "'1e3'"),
])
def test_cli_bad_value_in_a_facts_file(tmp_path, capsys, facts, line, value):
    status, path, out = _run_cli(tmp_path, facts)
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out == ""
    assert captured.err == (f"{path}:{line}: error: edge: attribute 'y' should be a number, "
                            f"got {value}\n"
                            f"  hint: is the file '\\t'-separated with 2 column(s)?\n")
    assert not out.exists()


@pytest.mark.parametrize("facts, line, fields, text", [
    ("1\t2\n3\n", 2, 1, "3"),
    ("1\t2\n3\n4\t5\t6\n7\n", 2, 1, "3' (1 more line(s) too: 4)"),  # (3 fields: fine)
    ("7\n8\n9\n", 1, 1, "7' (2 more line(s) too: 2, 3)"),  # every line
])
def test_cli_wrong_field_count_in_a_facts_file(tmp_path, capsys, facts, line, fields, text):
    status, path, out = _run_cli(tmp_path, facts)
    err = capsys.readouterr().err
    assert status == 1
    quoted = f"'{text}" if "'" in text else f"'{text}'"
    assert err == (f"{path}:{line}: error: edge has 2 attribute(s) but this line has {fields} "
                   f"field(s): {quoted}\n"
                   f"  hint: separate the attributes with '\\t'; .decl edge(x: number, "
                   f"y: number)\n")
    assert not out.exists()


def test_cli_number_outside_32_bits_in_a_facts_file(tmp_path, capsys):
    status, path, out = _run_cli(tmp_path, "1\t2\n3\t4000000000\n")
    err = capsys.readouterr().err
    assert status == 1
    assert err.startswith(f"{path}:2: error: ")
    assert "4000000000 does not fit a 32-bit number" in err


def test_cli_program_error(tmp_path, capsys):
    status, _, out = _run_cli(tmp_path, "1\t2\n",
                              program=CLI_PROGRAM + "path(x) :- edge(x, _).\n")
    err = capsys.readouterr().err
    assert status == 1
    prog = os.path.join(str(tmp_path), "prog.dl")
    assert err == (f"{prog}:7:1: error: path has 2 attribute(s) but is used with 1\n"
                   "    path(x) :- edge(x, _).\n"
                   "    ^\n"
                   "  hint: declared at line 3: .decl path(x: number, y: number)\n")
    assert not out.exists()


def test_cli_good_facts_still_work(tmp_path, capsys):
    status, _, out = _run_cli(tmp_path, "1\t2\n2\t3\n")
    assert status == 0
    assert (out / "path.csv").read_text() == "1\t2\n1\t3\n2\t3\n"


@pytest.mark.parametrize("source, feature, at", [
    (".lattice L<> { Bottom -> 0 }\n.decl r(x: L<>)\n", "lattice attributes", (2, 13)),
])
def test_soufflé_features_not_supported_yet_are_named_where_they_start(source, feature, at):
    """Never a bare syntax error for a Soufflé feature diffflow lacks: its name and place."""
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(source, filename="u.dl")
    text = str(caught.value)
    assert feature in text and f"u.dl:{at[0]}:{at[1]}:" in text, text
    assert "unexpected" not in text.splitlines()[0]


def test_a_user_functor_called_without_at_says_how_to_call_it():
    program = (".functor inc(x: number): number\n.decl a(x: number)\n.decl b(x: number)\n"
               "b(y) :- a(x), y = {call}(x).\n")
    e = _error(program.format(call="inc"))
    assert (e.line, e.column) == (4, 19)
    assert e.message == "`inc` is a user-defined functor: call it as `@inc(...)`"
    e = _error(program.format(call="incc"))
    assert e.message == "unknown functor `incc` (did you mean '@inc'?)"
    assert "the built-in functors are abs, autoinc, cat," in e.hint
    assert "unknown functor `strln` (did you mean 'strlen'?)" in \
        _error(program.format(call="strln")).message


@pytest.mark.parametrize("source, at, message", [
    # issue 41: what Soufflé's syntactic tests output, printsize, printsize_directive(2) reject
    (".decl a(x: number) output output\n", (1, 27), "qualifier 'output' is given twice"),
    (".decl a(x: number) printsize btree printsize\n", (1, 36),
     "qualifier 'printsize' is given twice"),
    (".decl a(x: number)\n.printsize a\n.printsize a\n", (3, 12),
     ".printsize a is given twice (first at line 2)"),
    (".decl a(x: number)\n.decl b(x: number)\n.printsize b\n.printsize a, b\n", (4, 15),
     ".printsize b is given twice (first at line 3)"),
    (".decl a(x: number) printsize\n.printsize a\n", (2, 12),
     ".printsize a is given twice (first at line 1)"),
])
def test_a_qualifier_or_printsize_given_twice_is_an_error(source, at, message):
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(source, filename="q.dl")
    e = caught.value
    assert ((e.line, e.column), e.message) == (at, message)


def test_outputs_of_one_relation_may_be_given_twice(tmp_path):
    p = dd.Program(f'.decl a(x: number) output\n.output a(IO=file, filename="{tmp_path}/b.csv")\n'
                   "a(1).\n")
    p.commit()
    assert [d.kind for d in p.analysed.relations["a"].outputs] == ["output", "output"]
