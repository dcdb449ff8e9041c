"""Soufflé's input and output directives diffflow reads as Soufflé does (issue 41): JSON
outputs and inputs (``IO=json``, ``IO=jsonfile``, ``format=object``), a relation read from
several ``.input`` files, records and ADTs in RFC 4180 output.

Every expected text is written out by hand from Soufflé's writers' rules (the module
docstring of :mod:`diffflow.datalog.values.json_io`).
"""
import math
import os
import random
import textwrap

import numpy as np

import diffflow as dd
from diffflow.cli import main


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def _run(tmp_path, program, *extra):
    prog = _write(tmp_path / "p.dl", program)
    out = tmp_path / "out"
    return main(["run", str(prog), "-F", str(tmp_path / "facts"), "-D", str(out), *extra]), out


JSON_PROGRAM = """
    .type Chain = [v: number, rest: Chain]
    .decl c(k: unsigned, x: Chain)
    c(1, nil).
    c(4294967295, [7, [8, nil]]).
    .output c(IO=json)
    .decl s(t: symbol, f: float)
    s("say \\"hi\\"", 0.5).
    s("tab\\there", 1234567.0).
    .output s(IO=json, format=object)
"""


def test_json_outputs_go_to_stdout_as_soufflé_writes_them(tmp_path, capsys):
    status, out = _run(tmp_path, JSON_PROGRAM)
    assert status == 0
    # rows in value order: nil before a record; 4294967295 prints as the int -1; objects keyed
    # by attribute names; a float in 6 significant digits (1234567 -> 1.23457e+06)
    assert capsys.readouterr().out == (
        "[[1, null],\n"
        "[-1, [7, [8, null]]]]\n"
        '[{"t": "say \\"hi\\"", "f": 0.5},\n'
        '{"t": "tab\\there", "f": 1.23457e+06}]\n')
    assert not out.exists() or os.listdir(out) == []  # nothing written beside stdout


def test_jsonfile_outputs_read_back_as_jsonfile_inputs(tmp_path, capsys):
    program = """
        .type Pair = [a: number, b: symbol]
        .decl p(n: number, x: Pair)
        .input p(IO=jsonfile)
        .output p(IO=jsonfile, format=object)
        .decl q(n: number, x: Pair)
        q(n + 1, x) :- p(n, x).
        .output q(IO=jsonfile, filename="q_out.json")
        .decl none(n: number)
        .output none(IO=jsonfile)
    """
    _write(tmp_path / "facts" / "p.json", '[[2, [5, "five"]], {"x": null, "n": 1}]')
    status, out = _run(tmp_path, program)
    assert status == 0, capsys.readouterr().err
    assert (out / "p.json").read_text() == (
        '[{"n": 1, "x": null},\n'
        '{"n": 2, "x": {"a": 5, "b": "five"}}]\n')
    assert (out / "q_out.json").read_text() == '[[2, null],\n[3, [5, "five"]]]\n'
    assert (out / "none.json").read_text() == "[]\n"  # an empty relation


def test_json_output_of_an_adt_is_a_located_error(tmp_path, capsys):
    program = """
        .type T = A {x: number} | B {}
        .decl t(v: T)
        t($B()).
        .output t(IO=json)
    """
    status, _ = _run(tmp_path, program)
    err = capsys.readouterr().err
    assert status == 1
    assert ":4:9: error: t holds values of the ADT T, which IO=json cannot write" in err


def test_a_malformed_json_fact_file_names_the_row(tmp_path, capsys):
    program = """
        .decl p(n: number, s: symbol)
        .input p(IO=jsonfile)
    """
    _write(tmp_path / "facts" / "p.json", '[[1, "a"], {"n": 2, "t": "b"}]')
    status, _ = _run(tmp_path, program)
    err = capsys.readouterr().err
    assert status == 1
    assert "p.json: error: row 2 of the JSON fact file: p has no attribute 't'" in err


def test_a_relation_with_several_inputs_has_the_facts_of_all(tmp_path):
    program = """
        .decl e(x: number, y: number)
        .input e
        .input e(IO="file", filename="more.facts")
        .input e(filename="more.csv", delimiter=",")
    """
    prog = _write(tmp_path / "p.dl", program)
    _write(tmp_path / "facts" / "e.facts", "1\t2\n3\t4\n")
    _write(tmp_path / "facts" / "more.facts", "3\t4\n5\t6\n")
    _write(tmp_path / "facts" / "more.csv", "7,8\n")
    for partitions in (1, 2):
        p = dd.Program(prog.read_text(), partitions=partitions)
        # e.facts and more.facts share (3, 4): the union has it once
        assert p.load_facts(str(tmp_path / "facts")) == {"e": 5}
        p.commit()
        assert p.relation("e") == {(1, 2), (3, 4), (5, 6), (7, 8)}


def test_rfc4180_output_quotes_records_and_adts_as_soufflé(tmp_path):
    program = """
        .type Pair = [a: symbol, b: number]
        .type T = Two {x: symbol, y: symbol} | None {}
        .decl r(p: Pair, t: T, s: symbol)
        r(["x,y", 1], $Two("say \\"hi\\"", ""), "plain").
        r(nil, $None(), "q\\"q").
        .output r(rfc4180=true)
    """
    status, out = _run(tmp_path, program)
    assert status == 0
    # a record or ADT is one quoted field; its symbols are quoted inside ("x,y"), a quote in
    # them written \" and then every " doubled; a plain symbol is quoted, its quote doubled
    assert sorted((out / "r.csv").read_text().splitlines()) == sorted([
        '"[""x,y"", 1]","$Two(""say \\""hi\\"""", """")","plain"',
        '"nil","$None","q""q"'])


def test_json_of_a_nullary_relation_and_a_bad_format(tmp_path, capsys):
    program = """
        .decl yes()
        yes().
        .output yes(IO=json)
        .decl no()
        .output no(IO=json)
    """
    status, _ = _run(tmp_path, program)
    # Soufflé writes "null" inside the brackets for a nullary relation that holds
    assert (status, capsys.readouterr().out) == (0, "[null\n]\n[]\n")
    status, _ = _run(tmp_path, ".decl e(x: number)\n.output e(IO=json, format=table)\n")
    assert status == 1
    assert ":2:9: error: format='table' in .output e: JSON rows are format=list or " \
           "format=object" in capsys.readouterr().err



def test_output_order_is_value_order_however_symbols_hash():
    """Outputs list facts sorted by value (numbers numerically, floats with negatives,
    infinities and -0.0, symbols as text), the order Python's sort of the decoded facts
    gives -- not the order of their int64 codes (a symbol's code is a hash); checked over
    seeded random inserts and removes."""
    rng = random.Random(7)
    texts = ["", "a", "ab", "b", "Z", "é", "a b", "\u00e9t\u00e9", "10", "9", "\U0001f600"]
    floats = [0.0, -0.0, 1.5, -1.5, 1e300, -1e-300, math.inf, -math.inf, 2.0, -2.0]

    def fact():
        return (rng.choice([-2**31, -7, 0, 3, 2**31 - 1, rng.randint(-99, 99)]),
                rng.choice([0, 5, 2**32 - 1, rng.randint(0, 99)]),
                rng.choice(floats), rng.choice(texts))

    p = dd.Program(".decl r(n: number, u: unsigned, f: float, s: symbol)")
    for _ in range(30):
        p.insert("r", [fact() for _ in range(rng.randint(0, 30))])
        present = sorted(p.relation("r"))
        p.remove("r", rng.sample(present, len(present) // 3))
        p.commit()
        assert p.sorted_rows("r") == sorted(p.relation("r"))
    assert len(p.sorted_rows("r")) > 50


def test_numbers_are_written_as_python_writes_them_with_any_delimiter(tmp_path, monkeypatch):
    """The numba writer of number-only outputs gives the text ``str`` gives, extremes and
    a many-character delimiter included; a program's number and unsigned outputs, written
    by it (as from 100,000 facts), list the facts in value order."""
    from diffflow.datalog.cli import outputs
    from diffflow.datalog.values.facts import format_int_rows

    monkeypatch.setattr(outputs, "NUMBA_WRITER_FROM", 0)

    rng = np.random.default_rng(3)
    rows = np.concatenate([rng.integers(-2**63, 2**63 - 1, (200, 3), dtype=np.int64,
                                        endpoint=True),
                           np.array([[0, -1, 9], [-2**63, 2**63 - 1, 10]], np.int64)])
    for delimiter in ["\t", ",", " :: ", "é"]:
        assert format_int_rows(rows, delimiter) == \
            [delimiter.join(map(str, row)) for row in rows.tolist()]
    assert format_int_rows(np.zeros((0, 2), np.int64)) == []
    _write(tmp_path / "facts" / "e.facts", "10\t4294967295\n-3\t0\n-20\t7\n10\t5\n")
    code, out = _run(tmp_path, """
        .decl e(x: number, u: unsigned)
        .input e
        .decl r(x: number, u: unsigned)
        .output r(delimiter=";")
        r(x, u) :- e(x, u).
    """)
    assert code == 0
    assert (out / "r.csv").read_text() == "-20;7\n-3;0\n10;5\n10;4294967295\n"
