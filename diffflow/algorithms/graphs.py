"""Incremental graph algorithms on the collection API.

Every function takes collections whose first two columns are (source,
target) -- other columns are ignored unless stated -- and returns a
collection that stays exact as edges and roots change.  Edges are a set: one present
several times counts once, and one removed more often than inserted (a negative count)
not at all.  ``reachable`` and
``connected_components`` built for the local runtime or one partition are each one
``reduce`` whose search tactic keeps its state between epochs
(:mod:`diffflow.operators.reduce_reach`, :mod:`~diffflow.operators.reduce_components`);
elsewhere (several partitions of a cluster runtime, inside a loop, a column that is not an
int, explanations, ``DIFFFLOW_GRAPH_LOOPS=1``) they are loops, like the others.

>>> import diffflow as dd
>>> from diffflow import graphs
>>> flow = dd.Dataflow()
>>> edges = flow.input("edges", ["src", "dst"]); roots = flow.input("roots", ["node"])
>>> dist = graphs.bfs_distances(edges, roots).output()
>>> edges.insert([(1, 2), (2, 3), (1, 3), (3, 4)]); roots.insert([1]); flow.advance()
>>> sorted(dist.snapshot())
[(1, 0), (2, 1), (3, 1), (4, 2)]
"""
from __future__ import annotations

import os

from diffflow.api.aggregates import min
from diffflow.api.arranged import reduce_with
from diffflow.api.collection import Collection
from diffflow.common.schema import Schema
from diffflow.dataflow.expr import Lit, col
from diffflow.operators.reduce_components import ComponentsReducer
from diffflow.operators.reduce_reach import ReachReducer


def _edges(edges: Collection) -> Collection:
    """The first two columns of ``edges`` as ``(src, dst)``."""
    if len(edges.columns) < 2:
        raise ValueError(f"edges need (source, target) columns, got {edges.columns}")
    src, dst = edges.columns[:2]
    return edges.select(src=src, dst=dst)


def _present(e: Collection, source: Collection) -> Collection:
    """``e`` (a projection of ``source``'s leading columns) as a set, for a loop: an edge
    counts once, and one removed more often than inserted (a negative count) not at all.
    The loops settle because labels and distances only fall; a negative count would cancel
    a real path's candidate and let them rise again, round after round, for ever.  One
    distinct per source and projection serves every algorithm of the dataflow reading it
    (each costs an update ~1 ms)."""
    key = (source.node.id, tuple(source.columns[:len(e.columns)]), tuple(e.columns))
    shared = e.flow.__dict__.setdefault("_edge_sets", {})  # (as flow._arrangements)
    if key not in shared:
        shared[key] = e.distinct()
    return shared[key]


def _roots(roots: Collection) -> Collection:
    return roots.select(node=roots.columns[0])


def _step(frontier: Collection, edges: Collection) -> Collection:
    """Targets of edges leaving the ``node`` column of ``frontier``, keeping other columns."""
    return frontier.join(edges, left_on="node", right_on="src")


def reachable(edges: Collection, roots: Collection) -> Collection:
    """Nodes reachable from ``roots`` (roots included), as ``(node)``.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow()
    >>> e = flow.input("e", ["a", "b"]); r = flow.input("r", ["n"])
    >>> out = reachable(e, r).output()
    >>> e.insert([(1, 2), (2, 1), (3, 4)]); r.insert([2]); flow.advance()
    >>> sorted(out.snapshot())
    [(1,), (2,)]
    """
    e, start = _edges(edges), _roots(roots)
    if _by_search(e) and _by_search(start):
        return _reached_by_search(e, start)
    start, e = start.distinct(), _present(e, edges)
    return start.iterate(
        lambda reached: start.concat(_step(reached, e).select(node="dst")).distinct(),
        name="reachable", max_rounds=None)  # (settles: a chain of n nodes needs n rounds)


def bfs_distances(edges: Collection, roots: Collection) -> Collection:
    """Hop distance from the nearest root, as ``(node, dist)`` for every reachable node.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow()
    >>> e = flow.input("e", ["a", "b"]); r = flow.input("r", ["n"])
    >>> out = bfs_distances(e, r).output()
    >>> e.insert([(1, 2), (2, 3)]); r.insert([1, 3]); flow.advance()
    >>> sorted(out.snapshot())
    [(1, 0), (2, 1), (3, 0)]
    """
    e = _present(_edges(edges), edges)
    start = _roots(roots).distinct().select("node", dist=0)
    return start.iterate(
        lambda d: start.concat(_step(d, e).select(node="dst", dist=col("dist") + 1))
        .aggregate(by=["node"], dist=min("dist")),
        name="bfs_distances", max_rounds=None)  # (settles: distances only fall, to >= 0)


def sssp(weighted_edges: Collection, roots: Collection) -> Collection:
    """Shortest path lengths from the nearest root, as ``(node, dist)``.

    ``weighted_edges`` has columns (source, target, weight); weights must be
    non-negative (a negative cycle never converges and trips the loop's
    round limit).

    >>> import diffflow as dd
    >>> flow = dd.Dataflow()
    >>> e = flow.input("e", ["a", "b", "w"]); r = flow.input("r", ["n"])
    >>> out = sssp(e, r).output()
    >>> e.insert([(1, 2, 5), (1, 3, 1), (3, 2, 1)]); r.insert([1]); flow.advance()
    >>> sorted(out.snapshot())
    [(1, 0), (2, 2), (3, 1)]
    """
    if len(weighted_edges.columns) < 3:
        raise ValueError(f"weighted edges need (source, target, weight), got "
                         f"{weighted_edges.columns}")
    src, dst, weight = weighted_edges.columns[:3]
    e = _present(weighted_edges.select(src=src, dst=dst, w=weight), weighted_edges)
    start = _roots(roots).distinct().select("node", dist=0)
    return start.iterate(
        lambda d: start.concat(_step(d, e).select(node="dst", dist=col("dist") + col("w")))
        .aggregate(by=["node"], dist=min("dist")),
        name="sssp")


def _propagate(edges: Collection, nodes: Collection, name: str) -> Collection:
    """``(node, label)``: the smallest ``nodes`` id that reaches each node along ``edges``.

    Each round a node takes the smallest label among its own, its
    predecessors' and its label's label (pointer jumping: the node named by
    ``label`` reaches this one, so whatever reaches it does too).  Plain label
    propagation needs as many rounds as the longest shortest path, and on a
    chain each node's label changes once per round; jumping halves the
    remaining distance each round, so a path of n nodes settles in about
    ``log2 n`` rounds, and an update to it in as few.
    """
    start = nodes.enter(edges).select(node="node", label="node")

    def round_(labels: Collection) -> Collection:
        step = _step(labels, edges).select(node="dst", label="label")
        # the label's own label; the right side is the index by node that _step arranged
        jump = labels.join(labels, left_on="label", right_on="node",
                           rename={"label": "via_label"})
        return start.concat(step, jump.select(node="node", label="via_label")) \
            .aggregate(by=["node"], label=min("label"))

    return start.iterate(round_, name=name, max_rounds=None)  # (settles: labels only fall)


def _nodes(e: Collection) -> Collection:
    return e.select(node="src").concat(e.select(node="dst")).distinct()


def connected_components(edges: Collection) -> Collection:
    """Weakly connected components, as ``(node, label)`` with label = smallest node id.

    Edges are taken as undirected; an edge present several times counts once, and a node is
    in the output while some edge touches it.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow()
    >>> e = flow.input("e", ["a", "b"])
    >>> out = connected_components(e).output()
    >>> e.insert([(5, 2), (2, 9), (7, 8)]); flow.advance()
    >>> sorted(out.snapshot())
    [(2, 2), (5, 2), (7, 7), (8, 7), (9, 2)]
    """
    e = _edges(edges)
    if _by_search(e):
        return _components_by_search(e)
    # a distinct of one direction, not of both: min ignores how often a candidate label
    # arrives, and each distinct holds its edges twice (its input and output traces)
    e = _present(e, edges)
    both = e.concat(e.select(src="dst", dst="src"))
    return _propagate(both, _nodes(e), "connected_components")


def _by_search(e: Collection) -> bool:
    """Whether a search tactic (components, reachability) serves ``e``: the local runtime
    or one partition (the tactic holds every edge in one group, on one partition; the local
    runtime steps every partition in this process, so that costs nothing there, where a
    cluster's loop spreads the graph over its workers' memory), integer ids, outside loops
    (inside one, a round's times are partially ordered, and the tactic recomputes whole
    groups there), and no explanations (they read the loops).  ``DIFFFLOW_GRAPH_LOOPS=1``
    keeps the loops everywhere (to compare)."""
    if os.environ.get("DIFFFLOW_GRAPH_LOOPS", "0") not in ("", "0"):
        return False
    flow = e.flow
    return ((getattr(flow, "runtime_name", "local") == "local" or flow.partitions == 1)
            and e.scope.depth == 0
            and not getattr(flow, "explain", False)
            and all(t == "int" for t in e.schema.types))


def _components_by_search(e: Collection) -> Collection:
    """Components kept by :mod:`~diffflow.operators.reduce_components`: one group of every
    edge, updated from each epoch's change (a cut of a long path costs its shorter side,
    where label propagation rewrites every round after the cut)."""
    keyed = e.select(all_edges=Lit(0), src="src", dst="dst")
    schema = Schema.of([("all_edges", "int"), ("node", "int"), ("label", "int")])
    labels = reduce_with(keyed.arrange(["all_edges"]), ComponentsReducer(), schema,
                         "connected components")
    return labels.select("node", "label")


def _reached_by_search(e: Collection, roots: Collection) -> Collection:
    """Reachability kept by :mod:`~diffflow.operators.reduce_reach`: edges (kind 0) and
    roots (kind 1) in one group, updated from each epoch's change (a lost edge costs the
    subtree of the search under it, where the semi-naive loop moves every node whose
    shortest path changed to its new round)."""
    keyed = e.select(all_rows=Lit(0), kind=Lit(0), a="src", b="dst").concat(
        roots.select(all_rows=Lit(0), kind=Lit(1), a="node", b=Lit(0)))
    schema = Schema.of([("all_rows", "int"), ("node", "int")])
    reached = reduce_with(keyed.arrange(["all_rows"]), ReachReducer(), schema, "reachable")
    return reached.select("node")


def _trim(cycle: Collection, edges: Collection) -> Collection:
    """Keep ``cycle`` edges whose ends get the same forward label; return them reversed."""
    labels = _propagate(cycle, edges.select(node="dst").distinct(), "scc_propagate")
    tagged = cycle.join(labels.select(src="node", l1="label"), on="src")
    tagged = tagged.join(labels.select(dst="node", l2="label"), on="dst")
    return tagged.filter(col("l1") == col("l2")).select(src="dst", dst="src")


def strongly_connected_components(edges: Collection) -> Collection:
    """Strongly connected components, as ``(node, label)`` with label = smallest node id.

    The outer loop repeatedly trims edges that cannot lie on a cycle, by
    label propagation forwards and then backwards (an inner loop each), as
    Differential Dataflow's ``scc`` does; the remaining edges join nodes of
    one component, and a last propagation labels every node.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow()
    >>> e = flow.input("e", ["a", "b"])
    >>> out = strongly_connected_components(e).output()
    >>> e.insert([(1, 2), (2, 1), (2, 3), (3, 4), (4, 3)]); flow.advance()
    >>> sorted(out.snapshot())
    [(1, 1), (2, 1), (3, 3), (4, 3)]
    """
    e = _edges(edges).distinct()
    reverse = e.select(src="dst", dst="src")

    def trim_both(cycle: Collection) -> Collection:
        return _trim(_trim(cycle, e), reverse)

    inside = e.iterate(trim_both, name="strongly_connected_components", max_rounds=None)
    return _propagate(inside, _nodes(e), "scc_labels")
