"""Shared test machinery: random update sequences and a from-scratch oracle.

``drive`` feeds the same random inserts and removes to a diffflow dataflow
and to plain Python multisets, and after every epoch compares the dataflow's
``snapshot()`` with the oracle recomputed from scratch on the accumulated
input.  It also checks that ``changes()`` adds up to the snapshot and that
every trace in the runtime satisfies its invariants.
"""
from __future__ import annotations

import random
from collections import Counter

import diffflow as dd
from diffflow.operators.registry import operator_class

# Which runtime the shared machinery builds: "local" unless a suite asks for another
# (DIFFFLOW_TEST_RUNTIME moves every local dataflow, see conftest.py); RUNTIME_OPTIONS may
# carry e.g. the SparkSession.
RUNTIME_OPTIONS: dict = {"runtime": "local"}


def new_flow(parts: int) -> "dd.Dataflow":
    """A Dataflow on the runtime the current suite tests."""
    return dd.Dataflow(partitions=parts, **RUNTIME_OPTIONS)


def clean(counter) -> dict:
    """A multiset without zero entries, as a plain dict."""
    return {k: v for k, v in counter.items() if v != 0}


def check_traces(flow) -> None:
    """Assert the invariants of every spine held by the runtime."""
    traced = [n for n in flow.graph.nodes if operator_class(n.kind).compaction is not None]
    assert flow._runtime.check_traces() == len(traced) * flow.partitions


class Case:
    """One randomized run: inputs, a query under test, and its oracle."""

    def __init__(self, inputs: dict, build, oracle, parts: int):
        self.flow = new_flow(parts)
        self.handles = {name: self.flow.input(name, cols) for name, cols in inputs.items()}
        self.output = build(self.flow, self.handles).output()
        self.oracle = oracle
        self.state = {name: Counter() for name in inputs}
        self.accumulated_changes = Counter()

    def apply(self, name, rows, diffs):
        self.handles[name].update(rows, diffs)
        for row, d in zip(rows, diffs):
            self.state[name][row] += d

    def advance_and_check(self, epoch):
        self.flow.advance()
        expected = clean(self.oracle({k: clean(v) for k, v in self.state.items()}))
        got = self.output.snapshot()
        assert got == expected, f"epoch {epoch}: got {got}, expected {expected}"
        for row, e, d in self.output.changes():
            assert e <= epoch
            self.accumulated_changes[row] += d
        assert clean(self.accumulated_changes) == got, "changes() do not add up to the snapshot"
        check_traces(self.flow)

    def close(self):
        self.flow.close()


def random_rows(rng: random.Random, columns, domain: int, count: int):
    return [tuple(rng.randrange(domain) for _ in columns) for _ in range(count)]


def drive(inputs, build, oracle, *, seed, parts, epochs=8, domain=5, batch=6,
          allow_negative=False):
    """Run one random case; inputs maps names to int column lists."""
    rng = random.Random(seed)
    case = Case(inputs, build, oracle, parts)
    for epoch in range(epochs):
        for name, cols in inputs.items():
            rows, diffs = [], []
            present = [r for r, m in case.state[name].items() if m > 0]
            for _ in range(rng.randrange(batch + 1)):
                if present and rng.random() < 0.4:
                    rows.append(rng.choice(present))
                    diffs.append(-1)
                elif allow_negative and rng.random() < 0.1:
                    rows.append(random_rows(rng, cols, domain, 1)[0])
                    diffs.append(rng.choice([-2, -1, 2]))
                else:
                    rows.append(random_rows(rng, cols, domain, 1)[0])
                    diffs.append(1)
            # keep multiplicities non-negative unless negative ones are allowed
            if not allow_negative:
                tally = Counter(case.state[name])
                ok_rows, ok_diffs = [], []
                for r, d in zip(rows, diffs):
                    if tally[r] + d >= 0:
                        tally[r] += d
                        ok_rows.append(r)
                        ok_diffs.append(d)
                rows, diffs = ok_rows, ok_diffs
            case.apply(name, rows, diffs)
        case.advance_and_check(epoch)
    case.close()
    return case


def run_datalog(tmp_path, source: str, facts: dict | None = None) -> dict:
    """``diffflow run`` of ``source`` (fact files from ``facts``: ``{relation: text}``) into
    ``tmp_path/out``; ``{output relation: its sorted lines}``."""
    from diffflow.cli import main

    (tmp_path / "facts").mkdir(exist_ok=True)
    for name, text in (facts or {}).items():
        (tmp_path / "facts" / f"{name}.facts").write_text(text)
    program = tmp_path / "prog.dl"
    program.write_text(source)
    assert main(["run", str(program), "-F", str(tmp_path / "facts"), "-D",
                 str(tmp_path / "out")]) == 0
    return {p.name[:-4]: sorted(p.read_text().splitlines())
            for p in (tmp_path / "out").iterdir()}
