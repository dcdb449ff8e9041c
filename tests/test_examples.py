"""Every example in ``examples/`` runs as a user runs it (a fresh process, from another
folder) and prints the right answer, checked against an independent computation."""
from __future__ import annotations

import gzip
import pathlib
import subprocess
import sys

import networkx as nx
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def run(args, cwd) -> str:
    """stdout of ``args`` run from ``cwd``; a failure shows its stderr."""
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def diffflow_command() -> str:
    """The ``diffflow`` console script the install made (next to this Python)."""
    script = pathlib.Path(sys.executable).parent / "diffflow"
    assert script.exists(), "diffflow is not installed: pip install -e \".[test]\""
    return str(script)


def run_example(name, tmp_path, *args) -> str:
    return run([sys.executable, str(EXAMPLES / name), *args], tmp_path)


@pytest.mark.slow
def test_quickstart(tmp_path):
    out = run_example("quickstart.py", tmp_path)
    # follows 1->2, 3->2, 2->1: bob (2) has two followers; then 3 moves from bob to ada
    assert "epoch 0, popular: [('bob', 2)]" in out
    assert "epoch 1, popular: [('ada', 2)]" in out
    assert out.splitlines()[-3:] == ["  ('bob', 2)  epoch 0  +1", "  ('ada', 2)  epoch 1  +1",
                                     "  ('bob', 2)  epoch 1  -1"]


@pytest.mark.slow
def test_explain(tmp_path):
    out = run_example("explain.py", tmp_path)
    # the shortest route first (2 flights), then the only one left (4 flights)
    assert "rests on: [('DXB', 'SYD'), ('LHR', 'DXB')]" in out
    assert out.splitlines()[-1] == ("after DXB -> SYD is cancelled, it rests on: [('JFK', 'SFO'), "
                                    "('LHR', 'JFK'), ('NRT', 'SYD'), ('SFO', 'NRT')]")
    assert 'route("LHR", "SYD")' in out


def component_summaries(updates: int) -> list[str]:
    """What examples/components.py should print, computed with networkx."""
    with gzip.open(ROOT / "data/graphs/p2p-Gnutella08.txt.gz", "rt") as lines:
        edges = np.array([x.split() for x in lines if not x.startswith("#")], np.int64)
    order = np.random.default_rng(seed=1).permutation(len(edges))
    kept = np.ones(len(edges), bool)
    lines = []
    for batch in [None, *np.array_split(order[:100 * updates], updates)]:
        if batch is not None:
            kept[batch] = False
        graph = nx.Graph()
        graph.add_edges_from(map(tuple, edges[kept]))
        sizes = [len(c) for c in nx.connected_components(graph)]
        lines.append(f"{sum(sizes):,} hosts in {len(sizes):,} components (largest {max(sizes):,})")
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 2])
def test_components(tmp_path, partitions):
    out = run_example("components.py", tmp_path, "--updates", "4", "--partitions", str(partitions))
    expected = component_summaries(4)
    printed = out.splitlines()
    assert len(printed) == 5
    assert printed[0] == f"20,777 links: {expected[0]}"
    for line, summary in zip(printed[1:], expected[1:]):
        assert line.startswith(f"100 links removed: {summary}, "), line


def test_every_example_is_tested():
    """A new example file needs a test here (it is what a new user runs first)."""
    tested = {"quickstart.py", "explain.py", "components.py", "flights"}  # flights: the main job
    present = {p.name for p in EXAMPLES.iterdir() if p.suffix == ".py" or p.is_dir()}
    assert present - {"__pycache__"} == tested


FLIGHTS = EXAMPLES / "flights"


def fewest_flights(flights: set, home: str) -> dict:
    """Breadth-first hops from ``home`` (at most 6, as the program bounds them)."""
    hops, frontier = {home: 0}, [home]
    for n in range(1, 7):
        frontier = [b for a, b in sorted(flights) if a in frontier and b not in hops]
        hops.update({b: n for b in frontier})
    return hops


def read_facts(path) -> set:
    return {tuple(line.split("\t")) for line in path.read_text().splitlines() if line}


def soufflé_blocks(out: str) -> dict:
    """``{title: rows}`` of what ``-D -`` printed: Soufflé's blocks of a title, maybe the
    attribute names, then rows between ``=`` rules."""
    blocks, lines = {}, out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("-----") and i + 1 < len(lines):
            title = lines[i + 1]
            start = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("====="))
            end = next(j for j in range(start + 1, len(lines)) if lines[j].startswith("====="))
            blocks[title] = [tuple(row.split("\t")) for row in lines[start + 1:end]]
    return blocks


@pytest.mark.slow
def test_flights_main_job(tmp_path):
    """The README's first command: the program's outputs, then one step's changes."""
    out = run([diffflow_command(), "run", str(FLIGHTS / "flights.dl"), "-F", str(FLIGHTS / "facts"),
               "-D", "-", "--updates", str(FLIGHTS / "updates")], tmp_path)
    flights = read_facts(FLIGHTS / "facts/flight.facts")
    (home,), = read_facts(FLIGHTS / "facts/home.facts")
    airports = {a for pair in flights for a in pair}
    after = flights - read_facts(FLIGHTS / "updates/1/flight.remove.facts") \
        | read_facts(FLIGHTS / "updates/1/flight.insert.facts")
    before_hops, after_hops = fewest_flights(flights, home), fewest_flights(after, home)
    blocks = soufflé_blocks(out)
    assert sorted(blocks["fewest_flights"]) == sorted((a, str(n)) for a, n in before_hops.items())
    assert sorted(blocks["unreachable"]) == sorted((a,) for a in airports - set(before_hops))
    changes = sorted(blocks["fewest_flights step 1 changes"])
    expected = sorted([(a, str(n), "+1") for a, n in after_hops.items() if before_hops.get(a) != n]
                      + [(a, str(n), "-1") for a, n in before_hops.items() if after_hops.get(a) != n])
    assert changes == expected and expected  # the step changes something, and only that
    assert sorted(blocks["fewest_flights after step 1"]) == \
        sorted((a, str(n)) for a, n in after_hops.items())
    assert sorted(blocks["unreachable after step 1"]) == sorted((a,) for a in airports - set(after_hops))
