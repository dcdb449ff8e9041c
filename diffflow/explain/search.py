"""Why is this row in my output: the search that follows a dataflow's witness queries
(:mod:`.queries`) from an output row down to input rows.

Every operator passes a request for a row on to the rows it rests on, by its rule
(EXPLAIN.md §3), with a *bound* -- the row's height (:mod:`.heights`) or more -- and a
mode.  An *exact* request must reproduce the row's multiplicity (the explained rows are
exact); below ``distinct`` and a single ``min``/``max`` only presence matters.  Most rules
need no lookup: a filter, an arrangement, ``enter``/``leave`` ask for the same row,
``distinct`` for the same row's presence, a join for its two halves, a loop variable for the
same row of the definition one round lower unless the initial collection has it.  The others
read an index (:mod:`.queries`):

* ``select`` finds the rows mapping to the row (all of them when exact, else the lowest);
* ``concat`` finds the inputs holding it (all, subtracted ones included, when exact; else the
  lowest, then the first);
* a reduction with one ``min``/``max`` finds its lowest winning row, every other reducer
  (count, sum, threshold, custom) its whole group, exactly;
* a loop variable asks whether its initial collection holds the row;
* an input reads the row's multiplicity.

The search reads one level of indexes at a time, between epochs (no engine commit), always
choosing the lowest height and then the smallest row, so an explanation is deterministic:
through ``reachable`` it is one shortest path.

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

import numpy as np

from diffflow.api.features import FlowAccess
from diffflow.common.errors import ExplainError
from diffflow.common.schema import decode_rows, encode_column
from diffflow.explain.queries import TOP, _Delegate, answer_all
from diffflow.explain.replay import replay

SAME = ("filter", "consolidate", "inspect", "output", "arrange", "enter", "leave")


def encode_row(row: tuple, schema, symbols) -> tuple:
    """A row of Python values as the int64 codes the engine holds.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); a = flow.input("a", ["x", ("y", float)])
    >>> decode_row(encode_row((3, 0.5), a.schema, flow.symbols), a.schema, flow.symbols)
    (3, 0.5)
    """
    return tuple(encode_column([v], kind, symbols, f"{name}").item()
                 for v, kind, name in zip(row, schema.types, schema.names))


def multiplicities(output, rows) -> dict:
    """``{row: multiplicity}`` of those ``rows`` in ``output`` now (absent ones left out),
    found in its encoded contents without decoding the rest.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.output()
    >>> a.insert([1, 1, 2]); flow.advance(); multiplicities(out, [(1,), (5,)])
    {(1,): 2}
    """
    schema, symbols = output.node.schema, output.flow.symbols
    codes = {}
    for row in rows:
        if len(row) != schema.width:
            continue
        try:
            codes[row] = encode_row(row, schema, symbols)
        except (TypeError, ValueError):   # not even of the output's types
            continue
    if not codes:
        return {}
    asked = np.array(list(codes.values()), dtype=np.int64).reshape(len(codes), schema.width)
    held, mults = FlowAccess(output.flow).runtime.output_rows(output.node.id, asked)
    counts = dict(zip(map(tuple, held.tolist()), mults.tolist()))   # (read only the asked rows)
    return {row: counts[code] for row, code in codes.items() if counts.get(code)}


def decode_row(row: tuple, schema, symbols) -> tuple:
    """The Python values of an encoded row (the inverse of :func:`encode_row`)."""
    return decode_rows(np.array([row], dtype=np.int64).reshape(1, len(row)), schema,
                       symbols)[0]



class RowSearch:
    """The search for the input rows an output row rests on (module doc): breadth first over
    rule applications, one batch of index reads per level; rows are int64-encoded inside,
    decoded at the ends."""

    def __init__(self, provenance):
        self.p = provenance
        self.graph = provenance.graph
        self.reads = 0   # levels of index reads

    def run(self, targets):
        """Explain ``(node id, row)`` targets exactly; returns ``(input id, row, mult)``.

        An item is ``(node, row, bound, exact)``.  *Exact* items must reproduce the row's
        multiplicity, so a ``select`` or ``concat`` asks for every row that adds to it (a
        difference's subtracted ones too) and a join for both halves exactly; below
        ``distinct`` and ``min``/``max`` only presence matters, and one witness of the
        lowest height is enough (what makes a reachability explanation one path)."""
        symbols = self.p.flow.symbols
        seen, leaves = set(), []
        pending = [(nid, encode_row(row, self.graph.nodes[nid].schema, symbols), TOP, True)
                   for nid, row in targets]
        while pending:
            level = []   # items needing an index read
            while pending:  # rules that need no read are followed at once
                item = pending.pop()
                nid, row, bound, exact = item
                if (nid, row, exact) in seen:
                    continue
                seen.add((nid, row, exact))
                follow = self._direct(*item)
                if follow is None:
                    level.append(item)
                else:
                    pending.extend(follow)
            if not level:
                break
            answers = self._read(level)
            for item in level:
                found = answers.get(item[:3], [])
                more, leaf = self._answer(*item, found)
                pending.extend(more)
                if leaf is not None:
                    leaves.append(leaf)
        decoded = {(nid, row, mult): decode_row(row, self.graph.nodes[nid].schema, symbols)
                   for nid, row, mult in set(leaves)}
        return sorted((nid, decoded[(nid, row, mult)], mult) for nid, row, mult in decoded)

    def _direct(self, nid, row, bound, exact):
        """The rows a rule rests on when it needs no query (``None`` when it does)."""
        node = self.graph.nodes[nid]
        kind = node.kind
        if nid in self.p.queries:
            return None
        if kind == "leave":   # the loop's final value
            return [(node.inputs[0], row, TOP, exact)]
        if kind in SAME:
            return [(node.inputs[0], row, bound, exact)]
        if kind == "reduce":   # distinct: one copy is enough
            source = self.graph.nodes[node.inputs[0]].inputs[0]
            return [(source, row, bound, False)]
        if kind == "join":
            return [(nid_, half, bound, exact) for nid_, half in self._halves(node, row)]
        if kind == "concat":    # a variable with no initial collection
            return [(self.p.heights._definition(self._feedback_of(node)), row,
                     TOP if exact else bound - 1, exact)]
        raise AssertionError(f"no rule for {node.describe()}")

    def _feedback_of(self, variable):
        return self.graph.nodes[next(i for i in variable.inputs if i > variable.id)]

    def _halves(self, node, row):
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
        return [(left.id, lrow), (right.id, rrow)]

    def _read(self, level) -> dict:
        """``(node, row, bound) -> [(query, found values, multiplicity)]``: one read of
        each query's indexes for the whole level."""
        self.reads += 1
        asked: dict = {}
        for nid, row, bound, _exact in level:
            queries = self.p.queries[nid]
            for query in queries if isinstance(queries, list) else [queries]:
                asked.setdefault(id(query), (query, []))[1].append((row, bound))
        answers: dict = {}
        asked = [(query, list(dict.fromkeys(items))) for query, items in asked.values()]
        for (query, _), answered in zip(asked, answer_all(asked)):   # (reads batched)
            for (row, bound), found in answered.items():
                answers.setdefault((query.node.id, row, bound), []).extend(
                    (query, values, mult) for values, mult in found)
        return answers

    def _answer(self, nid, row, bound, exact, found):
        """The items a queried rule rests on, and the input leaf when it is an input."""
        node = self.graph.nodes[nid]
        queries = self.p.queries[nid]
        if node.kind == "input":
            if not found:
                raise AssertionError(f"{row} is not in input {node.label}")
            return [], (nid, row, sum(m for _, _, m in found))
        definition = None
        if node.kind == "concat" and nid in self.p.heights.loop_variables:
            definition = self.p.heights._definition(self._feedback_of(node))
            if exact:  # the final value is the definition's
                return [(definition, row, TOP, True)], None
            if found:  # the initial collection holds it
                query, values, _ = min(found, key=lambda f: f[1][-1])
                return [(query.source, row, values[-1], False)], None
            return [(definition, row, bound - 1, False)], None
        if isinstance(queries, list):  # concat
            if exact:   # every input holding it, subtracted ones too
                return [(q.source, row, TOP, True)
                        for q in {id(q): q for q, _, _ in found}.values()], None
            found = [f for f in found if not f[0].negated]
            if not found:
                raise AssertionError(f"no witness for {row} at {node.describe()}")
            order = {id(q): i for i, q in enumerate(queries)}
            query, values, _ = min(found, key=lambda f: (f[1][-1], order[id(f[0])]))
            if isinstance(query, _Delegate):  # the input's own answer is at hand
                return self._answer(query.source, row, values[-1], False,
                                    [(query.inner, v, m) for q, v, m in found if q is query])
            return [(query.source, row, values[-1], False)], None
        if not found:
            raise AssertionError(f"no witness for {row} at {node.describe()}")
        if queries.rule == "group":   # the value needs every row, exactly
            return [(queries.source, tuple(v[:-1]), TOP, True) for _, v, _ in found], None
        if queries.rule == "select" and exact:  # every row it maps from
            return [(queries.source, tuple(v[:-1]), TOP, True) for _, v, _ in found], None
        _, values, _ = min(found, key=lambda f: (f[1][-1], f[1]))
        return [(queries.source, tuple(values[:-1]), values[-1], False)], None


@dataclass
class CollectionExplanation:
    """Why ``rows`` are in ``output``: ``inputs`` maps each input's name to the rows (with
    their multiplicities) that reproduce them; :meth:`check` replays the dataflow on them."""
    output: object = field(repr=False)
    rows: dict
    inputs: dict
    flow: object = field(repr=False)
    reads: int = 0              # levels of index reads the search took

    whole_input: bool = False   # a difference the correction rounds cannot reach
    rounds: int = 0             # replays of the correction rounds (0: none were needed)

    @property
    def size(self) -> int:
        """Input rows in the explanation."""
        return sum(len(rows) for rows in self.inputs.values())

    def reproduces(self) -> bool:
        """Whether the dataflow replayed on :attr:`inputs` alone gives the rows again."""
        got = replay(self.flow, self.output.node, self.inputs)
        return all(got.get(r) == m for r, m in self.rows.items())

    def check(self) -> None:
        """Run the dataflow from scratch on :attr:`inputs` alone; raise unless the rows come
        out with the same multiplicities."""
        got = replay(self.flow, self.output.node, self.inputs)
        wrong = {r: m for r, m in self.rows.items() if got.get(r) != m}
        if wrong:
            row, mult = next(iter(wrong.items()))
            raise ExplainError(f"the explanation of {row!r} does not reproduce it: on its "
                               f"{self.size} input rows alone the output holds it "
                               f"{got.get(row, 0)} times, not {mult}")


__all__ = ["CollectionExplanation", "ExplainError", "RowSearch"]
