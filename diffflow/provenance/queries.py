"""Witness queries of a dataflow built with ``explain=True``: for each operator whose rule
needs the engine, a request input (the operator's columns and a height bound) joined with
what the rule reads, in the root scope (see :mod:`.search` for the rules).

>>> import diffflow as dd
>>> flow = dd.Dataflow(explain=True)
>>> a = flow.input("a", ["k", "v"]); top = a.aggregate(by=["k"], hi=dd.max("v")).output()
>>> a.insert([(1, 5)]); flow.advance()
>>> sorted(q.rule for q in flow._provenance.queries.values() if not isinstance(q, list))
['input', 'winner']
"""
from __future__ import annotations

from dataclasses import dataclass

from ..expr import Col, col
from ..operators.reduce_extremum import extremum_of
from ..operators.reducers import DistinctReducer
from .heights import H, higher

BOUND = "_bound"


@dataclass(eq=False)
class _Query:
    """One node's witness query: ``request`` rows (the node's columns and a bound) joined
    with what the rule reads; ``output`` rows are ``(node row, bound, *found, height)``."""
    node: object
    rule: str
    request: object
    output: object
    width: int                  # columns of the found rows
    source: int | list = None   # node id(s) the found rows belong to
    negated: bool = False       # a concat's subtracted input


class Queries:
    """Builds the witness queries of every user node (once, before the first epoch)."""

    def __init__(self, flow, heights):
        self.flow, self.heights, self.graph = flow, heights, flow.graph

    def build(self) -> dict:
        """``node id -> _Query`` (a list for a ``concat``: one per positive input)."""
        queries = {}
        for node in self.heights.user:
            query = self._query(node)
            if query is not None:
                queries[node.id] = query
        return queries

    def _request(self, node):
        columns = list(zip(node.schema.names, node.schema.types)) + [(BOUND, "int")]
        return self.flow.input(f"#explain:{len(self.flow._inputs)}:{node.id}", columns)

    def _query(self, node):
        kind, hs = node.kind, self.heights
        if kind == "input":
            request = self._request(node)
            # distinct: a row asked by several searches at once still reads its multiplicity
            found = request.distinct().join(hs.collection(node.id), on=list(node.schema.names))
            return _Query(node, "input", request, found.output(), 0)
        if kind == "select":
            source = self.graph.nodes[node.inputs[0]]
            through = self._through_join(node, source)
            if through is not None:
                return through
            image = {f"_o{i}": e for i, e in enumerate(node.params["exprs"])}
            pre = {f"_p{j}": col(n) for j, n in enumerate(source.schema.names)}
            mapped = hs.final(source.id).select(**image, **pre, **{H: H})
            return self._found(node, "select", mapped, list(image), list(pre), source.id,
                               bounded=True)
        if kind == "concat" and node.id in hs.variables:
            initial = [i for i in node.inputs if i < node.id]
            if not initial:
                return None
            outer = self.graph.nodes[initial[0]]
            mapped = hs.final(outer.id).select(
                **{f"_o{i}": col(n) for i, n in enumerate(outer.schema.names)}, **{H: H})
            return self._found(node, "variable", mapped, [f"_o{i}" for i in
                                                         range(len(outer.schema.names))],
                               [], outer.id, bounded=True)
        if kind == "concat":  # a negated input is asked for its source's rows
            return [self._concat_input(node, i) if self.graph.nodes[i].kind != "negate"
                    else self._concat_input(node, self.graph.nodes[i].inputs[0], True)
                    for i in node.inputs]
        if kind == "reduce" and not isinstance(node.params["reducer"], DistinctReducer):
            arranged = self.graph.nodes[node.inputs[0]]
            source = self.graph.nodes[arranged.inputs[0]]
            kk = node.params["key_width"]
            keys = list(arranged.schema.names[:kk])
            extremum = extremum_of(node.params["reducer"])
            names = list(source.schema.names)
            rows = hs.final(source.id).select(
                **{f"_p{j}": col(n) for j, n in enumerate(names)}, **{H: H})
            on = [f"_p{names.index(k)}" for k in keys]
            if extremum is not None:
                value = arranged.schema.names[kk + extremum[1]]
                on.append(f"_p{names.index(value)}")
                return self._found(node, "winner", rows,
                                   on, [f"_p{j}" for j in range(len(names))], source.id,
                                   bounded=True, left=[*keys, node.schema.names[kk]])
            return self._found(node, "group", rows, on,
                               [f"_p{j}" for j in range(len(names))], source.id,
                               bounded=False, left=keys)
        return None

    def _through_join(self, node, join):
        """A projection of a join: find its pre-image in the join's two inputs (indexed by
        the columns the projection keeps) instead of indexing the join's whole output.  The
        side the projection determines more of is read first -- the right side when it
        determines any of its columns (a loop's joins read a fixed relation on the right)."""
        exprs = node.params["exprs"]
        if join.kind != "join" or not all(isinstance(e, Col) for e in exprs):
            return None
        left_arr, right_arr = (self.graph.nodes[i] for i in join.inputs)
        kk = join.params["key_width"]
        left, right = (self.graph.nodes[a.inputs[0]] for a in (left_arr, right_arr))
        lkeys, rkeys = list(left_arr.schema.names[:kk]), list(right_arr.schema.names[:kk])
        right_rest = [n for n in right.schema.names if n not in rkeys]
        # every join column: which side and which of that side's columns holds it
        origin = {n: ("L", n) for n in left.schema.names}
        origin.update({out: ("R", r) for out, r in
                       zip(join.schema.names[left.schema.width:], right_rest)})
        wanted = {out.name: name for out, name in zip(exprs, node.schema.names)}
        fixed = {"L": {}, "R": {}}      # side -> {side column: request column}
        for column, request_column in wanted.items():
            side, name = origin[column]
            fixed[side].setdefault(name, request_column)
        for lk, rk in zip(lkeys, rkeys):   # a fixed key fixes the other side's key too
            if lk in fixed["L"]:
                fixed["R"].setdefault(rk, fixed["L"][lk])
            elif rk in fixed["R"]:
                fixed["L"].setdefault(lk, fixed["R"][rk])
        first = "R" if fixed["R"] else "L"
        if not fixed[first]:
            return None
        hs = self.heights
        sides = {"L": (left, hs.final(left.id)), "R": (right, hs.final(right.id))}
        request = self._request(node)
        found, alias = request, {}    # a join's right key comes out under the left's name
        for side in (first, "R" if first == "L" else "L"):
            source, final = sides[side]
            names = list(source.schema.names)
            rows = final.select(**{f"_{side}{j}": col(n) for j, n in enumerate(names)},
                                **{f"_{side}h": H})
            if side == first:
                on = [(f"_{side}{names.index(c)}", r) for c, r in fixed[side].items()]
            else:  # the keys come from the first side's row, the rest from the request
                other = "L" if side == "R" else "R"
                other_names = list(sides[other][0].schema.names)
                mine, theirs = (rkeys, lkeys) if side == "R" else (lkeys, rkeys)
                on = [(f"_{side}{names.index(m)}", f"_{other}{other_names.index(t)}")
                      for m, t in zip(mine, theirs)]
                on += [(f"_{side}{names.index(c)}", r) for c, r in fixed[side].items()
                       if c not in mine]
            on = [(m, alias.get(t, t)) for m, t in on]
            found = found.join(rows, left_on=[t for _, t in on], right_on=[m for m, _ in on])
            alias.update({m: t for m, t in on})
        lnames, rnames = list(left.schema.names), list(right.schema.names)
        keep = {f"_k{j}": col(alias.get(f"_L{j}", f"_L{j}")) for j in range(len(lnames))}
        keep.update({f"_k{len(lnames) + i}": col(alias.get(c, c)) for i, c in
                     enumerate(f"_R{rnames.index(n)}" for n in right_rest)})
        height = higher(col("_Lh"), col("_Rh"))
        found = found.select(*node.schema.names, BOUND, **keep, **{H: height})
        found = found.filter(col(H) <= col(BOUND))
        return _Query(node, "select", request, found.output(), len(keep), join.id)

    def _concat_input(self, node, source_id, negated: bool = False):
        source = self.graph.nodes[source_id]
        mapped = self.heights.final(source_id).select(
            **{f"_o{i}": col(n) for i, n in enumerate(source.schema.names)}, **{H: H})
        query = self._found(node, "concat", mapped,
                            [f"_o{i}" for i in range(len(source.schema.names))], [],
                            source_id, bounded=True)
        query.negated = negated
        return query

    def _found(self, node, rule, mapped, on, keep, source, bounded, left=None):
        request = self._request(node)
        left = list(node.schema.names) if left is None else left
        if not on:  # a reduction without keys: every request reads the one group
            request_side = request.select(*request.columns, _unit=0)
            found = request_side.join(mapped.select(*mapped.columns, _unit=0), on="_unit")
        else:
            found = request.join(mapped, left_on=left, right_on=on)
        if bounded:
            found = found.filter(col(H) <= col(BOUND))
        joined = dict(zip(on, left))    # a join key comes out under the request's name
        found = found.select(*node.schema.names, BOUND,
                             **{f"_k{i}": col(joined.get(k, k)) for i, k in enumerate(keep)},
                             **{H: H})
        return _Query(node, rule, request, found.output(), len(keep), source)
