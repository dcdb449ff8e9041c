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
