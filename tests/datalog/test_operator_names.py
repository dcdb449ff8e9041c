"""Every operator of a Datalog program is named by its rule (or relation) and ``file:line``.

The names are what traces, ``diffflow pag`` and runtime errors show; a rule profiler
groups by them (:func:`diffflow.dataflow.origin.parse_name`).
"""
from __future__ import annotations

import json
import warnings

import pytest

import diffflow as dd
from diffflow.cli import main
from diffflow.dataflow.origin import parse_name

LIB = """\
.decl edge(x: number, y: number)
.input edge

.decl weight(x: number, w: number)
weight(x, w) :- edge(x, y), w = x + y.
"""

MAIN = """\
#include "lib.dl"
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :-
    path(x, y),
    edge(y, z).
.decl longest(x: number, m: number)
.output longest
longest(x, m) :- path(x, _), m = max y : { path(x, y) }.
"""


@pytest.fixture
def program_file(tmp_path):
    (tmp_path / "lib.dl").write_text(LIB)
    (tmp_path / "main.dl").write_text(MAIN)
    return tmp_path


def _program(folder, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dd.Program.from_file(folder / "main.dl", **options)


def _names(program) -> list:
    return [node.name for node in program.flow.graph.nodes]


def test_every_node_of_a_rule_names_the_rule_its_relation_and_its_file_line(program_file):
    program = _program(program_file)
    main_dl, lib_dl = program_file / "main.dl", program_file / "lib.dl"
    nodes = program.flow.graph.nodes
    by_rule = {}
    for node in nodes:
        if node.origin is not None and node.origin.rule:
            by_rule.setdefault(node.origin.what, set()).add(
                (node.origin.relation, node.origin.location))
    assert by_rule == {
        "path(x, y) :- edge(x, y).": {("path", f"{main_dl}:4")},
        "path(x, z) :- path(x, y), edge(y, z).": {("path", f"{main_dl}:5")},  # on one line
        "longest(x, m) :- path(x, _), m = max y : { path(x, y) }.": {("longest", f"{main_dl}:10")},
        # pulled in by #include: the included file's own line
        "weight(x, w) :- edge(x, y), w = (x + y).": {("weight", f"{lib_dl}:5")},
    }
    names = _names(program)
    assert f"{main_dl}:5: path(x, z) :- path(x, y), edge(y, z). [join edge(y, z)]" in names
    assert f"{main_dl}:10: longest(x, m) :- path(x, _), m = max y : {{ path(x, y) }}. " \
           f"[aggregate max y : {{ path(x, y) }}]" in names
    # a relation's own nodes: named by the relation at its declaration
    assert f"{main_dl}:2: relation path [distinct]" in names
    assert f"{main_dl}:2: relation path [loop variable]" in names
    assert f"{lib_dl}:1: relation edge [input]" in names
    # nothing names the compiler's columns or variables
    assert not [n for n in names if "v_" in n or "['c" in n or "#" in n]
    # the names read back: (file:line, rule or relation, operator)
    assert parse_name(f"{main_dl}:2: relation path [distinct]") == \
        (f"{main_dl}:2", "relation path", "distinct")


def test_explanations_compile_to_the_same_names(program_file):
    names = _names(_program(program_file, provenance=True))
    main_dl = program_file / "main.dl"
    assert f"{main_dl}:5: path(x, z) :- path(x, y), edge(y, z). [join edge(y, z)]" in names
    rules = [n for n in names if parse_name(n) and ":-" in parse_name(n)[1]]
    assert rules and not [n for n in rules if "v_" in n or "#" in n]


def test_a_long_rule_is_shortened_on_one_line():
    body = ",\n  ".join(f"e(x{i}, x{i + 1})" for i in range(30))
    source = ".decl e(x: number, y: number)\n.decl r(x: number)\nr(x0) :-\n  " + body + ".\n"
    program = dd.Program(source, filename="long.dl")
    rule_names = {n.origin.what for n in program.flow.graph.nodes
                  if n.origin is not None and n.origin.rule}
    (what,) = rule_names
    assert what.startswith("r(x0) :- e(x0, x1), e(x1, x2), ") and what.endswith(" …")
    assert "\n" not in what and len(what) <= 120


def test_a_trace_of_a_run_names_the_rules(program_file, capsys):
    (program_file / "facts").mkdir()
    (program_file / "facts" / "edge.facts").write_text("1\t2\n2\t3\n3\t4\n")
    trace = program_file / "run.trace"
    assert main(["run", str(program_file / "main.dl"), "-F", str(program_file / "facts"),
                 "-D", str(program_file / "out"), "--trace", str(trace)]) == 0
    with open(trace, encoding="utf-8") as fh:
        named = {json.loads(line).get("name") for line in fh}
    main_dl = program_file / "main.dl"
    assert f"{main_dl}:5: path(x, z) :- path(x, y), edge(y, z). [join edge(y, z)]" in named
    capsys.readouterr()
    assert main(["pag", "cp", str(trace), "--top", "1000"]) == 0
    shown = capsys.readouterr().out
    assert f"{main_dl}:5: path(x, z) :- path(x, y), edge(y, z)." in shown
    assert "v__" not in shown and "v_x" not in shown


def test_a_runtime_error_names_the_rule_and_its_file_line(tmp_path):
    (tmp_path / "conv.dl").write_text(".decl s(x: symbol)\n.decl r(n: number)\n"
                                      "r(to_number(x)) :-\n  s(x).\n")
    program = dd.Program.from_file(tmp_path / "conv.dl")
    program.insert("s", [("twelve",)])
    with pytest.raises(dd.OperatorError) as caught:
        program.commit()
    assert f"r(to_number(x)) :- s(x). [select r(to_number(x))] (node 2, built at " \
           f"{tmp_path / 'conv.dl'}:3)" in str(caught.value)
