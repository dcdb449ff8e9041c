"""Heights: each row's *first occurrence* in a dataflow built with ``explain=True`` -- the
fewest loop rounds that derive it; a proof that follows heights down always ends (the idea
of Soufflé's minimal proof heights, and of first occurrence in Chothia et al.).

Heights come one of three ways (:meth:`Heights.mode`):

* outside loops (``"ground"``) every row has height 0;
* in a loop with no loop inside (``"traced"``) the engine's own traces keep each update's
  round -- logical compaction advances epochs and leaves rounds alone -- so a row's height is
  the round its presence began, read from an arrangement of the collection itself
  (:class:`~.queries.Index`); nothing is computed for it while the dataflow runs;
* in nested loops (``"twin"``) a twin collection carries the heights in one more column,
  :data:`H`, built from the recorded graph before the first epoch, operator by operator: an
  input's rows have height 0; ``select``, ``filter``, ``concat``, ``negate``, ``enter``,
  ``consolidate``, ``inspect`` carry heights along; a join's row is as high as the higher of
  its two sides; a reduction's output row takes the height of what it rests on (the same row
  for ``distinct``, the lowest winning row for one ``min``/``max``, the highest row of the
  group for other reducers); a loop variable's twin is a loop variable of the same loop,
  whose rows fed back from the definition are one round higher, each keeping its lowest
  height.  Twins are multisets; readers take the lowest height of a row.

>>> import diffflow as dd
>>> from diffflow import graphs
>>> flow = dd.Dataflow(explain=True)   # (explanations read the library's loops)
>>> edges = flow.input("edges", ["src", "dst"]); roots = flow.input("roots", ["node"])
>>> reach = graphs.reachable(edges, roots)
>>> heights = Heights(flow)
>>> heights.mode(edges.node.id), heights.mode(reach.node.inputs[0])   # outside, in the loop
('ground', 'traced')
"""
from __future__ import annotations

from diffflow.api.aggregates import max as highest
from diffflow.api.aggregates import min as lowest
from diffflow.api.collection import Collection
from diffflow.common.errors import GraphError
from diffflow.common.schema import Schema
from diffflow.dataflow.expr import Lit, col, greatest
from diffflow.operators.reduce_extremum import extremum_of
from diffflow.operators.reducers import DistinctReducer

H = "_h"  # the height column of every twin


def _lowest(twin):
    return twin.aggregate(by=[n for n in twin.columns if n != H], **{H: lowest(H)})


def higher(a, b):
    """The larger of two height columns."""
    return greatest(a, b)


class Heights:
    """The twins of every node of ``flow``'s graph (see module doc)."""

    PASS = ("consolidate", "inspect", "negate", "output")

    def __init__(self, flow):
        self.flow, self.graph = flow, flow.graph
        self.user = list(self.graph.nodes)          # the user's nodes; twins come after
        for node in self.user:  # refuse before adding anything: bad input changes nothing
            if H in node.schema.names:
                raise GraphError(f"explain=True: {node.describe()} has a column named {H!r}, "
                                 f"which explanations use; rename it")
            if node.kind == "flat_map":
                raise GraphError(f"explain=True cannot explain through {node.describe()} "
                                 f"yet: flat_map and map run Python on each row (use select "
                                 f"and filter, or build the dataflow without explain=True)")
        self.twin: dict = {}        # node id -> twin Collection (same scope)
        self.lowest_cache: dict = {}
        self.variables: dict = {}   # user variable node id -> twin variable node
        self.feeds = {src: node.id for node in self.user for src in node.inputs
                      if src > node.id}                 # feedback id -> its variable
        self.loop_variables = set(self.feeds.values())
        # heights grow only around loops: outside them every row has height 0, and a loop
        # with no loop inside keeps each update's round in its traces
        nested = {s.parent.id for s in self.graph.scopes
                  if s.parent is not None and s.parent.parent is not None}
        self.ground = {n.id for n in self.user if n.scope.parent is None}
        self.traced = {n.id for n in self.user if n.scope.parent is not None
                       and n.scope.parent.parent is None and n.scope.id not in nested}

    def of(self, nid: int):
        """The twin of node ``nid``, built on first use: a twin nothing reads is not built
        (and costs nothing at run time).  Call :meth:`close_loops` when done."""
        if nid not in self.twin:
            node = self.graph.nodes[nid]
            self.twin[nid] = self.collection(nid).select(*node.schema.names, **{H: Lit(0)}) \
                if nid in self.ground else self._build(node)
        return self.twin[nid]

    def mode(self, nid: int) -> str:
        """How node ``nid``'s heights are read (:class:`~.queries.Index`)."""
        return "ground" if nid in self.ground else "traced" if nid in self.traced else "twin"

    def close_loops(self) -> None:
        """Connect the feedback of every twin loop variable built (building what it needs)."""
        closed: set = set()
        while set(self.variables) - closed:
            for variable in sorted(set(self.variables) - closed):
                closed.add(variable)
                self.of(next(i for i in self.graph.nodes[variable].inputs if i > variable))

    def collection(self, nid: int):
        return Collection(self.flow, self.graph.nodes[nid])

    def lowest(self, nid: int):
        """The twin with one row per distinct row: its lowest height."""
        if nid not in self.lowest_cache:
            self.lowest_cache[nid] = _lowest(self.of(nid))
        return self.lowest_cache[nid]

    # -- one node ---------------------------------------------------------------------------
    def _build(self, node):
        kind = node.kind
        if kind == "input":
            return self.collection(node.id).select(*node.schema.names, **{H: Lit(0)})
        if kind in self.PASS:
            twin = self.of(node.inputs[0])
            return twin.negate() if kind == "negate" else twin
        if kind == "select":
            exprs = dict(zip(node.schema.names, node.params["exprs"]))
            return self.of(node.inputs[0]).select(**exprs, **{H: H})
        if kind == "filter":
            return self.of(node.inputs[0]).filter(node.params["predicate"])
        if kind == "arrange":
            return self.of(node.inputs[0])   # joins and reductions read the source's twin
        if kind == "join":
            return self._join(node)
        if kind == "reduce":
            return self._reduce(node)
        if kind == "enter":
            return self.of(node.inputs[0])._enter_into(node.scope)
        if kind == "concat" and node.id in self.loop_variables:
            return self._variable(node)
        if kind == "concat":
            first, *rest = [self.of(i) for i in node.inputs]
            return first.concat(*rest)
        if kind == "feedback":
            return self._feedback(node)
        if kind == "leave":
            return self._leave(node)
        raise AssertionError(f"no height rule for {node.describe()}")

    def _join(self, node):
        left_arr, right_arr = (self.graph.nodes[i] for i in node.inputs)
        kk = node.params["key_width"]
        left_src, right_src = left_arr.inputs[0], right_arr.inputs[0]
        lkeys, rkeys = list(left_arr.schema.names[:kk]), list(right_arr.schema.names[:kk])
        left_names = list(self.graph.nodes[left_src].schema.names)
        right_rest = [n for n in self.graph.nodes[right_src].schema.names if n not in rkeys]
        out_rest = list(node.schema.names[len(left_names):])
        rename = dict(zip(right_rest, out_rest))
        rename[H] = "_h_right"
        joined = self.of(left_src).join(self.of(right_src), left_on=lkeys, right_on=rkeys,
                                          rename=rename)
        return joined.select(*node.schema.names, **{H: higher(col(H), col("_h_right"))})

    def _reduce(self, node):
        arranged = self.graph.nodes[node.inputs[0]]
        source = arranged.inputs[0]
        kk = node.params["key_width"]
        keys = list(arranged.schema.names[:kk])
        reducer = node.params["reducer"]
        out = self.collection(node.id)
        if isinstance(reducer, DistinctReducer):
            return self.lowest(source)
        extremum = extremum_of(reducer)
        if extremum is not None:  # the lowest winner: a row whose value is the result
            value = arranged.schema.names[kk + extremum[1]]
            result = node.schema.names[kk]
            winners = self.of(source).join(out.select(*keys, **{"_won": result}),
                                             left_on=[*keys, value], right_on=[*keys, "_won"])
            group = winners.aggregate(by=keys, **{H: lowest(H)})
        else:  # any other reducer may read every row of its group: its highest row
            group = self.lowest(source).aggregate(by=keys, **{H: highest(H)})
        return out.join(group, on=keys) if keys else \
            out.select(*out.columns, _unit=0).join(group.select(H, _unit=0), on="_unit") \
            .select(*out.columns, H)

    def _variable(self, node):
        """A twin loop variable: its feedback is connected when the user's is reached."""
        initial = [self.of(i) for i in node.inputs if i < node.id]
        schema = self.twin_schema(node)
        twin = self.graph.add("concat", [c.node.id for c in initial], schema, scope=node.scope,
                              label=f"heights of {node.label}")
        self.variables[node.id] = (twin, initial[0] if initial else None)
        return Collection(self.flow, twin)

    def _feedback(self, node):
        """Feed the definition back one round higher; keep each row's lowest height."""
        variable = self.feeds[node.id]
        twin_var, initial = self.variables[variable]
        definition = self._definition(node)
        raised = self.of(definition).select(*self.graph.nodes[definition].schema.names,
                                              **{H: col(H) + 1})
        candidates = raised if initial is None else initial.concat(raised)
        names = [n for n in candidates.columns if n != H]
        settled = candidates.aggregate(by=names, **{H: lowest(H)})
        change = settled if initial is None else settled.concat(initial.negate())
        feedback = self.graph.add("feedback", [change.node.id], twin_var.schema,
                                  scope=node.scope, label=f"heights of {node.label}")
        self.graph.connect(twin_var, feedback)
        return Collection(self.flow, feedback)

    def _definition(self, feedback) -> int:
        """The definition a variable's feedback carries (``definition - initial``)."""
        change = self.graph.nodes[feedback.inputs[0]]
        variable = self.graph.nodes[self.feeds[feedback.id]]
        initial = [i for i in variable.inputs if i < variable.id]
        if initial and change.kind == "concat" and len(change.inputs) == 2:
            negated = self.graph.nodes[change.inputs[1]]
            if negated.kind == "negate" and negated.inputs[0] == initial[0]:
                return change.inputs[0]
        return change.id

    def _leave(self, node):
        inner = self.of(node.inputs[0])
        twin = self.graph.add("leave", [inner.node.id], inner.schema, scope=node.scope,
                              label=f"heights of {node.label}")
        return Collection(self.flow, twin)

    def twin_schema(self, node):
        return Schema(tuple(node.schema.names) + (H,), tuple(node.schema.types) + ("int",))
