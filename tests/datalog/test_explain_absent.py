"""Why a fact is *not* derived (``explain_absent``), and Soufflé's provenance command loop
(``diffflow run -t explain``) with scripts piped in, as Soufflé's own tests drive it."""
import io
import random
import sys

import pytest

import diffflow as dd
from diffflow.cli import main
from diffflow.datalog.explain.derived import ExplainError
from tests.datalog.test_explain import CASES, committed
from tests.support.datalog_reference import evaluate

PATH = """
.decl edge(x: symbol, y: symbol)
.decl path(x: symbol, y: symbol)
path(x, y) :- edge(x, y).
path(x, z) :- edge(x, y), path(y, z).
"""


def _path_program(**options):
    program = dd.Program(PATH, **options)
    program.insert("edge", [("a", "b"), ("b", "c"), ("c", "d")])
    program.commit()
    return program


def test_each_rule_names_the_literal_that_fails():
    absence = _path_program().explain_absent("path", ("a", "e"))
    assert [c.rule for c in absence.checks] == [1, 2]
    assert absence.checks[0].literals == [('edge("a", "e")', "x")]
    # rule 2 gets as far as edge("a", "b") -- the only edge out of a -- then path fails
    assert absence.checks[1].literals == [('edge("a", "b")', "✓"), ('path("b", "e")', "x")]
    assert str(absence).splitlines()[-1].strip() == 'path("a","e")'


def test_chosen_rule_and_values_mark_every_literal():
    absence = _path_program().explain_absent("path", ("a", "3"), rule=2, bindings={"y": "b"})
    # Soufflé's path_explain_negation session (it measures the ✓ as three columns, its UTF-8
    # bytes: the bar is two longer per ✓)
    assert str(absence) == ('edge("a", "b") ✓ path("b", "3") x \n'
                            '--------------------------------(R2)\n'
                            '           path("a","3")            ')


def test_negation_aggregates_and_constraints_as_reasons():
    program = dd.Program("""
        .decl person(p: symbol, age: number)
        .decl banned(p: symbol)
        .decl knows(p: symbol, q: symbol)
        .decl adult(p: symbol)
        .decl social(p: symbol)
        adult(p) :- person(p, a), a >= 18, !banned(p).
        social(p) :- person(p, _), count : { knows(p, _) } > 1.
    """)
    program.insert("person", [("ann", 30), ("bob", 12), ("cat", 40)])
    program.insert("banned", [("cat",)])
    program.insert("knows", [("ann", "bob")])
    program.commit()
    assert program.explain_absent("adult", ("bob",)).checks[0].failing == ["12 >= 18"]
    assert program.explain_absent("adult", ("cat",)).checks[0].failing == ['!banned("cat")']
    assert program.explain_absent("adult", ("dan",)).checks[0].failing == ['person("dan", a)']
    (check,) = program.explain_absent("social", ("ann",)).checks
    assert check.failing == ['count : { knows("ann", _) } > 1']


def test_absent_fact_errors_say_what_to_do_and_change_nothing():
    program = _path_program()
    before = program.relation("path")
    with pytest.raises(ExplainError, match="is in path: use explain"):
        program.explain_absent("path", ("a", "d"))
    with pytest.raises(ExplainError, match="has no rule 3 .its rules: 1, 2"):
        program.explain_absent("path", ("a", "z"), rule=3, bindings={})
    with pytest.raises(ExplainError, match="missing y"):
        program.explain_absent("path", ("a", "z"), rule=2, bindings={})
    with pytest.raises(ExplainError, match="bindings= goes with rule="):
        program.explain_absent("path", ("a", "z"), bindings={"y": "b"})
    with pytest.raises(ExplainError, match="unknown relation|no relation"):
        program.explain_absent("pth", ("a", "z"))
    assert "would be an input fact" in str(program.explain_absent("edge", ("z", "z")))
    assert program.relation("path") == before


DOMAIN = {"symbol": ["a", "b", "c", "d", "zed"], "number": list(range(-3, 8)),
          "float": [0.0, 0.5, 1.25, 3.5]}


@pytest.mark.parametrize("name", ["closure_and_negation", "same_generation", "aggregates",
                                  "nested_negation", "symbols_and_facts"])
def test_every_rule_of_an_absent_fact_has_a_failing_literal(name):
    """The evaluator agrees with the engine: for facts the engine does not derive, no rule
    of the relation finds a binding that passes every literal."""
    source, inputs = CASES[name]
    rng = random.Random(name)
    program = dd.Program(source)
    checked = 0
    for facts in committed(program, rng, inputs, commits=3):
        expected = evaluate(source, facts)
        for rel, relation in program.relations.items():
            if not relation.clauses:
                continue
            for _ in range(6):
                fact = tuple(rng.choice(DOMAIN[t]) for t in relation.types)
                if fact in expected[rel]:
                    continue
                absence = program.explain_absent(rel, fact)
                assert len(absence.checks) == len(relation.clauses)
                for check in absence.checks:
                    assert check.note or check.failing, (rel, fact, str(check))
                    checked += 1
    assert checked > 20


# -- the command loop ---------------------------------------------------------------------

def _session(tmp_path, monkeypatch, capsys, script: str, pragma=False):
    program = tmp_path / "path.dl"
    text = PATH + '.input edge\n.output path\n'
    program.write_text(('.pragma "provenance" "explain"\n' if pragma else "") + text)
    (tmp_path / "edge.facts").write_text("a\tb\nb\tc\nc\td\n")
    monkeypatch.setattr(sys, "stdin", io.StringIO(script))
    args = ["run", str(program), "-F", str(tmp_path), "-D", str(tmp_path / "out"),
            "-t", "explain"]
    assert main(args) == 0
    return capsys.readouterr()


def test_command_loop_prints_souffles_proof_and_negation(tmp_path, monkeypatch, capsys):
    seen = _session(tmp_path, monkeypatch, capsys,
                    'explain path("a", "d")\nexplainnegation path("a", "3")\n2\n"b"\nexit\n')
    # Soufflé's path test: the proof, byte for byte
    proof = ('                              edge("c", "d")   \n'
             '                              -----------(R1)  \n'
             '               edge("b", "c") path("c", "d")   \n'
             '               ---------------------------(R2) \n'
             'edge("a", "b")         path("b", "d")          \n'
             '-------------------------------------------(R2)\n'
             '                path("a", "d")                 \n')
    negation = ('edge("a", "b") ✓ path("b", "3") x \n'
                '--------------------------------(R2)\n'
                '           path("a","3")            \n')
    assert seen.out == proof + negation
    assert seen.err == ""
    assert (tmp_path / "out" / "path.csv").exists()   # the run's outputs are written first


def test_command_loop_depth_subproofs_json_and_output_file(tmp_path, monkeypatch, capsys):
    target = tmp_path / "proofs.json"
    seen = _session(tmp_path, monkeypatch, capsys,
                    'setdepth 2\nexplain path("a", "d")\nsubproof path(0)\n'
                    f'output {target}\nformat json\nexplain path("c", "d")\noutput\n'
                    'format proof\nexplainnegation path("d", "a")\n\nquit\n')
    lines = seen.out.splitlines()
    assert lines[0].split() == ['edge("a",', '"b")', "subproof", "path(0)"]
    assert lines[3].split() == ['edge("b",', '"c")', "subproof", "path(1)"]
    assert target.read_text().startswith('{ "proof":\n\t{ "premises": "path(\\"c\\", \\"d\\")"')
    assert '"rule": "path(x,y) :- \\n   edge(x,y)."' in target.read_text()
    # an empty rule number: every rule at once
    assert 'edge("d", "a") x' in seen.out and 'edge("d", y) x' in seen.out


def test_a_depth_of_one_cuts_the_proof_at_its_root(tmp_path, monkeypatch, capsys):
    seen = _session(tmp_path, monkeypatch, capsys,
                    'setdepth 1\nexplain path("a", "d")\nsubproof path(0)\nexit\n')
    lines = seen.out.splitlines()
    assert lines[0] == "subproof path(0)"
    assert lines[1] == "subproof path(0)"   # the same fact, cut at its root again
    assert seen.err == ""


def test_an_output_file_that_cannot_be_written_keeps_the_loop_going(tmp_path, monkeypatch,
                                                                    capsys):
    seen = _session(tmp_path, monkeypatch, capsys,
                    f'output {tmp_path / "missing" / "x.txt"}\nexplain path("a", "b")\nexit\n')
    assert "cannot write proofs to" in seen.err and "stays where it was" in seen.err
    assert 'path("a", "b")' in seen.out          # the next command still ran, on the screen


def test_command_loop_mistakes_go_to_stderr_and_the_loop_goes_on(tmp_path, monkeypatch,
                                                                  capsys):
    seen = _session(tmp_path, monkeypatch, capsys,
                    'explain path("a", "z")\nexplain path(a)\nfly away\nsetdepth x\n'
                    'subproof path(9)\nexplainnegation path("a", "b")\n1\n'
                    'explainnegation edge("a", "a")\nrule path 2\nexplain path("a", "b")\n',
                    pragma=True)
    errors = seen.err.splitlines()
    assert errors[0] == 'path("a", "z") is not in path as of the last commit: check its ' \
                        'values and that its inputs were committed (explain_absent says ' \
                        'why it is not derived)'
    assert errors[1].startswith("cannot read the fact 'path(a)'")
    assert "unknown command 'fly'" in errors[2]
    assert any("setdepth needs a whole number" in e for e in errors)
    assert any("no subproof path(9)" in e for e in errors)
    assert any('is in path: use explain' in e for e in errors)
    assert any("would be an input fact" in e for e in errors)
    assert "path(x,z) :- \n   edge(x,y),\n   path(y,z)." in seen.out
    assert seen.out.rstrip().endswith('path("a", "b")')   # the last command still ran


def test_the_command_line_marks_facts_the_replay_needed_beyond_the_proof(tmp_path, capsys):
    """A count over a relation that negation shapes: bob's course is blocked by a
    prerequisite, so the explanation of load("bob", 0) needs prereq("ml", "stats") too."""
    program = tmp_path / "course.dl"
    program.write_text("""
        .decl takes(student: symbol, course: symbol)
        .decl prereq(course: symbol, needs: symbol)
        .decl passed(student: symbol, course: symbol)
        .input takes, prereq, passed
        .decl blocked(student: symbol, course: symbol)
        .decl eligible(student: symbol, course: symbol)
        .decl load(student: symbol, n: number)
        blocked(s, c) :- takes(s, c), prereq(c, p), !passed(s, p).
        eligible(s, c) :- takes(s, c), !blocked(s, c).
        load(s, n) :- takes(s, _), n = count : { eligible(s, _) }.
    """)
    (tmp_path / "takes.facts").write_text("ann\tml\nbob\tml\n")
    (tmp_path / "prereq.facts").write_text("ml\tstats\n")
    (tmp_path / "passed.facts").write_text("ann\tstats\n")
    assert main(["explain", str(program), "-F", str(tmp_path), 'load("bob", 0)']) == 0
    out = capsys.readouterr().out
    assert out.endswith('load("bob", 0) rests on 2 input facts:\n'
                        '  prereq("ml", "stats")   (keeps a fact the proof negates or '
                        'aggregates as it is)\n'
                        '  takes("bob", "ml")\n')
