"""A join whose two inputs are both new in one step (the first epoch of every join)."""
from __future__ import annotations


def test_a_join_of_two_new_inputs_emits_each_result_once():
    """Both sides new in one step: dA (B + dB) + A dB, with A the spine without dA (no cancelling rows)."""
    import diffflow as dd

    emitted = []
    flow = dd.Dataflow(partitions=2, trace=emitted.append)
    a = flow.input("a", ["x", "y"])
    b = flow.input("b", ["y", "z"])
    joined = a.join(b, on="y")
    out = joined.output()
    a.insert([(i, i % 5) for i in range(20)])
    b.insert([(k, 10 * k) for k in range(5)])
    flow.advance()
    assert out.snapshot() == {(i, i % 5, 10 * (i % 5)): 1 for i in range(20)}
    ev = emitted[0]
    step_ends = (ev.kind == 1) & (ev.op == joined.node.id)
    assert int(ev.out[step_ends].sum()) == 20  # not 60: 20 added twice and removed once
