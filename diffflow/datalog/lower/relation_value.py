"""A relation's value from its candidate rows: what its declaration adds to its rules.

A relation's *candidates* are the distinct rows of its facts and clauses.  Its
value is the candidates, then, as declared:

* ``eqrel``: their equivalence closure -- reflexive, symmetric, transitive --
  computed as connected components (label propagation, which removals can split
  again), then every pair of a component;
* subsumptive rules ``r(a) <= r(b) :- body.``: minus every candidate that another
  candidate dominates (analysis compiles the rules into :attr:`Relation.dominated`
  clauses whose ``r`` atoms read the candidates; a row never dominates itself).  Inside
  recursion the candidates include the rows kept last round, so what a dominated row
  derived stays (as in Soufflé, which deletes it but keeps its consequences): without
  that, a row that dominates the row it was derived from would make both come and go
  forever;
* ``choice-domain``: one row per value of each domain -- the first in value order
  (below).  With one domain that is a ``reduce`` per domain value, so its cost
  follows the change; with several it is the greedy choice in value order over
  the whole relation (a row is kept when no earlier kept row shares a domain
  value), which costs the relation's size on each change.  Inside recursion a
  choice, once made, stays: each round keeps the rows chosen so far and chooses
  only among candidates whose domain values are still free -- so a choice is
  always founded on rows chosen in earlier rounds, as in Soufflé's evaluation
  (the first round wins, then value order), never on a cycle of choices that
  support each other;
* ``.limitsize r(n=N)``: the first ``N`` rows in value order (a reduce over the
  whole relation); inside recursion rows kept in earlier rounds stay and new ones fill
  the room left, as Soufflé stops adding at ``N``.

Soufflé keeps whichever row its evaluation meets first; diffflow's choice is
deterministic, so an incrementally maintained relation always equals a
from-scratch run.  A choice changes only when the chosen row goes away or a
smaller candidate arrives.

*Value order* compares rows attribute by attribute in declaration order:
numbers, unsigned and floats by value, symbols by their text (UTF-8 byte order,
as Soufflé's ``<``).

>>> import diffflow as dd
>>> p = dd.Program(".decl e(x: number, y: number)\\n.decl first(x: number, y: number) "
...                "choice-domain x\\nfirst(x, y) :- e(x, y).")
>>> p.insert("e", [(1, 5), (1, 3), (2, 7)]); p.commit()
3
>>> sorted(p.relation("first"))
[(1, 3), (2, 7)]
"""
from __future__ import annotations

import numpy as np

from diffflow.api.arranged import reduce_with
from diffflow.common.schema import Schema, decode_floats, text_ranks
from diffflow.dataflow.expr import Lit
from diffflow.operators.reducers import Reducer, segment_starts


def relation_value(relation, candidates, dominated=None, previous=None):
    """The value of ``relation`` (an analysed :class:`~diffflow.datalog.analysis.analysed.Relation`) from its
    ``candidates`` collection (columns ``c0, c1, ...``); ``dominated`` is the collection
    of candidates its subsumptive rules dominate, if it has any; ``previous`` is the
    relation's value in the previous round, inside recursion (its choices stay).

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> import diffflow as dd
    >>> a = analyse(parse(".decl same(x: number, y: number) eqrel"))
    >>> flow = dd.Dataflow(); c = flow.input("c", ["c0", "c1"])
    >>> out = relation_value(a.relations["same"], c).output()
    >>> c.insert([(1, 2), (3, 2)]); flow.advance(); len(out.snapshot())
    9
    """
    value = candidates
    if relation.eqrel:
        value = equivalence_closure(value)
    if dominated is not None:
        value = value.antijoin(dominated.distinct(), on=list(value.columns))
    if relation.choice and previous is not None:
        free = value
        for domain in relation.choice:  # candidates whose domain values are not taken yet
            names = [f"c{i}" for i in domain]
            free = free.antijoin(previous.select(*names).distinct(), on=names)
        # distinct, though the two are disjoint: it consolidates what goes round the loop.
        # The variable's own updates and their retractions may sit on different partitions,
        # and without it they travelled round the loop until max_rounds (measured)
        value = previous.concat(choose(free, relation.types, relation.choice)).distinct()
    elif relation.choice:
        value = choose(value, relation.types, relation.choice)
    if relation.limit is not None and previous is not None:
        # founded, like a recursive choice: rows kept in earlier rounds stay, new ones fill
        # the room left in value order (else a row could drop what derived it, and back)
        names = list(value.columns)
        new = value.antijoin(previous, on=names)
        tagged = previous.select(later=Lit(0), **{n: n for n in names}).concat(
            new.select(later=Lit(1), **{n: n for n in names}))
        value = first_rows(tagged, ["number", *relation.types], relation.limit).select(*names)
    elif relation.limit is not None:
        value = first_rows(value, relation.types, relation.limit)
    return value


def value_of_set(relation, candidates: set, dominated: set = frozenset(),
                 previous: set | None = None) -> set:
    """:func:`relation_value` on a set of Python tuples (symbols as ``str``): the plain
    evaluation explanations replay (:mod:`~diffflow.datalog.explain.interpret`).

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl c(k: symbol, v: number) choice-domain k"))
    >>> sorted(value_of_set(a.relations["c"], {("a", 2), ("a", 1), ("b", 5)}))
    [('a', 1), ('b', 5)]
    """
    rows = set(candidates)
    if relation.dominated and previous is not None:
        rows |= set(previous)  # (the caller computed ``dominated`` over these)
    if relation.eqrel:
        classes: dict = {}
        for a, b in rows:
            merged = classes.get(a, {a}) | classes.get(b, {b})
            for member in merged:
                classes[member] = merged
        rows = {(a, b) for a, members in classes.items() for b in members}
    rows -= set(dominated)
    if relation.choice:
        taken, kept = [set() for _ in relation.choice], set(previous or ())
        for row in sorted(previous or ()):
            for domain, seen in zip(relation.choice, taken):
                seen.add(tuple(row[i] for i in domain))
        for row in sorted(rows):  # Python's order: numbers by value, str by code point
            keys = [tuple(row[i] for i in domain) for domain in relation.choice]
            if not any(key in seen for key, seen in zip(keys, taken)):
                kept.add(row)
                for key, seen in zip(keys, taken):
                    seen.add(key)
        rows = kept
    if relation.limit is not None and previous is not None:
        kept = set(previous)
        rows = kept | set(sorted(rows - kept)[:relation.limit - len(kept)])
    elif relation.limit is not None:
        rows = set(sorted(rows)[:relation.limit])
    return rows


def equivalence_closure(pairs):
    """Every ``(a, b)`` of one connected component of the pairs taken as undirected edges.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); c = flow.input("c", ["c0", "c1"])
    >>> out = equivalence_closure(c).output()
    >>> c.insert([(1, 2), (5, 5)]); flow.advance(); sorted(out.snapshot())
    [(1, 1), (1, 2), (2, 1), (2, 2), (5, 5)]
    """
    from diffflow.algorithms import graphs

    labels = graphs.connected_components(pairs)
    other = labels.select(other="node", label="label")
    return labels.join(other, on="label").select(c0="node", c1="other")


def choose(rows, types: list, domains: list):
    """One row per value of each domain (lists of column positions), first in value order.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); c = flow.input("c", ["c0", "c1"])
    >>> out = choose(c, ["number", "number"], [[0], [1]]).output()
    >>> c.insert([(1, 1), (1, 2), (2, 1), (2, 2)]); flow.advance(); sorted(out.snapshot())
    [(1, 1), (2, 2)]
    """
    names = list(rows.columns)
    if len(domains) == 1:
        keys = [names[i] for i in domains[0]]
        values = [i for i in range(len(names)) if i not in domains[0]]
        reducer = ValueOrder([types[i] for i in values], keep=1)
        return _reduce(rows, keys, [names[i] for i in values], reducer).select(*names)
    reducer = ValueOrder(list(types), domains=domains)
    return _reduce(rows, [], names, reducer)


def first_rows(rows, types: list, limit: int):
    """The first ``limit`` rows in value order.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); c = flow.input("c", ["c0"])
    >>> out = first_rows(c, ["number"], 2).output()
    >>> c.insert([(5,), (-1,), (3,)]); flow.advance(); sorted(out.snapshot())
    [(-1,), (3,)]
    """
    return _reduce(rows, [], list(rows.columns), ValueOrder(list(types), keep=limit))


def number_rows(rows, types: list, counters: dict):
    """``rows`` with a column per ``counters`` entry (``name -> (stride, offset)``): each
    row's rank in value order times ``stride`` plus ``offset`` (:mod:`~diffflow.datalog.transform.counters`).

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); c = flow.input("c", ["c0"])
    >>> out = number_rows(c, ["number"], {"c1": (2, 1)}).output()
    >>> c.insert([(5,), (-1,), (3,)]); flow.advance(); sorted(out.snapshot())
    [(-1, 1), (3, 3), (5, 5)]
    """
    values = list(rows.columns)
    reducer = ValueOrder(list(types), number=list(counters.values()))
    keyed = rows.select(all_rows=Lit(0), **{n: n for n in values})
    schema = Schema.of([("all_rows", "int"), *zip(keyed.schema.names[1:],
                                                   keyed.schema.types[1:]),
                        *((name, "int") for name in counters)])
    out = reduce_with(keyed.arrange(["all_rows"]), reducer, schema, reducer.label)
    return out.select(*values, *counters)


def _reduce(rows, keys: list, values: list, reducer):
    if not keys:  # one group: a constant key column
        rows = rows.select(**{"all_rows": Lit(0)}, **{n: n for n in values})
        keys = ["all_rows"]
    else:
        rows = rows.select(*keys, *values)
    schema = Schema.of([(n, t) for n, t in zip(rows.schema.names, rows.schema.types)])
    out = reduce_with(rows.arrange(keys), reducer, schema, reducer.label)
    return out.select(*values) if keys == ["all_rows"] else out


class ValueOrder(Reducer):
    """Per group, the first ``keep`` rows in value order, or (with ``domains``) the rows a
    greedy pass in value order keeps: a row goes in when no row already in shares the value
    of any domain (lists of value-column positions).  Symbols compare by text, so the
    reduce operator binds the worker's symbol table (:meth:`bind_symbols`).

    >>> r = ValueOrder(["number", "float"], keep=1)
    >>> from diffflow.common.schema import encode_floats
    >>> vals = np.column_stack([[2, 1, 1], encode_floats(np.array([0.5, 9.0, -1.0]))])
    >>> g, out, m = r.reduce(np.array([0, 0, 7]), vals, np.array([1, 1, 1]))
    >>> g.tolist(), out[:, 0].tolist()
    ([0, 7], [1, 1])
    """

    def __init__(self, types: list, keep: int | None = None, domains: list | None = None,
                 symbols=None, number: list | None = None):
        self.types, self.keep, self.domains = list(types), keep, domains
        self.symbols, self.number = symbols, number
        self.out_width = len(types) + len(number or ())
        self.label = ("autoinc" if number else f"choice-domain {domains}" if domains else
                      "choice-domain" if keep == 1 else f"limitsize {keep}")

    def bind_symbols(self, symbols) -> "ValueOrder":
        """This tactic reading symbol texts from ``symbols`` (a worker's table)."""
        return ValueOrder(self.types, self.keep, self.domains, symbols, self.number)

    def reduce(self, group, vals, mults):
        keep = mults > 0  # a set's rows; negative multiplicities are absent rows
        group, vals = group[keep], vals[keep]
        if not len(group):
            return group, np.zeros((0, self.out_width), np.int64), np.zeros(0, np.int64)
        keys = [self._order_key(vals[:, j], kind) for j, kind in enumerate(self.types)]
        order = np.lexsort(keys[::-1] + [group])
        group, vals = group[order], vals[order]
        if self.number:  # every row, with its rank times stride plus offset
            starts = segment_starts(group)
            rank = np.arange(len(group)) - np.repeat(starts, np.diff(np.append(starts,
                                                                                len(group))))
            numbers = [rank * stride + offset for stride, offset in self.number]
            return group, np.column_stack([vals, *numbers]).astype(np.int64), \
                np.ones(len(group), np.int64)
        if self.domains:
            chosen = _greedy(np.stack([_dense(vals[:, d]) for d in self.domains], axis=1),
                             segment_starts(group))
        else:
            starts = segment_starts(group)
            rank = np.arange(len(group)) - np.repeat(starts, np.diff(np.append(starts,
                                                                                len(group))))
            chosen = np.flatnonzero(rank < self.keep)
        return group[chosen], np.ascontiguousarray(vals[chosen]), np.ones(len(chosen), np.int64)

    def _order_key(self, column, kind):
        if kind == "float":
            return decode_floats(column)
        if kind != "symbol":
            return column
        return text_ranks(column, self.symbols)


def _dense(columns: np.ndarray) -> np.ndarray:
    """A dense id per distinct row of ``columns`` (n, k)."""
    return np.unique(columns, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def _greedy(ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Positions kept by the greedy pass over rows in order, per group (``starts``): a row
    is kept when none of its domain ids (``ids[:, d]``) is taken in its group yet."""
    from diffflow.datalog.lower._choice_kernel import greedy_choice

    bounds = np.append(starts, len(ids)).astype(np.int64)
    return np.flatnonzero(greedy_choice(np.ascontiguousarray(ids), bounds))
