"""Fact files, fact folders and outputs as Soufflé treats them (``diffflow run``, ``load_facts``).

The reader is checked against the rows each test generated itself: random relations written
with LF or CRLF line ends, blank lines, a header, gzip or not, read back exactly.
"""
import gzip
import os
import random
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import diffflow as dd
from diffflow.cli import main
from diffflow.datalog.analysis.analysed import Relation
from diffflow.datalog.values.facts import read_facts, split_reference


def _write(path, text, mode="w"):
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "w":
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    else:
        path.write_bytes(text)
    return path


# -- the reader ------------------------------------------------------------------------------

_SYMBOL = st.text(st.characters(blacklist_characters="\t\n\r", blacklist_categories=("Cs",)),
                  max_size=6)
_VALUES = {
    "symbol": _SYMBOL | st.sampled_from(["007", "1e3", "", " ", "nan", "-0", "inf", "0x1F"]),
    "number": st.integers(-(2**31), 2**31 - 1),
    "unsigned": st.integers(0, 2**32 - 1),
    "float": st.floats(allow_nan=False, width=64),
}


def _render(value, kind, rng):
    if kind == "number" and rng.random() < 0.2:  # leading zeros and signs, as C's stoi reads
        return ("+" if value >= 0 else "-") + "00" + str(abs(value))
    if kind == "float":
        return repr(value) if rng.random() < 0.5 else value.hex()
    return str(value)


@st.composite
def _relations(draw):
    types = draw(st.lists(st.sampled_from(sorted(_VALUES)), min_size=1, max_size=4))
    rows = draw(st.lists(st.tuples(*[_VALUES[t] for t in types]), max_size=30))
    return types, rows, draw(st.integers(0, 2**32))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(_relations(), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_read_back_what_was_written(tmp_path_factory, case, crlf, blank_lines, header, gz):
    types, rows, seed = case
    rng = random.Random(seed)
    relation = Relation("r", [f"a{i}" for i in range(len(types))], types, None)
    lines = ["\t".join(_render(v, k, rng) for v, k in zip(row, types)) for row in rows]
    if blank_lines and types == ["symbol"]:  # an empty line is the empty symbol, as in Soufflé
        for _ in range(3):
            at = rng.randint(0, len(lines))
            lines.insert(at, "")
            rows.insert(at, ("",))
    if header:
        lines.insert(0, "\t".join(relation.attributes))
    newline = "\r\n" if crlf else "\n"
    # a last line may end without a newline, unless it is empty (then it would not be there)
    ending = newline if lines and (lines[-1] == "" or rng.random() < 0.5) else ""
    text = newline.join(lines) + ending
    data = text.encode()
    path = tmp_path_factory.mktemp("facts") / "r.facts"
    path.write_bytes(gzip.compress(data) if gz else data)
    got = [tuple(r) for r in _rows(read_facts(str(path), relation, headers=header))]
    assert got == [tuple(v for v in row) for row in rows]
    if not header:
        assert [tuple(r) for r in split_reference(data, relation)] == \
            [tuple(_render_plain(line)) for line in lines]


def _rows(table):
    """A read_facts table as a list of rows (lists of values)."""
    return [list(row.values()) for row in table.to_pylist()]


def _render_plain(line):
    return line.split("\t")


def test_every_line_is_a_fact_even_an_empty_one(tmp_path):
    # Soufflé reads an empty line as one empty field: the empty symbol, or a missing value
    symbols = Relation("s", ["a"], ["symbol"], None)
    path = _write(tmp_path / "s.facts", b"a\n\r\n\nb\n", mode="b")
    assert _rows(read_facts(str(path), symbols)) == [["a"], [""], [""], ["b"]]
    pairs = Relation("r", ["a", "b"], ["number", "number"], None)
    path = _write(tmp_path / "r.facts", "1\t2\n\n")
    with pytest.raises(dd.DatalogError) as info:
        read_facts(str(path), pairs)
    assert str(info.value).splitlines() == [
        f"{path}:2: error: r has 2 attribute(s) but this line has 1 field(s): ''",
        "  hint: an empty line is a fact with one empty field, as in Soufflé: remove it "
        "(.decl r(a: number, b: number))"]
    nullary = Relation("z", [], [], None)
    for text, facts in ((b"", []), (b"\n", [()]), (b"()\n", [()])):
        path = _write(tmp_path / "z.facts", text, mode="b")
        assert read_facts(str(path), nullary) == facts


def test_a_carriage_return_inside_a_line_is_part_of_the_value(tmp_path):
    # Soufflé splits lines on \n only and drops one trailing \r
    relation = Relation("r", ["a", "b"], ["symbol", "symbol"], None)
    path = _write(tmp_path / "r.facts", b"a\tb\rc\r\nd\te\r", mode="b")
    assert _rows(read_facts(str(path), relation)) == [["a", "b\rc"], ["d", "e"]]


def test_multi_character_delimiters(tmp_path):
    relation = Relation("r", ["a", "b"], ["number", "symbol"], None)
    path = _write(tmp_path / "r.facts", "1, x\n2\n")
    with pytest.raises(dd.DatalogError, match=r"r.facts:2: error: r has 2 attribute\(s\) but "
                                              r"this line has 1 field\(s\)"):
        read_facts(str(path), relation, delimiter=", ")
    path.write_text("1, x\n2, y, z\n")  # fields after the relation's: ignored, as in Soufflé
    assert _rows(read_facts(str(path), relation, delimiter=", ")) == [[1, "x"], [2, "y"]]
    path.write_text("1, x\n-2, y z\n")
    assert _rows(read_facts(str(path), relation, delimiter=", ")) == \
        [[1, "x"], [-2, "y z"]]


@pytest.mark.parametrize("kind, text, message", [
    ("number", "1e3", "should be a number, got '1e3'"),
    ("number", "0x10", "should be a number, got '0x10'"),
    ("number", "2147483648", "= 2147483648 does not fit a 32-bit number"),
    ("number", "99999999999999999999999", "does not fit a 32-bit number"),
    ("unsigned", "-1", "should be an unsigned, got '-1'"),
    ("float", "1.5x", "should be a float, got '1.5x'"),
])
def test_bad_numbers_name_their_line(tmp_path, kind, text, message):
    relation = Relation("r", ["a"], [kind], None)
    path = _write(tmp_path / "r.facts", f"1\n2\n{text}\n")
    with pytest.raises(dd.DatalogError) as info:
        read_facts(str(path), relation)
    assert str(info.value).startswith(f"{path}:3: error: r: attribute 'a' ")
    assert message in str(info.value)


def test_not_utf8_names_the_line(tmp_path):
    relation = Relation("r", ["a"], ["symbol"], None)
    path = _write(tmp_path / "r.facts", b"ok\n\xff\n", mode="b")
    with pytest.raises(dd.DatalogError, match=r"r.facts:2: error: this line is not UTF-8"):
        read_facts(str(path), relation)


# -- load_facts and the command line ---------------------------------------------------------------

PROGRAM = """
    .decl e(x: number, y: number)
    .decl s(name: symbol, v: number)
    .decl path(x: number, y: number)
    .input e
    .input s
    .output path
    .printsize s
    path(x, y) :- e(x, y).
    path(x, z) :- path(x, y), e(y, z).
"""


@pytest.fixture
def program_file(tmp_path):
    return _write(tmp_path / "p.dl", PROGRAM)


def test_a_fact_folder_that_does_not_exist_is_fine_without_inputs(tmp_path, capsys):
    prog = _write(tmp_path / "q.dl", """
        .decl n(x: number)
        .output n
        n(1). n(x + 1) :- n(x), x < 3.
    """)
    assert main(["run", str(prog), "-F", str(tmp_path / "nowhere"), "-D", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[4:7] == ["1", "2", "3"]


def test_an_input_without_its_file_is_an_error_naming_it(program_file, tmp_path, capsys):
    facts = tmp_path / "facts"
    _write(facts / "e.facts", "1\t2\n")
    assert main(["run", str(program_file), "-F", str(facts), "-D", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{facts / 's.facts'}: error: cannot open fact file s.facts for input "
                          f"relation 's': No such file or directory\n")
    assert f".input s ({program_file}:5)" in err and "-w" in err
    assert not (tmp_path / "o").exists()


def test_no_warn_reads_missing_files_as_empty(program_file, tmp_path, capsys):
    code = main(["run", str(program_file), "-F", str(tmp_path / "nowhere"), "-D",
                 str(tmp_path / "o"), "-w"])
    assert code == 0
    assert capsys.readouterr().out == "s\t0\n"
    assert (tmp_path / "o" / "path.csv").read_text() == ""


def test_load_facts_checks_every_file_before_inserting_any(program_file, tmp_path):
    program = dd.Program.from_file(str(program_file))
    facts = tmp_path / "facts"
    _write(facts / "e.facts", "1\t2\n2\t3\n")
    _write(facts / "s.facts", "a\t1\nb\n")
    with pytest.raises(dd.DatalogError, match=r"s.facts:2: error: s has 2 attribute"):
        program.load_facts(str(facts))
    program.commit()
    assert program.relation("path") == set()  # e.facts was fine, but nothing went in
    _write(facts / "s.facts", "a\t1\n")
    assert program.load_facts(str(facts)) == {"e": 2, "s": 1}
    program.commit()
    assert program.relation("path") == {(1, 2), (2, 3), (1, 3)}


def test_symbols_are_text_whatever_they_look_like(tmp_path, capsys):
    prog = _write(tmp_path / "p.dl", """
        .decl s(a: symbol, b: symbol)
        .input s
        .output s
        .decl same(a: symbol)
        .output same
        same(a) :- s(a, a).
    """)
    values = ["007", "1e3", "", "nan", "-0", "1.50", " 7", "inf", "0x1F", "True"]
    lines = [f"{v}\t{v if i % 2 else 'x'}" for i, v in enumerate(values)]
    _write(tmp_path / "f" / "s.facts", "\n".join(lines) + "\n")
    assert main(["run", str(prog), "-F", str(tmp_path / "f"), "-D", str(tmp_path / "o")]) == 0
    assert sorted((tmp_path / "o" / "s.csv").read_text().split("\n")[:-1]) == sorted(lines)
    assert sorted((tmp_path / "o" / "same.csv").read_text().split("\n")[:-1]) == \
        sorted(v for i, v in enumerate(values) if i % 2)


def test_gzip_fact_files_are_read_transparently(program_file, tmp_path, capsys):
    facts = tmp_path / "facts"
    _write(facts / "e.facts", gzip.compress(b"1\t2\n2\t3\n"), mode="b")
    _write(facts / "s.facts", gzip.compress(b""), mode="b")
    assert main(["run", str(program_file), "-F", str(facts), "-D", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "path.csv").read_text() == "1\t2\n1\t3\n2\t3\n"
    _write(facts / "e.facts", b"\x1f\x8bnot really gzip", mode="b")
    assert main(["run", str(program_file), "-F", str(facts), "-D", str(tmp_path / "o2")]) == 1
    assert "cannot be decompressed" in capsys.readouterr().err
    assert not (tmp_path / "o2").exists()


def test_compressed_outputs_are_gzip_named_as_the_file_and_repeatable(tmp_path):
    """``compress=true`` writes gzip whose header names the output (not the temporary file
    it is written through) and no time: the same facts give the same bytes."""
    prog = _write(tmp_path / "p.dl", """
        .decl e(x: number, s: symbol)
        .output e(compress=true)
        e(2, "b"). e(1, "a").
    """)
    written = []
    for out in ("o1", "o2"):
        assert main(["run", str(prog), "-D", str(tmp_path / out)]) == 0
        written.append((tmp_path / out / "e.csv").read_bytes())
    assert written[0] == written[1]
    assert gzip.decompress(written[0]) == b"1\ta\n2\tb\n"
    flags, name = written[0][3], written[0][10:].split(b"\0")[0]
    assert flags & 0x08 and name == b"e.csv"  # (FNAME: the original file name)


def test_io_stdout_outputs_print_to_standard_output(tmp_path, capsys):
    prog = _write(tmp_path / "p.dl", """
        .decl e(x: number)
        .output e(IO=stdout)
        .decl f(x: number)
        .output f
        e(1). e(2). f(3).
    """)
    assert main(["run", str(prog), "-D", str(tmp_path / "o")]) == 0
    assert capsys.readouterr().out == "---------------\ne\n===============\n1\n2\n" \
                                      "===============\n"
    assert os.listdir(tmp_path / "o") == ["f.csv"]


def test_a_bad_update_step_is_rejected_before_anything_is_written(program_file, tmp_path,
                                                                  capsys):
    facts = tmp_path / "facts"
    _write(facts / "e.facts", "1\t2\n")
    _write(facts / "s.facts", "")
    steps = tmp_path / "steps"
    _write(steps / "1" / "e.insert.facts", "2\t3\n")
    _write(steps / "2" / "e.insert.facts", "3\n")
    out = tmp_path / "o"
    assert main(["run", str(program_file), "-F", str(facts), "-D", str(out),
                 "--updates", str(steps)]) == 1
    assert f"{steps / '2' / 'e.insert.facts'}:1: error: e has 2 attribute(s)" in \
        capsys.readouterr().err
    assert not out.exists()


@pytest.mark.slow
def test_output_cut_short_by_the_reader_ends_quietly(tmp_path):
    prog = _write(tmp_path / "p.dl", """
        .decl e(x: number)
        .input e
        .output e
    """)
    _write(tmp_path / "f" / "e.facts", "\n".join(map(str, range(200_000))) + "\n")
    # `diffflow run ... -D - | head -1`
    proc = subprocess.Popen([sys.executable, "-m", "diffflow", "run", str(prog), "-F",
                             str(tmp_path / "f"), "-D", "-"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 141  # as a shell reports a tool ended by SIGPIPE
    assert first == b"---------------\n"
    # nothing but diffflow's own timing notes (printed when loading takes over 2 s)
    assert [line for line in err.splitlines() if not line.startswith("diffflow: ")] == [], err
    assert "Broken pipe" not in err and "Error" not in err


# -- rounds ---------------------------------------------------------------------------------------

COUNT_TO = ".decl n(x: number)\n.output n\nn(0).\nn(x + 1) :- n(x), x < {}.\n"


def test_datalog_has_no_round_limit_unless_asked(tmp_path, capsys):
    program = dd.Program(COUNT_TO.format(100))
    assert [loop.scope.max_rounds for loop in program.flow._loops] == [None]
    with pytest.raises(dd.NonConvergenceError, match="after 50 rounds"):
        guarded = dd.Program(COUNT_TO.format(100), max_rounds=50)
        guarded.commit()
    prog = _write(tmp_path / "count.dl", COUNT_TO.format(100))
    assert main(["run", str(prog), "-D", str(tmp_path / "o"), "--max-rounds", "50"]) == 1
    assert "after 50 rounds" in capsys.readouterr().err
    assert main(["run", str(prog), "-D", str(tmp_path / "o")]) == 0
    assert len((tmp_path / "o" / "n.csv").read_text().splitlines()) == 101


@pytest.mark.slow
def test_a_recursion_longer_than_the_collection_api_guard_completes():
    program = dd.Program(COUNT_TO.format(10_500))  # the collection API stops at 10,000
    program.commit()
    assert program.size("n") == 10_501


def test_dataframes_of_text_stay_text_and_wrong_types_name_the_attribute():
    import pandas as pd

    program = dd.Program(".decl s(name: symbol, code: symbol)")
    program.insert("s", pd.DataFrame({"a": ["007", "1e3"], "b": ["", "nan"]}))
    program.commit()
    assert program.relation("s") == {("007", ""), ("1e3", "nan")}
    with pytest.raises(TypeError, match="^s: attribute 'name': expected str values, got an "
                                        "array of float64$"):
        program.insert("s", pd.DataFrame({"a": [1.0], "b": ["x"]}))


# -- pragmas, the preprocessor and warnings on the command line ---------------------------------------

def test_pragmas_stand_for_options_the_command_line_does_not_give(tmp_path, monkeypatch,
                                                                  capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "p.dl", """
        .pragma "fact-dir" "in"
        .pragma "output-dir" "out"
        .pragma "jobs" "3"
        .decl e(x: number)
        .input e
        .output e
    """)
    _write(tmp_path / "in" / "e.facts", "1\n2\n")
    _write(tmp_path / "other" / "e.facts", "5\n")
    assert main(["run", "p.dl"]) == 0
    assert (tmp_path / "out" / "e.csv").read_text() == "1\n2\n"
    assert main(["run", "p.dl", "-F", "other", "-D", "-"]) == 0  # the command line wins
    assert capsys.readouterr().out.splitlines()[4] == "5"
    assert dd.Program.from_file("p.dl").flow.partitions == 3
    assert dd.Program.from_file("p.dl", partitions=1).flow.partitions == 1


def test_no_warn_pragma_reads_missing_files_as_empty(tmp_path, capsys):
    prog = _write(tmp_path / "p.dl", """
        .pragma "no-warn"
        .pragma "jbos" "2"
        .decl e(x: number)
        .input e
        .printsize e
    """)
    assert main(["run", str(prog), "-F", str(tmp_path / "nowhere"), "-D", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "e\t0\n" and captured.err == ""


def test_warnings_print_with_their_place_unless_w(tmp_path, capsys):
    prog = _write(tmp_path / "p.dl", """
        .decl e(x: number)
        .pragma "jbos" "2"
        e(1).
    """)
    assert main(["run", str(prog), "-D", str(tmp_path)]) == 0
    assert capsys.readouterr().err == (
        f"{prog}:2:9: warning: unknown pragma 'jbos' (did you mean 'jobs'?); it is ignored\n"
        '    .pragma "jbos" "2"\n'
        "            ^\n")
    assert main(["run", str(prog), "-D", str(tmp_path), "-w"]) == 0
    assert capsys.readouterr().err == ""


def test_include_dirs_and_macros_on_the_command_line(tmp_path, capsys):
    _write(tmp_path / "lib" / "graph.dl", """
        .decl edge(x: number, y: number)
        .decl path(x: number, y: number)
        .output path
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
    """)
    prog = _write(tmp_path / "main.dl", """
        #include "graph.dl"
        #define EDGE(a, b) edge(a, b).
        EDGE(1, 2)
        #ifdef LONG
        EDGE(2, LONG)
        #endif
    """)
    assert main(["run", str(prog), "-I", str(tmp_path / "lib"), "-D", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[4:-1] == ["1\t2"]
    assert main(["run", str(prog), "-I", str(tmp_path / "lib"), "-M", "LONG=7", "-D", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[4:-1] == ["1\t2", "1\t7", "2\t7"]
    assert main(["run", str(prog), "-D", "-"]) == 1  # without -I the include is not found
    err = capsys.readouterr().err
    assert err.startswith(f"{prog}:1:11: error: cannot find the include file 'graph.dl'")
    assert "-I DIR" in err


def test_float_outputs_read_back_exactly(tmp_path):
    prog = _write(tmp_path / "p.dl", """
        .decl n(x: float)
        .input n
        .decl third(x: float, y: float)
        .output third
        third(x, x / 3.0) :- n(x).
    """)
    values = [1.0, 2.5, 123456.7, 1e20, -7.0, 0.1, 3e-9]
    _write(tmp_path / "f" / "n.facts", "\n".join(map(repr, values)) + "\n")
    assert main(["run", str(prog), "-F", str(tmp_path / "f"), "-D", str(tmp_path / "o")]) == 0
    written = (tmp_path / "o" / "third.csv").read_text().splitlines()
    assert "1\t0.3333333333333333" in written and "123456.7\t41152.23333333333" in written
    back = read_facts(str(tmp_path / "o" / "third.csv"),
                      Relation("third", ["x", "y"], ["float", "float"], None))
    assert sorted(map(tuple, _rows(back))) == sorted((v, v / 3.0) for v in values)


# -- what a newcomer runs into: every mistake is reported plainly, before any work ------------------

def test_a_bad_output_folder_is_reported_before_computing(tmp_path, capsys):
    prog = _write(tmp_path / "p.dl", COUNT_TO.format(10))
    _write(tmp_path / "file", "")
    for target, message in ((tmp_path / "file", "is a file, not a folder"),
                            (tmp_path / "file" / "sub", "is a file, not a folder"),
                            ("", "-D needs a folder name")):
        assert main(["run", str(prog), "-D", str(target)]) == 1
        assert message in capsys.readouterr().err
    # an output filename in a sub-folder is fine: the folder is made
    prog = _write(tmp_path / "q.dl", """
        .decl e(x: number)
        .output e(filename="sub/dir/e.csv")
        e(1).
    """)
    assert main(["run", str(prog), "-D", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "sub" / "dir" / "e.csv").read_text() == "1\n"


def test_program_files_that_cannot_be_read(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nosuch.dl")]) == 1
    assert capsys.readouterr().err == (f"{tmp_path / 'nosuch.dl'}: error: cannot read the "
                                       f"program: No such file or directory\n")
    bad = _write(tmp_path / "bad.dl", b'.decl e(x: symbol)\ne("\xff").\n', mode="b")
    assert main(["run", str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"{bad}:2:4: error: the program is not UTF-8")


@pytest.mark.parametrize("pragma, message", [
    ('.pragma "jobs" "abc"', "pragma 'jobs' needs a positive whole number or \"auto\""),
    ('.pragma "jobs" "-3"', "pragma 'jobs' needs a positive whole number or \"auto\""),
    ('.input e(delimiter="")', "an empty delimiter in .input e"),
])
def test_bad_settings_in_the_program_name_their_line(tmp_path, capsys, pragma, message):
    prog = _write(tmp_path / "p.dl", f".decl e(x: number)\n{pragma}\n")
    assert main(["run", str(prog), "-D", "-"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{prog}:2:") and message in err


def test_preprocessor_mistakes_are_located(tmp_path, capsys):
    _write(tmp_path / "a.dl", '#include "b.dl"\n.decl e(x: number)\n')
    _write(tmp_path / "b.dl", '#include "a.dl"\n')
    assert main(["run", str(tmp_path / "a.dl"), "-D", "-"]) == 1
    assert "error: #include nested too deeply" in capsys.readouterr().err
    _write(tmp_path / "c.dl", "#include\n")
    assert main(["run", str(tmp_path / "c.dl"), "-D", "-"]) == 1
    assert capsys.readouterr().err.startswith(f"{tmp_path / 'c.dl'}:1:1: error: #include needs "
                                              f"a file name")
    assert main(["run", str(tmp_path / "c.dl"), "-M", "=3"]) == 1
    assert capsys.readouterr().err == ("diffflow: error: -M '=3': '' is not a macro name; write "
                                       "NAME, NAME=VALUE or NAME(ARGS)=BODY\n")
    # guarded files may include each other, as in C
    _write(tmp_path / "g1.dl", '#ifndef G1\n#define G1\n#include "g2.dl"\n.decl e(x: number)\n'
                               '.output e\ne(1).\n#endif\n')
    _write(tmp_path / "g2.dl", '#ifndef G2\n#define G2\n#include "g1.dl"\n#endif\n')
    assert main(["run", str(tmp_path / "g1.dl"), "-D", "-"]) == 0
    assert capsys.readouterr().out.splitlines()[4] == "1"


def test_the_round_limit_error_names_the_rule_and_the_option(tmp_path, capsys):
    prog = _write(tmp_path / "p.dl", COUNT_TO.format(100))
    assert main(["run", str(prog), "-D", "-", "--max-rounds", "5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{prog}:4: error: the recursion of n was still deriving new facts "
                          f"after 5 rounds")
    assert "--max-rounds N" in err and "max_rounds()" not in err


def test_update_step_mistakes_name_the_file(example_files, capsys):
    prog, facts, tmp_path = example_files
    steps = tmp_path / "steps"
    for name, message in (("nosuch.insert.facts", "unknown relation 'nosuch'"),
                          ("path.insert.facts", "relation 'path' is computed by rules")):
        _write(steps / "1" / name, "1\t2\n")
        assert main(["run", str(prog), "-F", str(facts), "-D", "-", "--updates",
                     str(steps)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"diffflow: error: {steps / '1' / name}: {message}")
        (steps / "1" / name).unlink()
    assert main(["run", str(prog), "-F", str(facts), "-D", "-", "--updates",
                 str(facts / "e.facts")]) == 1
    assert "is not a folder" in capsys.readouterr().err


@pytest.fixture
def example_files(tmp_path):
    prog = _write(tmp_path / "p.dl", PROGRAM)
    facts = tmp_path / "facts"
    _write(facts / "e.facts", "1\t2\n")
    _write(facts / "s.facts", "")
    return prog, facts, tmp_path


def test_a_folder_where_a_fact_file_should_be(example_files, capsys):
    prog, facts, tmp_path = example_files
    (facts / "s.facts").unlink()
    (facts / "s.facts").mkdir()
    assert main(["run", str(prog), "-F", str(facts), "-D", "-", "-w"]) == 1
    err = capsys.readouterr().err
    assert "cannot open fact file s.facts for input relation 's': Is a directory" in err
    assert "-w" not in err  # -w would not help


@pytest.mark.slow
def test_ctrl_c_stops_quietly(tmp_path):
    import signal
    import time

    # 5 million rounds, ~15 s in compiled rounds: Ctrl-C comes 1 s after the start, while a
    # kernel runs them (its run pauses every BUDGET rows of work, so Python sees it)
    prog = _write(tmp_path / "p.dl", COUNT_TO.format(5_000_000))
    # (SIGINT's default restored in the child: a run started in the background, as CI may
    # be, inherits SIGINT ignored, and then, as Unix tools do, so does diffflow)
    proc = subprocess.Popen([sys.executable, "-m", "diffflow", "run", str(prog), "-D",
                             str(tmp_path / "o"), "-v"], stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = proc.stderr.readline().decode()  # ("loaded 0 facts": started, not yet computing)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    err = first + proc.communicate(timeout=120)[1].decode()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "diffflow: interrupted" and "Traceback" not in err
    assert "computed the program" not in err and not (tmp_path / "o" / "n.csv").exists()


def test_unsigned_fields_may_be_hexadecimal_or_binary(tmp_path):
    # Soufflé reads unsigned values with a 0x or 0b prefix; number values are base 10 only
    relation = Relation("u", ["a"], ["unsigned"], None)
    path = _write(tmp_path / "u.facts", "0x10\n0b101\n7\n0xFFFFFFFF\n")
    assert read_facts(str(path), relation).column("c0").to_pylist() == [16, 5, 7, 2**32 - 1]
    path.write_text("1\n0x100000000\n")
    with pytest.raises(dd.DatalogError, match=r"u.facts:2: error: u: attribute 'a' = "
                                              r"0x100000000 does not fit a 32-bit unsigned"):
        read_facts(str(path), relation)


def test_rfc4180_and_compressed_files(tmp_path):
    prog = _write(tmp_path / "p.dl", """
        .decl e(x: number, s: symbol)
        .input e(rfc4180=true)
        .output e(rfc4180=true)
        .decl f(x: number, s: symbol)
        .output f(compress=true, filename="f.csv.gz")
        f(x, s) :- e(x, s).
    """)
    # quoted fields hold the delimiter, quotes ("") and line breaks; CRLF or LF
    _write(tmp_path / "f" / "e.facts",
           b'1,"a, b"\r\n2,"x""y"\n3,plain\n4,"multi\nline"\n', mode="b")
    assert main(["run", str(prog), "-F", str(tmp_path / "f"), "-D", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "e.csv").read_text() == \
        '1,"a, b"\n2,"x""y"\n3,"plain"\n4,"multi\nline"\n'
    assert gzip.decompress((tmp_path / "o" / "f.csv.gz").read_bytes()) == \
        b"1\ta, b\n2\tx\"y\n3\tplain\n4\tmulti\nline\n"
    # what rfc4180 writes, it reads back
    back = read_facts(str(tmp_path / "o" / "e.csv"), Relation("e", ["x", "s"],
                      ["number", "symbol"], None), delimiter=",", rfc4180=True)
    assert _rows(back) == [[1, "a, b"], [2, 'x"y'], [3, "plain"], [4, "multi\nline"]]
    _write(tmp_path / "f" / "e.facts", b'1,"a\n2,b,c\n', mode="b")
    assert main(["run", str(prog), "-F", str(tmp_path / "f"), "-D", str(tmp_path / "o2")]) == 1
    assert not (tmp_path / "o2").exists()


def test_every_node_of_a_program_is_located_in_its_file(tmp_path):
    # runtime failures name the operator and where it was built: for Datalog, the .dl line
    prog = _write(tmp_path / "p.dl", ".decl e(x: number, y: number)\n.input e\n"
                  ".decl t(x: number, y: number)\n.output t\n"
                  "t(x, y) :- e(x, y).\nt(x, z) :- t(x, y), e(y, z).\n"
                  ".decl c(k: number)\n.output c\nc(k) :- k = count : t(_, _).\n")
    program = dd.Program.from_file(str(prog))
    where = {n.id: n.location for n in program.flow.graph.nodes if n.kind != "output"}
    assert all(loc.startswith(f"{prog}:") for loc in where.values()), where
    lines = {int(loc.rsplit(":", 1)[1]) for loc in where.values()}
    assert {1, 3, 5, 6, 7, 9} <= lines
