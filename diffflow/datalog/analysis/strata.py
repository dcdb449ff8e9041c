"""Strata: relations grouped into strongly connected components, in dependency order.

Negation, ``count`` and ``sum`` through recursion are rejected; ``min`` and
``max`` through recursion are accepted (monotonic aggregation, as in
BigDatalog): the result is the fixpoint that iterating the rules from empty
relations reaches.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".decl e(x: number)\\n.decl p(x: number)\\np(x) :- e(x).\\n"
...                   "p(x) :- p(x), e(x)."))
>>> stratify(a.relations, None)
([Stratum(relations=['e'], recursive=False), Stratum(relations=['p'], recursive=True)], [])
"""
from __future__ import annotations

import itertools

from diffflow.datalog.analysis.analysed import Stratum
from diffflow.datalog.syntax import ast


def stratify(relations: dict, error) -> tuple:
    """``(strata, notes)`` for relations (``name -> Relation``) in evaluation order.

    ``error(message, node, hint)`` makes the located error for a cycle through
    negation, ``count`` or ``sum``.

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl e(x: number)\\n.decl m(x: number)\\n"
    ...                   "m(x) :- e(x), x = min y : { m(y) }."))
    >>> stratify(a.relations, None)[1]
    ['m: min through recursion via m (monotonic aggregation; the fixpoint of iterating from empty)']
    """
    names = list(relations)
    edges = {n: [] for n in names}  # head -> [(body relation, kind, node)]
    for relation in relations.values():
        subsumptive = [False] * len(relation.clauses) + [True] * len(relation.dominated)
        for clause, dominated in zip(relation.clauses + relation.dominated, subsumptive):
            for lit in clause.literals:
                if dominated and _reads(lit) == relation.name:
                    continue  # a subsumptive rule's own relation is its candidates, not a cycle
                if isinstance(lit, ast.Atom):
                    edges[relation.name].append((lit.relation, "positive", lit))
                elif isinstance(lit, ast.Negation):
                    edges[relation.name].append((lit.atom.relation, "negation", lit))
            for agg in clause.aggregates():
                for lit in agg.body:
                    if isinstance(lit, ast.Atom):
                        edges[relation.name].append((lit.relation, agg.function, lit))
                    elif isinstance(lit, ast.Negation):
                        edges[relation.name].append((lit.atom.relation, "negation", lit))
    components = tarjan(names, {n: [b for b, _, _ in edges[n]] for n in names})
    component_of = {n: i for i, comp in enumerate(components) for n in comp}
    notes = []
    for head in names:
        for body, kind, node in edges[head]:
            if component_of[body] != component_of[head]:
                continue
            if kind in ("negation", "count", "sum", "mean"):
                cycle = _cycle_through(head, body, edges, component_of)
                what = "negation" if kind == "negation" else f"the {kind} aggregate"
                through = [r for r in cycle if r != body]
                via = f" through {', '.join(repr(r) for r in through)}" if through else ""
                raise error(
                    f"{what} of {body!r} is in a cycle{via} — the program is not "
                    f"stratifiable", node,
                    hint=f"{body!r} depends on {head!r}; break the cycle (compute "
                         f"{body!r} in an earlier stratum)" +
                         ("; min and max may recur, count and sum may not"
                          if kind != "negation" else ""))
            if kind in ("min", "max"):
                notes.append(f"{head}: {kind} through recursion via {body} (monotonic "
                             f"aggregation; the fixpoint of iterating from empty)")
    for name in names:
        relation = relations[name]
        if relation.shaped and any(component_of[b] == component_of[name]
                                   for b, _, _ in edges[name]):
            notes.append(f"{name}: {_shape(relation)} inside recursion (the fixpoint of "
                         f"iterating from empty)")
    strata = []
    for comp in components:  # Tarjan yields components in reverse topological order
        ordered = [n for n in names if n in comp]
        recursive = len(ordered) > 1 or any(b == ordered[0] for b, _, _ in edges[ordered[0]])
        strata.append(Stratum(ordered, recursive))
    return strata, notes


def tarjan(nodes, successors):
    """Strongly connected components, dependencies before dependents.

    >>> tarjan(["a", "b", "c"], {"a": ["b"], "b": ["a"], "c": ["a"]})
    [['b', 'a'], ['c']]
    """
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = itertools.count()

    def visit(root):
        work = [(root, iter(successors[root]))]
        index[root] = low[root] = next(counter)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = next(counter)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(component)

    for n in nodes:
        if n not in index:
            visit(n)
    return out


def _cycle_through(head, body, edges, component_of):
    """Relations on a dependency path from ``body`` back to ``head`` (for messages)."""
    target = component_of[head]
    previous, frontier = {body: None}, [body]
    while frontier:
        nxt = []
        for n in frontier:
            if n == head:
                path = []
                while n is not None:
                    path.append(n)
                    n = previous[n]
                return path[::-1]
            for succ, _, _ in edges[n]:
                if succ not in previous and component_of[succ] == target:
                    previous[succ] = n
                    nxt.append(succ)
        frontier = nxt
    return [body, head]


def _shape(relation) -> str:
    """What a relation's declaration adds to its rules, in words."""
    parts = (["eqrel"] * relation.eqrel + ["subsumption"] * bool(relation.dominated)
             + ["choice-domain"] * bool(relation.choice)
             + [".limitsize"] * (relation.limit is not None))
    return ", ".join(parts)


def _reads(literal) -> str | None:
    """The relation an atom or negation reads."""
    if isinstance(literal, ast.Negation):
        literal = literal.atom
    return literal.relation if isinstance(literal, ast.Atom) else None
