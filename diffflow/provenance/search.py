"""Why is this row in my output: the witness queries of a dataflow built with ``explain=True``
and the search that follows them from an output row down to input rows.

Every operator passes a request for a row on to the rows it rests on, by its rule
(EXPLAIN.md §3), with a *bound*: the row's height (:mod:`.heights`) or more.  Most rules need
no engine work: a filter, an arrangement, ``enter``/``leave`` and ``distinct`` ask for the
same row, a join for its two halves, a loop variable for the same row of the definition one
round lower unless the initial collection has it.  The others ask a query -- a request input
joined with the twin of what they read, left to the root scope:

* ``select`` finds a pre-image of the row, ``concat`` the first input holding it;
* a reduction with one ``min``/``max`` finds its lowest winning row, every other reducer
  (count, sum, custom) its whole group;
* a loop variable asks whether its initial collection holds the row;
* an input reads the row's multiplicity.

The search asks one level of queries per engine commit, always choosing the lowest height and
then the smallest row, so an explanation is deterministic: through ``reachable`` it is one
shortest path.

>>> import diffflow as dd
>>> from diffflow import graphs
>>> flow = dd.Dataflow(explain=True)
>>> edges = flow.input("edges", ["src", "dst"]); roots = flow.input("roots", ["node"])
>>> reach = graphs.reachable(edges, roots).output()
>>> edges.insert([(1, 2), (2, 3), (3, 4), (1, 3)]); roots.insert([1]); flow.advance()
>>> ex = reach.explain([(4,)])
>>> ex.inputs
{'edges': {(1, 3): 1, (3, 4): 1}, 'roots': {(1,): 1}}
>>> ex.check()
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ExplainError, GraphError
from ..expr import Col, col
from ..operators.reduce_extremum import extremum_of
from ..operators.reducers import DistinctReducer
from .heights import H, Heights, higher

BOUND = "_bound"
SAME = ("filter", "consolidate", "inspect", "output", "arrange", "enter")




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


class Provenance:
    """Heights and witness queries of a dataflow (built by :class:`~diffflow.Dataflow` at
    its start when ``explain=True``)."""

    def __init__(self, flow):
        self.flow = flow
        self.heights = Heights(flow)
        self.graph = flow.graph
        self.queries: dict = {}
        for node in self.heights.user:
            query = self._query(node)
            if query is not None:
                self.queries[node.id] = query
        changes = [self.graph.nodes[n.inputs[0]] for n in self.heights.user
                   if n.kind == "feedback"]           # a variable's definition - initial
        negated_initials = {c.inputs[1] for c in changes
                            if c.kind == "concat" and len(c.inputs) == 2}
        # differences outside the loop variables' own bookkeeping make replays diverge
        self.subtracts = any(n.kind == "negate" and n.id not in negated_initials
                             for n in self.heights.user)
        self._contents = {n.id: self.heights.collection(n.id).output()
                          for n in self.heights.user if n.kind == "input"} \
            if self.subtracts else {}
        if self.subtracts:
            from .correct import Differences
            self.differences = Differences(self)

    # -- building -----------------------------------------------------------------------------
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
        if kind == "concat":
            return [self._concat_input(node, i) for i in node.inputs
                    if self.graph.nodes[i].kind != "negate"] or None
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

    def _concat_input(self, node, source_id):
        source = self.graph.nodes[source_id]
        mapped = self.heights.final(source_id).select(
            **{f"_o{i}": col(n) for i, n in enumerate(source.schema.names)}, **{H: H})
        return self._found(node, "concat", mapped,
                           [f"_o{i}" for i in range(len(source.schema.names))], [],
                           source_id, bounded=True)

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

    # -- explaining ---------------------------------------------------------------------------
    def explain(self, output, rows) -> "CollectionExplanation":
        staged = [i.name for i in self.flow._inputs if i._staged
                  and not i.name.startswith("#explain:")]
        if staged:
            raise ExplainError(f"{', '.join(staged)} changed since the last advance(); "
                               f"explanations are of computed epochs: advance() first")
        node = output.node
        rows = [tuple(r) if isinstance(r, (tuple, list)) else (r,) for r in rows]
        present = output.snapshot()
        missing = [r for r in rows if r not in present]
        if missing:
            raise ExplainError(f"{missing[0]!r} is not in {output.name or node.label} as of "
                               f"epoch {self.flow.epoch - 1}: check its values (rows are "
                               f"tuples in the output's column order {list(node.schema.names)})")
        return self.explanation(output, {r: present[r] for r in rows}, _Search(self))

    def explanation(self, output, rows: dict, search) -> "CollectionExplanation":
        """The explanation of ``rows`` (present, with their multiplicities) by ``search``."""
        leaves = search.run([(output.node.id, r) for r in rows])
        inputs: dict = {}
        for nid, row, mult in sorted(leaves):
            inputs.setdefault(self.input_name(nid), {})[row] = mult
        ex = CollectionExplanation(output, rows, dict(sorted(inputs.items())), self.flow,
                                   search.commits)
        if self.subtracts and not self.differences.correct(self, ex):
            # a difference the correction rounds cannot reach (one inside a loop): the
            # whole input explains the rows
            ex.inputs, ex.whole_input = self._whole_input(), True
        return ex

    def input_name(self, nid: int) -> str:
        return next(i.name for i in self.flow._inputs if i.node.id == nid)

    def _whole_input(self) -> dict:
        inputs = {}
        for nid, query in self.queries.items():
            node = self.graph.nodes[nid]
            if node.kind == "input":
                inputs[self.input_name(nid)] = dict(self._contents[nid].snapshot())
        return dict(sorted((k, v) for k, v in inputs.items() if v))


class _Search:
    """Breadth first over rule applications; one engine commit per level of queries.

    With ``held`` (a dict, :mod:`.live`'s) requests stay in the flow after the search, and a
    level whose requests are all held needs no commit: the queries keep their answers
    current as inputs change."""

    def __init__(self, provenance, held: dict | None = None):
        self.p = provenance
        self.graph = provenance.graph
        self.asked: dict = {}      # request -> rows in the flow
        self.held = held
        self.used: set = set()     # (request, row) pairs this search read
        self.commits = 0

    def run(self, targets):
        seen, leaves = set(), []
        pending = [(nid, row, 1 << 40) for nid, row in targets]
        while pending:
            level = []   # (query item) needing the engine
            while pending:  # rules that need no query are followed at once
                nid, row, bound = pending.pop()
                if (nid, row) in seen:
                    continue
                seen.add((nid, row))
                follow = self._direct(nid, row, bound)
                if follow is None:
                    level.append((nid, row, bound))
                else:
                    pending.extend(follow)
            if not level:
                break
            answers = self._ask(level) if self.held is None else self._hold(level)
            for nid, row, bound in level:
                found = answers.get((nid, row, bound), [])
                more, leaf = self._answer(nid, row, bound, found)
                pending.extend(more)
                if leaf is not None:
                    leaves.append(leaf)
        if self.held is None:
            self._ask([])
        return leaves

    def _direct(self, nid, row, bound):
        """The rows a rule rests on when it needs no query (``None`` when it does)."""
        node = self.graph.nodes[nid]
        kind = node.kind
        if nid in self.p.queries:
            return None
        if kind in SAME:
            return [(node.inputs[0], row, bound)]
        if kind == "leave":
            return [(node.inputs[0], row, bound)]
        if kind == "reduce":   # distinct
            source = self.graph.nodes[node.inputs[0]].inputs[0]
            return [(source, row, bound)]
        if kind == "join":
            return self._halves(node, row, bound)
        if kind == "concat":    # a variable with no initial collection
            return [(self.p.heights._definition(self._feedback_of(node)), row, bound - 1)]
        raise AssertionError(f"no rule for {node.describe()}")

    def _feedback_of(self, variable):
        return self.graph.nodes[next(i for i in variable.inputs if i > variable.id)]

    def _halves(self, node, row, bound):
        left_arr, right_arr = (self.graph.nodes[i] for i in node.inputs)
        kk = node.params["key_width"]
        left = self.graph.nodes[left_arr.inputs[0]]
        right = self.graph.nodes[right_arr.inputs[0]]
        lrow = row[:left.schema.width]
        values = dict(zip(left.schema.names, lrow))
        rkeys = right_arr.schema.names[:kk]
        lkeys = left_arr.schema.names[:kk]
        rest = iter(row[left.schema.width:])
        rrow = tuple(values[lkeys[rkeys.index(n)]] if n in rkeys else next(rest)
                     for n in right.schema.names)
        return [(left.id, lrow, bound), (right.id, rrow, bound)]

    def _ask(self, level) -> dict:
        wanted: dict = {}
        for nid, row, bound in level:
            for query in self._queries(nid):
                wanted.setdefault(query.request, []).append(row + (bound,))
        for request in set(self.asked) | set(wanted):
            old, new = self.asked.get(request, []), wanted.get(request, [])
            if old:
                request.remove(old)
            if new:
                request.insert(new)
            self.asked[request] = new
        self.p.flow.advance()
        self.commits += 1
        return self._answers(level)

    def _hold(self, level) -> dict:
        """Add the requests not held yet; commit only if there were any."""
        added: dict = {}
        for nid, row, bound in level:
            for query in self._queries(nid):
                key = (query.request, row + (bound,))
                self.used.add(key)
                if key not in self.held:
                    self.held[key] = True
                    added.setdefault(query.request, []).append(row + (bound,))
        for request, rows in added.items():
            request.insert(rows)
        if added:
            self.p.flow.advance()
            self.commits += 1
        return self._answers(level)

    def _queries(self, nid) -> list:
        queries = self.p.queries[nid]
        return queries if isinstance(queries, list) else [queries]

    def _answers(self, level) -> dict:
        """``(node, row, bound) -> [(query, found values, multiplicity)]``, each query's
        output read once."""
        answers: dict = {}
        queries = {id(q): q for nid, _row, _bound in level for q in self._queries(nid)}
        for query in queries.values():
            width = query.node.schema.width
            for found, mult in query.output.snapshot().items():
                key = (query.node.id, tuple(found[:width]), found[width])
                answers.setdefault(key, []).append((query, found[width + 1:], mult))
        return answers

    def _answer(self, nid, row, bound, found):
        """The rows a queried rule rests on, and the input leaf when it is an input."""
        node = self.graph.nodes[nid]
        queries = self.p.queries[nid]
        if node.kind == "input":
            if not found:
                raise AssertionError(f"{row} is not in input {node.label}")
            return [], (nid, row, sum(m for _, _, m in found))
        if node.kind == "concat" and nid in self.p.heights.variables:
            if found:  # the initial collection holds it
                query, values, _ = min(found, key=lambda f: f[1][-1])
                return [(query.source, row, values[-1])], None
            return [(self.p.heights._definition(self._feedback_of(node)), row, bound - 1)], None
        if not found:
            raise AssertionError(f"no witness for {row} at {node.describe()}")
        if isinstance(queries, list):  # concat: the lowest, then the first input holding it
            order = {id(q): i for i, q in enumerate(queries)}
            query, values, _ = min(found, key=lambda f: (f[1][-1], order[id(f[0])]))
            return [(query.source, row, values[-1])], None
        if queries.rule == "group":
            return [(queries.source, tuple(v[:-1]), v[-1]) for _, v, _ in found], None
        _, values, _ = min(found, key=lambda f: (f[1][-1], f[1]))
        return [(queries.source, tuple(values[:-1]), values[-1])], None


@dataclass
class CollectionExplanation:
    """Why ``rows`` are in ``output``: ``inputs`` maps each input's name to the rows (with
    their multiplicities) that reproduce them; :meth:`check` replays the dataflow on them."""
    output: object = field(repr=False)
    rows: dict
    inputs: dict
    flow: object = field(repr=False)
    commits: int = 0

    whole_input: bool = False   # a difference the correction rounds cannot reach
    rounds: int = 0             # replays of the correction rounds (0: none were needed)

    @property
    def size(self) -> int:
        """Input rows in the explanation."""
        return sum(len(rows) for rows in self.inputs.values())

    def reproduces(self) -> bool:
        """Whether the dataflow replayed on :attr:`inputs` alone gives the rows again."""
        from .replay import replay

        got = replay(self.flow, self.output.node, self.inputs)
        return all(got.get(r) == m for r, m in self.rows.items())

    def check(self) -> None:
        """Run the dataflow from scratch on :attr:`inputs` alone; raise unless the rows come
        out with the same multiplicities."""
        from .replay import replay

        got = replay(self.flow, self.output.node, self.inputs)
        wrong = {r: m for r, m in self.rows.items() if got.get(r) != m}
        if wrong:
            row, mult = next(iter(wrong.items()))
            raise ExplainError(f"the explanation of {row!r} does not reproduce it: on its "
                               f"{self.size} input rows alone the output holds it "
                               f"{got.get(row, 0)} times, not {mult}")


def provenance_of(flow) -> Provenance:
    """The provenance of a dataflow built with ``explain=True`` (clear error otherwise)."""
    if not getattr(flow, "explain", False):
        raise ExplainError("this dataflow was built without explanations: create it with "
                           "Dataflow(explain=True) to explain its outputs")
    if flow._runtime is None:
        raise ExplainError("nothing computed yet: advance() the dataflow first")
    return flow._provenance


__all__ = ["CollectionExplanation", "ExplainError", "GraphError", "Provenance"]
