"""Soufflé's iteration counters (issue 41): ``.decl d = debug_delta(r)`` holds each row of ``r``
with the semi-naive iteration that first derived it, and ``recursive_iteration_cnt()`` is the
iteration evaluating a recursive rule (see diffflow/datalog/transform/iterations.py).

Every expected value comes from an independent computation: breadth-first search in Python
(the iteration of a reachable node is its distance from the start, in edges), or networkx's
shortest paths, or is worked out by hand in the comments.  Random update sequences compare
every epoch with them, at one partition and at two.
"""
from __future__ import annotations

import math
import random

import networkx as nx
import pytest

import diffflow as dd
from diffflow.datalog.passes import analyse, parse_program
from diffflow.datalog.syntax.errors import DatalogError
from tests.support.oracles import bfs_distances


def _error(source: str) -> DatalogError:
    with pytest.raises(DatalogError) as info:
        analyse(parse_program(source, "prog.dl"), source)
    return info.value


def test_soufflés_counter_program_counts_to_a_hundred_in_a_component():
    # Soufflé's tests/semantic/iteration_counter: R(0) is iteration 0, and iteration k derives
    # R(k) while k < 100, so R holds 0..99, each first derived in the iteration of its value
    program = dd.Program("""
        .comp c {
            .decl R(x: number)
            .decl R_debug = debug_delta(R)
            R(0).
            R(x + 1) :- R(x), recursive_iteration_cnt() < 100.
        }
        .init C = c
    """)
    program.commit()
    assert program.relation("C.R") == {(x,) for x in range(100)}
    assert program.relation("C.R_debug") == {(x, x) for x in range(100)}


REACH = """
    .decl e(x: number, y: number)
    .decl start(x: number)
    .decl reach(x: number)
    .decl reach_debug = debug_delta(reach)
    .decl near(x: number)
    reach(x) :- start(x).
    reach(y) :- reach(x), e(x, y).
    near(y) :- start(y).
    near(y) :- near(x), e(x, y), recursive_iteration_cnt() <= 2.
"""


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 2])
def test_iterations_are_breadth_first_distances_under_random_updates(partitions):
    rng = random.Random(41 + partitions)
    program = dd.Program(REACH, partitions=partitions)
    edges, starts = set(), set()
    for _epoch in range(25):
        add = {(rng.randrange(10), rng.randrange(10)) for _ in range(rng.randrange(1, 6))}
        gone = set(rng.sample(sorted(edges), min(len(edges), rng.randrange(4))))
        program.insert("e", sorted(add - edges))
        program.remove("e", sorted(gone - add))
        edges = (edges | add) - (gone - add)
        if rng.random() < 0.4:
            flip = rng.randrange(10)
            (program.remove if flip in starts else program.insert)("start", [(flip,)])
            starts ^= {flip}
        program.commit()
        distance = bfs_distances(edges, starts)
        assert program.relation("reach_debug") == set(distance.items())
        assert program.relation("reach") == {(x,) for x in distance}
        # near(y): derived in iteration k <= 2 at the latest, so at distance <= 2
        assert program.relation("near") == {(x,) for x, d in distance.items() if d <= 2}


def test_a_recursion_of_two_relations_counts_one_iteration_for_both():
    # odd(y) :- even(x), e(x, y) and back: the iteration of odd(v) is the length of the
    # shortest odd walk from 1 to v, breadth-first over (node, parity)
    program = dd.Program("""
        .decl e(x: number, y: number)
        .decl even(x: number)
        .decl odd(x: number)
        .decl even_at = debug_delta(even)
        .decl odd_at = debug_delta(odd)
        even(1).
        odd(y) :- even(x), e(x, y).
        even(y) :- odd(x), e(x, y).
    """, partitions=2)
    edges = {(1, 2), (2, 3), (3, 1), (3, 4), (4, 5)}
    program.insert("e", sorted(edges))
    program.commit()
    states = bfs_distances({((a, p), (b, 1 - p)) for a, b in edges for p in (0, 1)}, [(1, 0)])
    assert program.relation("even_at") == {(v, d) for (v, p), d in states.items() if p == 0}
    assert program.relation("odd_at") == {(v, d) for (v, p), d in states.items() if p == 1}
    # by hand: 1 -> 2 -> 3 -> 1 is a cycle of three, so 1 is odd at 3, 3 even at 2 and odd at 5
    assert (1, 3) in program.relation("odd_at") and (3, 5) in program.relation("odd_at")


@pytest.mark.slow
def test_two_atoms_of_the_recursion_take_the_later_iteration_plus_one():
    # t(x, z) :- t(x, y), t(y, z) doubles path lengths each iteration: a pair at distance d
    # (shortest path) is first derived in iteration ceil(log2(d))
    program = dd.Program("""
        .decl e(x: number, y: number)
        .decl t(x: number, y: number)
        .decl t_at = debug_delta(t)
        t(x, y) :- e(x, y).
        t(x, z) :- t(x, y), t(y, z).
    """)
    rng = random.Random(7)
    edges = set()
    for _epoch in range(6):
        add = {(rng.randrange(12), rng.randrange(12)) for _ in range(5)}
        gone = set(rng.sample(sorted(edges), min(len(edges), 3)))
        program.insert("e", sorted(add - edges))
        program.remove("e", sorted(gone - add))
        edges = (edges | add) - (gone - add)
        program.commit()
        # the shortest walk of one edge or more from x to z: a first edge, then a shortest path
        lengths = dict(nx.all_pairs_shortest_path_length(nx.DiGraph(sorted(edges))))
        walk = {}
        for x, y in edges:
            for z, d in lengths[y].items():
                walk[x, z] = min(walk.get((x, z), d + 1), d + 1)
        expected = {(x, z, math.ceil(math.log2(d))) for (x, z), d in walk.items()}
        assert program.relation("t_at") == expected


def test_a_relation_outside_any_recursion_is_all_iteration_zero():
    program = dd.Program("""
        .decl e(x: number)
        .decl r(x: number)
        .decl r_at = debug_delta(r)
        r(x + 1) :- e(x).
    """)
    program.insert("e", [(1,), (5,)])
    program.commit()
    assert program.relation("r_at") == {(2, 0), (6, 0)}


def test_the_counter_in_a_head_and_a_disjunction():
    # iteration k derives r(k, k * 10) for k <= 3, through either branch
    program = dd.Program("""
        .decl r(x: number, y: unsigned)
        r(0, 0).
        r(x + 1, recursive_iteration_cnt() * 10) :- r(x, _), (x < 2 ; x = 2).
    """)
    program.commit()
    assert program.relation("r") == {(0, 0), (1, 10), (2, 20), (3, 30)}


# -- what counting cannot mean: located errors -------------------------------------------

@pytest.mark.parametrize("source, at, words", [
    (".decl e(x: number)\n.decl r(x: number)\nr(x) :- e(x), recursive_iteration_cnt() < 3.",
     (3, 15), "recursive_iteration_cnt() in a rule that is not recursive"),
    (".decl r(x: number)\nr(1).\nr(x) :- r(x).\n.decl s(x: number)\n"
     "r(x) :- s(x), recursive_iteration_cnt() < 3.",
     (5, 15), "recursive_iteration_cnt() in a rule that is not recursive"),
    (".decl r(x: number)\n.decl d = debug_delta(q)", (2, 7), "debug_delta(q): 'q' is no relation"),
    (".decl r(x: number, y: number) eqrel\n.decl d = debug_delta(r)\nr(1, 2).\n"
     "r(x, y) :- r(y, x).", (1, 7), "cannot have 'eqrel'"),
    (".decl r(x: number)\n.input r\n.decl d = debug_delta(r)\nr(x + 1) :- r(x), x < 5.",
     (2, 8), "cannot have .input"),
    (".decl r(x: number)\n.decl d = debug_delta(r)\nr(1).\n"
     "r(n) :- r(x), n = count : { r(_) }, n < x.", (4, 19),
     "an aggregate over a relation of its own recursion"),
])
def test_what_counting_cannot_mean_is_a_located_error(source, at, words):
    error = _error(source)
    assert words in error.message
    assert (error.line, error.column) == at


def test_debug_delta_and_the_counter_are_words_only_there():
    program = dd.Program(".decl debug_delta(x: number)\ndebug_delta(1).\n"
                         ".decl recursive_iteration_cnt(x: number)\n"
                         "recursive_iteration_cnt(x) :- debug_delta(x).")
    program.commit()
    assert program.relation("recursive_iteration_cnt") == {(1,)}
