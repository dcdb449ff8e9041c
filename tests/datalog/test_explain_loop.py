"""Soufflé's provenance command loop as ``souffle`` runs it: opened by
``.pragma "provenance" "explain"`` alone, its ``query`` command, and proofs printed
character for character as Soufflé prints them (small programs of the shapes of Soufflé's
provenance tests)."""
import io
import sys

from diffflow.cli import main


def _loop(tmp_path, monkeypatch, capsys, text: str, script: str, *options):
    program = tmp_path / "prog.dl"
    program.write_text(text)
    monkeypatch.setattr(sys, "stdin", io.StringIO(script))
    assert main(["run", str(program), "-D", str(tmp_path / "out"), *options]) == 0
    return capsys.readouterr()


CHAIN = """.pragma "provenance" "explain"
.decl link(a: symbol, b: symbol)
link("p", "q"). link("q", "r").
.decl reach(a: symbol, b: symbol)
reach(a, b) :- link(a, b).
reach(a, c) :- link(a, b), reach(b, c).
.output reach
"""


def test_the_pragma_alone_opens_the_loop_after_the_run(tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, CHAIN, 'explain reach("q", "r")\nexit\n')
    assert seen.out == ('link("q", "r") \n'
                        '-----------(R1)\n'
                        'reach("q", "r")\n')
    assert (tmp_path / "out" / "reach.csv").exists()   # outputs are written first


def test_t_none_keeps_the_pragma_from_opening_the_loop(tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, CHAIN, 'explain reach("q", "r")\n',
                 "-t", "none")
    assert seen.out == ""


FAMILY = """.pragma "provenance" "explain"
.decl up(child: symbol, parent: symbol)
up("m", "z"). up("k", "z"). up("t", "m"). up("s", "m"). up("u", "k").
.decl level(x: float)
level(2.25). level(-1). level(0).
.decl size(x: unsigned)
size(0x10). size(3).
"""


def test_query_prints_each_solution_on_a_semicolon_and_the_last_with_a_dot(
        tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, FAMILY,
                 'query up(x, "z"), up(y, x)\n;\n;\nexit\n')
    # variables by name; symbols in the order the program text first shows them
    assert seen.out == "x = m, y = t\nx = m, y = s\nx = k, y = u.\n"
    assert seen.err == ""


def test_query_ground_atoms_are_true_or_false(tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, FAMILY,
                 'query up("m", "z"), up("t", "m")\nquery up("m", "z"), up("t", "k")\n'
                 'query up("z", x)\n')
    assert seen.out == ('true.\n'
                        'false.\nTuple up("t", "k") does not exist\n'
                        'false.\n')


def test_query_numbers_as_souffle_prints_them_and_a_dot_stops(tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, FAMILY,
                 'query level(x)\n;\n;\nquery size(n)\nwhat\n.\nquery size(16)\n')
    assert seen.out == ("x = -1\nx = 0\nx = 2.25.\n"
                        # a line that is neither ; nor . is answered with the usage; the
                        # '.' stops before the solution found last is shown
                        "n = 3\nuse ; to find next solution, use . to break from current "
                        "query\n"
                        "true.\n")


def test_query_mistakes_go_to_stderr_and_the_loop_goes_on(tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, FAMILY,
                 'query nope(x)\nquery up(1, x)\nquery up(x\nquery\nquery up("u", "k")\n')
    errors = seen.err.splitlines()
    assert "unknown relation 'nope'" in errors[0]
    assert "is a symbol, not 1" in errors[1]
    assert errors[2].startswith("cannot read the query 'up(x'")
    assert errors[3].startswith("query needs atoms")
    assert seen.out == "true.\n"


CLINIC = """.pragma "provenance" "explain"
.decl seen(id: number, visit: number)
seen(7, 1). seen(7, 2).
.decl banned(id: number)
banned(5).
.decl twice(id: number, a: number, b: number)
twice(i, a, b) :- seen(i, a), !banned(i), seen(i, b), a != b.
"""


def test_explainnegation_measures_ticks_in_bytes_and_shows_negations_bare(
        tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, CLINIC,
                 'explainnegation twice(7,1,1)\n1\nexit\n')
    # Soufflé's layout: each ✓ is three columns wide (its UTF-8 bytes), so the bar and the
    # centred head are two columns longer per ✓; a negated atom shows its relation only
    assert seen.out == ('seen(7, 1) ✓ !banned() ✓ seen(7, 1) ✓ 1 != 1 x \n'
                        + "-" * 49 + '(R1)\n'
                        + " " * 20 + 'twice(7,1,1)' + " " * 21 + '\n')


STEPS = """.pragma "provenance" "explain"
.decl base(n: number)
base(10).
.decl next(n: number)
next(m) :- base(n), m = n + 1.
.decl pair(a: number, b: number)
pair(a, b) :- base(a), next(b), a + 1 = b.
.decl half(x: float)
half(1.5).
.decl whole(n: number)
whole(to_number(x)) :- half(x).
"""


def test_proofs_fold_aliases_and_show_constraints_by_their_values(tmp_path, monkeypatch,
                                                                  capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, STEPS,
                 'explain next(11)\nexplain pair(10, 11)\nexplain whole(1)\n')
    lines = seen.out.splitlines()
    # m = n + 1 names a value no atom binds: Soufflé folds it away before running
    assert lines[:3] == ["base(10) ", "-----(R1)", "next(11) "]
    # a + 1 = b between bound values is a constraint, shown by its sides' values
    assert lines[3:8] == ["         base(10)          ",
                          "         -----(R1)         ",
                          "base(10) next(11)  11 = 11 ",
                          "-----------------------(R1)",
                          "       pair(10, 11)        "]
    # floats in proofs with six decimals, as Soufflé prints them
    assert lines[8:] == ["half(1.500000) ", "-----------(R1)", "   whole(1)    "]


SAME = """.pragma "provenance" "explain"
.decl same(a: number, b: number) eqrel
.decl copy(a: number, b: number)
same(4, 5).
copy(a, b) :- same(a, b).
"""


def test_eqrel_closure_rules_are_numbered_and_written_as_souffle_does(tmp_path, monkeypatch,
                                                                       capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, SAME,
                 'explain copy(5, 5)\nrule same 3\nformat json\nexplain same(5, 4)\n')
    # the relation's own facts and rules first, then transitivity, symmetry, reflexivity
    assert seen.out.startswith('same(4, 5)              \n'
                               '-------(R3)             \n'
                               'same(5, 4)  same(4, 5)  \n'
                               '-------------------(R2) \n'
                               '      same(5, 5)        \n'
                               '--------------------(R1)\n'
                               '       copy(5, 5)       \n'
                               'same(x,y) :- \n   same(y,x).\n')
    # JSON: every rule of the program, written as Soufflé prints clauses
    assert seen.out.endswith(
        '},"rules": [\n'
        '\t{ "rule-number": "(R1)", "rule": "copy(a,b) :- \\n   same(a,b)."},\n'
        '\t{ "rule-number": "(R2)", "rule": "same(x,z) :- \\n   same(x,y),\\n   same(y,z)."},\n'
        '\t{ "rule-number": "(R3)", "rule": "same(x,y) :- \\n   same(y,x)."},\n'
        '\t{ "rule-number": "(R4)", "rule": "same(x,x) :- \\n   same(x,_)."}\n'
        ']\n}\n')


def test_rules_are_written_with_their_aliases_resolved_as_souffle_does(tmp_path, monkeypatch,
                                                                       capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, STEPS, 'rule next 1\nrule pair 1\n')
    assert seen.out == ("next((n+1)) :- \n   base(n).\n"
                        "pair(a,b) :- \n   base(a),\n   next(b),\n   (a+1) = b.\n")


def test_query_of_wildcards_holds_or_not_and_mistakes_are_named(tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, CHAIN,
                 'query reach(_, "r")\nquery reach("r", _)\nquery reach("p", x),,link(x, y)\n'
                 'explainnegation nope("a")\nexplainnegation reach("r", "p")\n2\n"q"\n'
                 'exit\n')
    assert seen.out.splitlines()[:2] == ["true.", "false."]
    assert "an atom is missing between its commas" in seen.err
    assert "unknown relation 'nope'; the program's relations are link, reach" in seen.err
    assert "Traceback" not in seen.err


def test_a_value_of_the_wrong_type_in_explainnegation_is_named(tmp_path, monkeypatch, capsys):
    text = CHAIN.replace("symbol", "number").replace('"p"', "1").replace('"q"', "2") \
        .replace('"r"', "3")
    seen = _loop(tmp_path, monkeypatch, capsys, text,
                 "explainnegation reach(3, 1)\n2\nabc\nexit\n")
    assert "'abc' is not a number" in seen.err and "invalid literal" not in seen.err


def test_rule_names_the_rules_a_relation_has(tmp_path, monkeypatch, capsys):
    seen = _loop(tmp_path, monkeypatch, capsys, CHAIN, "rule reach 9\nrule link 1\nexit\n")
    assert "reach has rules 1, 2; rule reach <rule number>" in seen.err
    assert "'link' has no rules" in seen.err
