"""Pathway's side of ``bench_peers.py``: from-scratch reach and components, and updates.

From scratch (:func:`setup_pathway`): ``pw.iterate`` (its user guide's connected components;
reach and the transitive closure alike), run in batch mode by ``pw.debug.table_to_pandas``.

Updates (:func:`update_worker`): the same two computations over one streaming input, a
``pw.io.python`` connector subject whose rows are keyed by ``(a, b)``, so a removal retracts
the edge it names.  The subject feeds the initial edges and commits, then, per batch, deletes
the dropped edges, adds the new ones and commits once.  Each commit also adds a marker edge
from the root to a fresh node, and the batch's latency runs from its first row until both
outputs' subscribers have seen its marker (reached; labelled with the root's component): a
sink hears only of times at which its output changes, so the marker also makes both outputs
change every batch.  The answers reported leave the markers out, so they are checked
against scipy like diffflow's.

Only imported by a worker process that has ``pathway`` (bench_peers checks first).
"""
from __future__ import annotations

import threading
import time

import numpy as np


def setup_pathway(spec):
    """A query function for spec["alg"] (reach, cc or tc), from scratch, batch mode."""
    import pandas as pd
    import pathway as pw

    def reach(edges, roots):
        e = pw.debug.table_from_pandas(pd.DataFrame(edges, columns=["a", "b"]))
        start = pw.debug.table_from_pandas(pd.DataFrame({"node": np.asarray(roots)}),
                                           id_from=["node"])
        return len(pw.debug.table_to_pandas(reach_table(pw, start, e)))

    def components(edges, roots):
        nodes = np.unique(edges)
        e = pw.debug.table_from_pandas(pd.DataFrame(edges, columns=["a", "b"]))
        sizes = pw.debug.table_to_pandas(components_table(pw, pd, nodes, e))
        sizes = sizes.groupby("repr").size()
        return [len(sizes), int(sizes.max())]

    def closure(edges, roots):
        e = pw.debug.table_from_pandas(pd.DataFrame(edges, columns=["a", "b"]))

        def step(path, e):
            longer = path.join(e, path.b == e.a).select(a=path.a, b=e.b)
            both = pw.Table.concat_reindex(path, longer)
            return both.groupby(pw.this.a, pw.this.b).reduce(pw.this.a, pw.this.b)
        start = e.groupby(pw.this.a, pw.this.b).reduce(pw.this.a, pw.this.b)
        return len(pw.debug.table_to_pandas(pw.iterate(step, path=pw.iterate_universe(start),
                                                       e=e)))

    queries = {"reach": reach, "cc": components, "tc": closure}

    def query(edges, roots):
        try:                  # forget the previous run's tables, so they are not run again
            pw.internals.parse_graph.G.clear()
        except AttributeError:
            pass
        return queries[spec["alg"]](edges, roots)
    return query


def reach_table(pw, start, e):
    """Nodes reachable from ``start`` along ``e`` (columns a, b)."""
    def step(reached, e):
        new = reached.join(e, reached.node == e.a).select(node=e.b)
        both = pw.Table.concat_reindex(reached, new)
        return both.groupby(pw.this.node).reduce(pw.this.node)   # ids from node
    return pw.iterate(step, reached=pw.iterate_universe(start), e=e)


def components_table(pw, pd, nodes, e):
    """``(a, repr)``: each of ``nodes`` labelled by the smallest node of its component."""
    vertices = pw.debug.table_from_pandas(pd.DataFrame({"a": nodes, "repr": nodes}),
                                          id_from=["a"])
    und = pw.Table.concat_reindex(e, e.select(a=pw.this.b, b=pw.this.a),
                                  vertices.select(a=pw.this.a, b=pw.this.a))

    def step(vertices, und):
        offers = und.join(vertices, und.b == vertices.a).select(und.a, vertices.repr)
        best = offers.groupby(pw.this.a).reduce(pw.this.a, repr=pw.reducers.min(pw.this.repr))
        return best.with_universe_of(vertices)
    return pw.iterate(step, vertices=vertices, und=und)


def update_worker(data, emit) -> None:
    """The update batches of ``data`` (bench_peers' arrays) through one streaming reach +
    components dataflow; emits ``done=step{i}`` events as ``scaling_workers.case`` does."""
    import pandas as pd
    import pathway as pw

    edges, roots, steps = data["edges"], data["roots"], int(data["steps"])
    batches = [(data[f"drop{i}"], data[f"add{i}"]) for i in range(steps)]
    marker = int(edges.max()) + 1   # marker node of batch i: marker + i; of the load: + steps
    seen = threading.Condition()
    finished = threading.Event()
    reached, labels = set(), {}
    final = edges
    for drop, add in batches:
        keep = ~np.isin(final[:, 0] * (marker + steps + 1) + final[:, 1],
                        drop[:, 0] * (marker + steps + 1) + drop[:, 1])
        final = np.concatenate([final[keep], add])
    present = set(np.unique(final).tolist())   # nodes left without edges are not counted

    def answers():
        """Reached count and [components, largest] as bench_peers' readers give them."""
        sizes = {}
        for node, label in labels.items():
            if node in present:
                sizes[label] = sizes.get(label, 0) + 1
        return {"reach": sum(1 for n in reached if n < marker),
                "cc": [len(sizes), max(sizes.values(), default=0)]}

    def arrived(node):   # both outputs show the marker: its commit is computed
        return node in reached and labels.get(node, node) != node

    def wait(node):
        with seen:
            if not seen.wait_for(lambda: arrived(node), timeout=600):
                raise TimeoutError(f"pathway: marker {node} not seen in 600 s")

    class Edge(pw.Schema):
        a: int = pw.column_definition(primary_key=True)
        b: int = pw.column_definition(primary_key=True)

    class Feed(pw.io.python.ConnectorSubject):
        def run(self):
            for a, b in edges.tolist():
                self.next(a=a, b=b)
            self.next(a=int(roots[0]), b=marker + steps)
            emit(begin="initial")       # (bench_peers caps an open case at --cap seconds)
            started = time.perf_counter()
            self.commit()
            wait(marker + steps)
            emit(done="initial", s=time.perf_counter() - started, answer=None)
            for i, (drop, add) in enumerate(batches):
                emit(begin=f"step{i}")
                started = time.perf_counter()
                for a, b in drop.tolist():
                    self.delete(a=a, b=b)
                for a, b in add.tolist():
                    self.next(a=a, b=b)
                self.next(a=int(roots[0]), b=marker + i)
                self.commit()
                wait(marker + i)
                seconds = time.perf_counter() - started
                with seen:
                    answer = answers() if i == steps - 1 else None
                emit(done=f"step{i}", s=seconds, answer=answer)
            finished.set()

    e = pw.io.python.read(Feed(), schema=Edge, autocommit_duration_ms=600_000)
    start = pw.debug.table_from_pandas(pd.DataFrame({"node": np.asarray(roots)}),
                                       id_from=["node"])
    nodes = np.concatenate([np.unique(edges), marker + np.arange(steps + 1)])

    def on_reach(key, row, time, is_addition):
        with seen:
            (reached.add if is_addition else reached.discard)(row["node"])
            seen.notify_all()

    def on_label(key, row, time, is_addition):
        with seen:
            if is_addition:
                labels[row["a"]] = row["repr"]
            elif labels.get(row["a"]) == row["repr"]:
                del labels[row["a"]]
            seen.notify_all()

    pw.io.subscribe(reach_table(pw, start, e), on_change=on_reach)
    pw.io.subscribe(components_table(pw, pd, nodes, e), on_change=on_label)
    runner = threading.Thread(target=pw.run, daemon=True,
                              kwargs={"monitoring_level": pw.MonitoringLevel.NONE})
    emit(ready=True)
    runner.start()
    while not finished.wait(0.1) and runner.is_alive():
        pass
