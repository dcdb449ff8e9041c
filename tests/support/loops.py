"""Loops the tests drive the engine with, where the library no longer needs one."""
from diffflow.algorithms import graphs


def label_propagation(edges):
    """Connected components by the min-label loop with pointer jumping (``graphs._propagate``):
    ``graphs.connected_components`` keeps components without a loop outside other loops
    (operators/reduce_components.py), and the tests of loop machinery want this one.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); e = flow.input("e", ["a", "b"])
    >>> out = label_propagation(e).output()
    >>> e.insert([(5, 2), (2, 9), (7, 8)]); flow.advance(); sorted(out.snapshot())
    [(2, 2), (5, 2), (7, 7), (8, 7), (9, 2)]
    """
    e = graphs._edges(edges)
    both = e.concat(e.select(src="dst", dst="src"))
    return graphs._propagate(both, graphs._nodes(e), "connected_components")


def reach_loop(edges, roots):
    """Reachability by the semi-naive loop (``graphs.reachable``'s form inside other loops and
    at several partitions): the loop the tests of loop machinery want.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); e = flow.input("e", ["a", "b"]); r = flow.input("r", ["n"])
    >>> out = reach_loop(e, r).output()
    >>> e.insert([(1, 2), (2, 1), (3, 4)]); r.insert([2]); flow.advance(); sorted(out.snapshot())
    [(1,), (2,)]
    """
    e, start = graphs._edges(edges), graphs._roots(roots).distinct()
    return start.iterate(
        lambda reached: start.concat(graphs._step(reached, e).select(node="dst")).distinct(),
        name="reachable", max_rounds=None)
