"""From-scratch oracles for the Datalog query library in ``queries/``.

Every query of ``queries/<name>/prog.dl`` has here a plain-Python implementation that
shares nothing with diffflow (only the standard library): BFS for closures and reachability,
union-find for components, Dijkstra for shortest paths, naive fixpoints over Python sets for
the rest.  Each oracle maps the input relations (``{name: set of tuples}``) to the output
relations of the program (``{name: set of tuples}``, every ``.output`` relation present).

``QUERIES`` also records, per query, the column types of the inputs and outputs and a random
fact generator used by ``tests/datalog/test_queries.py``.

Regenerate the expected outputs of the query library (never produced by diffflow) with

    python -m tests.support.oracles --write-expected

and check that they are current with ``python -m tests.support.oracles --check``.
"""
from __future__ import annotations

import heapq
import os
import sys
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = str(Path(__file__).resolve().parents[2])
QUERIES_DIR = os.path.join(ROOT, "queries")

NUM, SYM = "number", "symbol"


# --------------------------------------------------------------------------- oracles

def _succ(edges):
    out = defaultdict(set)
    for x, y in edges:
        out[x].add(y)
    return out


def _bfs(start_nodes, succ):
    """Nodes reachable from ``start_nodes`` by zero or more edges."""
    seen = set(start_nodes)
    queue = deque(seen)
    while queue:
        x = queue.popleft()
        for y in succ.get(x, ()):
            if y not in seen:
                seen.add(y)
                queue.append(y)
    return seen


def bfs_distances(edges, sources, undirected=False) -> dict:
    """Node -> its distance in edges from the nearest of ``sources`` (reachable nodes only);
    ``undirected``: edges go both ways.

    >>> bfs_distances([(1, 2), (2, 3), (4, 1)], [1])
    {1: 0, 2: 1, 3: 2}
    """
    succ = _succ(edges)
    if undirected:
        for x, y in edges:
            succ[y].add(x)
    dist = {s: 0 for s in sources}
    queue = deque(dist)
    while queue:
        x = queue.popleft()
        for y in sorted(succ.get(x, ())):
            if y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist


def transitive_closure(facts):
    """path(x, y): a non-empty path x -> y; cyclic(x): x lies on a cycle."""
    edges = facts["edge"]
    succ = _succ(edges)
    path = set()
    for x in {e[0] for e in edges}:
        # nodes reachable by one or more edges: BFS started from the successors of x
        for y in _bfs(succ[x], succ):
            path.add((x, y))
    return {"path": path, "cyclic": {(x,) for x, y in path if x == y}}


def reachability(facts):
    """reach(x): reachable from a root (roots included); unreachable(x): other known nodes."""
    edges, roots = facts["edge"], {r[0] for r in facts["root"]}
    reach = _bfs(roots, _succ(edges))
    nodes = {x for e in edges for x in e} | roots
    return {"reach": {(x,) for x in reach}, "unreachable": {(x,) for x in nodes - reach}}


def same_generation(facts):
    """sg(x, y): x and y are (not necessarily distinct) same-generation relatives.

    Base: distinct children of a common parent.  Step: children of a same-generation pair.
    Computed with a worklist over pairs.
    """
    children = defaultdict(set)
    for child, par in facts["parent"]:
        children[par].add(child)
    sg = set()
    work = deque()

    def add(pair):
        if pair not in sg:
            sg.add(pair)
            work.append(pair)

    for kids in children.values():
        for x in kids:
            for y in kids:
                if x != y:
                    add((x, y))
    while work:
        a, b = work.popleft()
        for x in children.get(a, ()):
            for y in children.get(b, ()):
                add((x, y))
    return {"sg": sg}


def connected_components(facts):
    """cc(x, c): c is the smallest node of x's undirected component (union-find);
    component_size(c, n); components(n): the number of components (a single tuple, 0 if none).
    """
    parent = {}

    def find(x):
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            if rb < ra:
                ra, rb = rb, ra
            parent[rb] = ra          # the smaller node stays the root: the root is the minimum

    for (v,) in facts["vertex"]:
        parent.setdefault(v, v)
    for x, y in facts["edge"]:
        parent.setdefault(x, x)
        parent.setdefault(y, y)
        union(x, y)
    cc = {(x, find(x)) for x in parent}
    sizes = defaultdict(int)
    for _, c in cc:
        sizes[c] += 1
    return {"cc": cc,
            "component_size": {(c, n) for c, n in sizes.items()},
            "components": {(len(sizes),)}}


def sssp(facts):
    """dist(n, d): shortest distance from the nearest source (Dijkstra, weights >= 0);
    unreached(n): nodes of the edge relation with no distance."""
    adj = defaultdict(list)
    for x, y, w in facts["edge"]:
        assert w >= 0, "sssp needs non-negative weights"
        adj[x].append((y, w))
    dist = {}
    heap = [(0, s) for (s,) in facts["source"]]
    heapq.heapify(heap)
    while heap:
        d, x = heapq.heappop(heap)
        if x in dist:
            continue
        dist[x] = d
        for y, w in adj[x]:
            if y not in dist:
                heapq.heappush(heap, (d + w, y))
    nodes = {x for e in facts["edge"] for x in e[:2]}
    return {"dist": set(dist.items()), "unreached": {(n,) for n in nodes if n not in dist}}


def andersen(facts):
    """Andersen's inclusion-based points-to analysis, by a naive fixpoint over points-to sets.

    p = &a (addressOf p a):  a in pts(p)
    p = q  (assign p q):     pts(q) <= pts(p)
    p = *q (load p q):       pts(r) <= pts(p) for r in pts(q)
    *p = q (store p q):      pts(q) <= pts(r) for r in pts(p)
    alias(p, q): p != q and pts(p), pts(q) intersect.
    """
    pts = defaultdict(set)
    for p, a in facts["addressOf"]:
        pts[p].add(a)
    changed = True
    while changed:
        changed = False

        def flow(src, dst):
            nonlocal changed
            new = pts[src] - pts[dst]
            if new:
                pts[dst] |= new
                changed = True

        for p, q in facts["assign"]:
            flow(q, p)
        for p, q in facts["load"]:
            for r in list(pts[q]):
                flow(r, p)
        for p, q in facts["store"]:
            for r in list(pts[p]):
                flow(q, r)
    points_to = {(p, a) for p, s in pts.items() for a in s}
    holders = defaultdict(set)
    for p, a in points_to:
        holders[a].add(p)
    alias = {(p, q) for hs in holders.values() for p in hs for q in hs if p != q}
    return {"pointsTo": points_to, "alias": alias}


def _compose(r, s):
    """{(x, z) : (x, y) in r, (y, z) in s}."""
    by_first = defaultdict(set)
    for y, z in s:
        by_first[y].add(z)
    return {(x, z) for x, y in r for z in by_first.get(y, ())}


def _inverse(r):
    return {(y, x) for x, y in r}


def cspa(facts):
    """Graspan's context-sensitive points-to analysis (CSPA), as relational algebra.

    With A = assign, D = dereference, VF = valueFlow, MA = memoryAlias, VA = valueAlias:
      VF = A u Id(nodes of A) u A;MA u VF;VF
      MA = Id(nodes of A) u D^-1;VA;D
      VA = VF^-1;VF u VF^-1;MA;VF
    iterated from empty sets to the least fixpoint.
    """
    assign, deref = facts["assign"], facts["dereference"]
    ident = {(x, x) for e in assign for x in e}
    deref_inv = _inverse(deref)
    vf, ma, va = set(), set(), set()
    while True:
        vf_inv = _inverse(vf)
        new_vf = assign | ident | _compose(assign, ma) | _compose(vf, vf) | vf
        new_ma = ident | _compose(_compose(deref_inv, va), deref) | ma
        new_va = _compose(vf_inv, vf) | _compose(_compose(vf_inv, ma), vf) | va
        if (new_vf, new_ma, new_va) == (vf, ma, va):
            return {"valueFlow": vf, "valueAlias": va, "memoryAlias": ma}
        vf, ma, va = new_vf, new_ma, new_va


# --------------------------------------------------------------------------- random facts

def magic_samegen(facts):
    """query(): 8 and 15 are of the same generation -- they have ancestors at one
    distance k that are one node (a node), following parent edges k times from each.  The
    ancestor sets at distance k repeat eventually, so the walk stops when a pair of sets
    comes back."""
    up = {}
    for x, p in facts["parent"]:
        up.setdefault(x, set()).add(p)
    nodes = {x for (x,) in facts["node"]}
    left, right, seen = frozenset({8}), frozenset({15}), set()
    while (left, right) not in seen:
        if left & right & nodes:
            return {"query": {()}}
        seen.add((left, right))
        left = frozenset(p for x in left for p in up.get(x, ()))
        right = frozenset(p for x in right for p in up.get(x, ()))
    return {"query": set()}


def _nodes(prefix, n):
    return [f"{prefix}{i}" for i in range(n)] if prefix else list(range(n))


def _pairs(rng, nodes, k):
    return {(rng.choice(nodes), rng.choice(nodes)) for _ in range(k)}


def gen_transitive_closure(rng, scale):
    nodes = _nodes(None, 4 + 2 * scale)
    return {"edge": _pairs(rng, nodes, 3 + 3 * scale)}


def gen_reachability(rng, scale):
    nodes = _nodes("n", 4 + 2 * scale)
    return {"edge": _pairs(rng, nodes, 3 + 3 * scale),
            "root": {(rng.choice(nodes),) for _ in range(1 + scale // 2)}}


def gen_same_generation(rng, scale):
    people = _nodes("p", 5 + 2 * scale)
    # mostly "older" parents (a larger index), sometimes anything, so cycles happen too
    rows = set()
    for _ in range(3 + 3 * scale):
        c = rng.randrange(len(people) - 1)
        p = rng.randrange(c + 1, len(people)) if rng.random() < 0.8 else rng.randrange(len(people))
        rows.add((people[c], people[p]))
    return {"parent": rows}


def gen_connected_components(rng, scale):
    nodes = _nodes(None, 5 + 3 * scale)
    return {"edge": _pairs(rng, nodes, 2 + 2 * scale),
            "vertex": {(rng.choice(nodes),) for _ in range(1 + scale)}}


def gen_sssp(rng, scale):
    nodes = _nodes(None, 4 + 2 * scale)
    return {"edge": {(rng.choice(nodes), rng.choice(nodes), rng.randrange(0, 7))
                     for _ in range(3 + 3 * scale)},
            "source": {(rng.choice(nodes),) for _ in range(1 + scale // 3)}}


def gen_andersen(rng, scale):
    vs = _nodes("v", 4 + scale)
    return {"addressOf": _pairs(rng, vs, 1 + scale),
            "assign": _pairs(rng, vs, 1 + scale),
            "load": _pairs(rng, vs, 1 + scale // 2),
            "store": _pairs(rng, vs, 1 + scale // 2)}


def gen_cspa(rng, scale):
    nodes = _nodes(None, 4 + scale)
    return {"assign": _pairs(rng, nodes, 2 + scale),
            "dereference": _pairs(rng, nodes, 1 + scale)}


def gen_magic_samegen(rng, scale):
    # the ancestors of the two asked nodes, some missing, with some random extra parents
    nodes = [8, 15, 4, 7, 2, 3, 1, *range(9, 11 + scale)]
    rows = {(8, 4), (15, 7), (4, 2), (7, 3), (2, 1), (3, 1)}
    rows = {r for r in rows if rng.random() < 0.85}
    rows |= {(rng.choice(nodes), rng.choice(nodes)) for _ in range(1 + scale)}
    return {"parent": rows, "node": {(x,) for x in nodes if rng.random() < 0.8}}


# --------------------------------------------------------------------------- registry

@dataclass(frozen=True)
class Query:
    name: str
    inputs: dict          # relation -> tuple of column types
    outputs: dict         # relation -> tuple of column types
    oracle: Callable
    generate: Callable    # (random.Random, scale) -> {input relation: set of tuples}
    recursive_min: bool = False

    @property
    def dir(self):
        return os.path.join(QUERIES_DIR, self.name)


QUERIES = {q.name: q for q in [
    Query("transitive_closure", {"edge": (NUM, NUM)},
          {"path": (NUM, NUM), "cyclic": (NUM,)}, transitive_closure, gen_transitive_closure),
    Query("reachability", {"edge": (SYM, SYM), "root": (SYM,)},
          {"reach": (SYM,), "unreachable": (SYM,)}, reachability, gen_reachability),
    Query("same_generation", {"parent": (SYM, SYM)},
          {"sg": (SYM, SYM)}, same_generation, gen_same_generation),
    Query("connected_components", {"edge": (NUM, NUM), "vertex": (NUM,)},
          {"cc": (NUM, NUM), "component_size": (NUM, NUM), "components": (NUM,)},
          connected_components, gen_connected_components, recursive_min=True),
    Query("sssp", {"edge": (NUM, NUM, NUM), "source": (NUM,)},
          {"dist": (NUM, NUM), "unreached": (NUM,)}, sssp, gen_sssp, recursive_min=True),
    Query("andersen", {"addressOf": (SYM, SYM), "assign": (SYM, SYM),
                       "load": (SYM, SYM), "store": (SYM, SYM)},
          {"pointsTo": (SYM, SYM), "alias": (SYM, SYM)}, andersen, gen_andersen),
    Query("cspa", {"assign": (NUM, NUM), "dereference": (NUM, NUM)},
          {"valueFlow": (NUM, NUM), "valueAlias": (NUM, NUM), "memoryAlias": (NUM, NUM)},
          cspa, gen_cspa),
    Query("magic_samegen", {"node": (NUM,), "parent": (NUM, NUM)}, {"query": ()},
          magic_samegen, gen_magic_samegen),
]}


# --------------------------------------------------------------------------- fact files

def _parse(value: str, typ: str):
    return int(value) if typ == NUM else value


def read_facts(query: Query, facts_dir: str | None = None) -> dict:
    """The input relations of ``query`` from Soufflé-style TAB-separated ``<rel>.facts``."""
    facts_dir = facts_dir or os.path.join(query.dir, "facts")
    facts = {}
    for rel, types in query.inputs.items():
        rows = set()
        with open(os.path.join(facts_dir, rel + ".facts"), encoding="utf-8") as f:
            for line in f.read().splitlines():
                if not line.strip():
                    continue
                parts = line.split("\t")
                assert len(parts) == len(types), f"{rel}.facts: bad line {line!r}"
                rows.add(tuple(_parse(v, t) for v, t in zip(parts, types)))
        facts[rel] = rows
    return facts


def format_relation(rows) -> str:
    """Soufflé's CSV output (TAB-separated, one tuple a line, ``()`` for the fact of a nullary
    relation), lines sorted bytewise."""
    lines = sorted(("\t".join(str(v) for v in row) or "()") + "\n" for row in rows)
    return "".join(lines)


def expected_files(query: Query) -> dict:
    """{file name: text} of the expected outputs of ``query`` on its own facts."""
    result = query.oracle(read_facts(query))
    assert set(result) == set(query.outputs), query.name
    return {rel + ".csv": format_relation(rows) for rel, rows in result.items()}


def write_expected(names=None):
    for name in names or QUERIES:
        q = QUERIES[name]
        out = os.path.join(q.dir, "expected")
        os.makedirs(out, exist_ok=True)
        for fname, text in expected_files(q).items():
            with open(os.path.join(out, fname), "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        print(f"{name}: wrote " + ", ".join(sorted(expected_files(q))))


def check_expected(names=None) -> bool:
    ok = True
    for name in names or QUERIES:
        q = QUERIES[name]
        for fname, text in expected_files(q).items():
            path = os.path.join(q.dir, "expected", fname)
            current = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if current != text:
                print(f"{name}/expected/{fname} is stale")
                ok = False
    return ok


def main(argv):
    if argv[:1] == ["--write-expected"]:
        write_expected(argv[1:] or None)
        return 0
    if argv[:1] == ["--check"]:
        return 0 if check_expected(argv[1:] or None) else 1
    if argv[:1] == ["--show"]:
        for name in argv[1:] or QUERIES:
            for rel, rows in QUERIES[name].oracle(read_facts(QUERIES[name])).items():
                print(f"{name}.{rel}: {len(rows)} tuples")
        return 0
    print("usage: python -m tests.support.oracles --write-expected | --check | --show [query ...]")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
