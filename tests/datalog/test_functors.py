"""Soufflé's intrinsic functors and string constraints: parsing and precedence, values
computed by hand from Soufflé's semantics, located errors, strings made on partition
workers, and ``diffflow run``.  (Incremental behaviour: the ``functors`` program of
tests/datalog/test_incremental.py, checked against the reference evaluator.)"""
from __future__ import annotations

import pytest

import diffflow as dd
from diffflow.cli import main
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.parser import parse
from diffflow.datalog.syntax.render import render_term
from tests.support.datalog_reference import evaluate


def _head(source: str):
    return parse(source).rules[0].head.args[0]


@pytest.mark.parametrize("text, shown", [
    ("x lor y land z", "(x lor (y land z))"),
    ("a band b bor c bxor d", "((a band b) bor (c bxor d))"),
    ("a + 1 bshl 2", "((a + 1) bshl 2)"),
    ("bnot x * 2", "((bnot x) * 2)"),
    ("-x ^ 2 band 3", "(-(x ^ 2) band 3)"),
    ("lnot a land b", "((lnot a) land b)"),
    ("min(a, b, c) + max(a, b)", "(min(a, b, c) + max(a, b))"),
    ('cat(x, "-", to_string(n))', 'cat(x, "-", to_string(n))'),
    ("as(x, Id)", "as(x, Id)"),
])
def test_functors_parse_with_soufflés_precedence(text, shown):
    assert render_term(_head(f"r({text}).")) == shown


def test_functor_names_stay_free_for_variables_and_constraints_are_literals():
    rule = parse('r(ord, as) :- e(ord, as), contains("a", ord), !match("b.*", as).').rules[0]
    assert [a.name for a in rule.head.args] == ["ord", "as"]
    ops = [lit.op for lit in rule.body[0].literals if isinstance(lit, ast.Comparison)]
    assert ops == ["contains", "!match"]


def _one(term: str, kind: str, facts: str = ""):
    """The value of ``term`` in a head of type ``kind``, computed by a program."""
    program = dd.Program(f".decl r(v: {kind})\n{facts}\nr({term}).\n")
    program.commit()
    (row,) = program.relation("r")
    return row[0]


@pytest.mark.parametrize("term, kind, value", [
    # strings: UTF-8 bytes, as Soufflé (std::string)
    ('strlen("héllo")', "number", 6),
    ('cat("ab", "c", "")', "symbol", "abc"),
    ('substr("hello", 1, 3)', "symbol", "ell"),
    ('substr("hello", 3, 10)', "symbol", "lo"),     # the length is clipped
    ('substr("hello", 5, 1)', "symbol", ""),        # start at the end
    ('substr("hello", 6, 1)', "symbol", ""),        # start past the end: ""
    ('substr("hello", -1, 2)', "symbol", ""),
    ('to_number(" 42abc")', "number", 42),          # std::stoi: the leading number
    ('to_number("-7")', "number", -7),
    ('to_unsigned("4294967295")', "unsigned", 4294967295),
    ('to_float("2.5e1x")', "float", 25.0),
    ("to_string(-12)", "symbol", "-12"),
    ("to_string(2.5)", "symbol", "2.500000"),       # std::to_string
    # conversions
    ("itou(-1)", "unsigned", 4294967295),
    ("utoi(4294967295u)", "number", -1),
    ("ftoi(-2.7)", "number", -2),
    ("ftou(3.9)", "unsigned", 3),
    ("itof(7)", "float", 7.0),
    ("as(4294967295u, number)", "number", -1),
    # bitwise and logical, 32-bit
    ("5 band 3", "number", 1),
    ("5 bor 3", "number", 7),
    ("5 bxor 3", "number", 6),
    ("bnot 0", "number", -1),
    ("bnot 0u", "unsigned", 4294967295),
    ("1 bshl 31", "number", -2147483648),
    ("1 bshl 32", "number", 1),                     # shift amounts & 31, as Soufflé masks them
    ("256 bshr 40", "number", 1),
    ("1 bshl -1", "number", -2147483648),
    ("-8 bshr 1", "number", -4),
    ("-1 bshru 28", "number", 15),
    ("3 land 0", "number", 0),
    ("3 lor 0", "number", 1),
    ("3 lxor 2", "number", 0),
    ("lnot 0", "number", 1),
    # min, max, abs
    ("min(4, -2, 9)", "number", -2),
    ("max(4, -2, 9)", "number", 9),
    ("max(1.5, 0.5)", "float", 1.5),
    ("abs(-2147483648)", "number", -2147483648),    # wraps as in 32 bits
])
def test_functor_values_follow_soufflé(term, kind, value):
    assert _one(term, kind) == value


def test_functors_compute_on_rows_and_constraints_filter():
    program = dd.Program("""
        .decl s(x: symbol, n: number)
        .decl l(x: symbol, len: number, tag: symbol)
        .decl m(x: symbol)
        l(x, n, c) :- s(x, k), n = strlen(x), c = cat(x, "-", to_string(k)), contains("a", x).
        m(x) :- s(x, _), !match("b.*", x).
    """, partitions=2)
    program.insert("s", [("abc", 7), ("bad", -3), ("xyz", 1)])
    program.commit()
    assert program.relation("l") == {("abc", 3, "abc-7"), ("bad", 3, "bad--3")}
    assert program.relation("m") == {("abc",), ("xyz",)}
    program.changes("m")  # (changes since the last call)
    program.remove("s", [("abc", 7)])
    program.commit()
    assert program.relation("l") == {("bad", 3, "bad--3")}
    assert dict(program.changes("m")) == {("abc",): -1}


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["cluster", "processes"])
def test_strings_made_by_functors_on_partition_workers_are_symbols(runtime):
    source = """
        .decl s(x: symbol)
        .decl t(y: symbol, n: number)
        .decl u(z: symbol)
        t(cat(x, "!"), strlen(x)) :- s(x).
        u(substr(y, 0, 2)) :- t(y, _).
    """
    local = dd.Program(source)
    other = dd.Program(source, partitions=3, runtime=runtime)
    try:
        for program in (local, other):
            program.insert("s", [(w,) for w in ("alpha", "beta", "gamma", "al")])
            program.commit()
        for relation in ("t", "u"):
            assert other.relation(relation) == local.relation(relation)
        assert ("al",) in other.relation("u")
    finally:
        other.close()


@pytest.mark.parametrize("kind, rule, message, at", [
    ("symbol", "r(strlen(x, x)) :- e(x).", "strlen takes 1 argument, got 2", (3, 3)),
    ("number", "r(strlen(x)) :- e(x).",
     "argument 1 of strlen must be a symbol, but this is a number", (3, 10)),
    ("float", "r(x band 1) :- e(x).", "band needs number or unsigned values, not float", None),
    ("symbol", "r(abs(x)) :- e(x).", "abs of a symbol is not supported", (3, 7)),
    ("number", "r(1) :- e(x), contains(x, x).", "contains needs two symbols", (3, 15)),
    ("symbol", "r(@f(1)) :- e(_).", "unknown functor @f", (3, 3)),
    ("number", "r(x) :- e(x), x = autoinc().",
     "autoinc() must be in a rule's head, not in its body", (3, 19)),
])
def test_functor_errors_name_the_place(kind, rule, message, at):
    text = f".decl e(x: {kind})\n.decl r(x: number)\n{rule}\n"
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(text, filename="f.dl")
    assert message in str(caught.value)
    if at is not None:
        assert f"f.dl:{at[0]}:{at[1]}:" in str(caught.value)


def test_to_number_of_text_that_is_no_number_stops_the_run_saying_so():
    program = dd.Program('.decl s(x: symbol)\n.decl r(n: number)\nr(to_number(x)) :- s(x).\n',
                         filename="conv.dl")
    program.insert("s", [("12",), ("twelve",)])
    with pytest.raises(dd.OperatorError, match=r"conv\.dl:3.*to_number\('twelve'\)"):
        program.commit()


def test_diffflow_run_computes_functors_from_fact_files(tmp_path, capsys):
    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "name.facts").write_text("ada\t1815\ngrace\t1906\n")
    program = tmp_path / "names.dl"
    program.write_text("""
        .decl name(n: symbol, born: number)
        .input name
        .decl label(l: symbol, len: number, decade: number)
        .output label
        label(cat(to_string(b), ":", n), strlen(n), b / 10 * 10 band 4095) :- name(n, b).
    """)
    assert main(["run", str(program), "-F", str(tmp_path / "facts"), "-D",
                 str(tmp_path / "out")]) == 0
    lines = sorted((tmp_path / "out" / "label.csv").read_text().splitlines())
    assert lines == ["1815:ada\t3\t1810", "1906:grace\t5\t1900"]


USER = """
    .functor shout(s: symbol, n: number): symbol
    .functor half(x: float): float
    .functor tri(n: number): number
    .decl e(s: symbol, n: number)
    .decl r(s: symbol, h: float, t: number)
    r(@shout(s, n), @half(itof(n)), @tri(n)) :- e(s, n).
"""
BINDINGS = {"shout": lambda s, n: s.upper() + "!" * n,
            "half": dd.vectorized(lambda x: x / 2),  # gets whole numpy arrays
            "tri": lambda n: n * (n + 1) // 2}


@pytest.mark.parametrize("runtime, partitions", [("local", 1), ("local", 3), ("cluster", 2)])
def test_user_defined_functors_call_python_incrementally(runtime, partitions):
    calls = []

    def tri(n):
        calls.append(n)
        return n * (n + 1) // 2

    program = dd.Program(USER, functors=dict(BINDINGS, tri=tri), partitions=partitions,
                         runtime=runtime)
    try:
        program.insert("e", [("ab", 2), ("c", 1), ("big", 70000)])
        program.commit()
        # 70000 * 70001 / 2 = 2450035000 wraps to a 32-bit number, as Soufflé's C++ would
        assert program.relation("r") == {("AB!!", 1.0, 3), ("C!", 0.5, 1),
                                         ("BIG" + "!" * 70000, 35000.0, 2450035000 - 2**32)}
        program.remove("e", [("big", 70000)])
        program.insert("e", [("d", 0)])
        program.commit()
        assert program.relation("r") == {("AB!!", 1.0, 3), ("C!", 0.5, 1), ("D", 0.0, 0)}
    finally:
        program.close()
    if runtime == "local" and partitions == 1:
        assert sorted(set(calls)) == [0, 1, 2, 70000]  # once per distinct value per batch


@pytest.mark.parametrize("bindings, message", [
    ({"shout": BINDINGS["shout"], "half": BINDINGS["half"]},
     "functor 'tri' (declared at line 4) has no Python binding"),
    (dict(BINDINGS, tri=3), "functor 'tri' (declared at line 4) is bound to int 3"),
    (dict(BINDINGS, extra=len), "binds 'extra', which no .functor declares"),
])
def test_user_functor_bindings_are_checked(bindings, message):
    with pytest.raises(dd.DatalogError, match=message.replace("(", r"\(").replace(")", r"\)")):
        dd.Program(USER, functors=bindings, filename="u.dl")


def test_user_functor_errors_name_the_functor():
    with pytest.raises(dd.DatalogError, match="unknown functor @nope"):
        dd.Program(".decl r(x: number)\nr(@nope(1)).")
    stateful = dd.Program(".functor f(): number stateful\n.decl r(x: number)\nr(@f()).",
                          functors={"f": lambda: 1})  # (a Python functor needs no tables)
    stateful.commit()
    assert stateful.relation("r") == {(1,)}
    program = dd.Program(".functor f(x: number): number\n.decl e(x: number)\n"
                         ".decl r(x: number)\nr(@f(x)) :- e(x).\n",
                         functors={"f": lambda x: "no"}, filename="g.dl")
    program.insert("e", [(1,)])
    with pytest.raises(dd.OperatorError, match=r"g\.dl:4.*@f returned 'no', not an integer"):
        program.commit()


def test_explanations_show_functors_and_constraints_with_their_values():
    program = dd.Program("""
        .decl s(x: symbol, n: number)
        .decl l(x: symbol, c: symbol)
        .decl t(c: symbol)
        l(x, c) :- s(x, k), t(c), c = cat(x, "-", to_string(k band 3)), contains("a", x).
        t("abc-3").
    """, provenance=True)
    program.insert("s", [("abc", 7), ("b", 1)])
    program.commit()
    leaves = [child.text for child in program.explain("l", ("abc", "abc-3")).tree.children[2:]]
    # as Soufflé shows constraints: the values of their two sides
    assert leaves == ['"abc-3" = "abc-3"', 'contains("a", "abc")']


def test_a_failed_commit_stops_the_program_instead_of_leaving_it_incomplete():
    program = dd.Program(".decl s(x: symbol)\n.decl o(x: number)\no(to_number(x)) :- s(x).\n",
                         partitions=2)
    program.insert("s", [("1",)])
    program.commit()
    program.insert("s", [("x",), ("3",), ("5",)])
    with pytest.raises(dd.OperatorError, match="to_number"):
        program.commit()
    program.remove("s", [("x",)])
    with pytest.raises(dd.DiffflowError, match="stopped when an operator failed.*build it again"):
        program.commit()  # (never quietly on with rows missing)


@pytest.mark.parametrize("rule", ["o(max(x, 2.5)) :- n(x).", "o(x band y) :- n(x), u(y).",
                                  "o(x) :- n(x), max(x, 2.5) > 1."])
def test_functor_arguments_of_different_types_are_a_located_type_clash(rule):
    text = (".decl n(x: number)\n.decl u(x: unsigned)\n.decl o(x: number)\n" + rule + "\n")
    with pytest.raises(dd.DatalogError, match=r"f\.dl:4:\d+: error: type clash"):
        dd.Program(text, filename="f.dl")


def test_user_functors_without_arguments_and_bad_returns():
    program = dd.Program(".functor z(): number\n.functor w(x: number): number\n"
                         ".decl r(x: number)\n.decl o(x: number)\n"
                         "o(@z() + x) :- r(x).\n", functors={"z": lambda: 10, "w": abs})
    program.insert("r", [(1,), (2,)])
    program.commit()
    assert program.relation("o") == {(11,), (12,)}
    with pytest.raises(dd.ExpressionError, match=r"functor @w returned None, not a number"):
        dd.Program(".functor w(x: number): number\n.decl r(x: number)\nr(@w(3)).\n",
                   functors={"w": lambda x: None}).commit()


def test_symbols_compare_and_min_max_by_their_text():
    """Soufflé orders symbols by their text (UTF-8 bytes, which is code point order)."""
    program = dd.Program("""
        .decl s(x: symbol, y: symbol)
        .decl r(x: symbol, y: symbol, lo: symbol, hi: symbol)
        r(x, y, min(x, y, "m"), max(x, y)) :- s(x, y), x < y.
    """, partitions=2)
    program.insert("s", [("apple", "banana"), ("zeta", "alpha"), ("é", "z"), ("a", "é"),
                         ("Z", "a")])
    program.commit()
    assert program.relation("r") == {("apple", "banana", "apple", "banana"),
                                     ("a", "é", "a", "é"), ("Z", "a", "Z", "a")}


def test_range_examples_from_soufflés_documentation(tmp_path):
    program = tmp_path / "range.dl"
    program.write_text("""
        .decl A(x:number)
        A(x) :- x = range(1,5,1).
        .output A
        .decl B(x: float)
        B(x) :- x = range(5, 3.75, -0.5).
        .output B
        .decl C(x: number, y: number)
        C(x, y) :- x = range(4, 7), y = range(5, x, 0).
        .output C
    """)
    assert main(["run", str(program), "-D", str(tmp_path / "out")]) == 0
    read = lambda name: sorted((tmp_path / "out" / f"{name}.csv").read_text().splitlines())
    assert read("A") == ["1", "2", "3", "4"]
    assert sorted(float(v) for v in read("B")) == [4.0, 4.5, 5.0]
    assert read("C") == ["4\t5", "6\t5"]  # step 0: begin once, unless begin = end


def test_range_in_heads_facts_and_expressions_counts_down_and_filters():
    p = dd.Program("""
        .decl n(x: number)
        .decl down(x: number)
        down(range(3, 0)).
        .decl tens(x: number)
        tens(range(0, x) * 10 + 1) :- n(x).
        .decl odd(x: number)
        odd(x) :- n(x), x = range(1, 100, 2).
        .decl u(x: unsigned)
        u(x) :- x = range(2u, 5u).
    """)
    p.insert("n", [(3,), (4,)]); p.commit(); p.changes("tens")
    assert p.relation("down") == {(3,), (2,), (1,)}
    assert p.relation("tens") == {(1,), (11,), (21,), (31,)}
    assert p.relation("odd") == {(3,)}
    assert p.relation("u") == {(2,), (3,), (4,)}
    p.remove("n", [(4,)]); p.commit()
    assert dict(p.changes("tens")) == {(31,): -1}


@pytest.mark.parametrize("source, message, at", [
    ("r(x) :- x = range(1).", "range takes 2 or 3 arguments", (2, 13)),
    ("r(x) :- x = range(1, 2, 3, 4).", "range takes 2 or 3 arguments", (2, 13)),
    ("r(n) :- n = sum range(0, 3) : { r(_) }.", "range(...) in an aggregate's target",
     (2, 17)),
    ("r(x) :- r(x), !r(range(0, 2)).", "inside a negation", (2, 18)),
    ('r(x) :- x = range("a", "b").', "range of a symbol is not supported", (2, 19)),
])
def test_range_errors_are_located(source, message, at):
    with pytest.raises(dd.DatalogError) as caught:
        dd.Program(".decl r(x: number)\n" + source + "\n", filename="g.dl")
    text = str(caught.value)
    assert message in text and f"g.dl:{at[0]}:{at[1]}:" in text, text


def test_diffflow_run_binds_user_functors_from_a_python_file(tmp_path, capsys):
    from diffflow.cli import main

    (tmp_path / "lib.py").write_text("def twice(x):\n    return 2 * x\n\n"
                                     "def shout(s):\n    return s.upper() + '!'\n\n"
                                     "def unused():\n    return 0\n")
    (tmp_path / "p.dl").write_text('.functor twice(x: number): number\n'
                                   '.functor shout(s: symbol): symbol\n'
                                   '.decl r(x: number, s: symbol)\n'
                                   'r(@twice(21), @shout("hi")).\n.output r\n')
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "p.dl"), "-D", str(out),
                 "--functors", str(tmp_path / "lib.py")]) == 0
    assert (out / "r.csv").read_text() == "42\tHI!\n"
    assert main(["run", str(tmp_path / "p.dl"), "-D", str(out)]) == 1
    assert "define twice in a file given to diffflow run --functors" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "p.dl"), "-D", str(out), "-l", "nope.py"]) == 1
    assert "--functors nope.py: No such file or directory" in capsys.readouterr().err


@pytest.mark.parametrize("partitions", [1, 2])
def test_to_number_to_unsigned_and_to_float_convert_between_numeric_types(partitions):
    """Soufflé's conversions of numbers (not only of text): a float truncates toward zero, a
    negative number wraps as unsigned, as itou/ftoi/ftou do; a value already of the type stays."""
    program = dd.Program("""
        .decl f(x: float)
        .decl n(x: number)
        .decl u(x: unsigned)
        .decl s(x: symbol)
        .decl out(a: number, b: unsigned, c: float)
        out(to_number(x), to_unsigned(x), to_float(x)) :- f(x).
        out(to_number(x), to_unsigned(x), to_float(x)) :- n(x).
        out(to_number(x), to_unsigned(x), to_float(x)) :- u(x).
        out(to_number(x), to_unsigned(x), to_float(x)) :- s(x).
        .decl lit(a: float, b: number)
        lit(to_float(3), to_number(2.5)).
    """, partitions=partitions)
    program.insert("f", [(2.75,), (-3.5,)])
    program.insert("n", [(7,), (-2,)])
    program.insert("u", [(5,)])
    program.insert("s", [("42",)])
    program.commit()
    assert program.relation("out") == {(2, 2, 2.75), (-3, 2**32 - 3, -3.5), (7, 7, 7.0),
                                       (-2, 2**32 - 2, -2.0), (5, 5, 5.0), (42, 42, 42.0)}
    assert program.relation("lit") == {(3.0, 2)}
    program.remove("f", [(-3.5,)])
    program.commit()  # the conversion follows updates like any expression
    assert (-3, 2**32 - 3, -3.5) not in program.relation("out")
    assert len(program.relation("out")) == 5


@pytest.mark.parametrize("partitions", [1, 2])
def test_plus_joins_symbols_and_to_string_of_a_symbol_is_itself(partitions):
    """Soufflé reads ``+`` of two symbols as concatenation (as ``cat``), in rules, facts and
    comparisons; ``to_string`` of a symbol is the symbol; other arithmetic on symbols is an
    error."""
    source = """
        .decl w(s: symbol)
        .decl p(a: symbol, b: symbol)
        .input w, p
        .decl joined(s: symbol)
        joined("<" + s + ">") :- w(s).
        joined(a + "." + to_string(b)) :- p(a, b).
        joined("k" + to_string(2) + to_string("!")).
        .decl same(s: symbol)
        same(s) :- w(s), t = s + "", t = to_string(s).
    """
    program = dd.Program(source, partitions=partitions)
    program.insert("w", [("a",), ("bc",)])
    program.insert("p", [("a", "bc")])
    program.commit()
    expected = {("<a>",), ("<bc>",), ("a.bc",), ("k2!",)}
    assert program.relation("joined") == expected
    assert program.relation("same") == {("a",), ("bc",)}
    facts = {"w": [("a",), ("bc",)], "p": [("a", "bc")]}
    assert evaluate(source, facts)["joined"] == expected
    program.remove("w", [("a",)])
    program.remove("p", [("a", "bc")])
    program.commit()
    assert program.relation("joined") == {("<bc>",), ("k2!",)}
    with pytest.raises(dd.DatalogError, match=r"2:17: .*arithmetic '-' on a symbol"):
        dd.Program('.decl r(s: symbol)\nr(s) :- s = "a" - "b".')
    with pytest.raises(dd.DatalogError, match=r"2:17: .*arithmetic '\+' on a symbol"):
        dd.Program('.decl r(s: symbol)\nr(s) :- s = "a" + 1.')


@pytest.mark.filterwarnings("ignore:.*wrong pattern")
@pytest.mark.parametrize("partitions", [1, 2])
def test_an_invalid_regex_makes_both_match_and_not_match_false(partitions):
    """Soufflé's regexes are C++ ECMAScript ones: ``a{y}`` is no regex there (Python's re
    would read it as text); Soufflé warns and neither ``match`` nor ``!match`` of it holds."""
    source = """
        .decl w(s: symbol)
        .input w
        .decl good(s: symbol)
        good(s) :- w(s), match("ab{2}.*", s).
        .decl bad(s: symbol)
        bad(s) :- w(s), match("a{y}", s).
        bad(s) :- w(s), !match("a{y}", s).
        bad(s) :- w(s), p = "(?P<n>a)", !match(p, s).
        .decl other(s: symbol)
        other(s) :- w(s), !match("ab{2}.*", s).
    """
    facts = {"w": [("abbc",), ("abc",), ("a{y}",)]}
    program = dd.Program(source, partitions=partitions)
    assert [str(w).split(": warning: ")[1][:21] for w in program.warnings] == \
        ["wrong pattern 'a{y}':"] * 2
    assert program.warnings[0].line == 7
    program.insert("w", facts["w"])
    program.commit()
    expected = {"good": {("abbc",)}, "bad": set(), "other": {("abc",), ("a{y}",)}}
    assert {name: program.relation(name) for name in expected} == expected
    reference = evaluate(source, facts)
    assert {name: reference[name] for name in expected} == expected


@pytest.mark.parametrize("partitions", [1, 2])
def test_to_number_reads_hexadecimal_and_binary_prefixes_as_soufflé(partitions):
    """Soufflé's to_number reads ``0x``/``-0x`` as hexadecimal and ``0b``/``-0b`` as binary
    (then as C's stoi: the number the text starts with); to_unsigned ``0x`` and ``0b``."""
    program = dd.Program("""
        .decl s(t: symbol)
        .input s
        .decl n(t: symbol, x: number)
        n(t, to_number(t)) :- s(t).
        .decl u(t: symbol, x: unsigned)
        u(t, to_unsigned(t)) :- s(t), !match("-.*", t).
    """, partitions=partitions)
    texts = ["42", "-42", "0x1f", "-0x1F", "0XA", "0b1011", "-0b110", "0x10zz", " 7 "]
    program.insert("s", [(t,) for t in texts])
    program.commit()
    # by hand: 0x1f = 31, 0b1011 = 11, 0b110 = 6; "0XA" has no 0x prefix: stoi reads "0"
    assert dict(program.relation("n")) == {"42": 42, "-42": -42, "0x1f": 31, "-0x1F": -31,
                                          "0XA": 0, "0b1011": 11, "-0b110": -6,
                                          "0x10zz": 16, " 7 ": 7}
    assert dict(program.relation("u")) == {"42": 42, "0x1f": 31, "0XA": 0, "0b1011": 11,
                                          "0x10zz": 16, " 7 ": 7}
    program.insert("s", [("0xffffffff",)])  # 2^32 - 1: an unsigned, but no number
    with pytest.raises(dd.OperatorError, match=r"to_number\('0xffffffff'\): out of the "
                                               r"32-bit number range"):
        program.commit()


def test_match_reads_std_regex_class_names():
    """Soufflé's std::regex knows class names inside brackets: ``[[:digit:]]`` is a digit
    (Python's re would read a set of the characters ``[:digt``)."""
    program = dd.Program("""
        .decl w(s: symbol)
        .input w
        .decl id(s: symbol)
        id(s) :- w(s), match("x[[:digit:]]+#[[:upper:][:punct:]]", s).
    """)
    program.insert("w", [("x12#A",), ("x12#!",), ("x12#a",), ("x:#A",), ("xd#A",)])
    program.commit()
    assert program.relation("id") == {("x12#A",), ("x12#!",)}


@pytest.mark.filterwarnings("ignore:.*orders values differently")
def test_ord_in_an_order_comparison_of_symbols_warns_of_the_kept_difference():
    # Soufflé's ord of a symbol is its table index (first met, first numbered), so
    # ord(a) < ord(b) picks by input order there; diffflow's comes from the hash
    program = dd.Program("""
        .decl e(a: symbol, b: symbol)
        .decl lead(a: symbol)
        lead(a) :- e(a, b), ord(a) < ord(b).
        .decl n(a: number)
        n(a) :- a = 3, ord(a) < 4.
    """)
    assert [(w.line, w.column) for w in program.warnings] == [(4, 29)]
    assert "orders values differently from Soufflé" in str(program.warnings[0])
    program.insert("e", [("x", "y"), ("y", "x")])
    program.commit()
    assert len(program.relation("lead")) == 1  # one of the two: ords tell them apart
    assert program.relation("n") == {(3,)}
