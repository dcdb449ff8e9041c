"""Small fact files read in plain Python (``values.small_facts``) give the facts pyarrow's
reader gives, or the same error; and a small ``diffflow run`` imports no pyarrow."""
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import diffflow as dd
from diffflow.datalog.values.facts import read_facts
from diffflow.datalog.values.small_facts import read_fact_rows
from tests.support.paths import QUERIES, REPO
import pytest

_FIELDS = {
    "number": st.integers(-(2**31), 2**31 - 1).map(str)
    | st.sampled_from(["-0", "007", "+5", " 7", "0x1F", "", "2147483648", "-2147483649", "1.5",
                       "٣"]),
    "unsigned": st.integers(0, 2**32 - 1).map(str)
    | st.sampled_from(["-1", "4294967296", "0b101", "+3", "00"]),
    "symbol": st.text(st.characters(blacklist_characters="\t\n\r", blacklist_categories=("Cs",)),
                      max_size=5),
    "float": st.sampled_from(["1.5", "-2", "inf", "0x1p3", "-0x1p3100"]),  # (past a double: -inf)
}


@st.composite
def _files(draw):
    types = draw(st.lists(st.sampled_from(["number", "unsigned", "symbol", "symbol", "float"]),
                          min_size=1, max_size=3))
    lines = draw(st.lists(st.tuples(*[_FIELDS[t] for t in types]).map("\t".join), max_size=12))
    if draw(st.booleans()) and lines:  # a line with a wrong field count
        lines.insert(draw(st.integers(0, len(lines))), "1\t2\t3\t4")
    ending = draw(st.sampled_from(["\n", "\r\n", ""]))
    return types, ending.join(lines) + (ending if lines else ""), draw(st.booleans())


def _outcome(program, read, path, relation, header):
    try:
        return program.encode("r", read(path, relation, headers=header)).tolist()
    except (dd.DatalogError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(_files())
def test_the_plain_reader_agrees_with_pyarrows(tmp_path_factory, case):
    types, text, header = case
    decl = ", ".join(f"a{i}: {t}" for i, t in enumerate(types))
    program = dd.Program(f".decl r({decl})\n.input r")
    relation = program.relations["r"]
    path = str(tmp_path_factory.mktemp("facts") / "r.facts")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    assert _outcome(program, read_fact_rows, path, relation, header) == \
        _outcome(program, read_facts, path, relation, header)


@pytest.mark.slow
def test_a_small_run_imports_no_pyarrow(tmp_path):
    folder = QUERIES / "transitive_closure"
    code = ("import sys\n"
            "from diffflow.cli import main\n"
            f"main(['run', {str(folder / 'prog.dl')!r}, '-F', {str(folder / 'facts')!r},"
            f" '-D', {str(tmp_path)!r}])\n"
            "print(sorted(m for m in ('pyarrow', 'pandas', 'numba') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"
    assert sorted(os.listdir(tmp_path)) == ["cyclic.csv", "path.csv"]
