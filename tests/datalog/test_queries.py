"""The Datalog query library (``queries/``) against the from-scratch oracles of ``oracles.py``.

* the expected files are what the oracles compute (they are never produced by diffflow), and
  every query folder is complete: prog.dl, one facts file per ``.input``, one expected file
  per ``.output``;
* ``diffflow run prog.dl -F facts -D out`` writes exactly the expected files, byte for byte
  once lines are sorted;
* through ``dd.Program``: seeded random fact sets changed by random inserts and removes over
  several commits, on 1 and 3 partitions -- after every commit ``relation()`` equals the oracle
  on the accumulated facts, and ``changes()`` equals the difference from the previous commit;
* ``load_facts`` followed by updates, re-inserting facts already present, and the two
  min-through-recursion programs retracting stale minima when the graph shrinks.
"""
from __future__ import annotations

import os
import random
import re

import pytest

import diffflow as dd
from tests.support.oracles import QUERIES, QUERIES_DIR, expected_files, format_relation, read_facts

NAMES = sorted(QUERIES)
SEEDS = [1, 2, 3]
PARTITIONS = [1, 3]
COMMITS = 5


def _source(q):
    with open(os.path.join(q.dir, "prog.dl"), encoding="utf-8") as f:
        return f.read()


def _program(q, partitions):
    return dd.Program(_source(q), partitions=partitions)


def _diff_message(got, want):
    missing = sorted(want - got)
    extra = sorted(got - want)
    return f"missing {missing[:20]}{' ...' if len(missing) > 20 else ''}; " \
           f"extra {extra[:20]}{' ...' if len(extra) > 20 else ''}"


def _expected_changes(before, after):
    return sorted([(t, 1) for t in after - before] + [(t, -1) for t in before - after])


def _check_commit(p, q, facts, previous, where):
    """Compare every output relation of ``p`` with the oracle on ``facts``; check changes()
    against ``previous`` (the outputs at the last commit).  Returns the oracle outputs."""
    want = q.oracle(facts)
    for rel in sorted(q.outputs):
        got = p.relation(rel)
        assert isinstance(got, set), f"{where}: relation({rel!r}) is a {type(got).__name__}"
        for row in got:
            assert isinstance(row, tuple) and len(row) == len(q.outputs[rel]), (where, rel, row)
            for v, typ in zip(row, q.outputs[rel]):
                assert type(v) is (int if typ == "number" else str), \
                    f"{where}: {rel} row {row!r} holds a {type(v).__name__}"
        assert got == want[rel], f"{where}: {rel}: {_diff_message(got, want[rel])}"
        changes = p.changes(rel)
        assert changes == _expected_changes(previous[rel], want[rel]), \
            f"{where}: changes({rel!r}) = {changes}, " \
            f"expected {_expected_changes(previous[rel], want[rel])}"
    return want


def _facts_text(facts):
    return "; ".join(f"{rel}={sorted(rows)}" for rel, rows in sorted(facts.items()))


# --------------------------------------------------------------------------- the library itself

@pytest.mark.parametrize("name", NAMES)
def test_query_folder_is_complete(name):
    q = QUERIES[name]
    src = _source(q)
    inputs = set(re.findall(r"^\s*\.input\s+(\w+)", src, re.M))
    outputs = set(re.findall(r"^\s*\.output\s+(\w+)", src, re.M))
    assert inputs == set(q.inputs)
    assert outputs == set(q.outputs)
    assert src.lstrip().startswith("//"), "prog.dl starts with a header comment"
    facts = sorted(os.listdir(os.path.join(q.dir, "facts")))
    assert facts == sorted(rel + ".facts" for rel in q.inputs)
    n_facts = sum(len(rows) for rows in read_facts(q).values())
    assert 10 <= n_facts <= 60
    expected = sorted(os.listdir(os.path.join(q.dir, "expected")))
    assert expected == sorted(rel + ".csv" for rel in q.outputs)
    if q.recursive_min:
        assert "Soufflé rejects" in src


@pytest.mark.parametrize("name", NAMES)
def test_expected_files_come_from_the_oracle(name):
    q = QUERIES[name]
    for fname, text in expected_files(q).items():
        with open(os.path.join(q.dir, "expected", fname), encoding="utf-8", newline="") as f:
            assert f.read() == text, f"{name}/expected/{fname}: run tests/support/oracles.py --write-expected"
    # the expected outputs are not trivial
    assert all(rows for rows in q.oracle(read_facts(q)).values())


def test_readme_lists_every_query():
    with open(os.path.join(QUERIES_DIR, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for name in NAMES:
        assert f"`{name}`" in readme or f"[{name}]" in readme, name


# --------------------------------------------------------------------------- the CLI

@pytest.mark.parametrize("jobs", [None, 3])
@pytest.mark.parametrize("name", NAMES)
def test_cli_output_matches_expected(name, jobs, tmp_path):
    from diffflow.cli import main
    q = QUERIES[name]
    out = tmp_path / "out"
    out.mkdir()
    args = ["run", os.path.join(q.dir, "prog.dl"), "-F", os.path.join(q.dir, "facts"),
            "-D", str(out)]
    rc = main(args + (["-j", str(jobs)] if jobs else []))
    assert rc == 0
    expected_dir = os.path.join(q.dir, "expected")
    assert sorted(os.listdir(out)) == sorted(os.listdir(expected_dir))
    for fname in sorted(os.listdir(expected_dir)):
        with open(os.path.join(expected_dir, fname), "rb") as f:
            want = f.read()
        with open(out / fname, "rb") as f:
            got = f.read()
        got_sorted = b"".join(sorted(got.splitlines(keepends=True)))
        assert got_sorted == want, f"{name}/{fname}: got\n{got.decode(errors='replace')}"


# --------------------------------------------------------------------------- random updates

def _sorted(rows):
    return sorted(rows)


def _random_run(name, seed, partitions, scale=None, commits=COMMITS):
    q = QUERIES[name]
    rng = random.Random(f"{name}/{seed}")
    scale = 1 + seed % 3 if scale is None else scale
    p = _program(q, partitions)
    facts = {rel: set() for rel in q.inputs}
    previous = {rel: set() for rel in q.outputs}
    log = []
    for step in range(commits):
        fresh = q.generate(rng, scale)
        for rel in sorted(q.inputs):
            present = _sorted(facts[rel])
            if step == 0:
                drop = []
            else:
                # the last commit removes more, to shrink results through recursion
                prob = 0.6 if step == commits - 1 else 0.3
                drop = [t for t in present if rng.random() < prob]
            candidates = [t for t in _sorted(fresh[rel]) if t not in facts[rel]]
            k = len(candidates) if step == 0 else rng.randrange(0, 4)
            add = rng.sample(candidates, min(k, len(candidates)))
            if drop:
                p.remove(rel, drop)
                facts[rel] -= set(drop)
            if add:
                p.insert(rel, add)
                facts[rel] |= set(add)
            log.append(f"commit {step}: {rel} +{sorted(add)} -{drop}")
        p.commit()
        where = (f"{name} seed={seed} partitions={partitions} commit={step}\n"
                 f"facts: {_facts_text(facts)}\nupdates:\n  " + "\n  ".join(log) + "\n")
        previous = _check_commit(p, q, facts, previous, where)
    return previous


@pytest.mark.slow
@pytest.mark.parametrize("partitions", PARTITIONS)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", NAMES)
def test_random_updates_match_oracle(name, seed, partitions):
    final = _random_run(name, seed, partitions)
    assert set(final) == set(QUERIES[name].outputs)


def test_random_runs_are_not_trivial():
    """The generators produce non-empty results for most runs (else the tests above are weak)."""
    for name in NAMES:
        q = QUERIES[name]
        nonempty = 0
        for seed in SEEDS:
            rng = random.Random(f"{name}/{seed}")
            out = q.oracle(q.generate(rng, 1 + seed % 3))
            nonempty += sum(1 for rows in out.values() if rows)
        assert nonempty >= len(q.outputs) * len(SEEDS) // 2, name


# --------------------------------------------------------------------------- load_facts and more

@pytest.mark.parametrize("name", NAMES)
def test_load_facts_then_update(name):
    q = QUERIES[name]
    p = _program(q, 2)
    p.load_facts(os.path.join(q.dir, "facts"))
    p.commit()
    facts = read_facts(q)
    where = f"{name} load_facts"
    outs = _check_commit(p, q, facts, {rel: set() for rel in q.outputs}, where)
    for rel in q.outputs:
        with open(os.path.join(q.dir, "expected", rel + ".csv"), encoding="utf-8") as f:
            assert format_relation(p.relation(rel)) == f.read()
    # remove every other fact of every input, then put them back
    removed = {rel: _sorted(rows)[::2] for rel, rows in facts.items()}
    for rel, rows in removed.items():
        if rows:
            p.remove(rel, rows)
            facts[rel] -= set(rows)
    p.commit()
    outs = _check_commit(p, q, facts, outs, f"{name} after removing {removed}")
    for rel, rows in removed.items():
        if rows:
            p.insert(rel, rows)
            facts[rel] |= set(rows)
    p.commit()
    _check_commit(p, q, facts, outs, f"{name} after re-inserting {removed}")


@pytest.mark.parametrize("name", ["transitive_closure", "sssp", "andersen"])
def test_set_semantics_of_inserts_and_removes(name):
    q = QUERIES[name]
    p = _program(q, 1)
    facts = read_facts(q)
    for rel, rows in facts.items():
        p.insert(rel, _sorted(rows))
    p.commit()
    none = {rel: set() for rel in q.outputs}
    outs = _check_commit(p, q, facts, none, f"{name} initial")
    for rel, rows in facts.items():
        p.insert(rel, _sorted(rows)[:3])           # already present: set semantics
    p.commit()
    outs = _check_commit(p, q, facts, outs, f"{name} after re-inserting present facts")
    for rel, rows in facts.items():
        p.remove(rel, _sorted(rows)[:3])           # one remove takes them out
        facts[rel] -= set(_sorted(rows)[:3])
    p.commit()
    outs = _check_commit(p, q, facts, outs, f"{name} after removing the re-inserted facts")
    absent = _sorted(read_facts(q)[sorted(q.inputs)[0]])[:2]
    p.remove(sorted(q.inputs)[0], absent)          # no longer present: nothing to remove
    p.commit()
    _check_commit(p, q, facts, outs, f"{name} after removing absent facts {absent}")


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_components_split_when_an_edge_goes(partitions):
    """min through recursion must retract a label that is no longer reachable."""
    q = QUERIES["connected_components"]
    p = _program(q, partitions)
    p.insert("edge", [(1, 2), (2, 3), (3, 4), (4, 5)])
    p.insert("vertex", [(9,)])
    p.commit()
    assert p.relation("cc") == {(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (9, 9)}
    assert p.relation("components") == {(2,)}
    p.changes("cc")
    p.remove("edge", [(2, 3)])
    p.commit()
    assert p.relation("cc") == {(1, 1), (2, 1), (3, 3), (4, 3), (5, 3), (9, 9)}
    assert p.changes("cc") == [((3, 1), -1), ((3, 3), 1), ((4, 1), -1), ((4, 3), 1),
                               ((5, 1), -1), ((5, 3), 1)]
    assert p.relation("component_size") == {(1, 2), (3, 3), (9, 1)}
    assert p.relation("components") == {(3,)}
    p.remove("edge", [(1, 2), (3, 4), (4, 5)])
    p.remove("vertex", [(9,)])
    p.commit()
    assert p.relation("cc") == set()
    assert p.relation("component_size") == set()
    assert p.relation("components") == {(0,)}


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_shortest_paths_grow_back(partitions):
    """Raising a weight and cutting an edge make distances grow again, around a cycle."""
    q = QUERIES["sssp"]
    p = _program(q, partitions)
    p.insert("source", [(0,)])
    p.insert("edge", [(0, 1, 1), (1, 2, 1), (2, 1, 1), (2, 3, 1), (0, 3, 10)])
    p.commit()
    assert p.relation("dist") == {(0, 0), (1, 1), (2, 2), (3, 3)}
    p.remove("edge", [(0, 1, 1)])
    p.insert("edge", [(0, 1, 5)])
    p.commit()
    assert p.relation("dist") == {(0, 0), (1, 5), (2, 6), (3, 7)}
    p.remove("edge", [(0, 1, 5)])
    p.commit()
    assert p.relation("dist") == {(0, 0), (3, 10)}
    assert p.relation("unreached") == {(1,), (2,)}
    p.remove("source", [(0,)])
    p.insert("source", [(2,)])
    p.commit()
    assert p.relation("dist") == {(2, 0), (1, 1), (3, 1)}
    assert p.relation("unreached") == {(0,)}
