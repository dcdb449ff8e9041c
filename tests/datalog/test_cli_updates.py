"""``diffflow run --updates``: the change files of every step, then the final state, and
what ``--help`` says about them."""
import os
import textwrap

import pytest

from diffflow.cli import main
from diffflow.datalog.cli.outputs import write_file


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


@pytest.fixture
def reach(tmp_path):
    """Reachability with headers=true, its edges and two steps of updates."""
    prog = _write(tmp_path / "reach.dl", """
        .decl edge(x: number, y: number)
        .input edge
        .decl reach(x: number, y: number)
        .output reach(headers=true)
        reach(x, y) :- edge(x, y).
        reach(x, z) :- reach(x, y), edge(y, z).
    """)
    _write(tmp_path / "facts" / "edge.facts", "1\t2\n2\t3\n")
    _write(tmp_path / "steps" / "1" / "edge.insert.facts", "3\t4\n")
    _write(tmp_path / "steps" / "2" / "edge.remove.facts", "1\t2\n")
    return [str(prog), "-F", str(tmp_path / "facts"), "--updates", str(tmp_path / "steps")]


def test_updates_write_headed_changes_then_the_final_state(reach, tmp_path):
    out = tmp_path / "out"
    assert main(["run", *reach, "-D", str(out)]) == 0
    assert (out / "reach.step-1.csv").read_text() == "x\ty\tdiff\n1\t4\t+1\n2\t4\t+1\n3\t4\t+1\n"
    assert (out / "reach.step-2.csv").read_text() == "x\ty\tdiff\n1\t2\t-1\n1\t3\t-1\n1\t4\t-1\n"
    # the initial state (1 2, 1 3, 2 3) is replaced by the state after step 2
    assert (out / "reach.csv").read_text() == "x\ty\n2\t3\n2\t4\n3\t4\n"
    assert sorted(os.listdir(out)) == ["reach.csv", "reach.step-1.csv", "reach.step-2.csv"]


def test_updates_on_stdout_print_states_and_changes_each_titled(reach, capsys):
    assert main(["run", *reach, "-D", "-"]) == 0
    blocks = capsys.readouterr().out.split("---------------\n")[1:]
    assert [b.split("\n", 1)[0] for b in blocks] == \
        ["reach", "reach step 1 changes", "reach step 2 changes", "reach after step 2"]
    assert blocks[2] == ("reach step 2 changes\nx\ty\tdiff\n===============\n"
                         "1\t2\t-1\n1\t3\t-1\n1\t4\t-1\n===============\n")
    assert blocks[3].endswith("x\ty\n===============\n2\t3\n2\t4\n3\t4\n===============\n")


def test_a_file_that_fails_to_be_written_keeps_its_previous_content(tmp_path):
    path = tmp_path / "reach.csv"
    path.write_text("x\ty\n1\t2\n")

    def lines():
        yield "5\t6"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_file(str(path), "x\ty", lines())
    assert path.read_text() == "x\ty\n1\t2\n" and os.listdir(tmp_path) == ["reach.csv"]


def test_run_help_describes_the_command_and_the_update_files(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = capsys.readouterr().out
    assert "Evaluate a Datalog program" in text and "diffflow run reach.dl -F facts -D out" in text
    for part in ("DIR/1/edge.insert.facts", "DIR/1/edge.remove.facts", "OUT/<rel>.step-N.csv",
                 "replaced by the final state", '"<rel> after step N"'):
        assert part in text


# -- a durable run (--checkpoint-dir) killed, then run again -------------------------------

def _run_killed(reach, out, state, failpoint):
    """``diffflow run`` in a process of its own, killed with SIGKILL at ``failpoint``."""
    import signal
    import subprocess
    import sys

    env = dict(os.environ, DIFFFLOW_FAILPOINT=failpoint)
    done = subprocess.run([sys.executable, "-m", "diffflow", "run", *reach, "-D", str(out),
                           "--checkpoint-dir", str(state), "--checkpoint-every", "1"],
                          env=env, capture_output=True, timeout=120)
    return done.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("failpoint", ["output:1", "output:3", "logged:2", "checkpoint:3"])
def test_a_durable_run_killed_then_run_again_writes_what_an_unbroken_run_does(
        reach, tmp_path, failpoint):
    whole = tmp_path / "whole"
    assert main(["run", *reach, "-D", str(whole)]) == 0
    out, state = tmp_path / "out", tmp_path / "state"
    assert _run_killed(reach, out, state, failpoint)
    assert main(["run", *reach, "-D", str(out), "--checkpoint-dir", str(state)]) == 0
    # (a temporary file the killed run left is gone: the files are those of an unbroken run)
    assert {n: (out / n).read_text() for n in os.listdir(out)} == \
        {n: (whole / n).read_text() for n in os.listdir(whole)}


def test_checkpoint_every_needs_a_checkpoint_dir(reach, capsys):
    assert main(["run", *reach, "-D", "-", "--checkpoint-every", "2"]) != 0
    assert "--checkpoint-every needs --checkpoint-dir DIR" in capsys.readouterr().err
