"""``diffflow run`` / ``explain-plan`` behave like Soufflé's command line."""
import subprocess
import sys
import textwrap

import pytest

from diffflow.cli import main


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def _sorted_lines(path):
    return sorted(path.read_text().splitlines())


@pytest.fixture
def example(tmp_path):
    """The transitive-closure example of Soufflé's "simple" tutorial page."""
    prog = _write(tmp_path / "example.dl", """
        .decl edge(x:number, y:number)
        .input edge

        .decl path(x:number, y:number)
        .output path

        path(x, y) :- edge(x, y).
        path(x, y) :- path(x, z), edge(z, y).
    """)
    _write(tmp_path / "facts" / "edge.facts", "1\t2\n2\t3\n")
    return prog, tmp_path / "facts"


def test_soufflé_tutorial_example_is_byte_identical_after_sorting(example, tmp_path):
    prog, facts = example
    assert main(["run", str(prog), "-F", str(facts), "-D", str(tmp_path / "out")]) == 0
    # the output the Soufflé documentation gives for this program and input
    assert _sorted_lines(tmp_path / "out" / "path.csv") == sorted(["1\t2", "2\t3", "1\t3"])
    assert (tmp_path / "out" / "path.csv").read_text().endswith("3\n")


def test_attached_short_options_and_stdout(example, capsys):
    prog, facts = example
    assert main(["run", str(prog), f"-F{facts}", "-D-"]) == 0
    out = capsys.readouterr().out
    # Soufflé 2.x: -D - prints the attribute names under the relation's name
    assert out == ("---------------\npath\nx\ty\n===============\n"
                   "1\t2\n1\t3\n2\t3\n===============\n")


def test_aggregate_with_unbound_result_gives_an_empty_relation(tmp_path):
    # from Soufflé's aggregate documentation: min over nothing does not satisfy the body
    prog = _write(tmp_path / "agg.dl", """
        .decl a(s:symbol, x:number)
        .decl b(x:number)
        .decl S(x:number)
        .decl Prime(x:number)
        .input Prime
        .output b, S
        a("B", 1).
        a("B", 2).
        b(n) :- n = min Z : a("A",Z).
        S(n) :- n = sum y : Prime(y).
    """)
    _write(tmp_path / "f" / "Prime.facts", "2\n3\n5\n7\n")
    assert main(["run", str(prog), "-F", str(tmp_path / "f"), "-D", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "b.csv").read_text() == ""
    assert (tmp_path / "o" / "S.csv").read_text() == "17\n"


def test_no_warn_reads_a_missing_fact_file_as_empty_and_printsize(tmp_path, capsys):
    prog = _write(tmp_path / "p.dl", """
        .decl e(x: number)
        .decl f(x: symbol)
        .decl both(x: number)
        .input e, f
        .printsize e
        .printsize both
        both(x) :- e(x), x > 1.
    """)
    _write(tmp_path / "facts" / "e.facts", "1\n2\n3\n3\n")
    assert main(["run", str(prog), "-F", str(tmp_path / "facts"), "-D", str(tmp_path),
                 "-w"]) == 0
    assert capsys.readouterr().out == "e\t3\nboth\t2\n"


def test_nullary_relations_and_io_parameters(tmp_path):
    prog = _write(tmp_path / "p.dl", """
        .decl e(x: float, y: symbol)
        .input e(IO=file, filename="edges.csv", delimiter=",")
        .decl yes()
        .decl no()
        .decl out(x: float, y: symbol, f: float)
        .output yes, no
        .output out(filename="result.tsv", delimiter="|", headers=true)
        yes() :- e(_, "a b").
        no() :- e(_, "zzz").
        out(x, y, f) :- e(x, y), f = x / 2.0, x >= 0.
    """)
    _write(tmp_path / "facts" / "edges.csv", "1,a b\n3,c\n")
    assert main(["run", str(prog), "-F", str(tmp_path / "facts"), "-D", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "yes.csv").read_text() == "()\n"
    assert (tmp_path / "o" / "no.csv").read_text() == ""
    assert (tmp_path / "o" / "result.tsv").read_text() == "x|y|f\n1|a b|0.5\n3|c|1.5\n"


def test_incremental_steps_write_signed_changes(example, tmp_path):
    prog, facts = example
    _write(tmp_path / "updates" / "1" / "edge.insert.facts", "3\t4\n")
    _write(tmp_path / "updates" / "2" / "edge.remove.facts", "1\t2\n")
    _write(tmp_path / "updates" / "2" / "edge.insert.facts", "9\t9\n")
    out = tmp_path / "out"
    assert main(["run", str(prog), "-F", str(facts), "-D", str(out),
                 "--updates", str(tmp_path / "updates")]) == 0
    # the initial state (1 2, 1 3, 2 3) is replaced by the final one
    assert _sorted_lines(out / "path.csv") == ["2\t3", "2\t4", "3\t4", "9\t9"]
    assert _sorted_lines(out / "path.step-1.csv") == ["1\t4\t+1", "2\t4\t+1", "3\t4\t+1"]
    assert _sorted_lines(out / "path.step-2.csv") == \
        ["1\t2\t-1", "1\t3\t-1", "1\t4\t-1", "9\t9\t+1"]


def test_errors_exit_with_status_1_and_name_the_place(tmp_path, capsys):
    prog = _write(tmp_path / "bad.dl", """
        .decl edge(x: number, y: number)
        .decl path(x: number, y: number)
        path(x, y) :- edg(x, y).
    """)
    assert main(["run", str(prog), "-D", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{prog}:3:15: error: unknown relation 'edg' (did you mean 'edge'?)" in err
    assert "path(x, y) :- edg(x, y)." in err


def test_bad_update_folder_is_reported_before_any_output(example, tmp_path, capsys):
    prog, facts = example
    (tmp_path / "updates" / "first").mkdir(parents=True)
    assert main(["run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o"),
                 "--updates", str(tmp_path / "updates")]) == 1
    assert "not numbered" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_explain_plan_shows_strata_and_shared_arrangements(tmp_path, capsys):
    prog = _write(tmp_path / "sg.dl", """
        .decl parent(p: number, c: number)
        .decl sg(x: number, y: number)
        sg(x, y) :- parent(p, x), parent(p, y), x != y.
        sg(x, y) :- parent(a, x), sg(a, b), parent(b, y).
    """)
    assert main(["explain-plan", str(prog)]) == 0
    plan = capsys.readouterr().out
    assert "stratum sg (recursive: one loop, 1 variable(s))" in plan
    # rule 1 joins parent with itself on p; rule 2 reads parent by its first column twice
    assert "parent by (c0): one index read by 2 join inputs" in plan
    assert "parent by (c0) in loop 'stratum sg': one index read by 2 join inputs" in plan


def test_a_self_join_builds_one_index(tmp_path):
    from diffflow import Program

    program = Program("""
        .decl parent(p: number, c: number)
        .decl sibling(x: number, y: number)
        sibling(x, y) :- parent(p, x), parent(p, y), x != y.
    """)
    arranges = [n for n in program.flow.graph.nodes if n.kind == "arrange"]
    # one index of parent by p (shared by both join inputs) + one for distinct
    assert len(arranges) == 2
    program.insert("parent", [(1, 2), (1, 3), (4, 5)]); program.commit()
    assert program.relation("sibling") == {(2, 3), (3, 2)}


@pytest.mark.slow
def test_console_script_runs_as_a_module(example, tmp_path):
    prog, facts = example
    result = subprocess.run([sys.executable, "-m", "diffflow", "run", str(prog), "-F", str(facts),
                             "-D", "-"], capture_output=True, text=True, check=True)
    assert "1\t3" in result.stdout


def test_every_missing_fact_file_is_named_at_once(tmp_path, capsys):
    prog = _write(tmp_path / "p.dl", """
        .decl a(x: number)
        .input a
        .decl b(x: number)
        .input b
        .decl c(x: number)
        .input c
    """)
    _write(tmp_path / "facts" / "c.facts", "1\n")
    assert main(["run", str(prog), "-F", str(tmp_path / "facts"), "-D", "-"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{tmp_path / 'facts'}: error: 2 fact files are missing: "
                          f"a.facts (.input a, {prog}:2), b.facts (.input b, {prog}:4)\n")
    assert main(["run", str(prog), "-F", str(tmp_path / "nodir"), "-D", "-"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{tmp_path / 'nodir'}: error: the fact folder does not exist; the "
                          f"program reads a.facts (.input a, {prog}:2), b.facts")
    assert "c.facts" in err.splitlines()[0]


def test_every_command_that_builds_a_program_takes_jobs(example, capsys):
    """-j works on explain-plan and explain as on run and query: the same plan and the same
    proof at 1 and 3 partitions; -j 0 is refused on each."""
    prog, facts = example
    outputs = {}
    for jobs in ("1", "3"):
        assert main(["explain-plan", str(prog), "-j", jobs]) == 0
        assert main(["explain", str(prog), "-F", str(facts), "-j", jobs, "path(1, 3)"]) == 0
        outputs[jobs] = capsys.readouterr().out
    assert outputs["1"] == outputs["3"]
    assert "path(1, 3) rests on 2 input facts" in outputs["1"]
    for command in (["explain-plan", str(prog)], ["explain", str(prog), "path(1, 3)"],
                    ["query", str(prog), "path(1, y)"]):
        assert main([*command, "-j", "0"]) == 1
        assert "-j must be at least 1, got 0" in capsys.readouterr().err


def test_a_run_says_what_it_wrote_when_asked_and_is_silent_in_scripts(example, tmp_path, capsys):
    prog, facts = example
    out = tmp_path / "out"
    assert main(["run", str(prog), "-F", str(facts), "-D", str(out)]) == 0
    assert capsys.readouterr().err == ""  # not a terminal: Soufflé's silence, for scripts
    assert main(["run", str(prog), "-F", str(facts), "-D", str(out), "-v"]) == 0
    assert f"diffflow: wrote 1 output to {out}/: path.csv (3 rows)\n" in capsys.readouterr().err
