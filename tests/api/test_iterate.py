"""Loops: iterate, nested loops, mutual recursion, progress, the round limit, compaction."""
import re
from collections import Counter

import pytest

import diffflow as dd
from tests.support.helpers import check_traces, drive

# every loop test here runs with compiled rounds forced on and off (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("compiled_rounds_both_ways")


def reach_oracle(state):
    edges = {r for r, m in state["edges"].items() if m > 0}
    roots = {r[0] for r, m in state["roots"].items() if m > 0}
    seen, todo = set(roots), list(roots)
    while todo:
        n = todo.pop()
        for a, b in edges:
            if a == n and b not in seen:
                seen.add(b)
                todo.append(b)
    return Counter({(n,): 1 for n in seen})


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(8))
def test_iterate_reachability_random(seed, parts):
    def build(flow, i):
        edges, roots = i["edges"], i["roots"]
        return roots.iterate(lambda r: roots.concat(
            r.join(edges, left_on="node", right_on="src").select(node="dst")).distinct())

    drive({"edges": ["src", "dst"], "roots": ["node"]}, build, reach_oracle, seed=seed,
          parts=parts, domain=8, batch=8, epochs=8)


def parity_oracle(state):
    edges = {r for r, m in state["edges"].items() if m > 0}
    start = {r[0] for r, m in state["start"].items() if m > 0}
    seen = {(n, 0) for n in start}
    todo = list(seen)
    while todo:
        n, p = todo.pop()
        for a, b in edges:
            if a == n and (b, 1 - p) not in seen:
                seen.add((b, 1 - p))
                todo.append((b, 1 - p))
    return Counter({(n, p): 1 for n, p in seen})


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(6))
def test_mutually_recursive_variables(seed, parts):
    def build(flow, i):
        edges, start = i["edges"], i["start"]
        step = lambda c: c.join(edges, left_on="node", right_on="src").select(node="dst")
        with flow.loop("parity") as loop:
            even = loop.variable(start)
            odd = loop.variable(columns=["node"])
            even.set(start.concat(step(odd)).distinct())
            odd.set(step(even).distinct())
        return even.leave().select("node", parity=0).concat(
            odd.leave().select("node", parity=1))

    drive({"edges": ["src", "dst"], "start": ["node"]}, build, parity_oracle, seed=seed,
          parts=parts, domain=7, batch=7, epochs=7)


def pairs_within_oracle(state):
    """For every node n: the nodes reachable from n, via a nested loop in the test."""
    edges = {r for r, m in state["edges"].items() if m > 0}
    nodes = {x for e in edges for x in e}
    out = Counter()
    for n in nodes:
        seen, todo = {n}, [n]
        while todo:
            x = todo.pop()
            for a, b in edges:
                if a == x and b not in seen:
                    seen.add(b)
                    todo.append(b)
        out[(n, len(seen))] += 1
    return out


@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_nested_loops(seed, parts):
    """An outer loop whose body runs an inner loop; times are (epoch, outer, inner)."""
    def build(flow, i):
        edges = i["edges"]
        nodes = edges.select(n="src").concat(edges.select(n="dst")).distinct()

        def outer(pairs):  # pairs (n, m): m reachable from n; grows by one inner closure
            inner_start = pairs.select("n", "m")

            def inner(p):
                return inner_start.concat(
                    p.join(edges, left_on="m", right_on="src").select("n", m="dst")).distinct()

            closed = inner_start.iterate(inner, name="inner")
            return closed.concat(nodes.select(n="n", m="n")).distinct()

        start = nodes.select(n="n", m="n")
        reach = start.iterate(outer, name="outer")
        return reach.aggregate(by=["n"], size=dd.count())

    drive({"edges": ["src", "dst"]}, build, pairs_within_oracle, seed=seed, parts=parts,
          domain=6, batch=6, epochs=6)


def test_many_epochs_in_flight_through_a_loop():
    def build():
        flow = dd.Dataflow()
        edges = flow.input("edges", ["src", "dst"])
        roots = flow.input("roots", ["node"])
        out = roots.iterate(lambda r: roots.concat(
            r.join(edges, left_on="node", right_on="src").select(node="dst")).distinct()).output()
        return flow, edges, roots, out

    steps = [([(1, 2), (2, 3)], [1]), ([(3, 4)], []), ([(4, 1), (5, 6)], [5])]
    f1, e1, r1, o1 = build()
    f2, e2, r2, o2 = build()
    for edges, roots in steps:
        for f, e, r in [(f1, e1, r1), (f2, e2, r2)]:
            e.insert(edges)
            r.insert(roots)
        f1.advance()
        f2.advance(run=False)
    f2.run()  # three epochs through the loop at once
    assert o1.snapshot() == o2.snapshot() == {(n,): 1 for n in [1, 2, 3, 4, 5, 6]}
    assert o1.changes() == o2.changes()


def test_non_convergence_names_the_loop_and_stays_usable():
    flow = dd.Dataflow()
    start = flow.input("start", ["n"])
    seeds = flow.input("seeds", ["n"])
    counting = start.iterate(  # the loop that never settles
        lambda v: start.concat(v.select(n=dd.col("n") + 1)).distinct(), max_rounds=25,
        name="counter")
    out = counting.concat(seeds).output()
    start.insert([0])
    with pytest.raises(dd.NonConvergenceError) as err:
        flow.advance()
    message = str(err.value)
    assert "loop 'counter'" in message and "25 rounds" in message
    assert re.search(r"test_iterate.py:\d+", message), message
    # fix the input: the dataflow keeps working and is exact again
    start.remove([0])
    seeds.insert([7])
    flow.advance()
    assert out.snapshot() == {(7,): 1}
    check_traces(flow)


@pytest.mark.slow
def test_loop_traces_stay_bounded_over_many_epochs():
    flow = dd.Dataflow()
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    out = roots.iterate(lambda r: roots.concat(
        r.join(edges, left_on="node", right_on="src").select(node="dst")).distinct()).output()
    edges.insert([(i, i + 1) for i in range(10)])
    roots.insert([0])
    flow.advance()
    for epoch in range(300):
        edge = (3, 100 + epoch % 7)
        edges.insert([edge])
        flow.advance()
        edges.remove([edge])
        flow.advance()
    assert out.snapshot() == {(i,): 1 for i in range(11)}
    total = sum(flow._runtime.trace_sizes())
    assert total < 400, f"traces hold {total} updates after 600 epochs"


def test_variable_errors():
    flow = dd.Dataflow()
    a = flow.input("a", ["x"])
    loop = flow.loop("l")
    v = loop.variable(a)
    with pytest.raises(dd.GraphError, match="do not match"):
        v.set(a.select(x="x", y="x"))
    with pytest.raises(dd.GraphError, match="output\\(\\) of a collection inside loop 'l'"):
        v.output()
    with pytest.raises(dd.GraphError, match="leave\\(\\) before set\\(\\)"):
        v.leave()
    with pytest.raises(dd.GraphError, match="never set"):
        flow.advance()


def test_a_definition_that_concatenates_its_variable_settles_when_its_value_does():
    # x = x ∪ (step(x) − x): an update of x and its retraction reach the feedback in
    # separate chunks; unconsolidated they went round the loop together until max_seen
    flow = dd.Dataflow()
    edge, root = flow.input("edge", ["v", "u"]), flow.input("root", ["v"])
    seen = []
    loop = flow.loop(max_rounds=500)
    x = loop.variable(columns=["a", "b"])
    x.flat_map(lambda row: seen.append(row) or [])  # sees every update, unconsolidated
    step = root.select(a="v", b="v").concat(
        x.join(edge, left_on="b", right_on="v").select(a="b", b="u")).distinct()
    x.set(x.concat(step.antijoin(x, on=["a", "b"])))
    out = x.leave().output()
    edge.insert([(2, 2), (4, 2), (4, 4), (2, 3), (2, 1)])
    root.insert([(2,), (1,), (4,)])
    flow.advance()
    assert set(out.snapshot()) == {(1, 1), (2, 1), (2, 2), (2, 3), (4, 2), (4, 4)}
    assert len(seen) < 50, len(seen)  # 6 rows settle in 3 seen; unconsolidated: ~6000
