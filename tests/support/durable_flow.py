"""The durable tests' dataflow and its seeded epochs (tests/runtime/test_durable.py, the
kill -9 loops of test_durable_faults.py and the process they kill, durable_victim.py).

Kept apart from the tests, without pytest, so the victim -- started twice per fault run --
imports only diffflow.
"""
from __future__ import annotations

import random

import diffflow as dd


def build(partitions=1, runtime="local", **kw):
    """Words counted, and reachability over edges (a loop): ``(flow, inputs, outputs)``."""
    flow = dd.Dataflow(partitions=partitions, runtime=runtime, **kw)
    words = flow.input("words", [("w", str), ("n", int)])
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    totals = words.aggregate(by=["w"], total=dd.sum("n")).output()
    reach = roots.iterate(lambda r: roots.concat(
        r.join(edges, left_on="node", right_on="src").select(node="dst")).distinct()).output()
    return flow, (words, edges, roots), (totals, reach)


def epochs(seed: int, count: int) -> list:
    """Seeded epochs of inserts and removes: ``[(words, edges, roots) changes]``."""
    rng = random.Random(seed)
    held = {"words": [], "edges": [], "roots": []}
    out = []
    for _ in range(count):
        batch = {}
        for name, make in (("words", lambda: (rng.choice("abcde"), rng.randrange(5))),
                           ("edges", lambda: (rng.randrange(8), rng.randrange(8))),
                           ("roots", lambda: (rng.randrange(8),))):
            add = [make() for _ in range(rng.randrange(3))]
            gone = rng.sample(held[name], min(len(held[name]), rng.randrange(2)))
            for row in gone:
                held[name].remove(row)
            held[name] += add
            batch[name] = (add, gone)
        out.append(batch)
    return out


def feed(flow, inputs, batch) -> None:
    for handle, name in zip(inputs, ("words", "edges", "roots")):
        add, gone = batch[name]
        if add:
            handle.insert(add)
        if gone:
            handle.remove(gone)
    flow.advance()
