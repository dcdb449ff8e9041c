"""Soufflé's provenance command loop as ``souffle`` runs it: opened by
``.pragma "provenance" "explain"`` alone, its ``query`` command, and proofs printed
character for character as Soufflé prints them (small programs of the shapes of Soufflé's
``tests/provenance``)."""
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
