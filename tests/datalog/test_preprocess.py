"""The C preprocessor pass: ``#include``, ``#define``, conditionals, and errors that name the
original file, line and column.

Programs are written to ``tmp_path``; the expected relations follow from the text by hand
(which lines the conditionals keep, what the macros expand to).
"""
from __future__ import annotations

import subprocess
import sys

import pytest

import diffflow as dd
from diffflow.datalog.syntax.errors import DatalogError, DatalogWarning
from diffflow.datalog.syntax.preprocess import preprocess


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_includes_relative_to_the_including_file_macros_and_conditionals(tmp_path):
    _write(tmp_path / "lib" / "types.dl", '#include "more/edge.dl"\n.decl path(x: N, y: N)\n')
    _write(tmp_path / "lib" / "more" / "edge.dl",
           "#pragma once\n.type N = number\n.decl edge(x: N, y: N)\n")
    main = _write(tmp_path / "prog.dl", """#include "lib/types.dl"
#include "lib/more/edge.dl"
#define STEP(a, b) path(a, c) :- path(a, b), edge(b, c)
#define LIMIT 3
path(x, y) :- edge(x, y), y <= LIMIT.
STEP(x, y), c <= LIMIT.
#ifdef LIMIT
edge(1, 2). edge(2, 3).
#else
edge(7, 8).
#endif
#ifndef EXTRA
edge(3, 4).
#endif
#if LIMIT > 2 && defined(STEP)
edge(0, 1).
#endif
#undef LIMIT
#ifdef LIMIT
edge(9, 9).
#endif
""")
    program = dd.Program.from_file(main)
    program.commit()
    assert program.relation("edge") == {(0, 1), (1, 2), (2, 3), (3, 4)}
    assert program.relation("path") == {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}


def test_include_dirs_and_macros_options(tmp_path):
    _write(tmp_path / "inc" / "decls.dl", ".decl e(x: number)\n")
    main = _write(tmp_path / "src" / "prog.dl",
                  '#include "decls.dl"\ne(SIZE).\n#ifdef DEBUG\ne(-1).\n#endif\n')
    program = dd.Program.from_file(main, include_dirs=[str(tmp_path / "inc")],
                                   macros={"SIZE": "2 * 21", "DEBUG": None})
    program.commit()
    assert program.relation("e") == {(42,), (-1,)}


def test_text_without_a_file_includes_relative_to_the_current_directory(tmp_path, monkeypatch):
    _write(tmp_path / "decls.dl", ".decl e(x: number)\n")
    monkeypatch.chdir(tmp_path)
    program = dd.Program('#include "decls.dl"\ne(RAM_DOMAIN_SIZE).\n')
    program.commit()
    assert program.relation("e") == {(32,)}  # Soufflé's predefined macro


def test_strings_and_comments_survive():
    source = ('#define X 1\n.decl s(x: symbol, n: number)\n'
              's("a // b", X). // a comment with \'quotes\' and "strings"\n'
              's("it\'s #1", X). /* a block\n   comment */ s("#define X 2", X).\n')
    program = dd.Program(source)
    program.commit()
    assert program.relation("s") == {("a // b", 1), ("it's #1", 1), ("#define X 2", 1)}


def test_text_without_directives_is_not_preprocessed():
    text = '.decl s(x: symbol)\ns("#1 // x").  // #define X\n'
    assert preprocess(text, "p.dl") is text
    assert preprocess(text, "p.dl", macros={"X": "1"}) is not text


@pytest.mark.slow
def test_importing_diffflow_does_not_import_pcpp():
    code = "import sys, diffflow; dd = diffflow.Program('.decl e(x: number)'); " \
           "assert 'pcpp' not in sys.modules, 'pcpp imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- errors name the original place ------------------------------------------------------------

def _raises(call) -> DatalogError:
    with pytest.raises(DatalogError) as info:
        call()
    return info.value


def test_a_syntax_error_in_an_included_file_names_that_file(tmp_path):
    _write(tmp_path / "lib" / "bad.dl", "// header\n.decl e(x: number)\ne(1) e(2).\n")
    main = _write(tmp_path / "prog.dl", '#define N 1\n#include "lib/bad.dl"\n')
    e = _raises(lambda: dd.Program.from_file(main))
    assert e.filename.endswith("lib/bad.dl")
    assert (e.line, e.column) == (3, 6)
    assert str(e).splitlines()[1:3] == ["    e(1) e(2).", "         ^"]


def test_an_analysis_error_after_a_block_comment_has_its_original_column(tmp_path):
    main = _write(tmp_path / "prog.dl",
                  "#define T number\n.decl e(x: T)\n/* a\n   comment */ .decl p(x: T)\n"
                  "/* c */ p(x) :- e(x), edgee(x).\n")
    e = _raises(lambda: dd.Program.from_file(main))
    assert (e.filename, e.line, e.column) == (str(main), 5, 23)
    assert e.message == "unknown relation 'edgee'"
    assert str(e).splitlines()[1:3] == ["    /* c */ p(x) :- e(x), edgee(x).",
                                        "                          ^"]


def test_an_error_in_a_macro_expansion_points_into_the_invoking_line(tmp_path):
    main = _write(tmp_path / "prog.dl",
                  "#define PAIR(a, b) pair(a, b)\n.decl e(x: number)\ne(1).\nPAIR(1, 2).\n")
    e = _raises(lambda: dd.Program.from_file(main))
    assert (e.filename, e.line) == (str(main), 4)
    assert e.message == "unknown relation 'pair'"
    assert e.source_line == "PAIR(1, 2)."


def test_a_missing_include_is_an_error_at_the_directive(tmp_path):
    main = _write(tmp_path / "prog.dl", '.decl e(x: number)\n#include "nope.dl"\n')
    e = _raises(lambda: dd.Program.from_file(main))
    assert (e.filename, e.line, e.column) == (str(main), 2, 11)
    assert e.message == "cannot find the include file 'nope.dl'"
    assert "-I DIR (Program: include_dirs=[...])" in e.hint
    assert str(e).splitlines()[1:3] == ['    #include "nope.dl"', "              ^"]


@pytest.mark.parametrize("text, line, message", [
    ('.decl e(x: number)\n#error "stop here"\n', 2, '#error "stop here"'),
    ("#ifdef X\n.decl e(x: number)\n", 1, "Unterminated #ifdef X"),
    ("#frobnicate\n.decl e(x: number)\n", 1, "invalid preprocessing directive #frobnicate"),
])
def test_preprocessor_errors(tmp_path, text, line, message):
    main = _write(tmp_path / "prog.dl", text)
    e = _raises(lambda: dd.Program.from_file(main))
    assert (e.filename, e.line, e.message) == (str(main), line, message)


def test_a_warning_directive_is_a_located_warning(tmp_path):
    main = _write(tmp_path / "prog.dl", ".decl e(x: number)\n#warning check me\n")
    with pytest.warns(DatalogWarning) as caught:
        program = dd.Program.from_file(main)
    assert str(caught[0].message).startswith(f"{main}:2:1: warning: #warning check me")
    assert program.warnings[0].line == 2


def test_a_runtime_failure_names_the_original_line(tmp_path):
    main = _write(tmp_path / "prog.dl", "#define DIV(a, b) a / b\n\n.decl e(x: number)\n"
                  ".decl r(x: number)\nr(DIV(x, y)) :- e(x), e(y).\n")
    program = dd.Program.from_file(main)
    program.insert("e", [(0,), (1,)])
    with pytest.raises(dd.OperatorError, match=rf"built at {main}:5\).*division by zero"):
        program.commit()


# -- issue 41: Soufflé's own .include and .once, __LINE__ without the C preprocessor ---------

def test_dot_include_reads_files_next_to_the_includer_then_in_include_dirs(tmp_path):
    _write(tmp_path / "lib" / "decls.dl", '// decls\n.decl at(f: symbol, n: number)\n'
                                          '.include "facts.dl"\n')
    _write(tmp_path / "lib" / "facts.dl", 'at("facts", __LINE__).\n')
    _write(tmp_path / "dirs" / "rule.dl", ".once\n.decl copy(n: number)\ncopy(n) :- at(_, n).\n")
    main = _write(tmp_path / "prog.dl", '.include "lib/decls.dl"\n.include "rule.dl"\n'
                                        '.include "rule.dl"\nat("prog", __LINE__).\n')
    program = dd.Program.from_file(main, include_dirs=[str(tmp_path / "dirs")])
    program.commit()
    # __LINE__ is the line in its own file; rule.dl is read once (.once)
    assert program.relation("at") == {("facts", 1), ("prog", 4)}
    assert program.relation("copy") == {(1,), (4,)}


def test_dot_once_in_the_program_itself_stops_it_including_itself(tmp_path):
    main = _write(tmp_path / "self.dl", '.once\n.include "self.dl"\n.decl ok()\nok().\n')
    program = dd.Program.from_file(main)
    program.commit()
    assert program.relation("ok") == {()}


def test_a_missing_dot_include_is_an_error_at_its_file_name(tmp_path):
    main = _write(tmp_path / "prog.dl", '.decl e(x: number)\n.include "nope.dl"\n')
    e = _raises(lambda: dd.Program.from_file(main))
    assert (e.filename, e.line, e.column) == (str(main), 2, 11)
    assert e.message == "cannot find the include file 'nope.dl'"
