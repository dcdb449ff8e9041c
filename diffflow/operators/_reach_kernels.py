"""Numba kernels of the reachability tactic (private to :mod:`.reduce_reach`).

Tables as in :mod:`._components_kernels` (the same hashing, ``meta`` and growth by the
caller), with directed pairs:

* ``reached[i]``: whether node ``i`` is reached (0/1), packed apart from the node rows: a
  search reads it for every pair it follows, and a byte per node stays in cache;
* ``nodes[i]``: ``ID``, ``PARENT`` (the node it was reached from;
  ``ROOT``: it is a root; ``NONE``), ``OUT``/``IN`` (heads of its adjacency lists),
  ``CHILD`` (head of the list of nodes it is the parent of), ``SIB_NEXT``/``SIB_PREV`` (that
  list's links), ``ROOTS`` (its count as a root), ``MARK``, ``SEEN``/``WAS`` (its reached
  flag before the call, recorded when the call first touches it);
* ``edges[e]``: ``A -> B`` with ``COUNT`` and ``LINKED``; adjacency entry ``2e`` is in
  ``A``'s out-list (pointing to ``B``), ``2e + 1`` in ``B``'s in-list (pointing to ``A``);
* the *base*: the pairs the state was built with, sorted by source, then target id --
  ``base[k]`` is ``BA -> BB`` (node indices), ``BB_ID`` (the target's id, to find a pair by
  binary search), ``BCOUNT``, ``BLINKED``; a node's out-pairs are ``base[BOUT:BOUT_END]``
  and its in-pairs ``base_in[BIN:BIN_END]`` (``IN_FROM``, ``IN_PAIR``: the source and the
  pair).  Built in two sequential passes (:func:`build_base`), where linking a million
  pairs one by one into hashed lists costs a cache miss or three each; pairs first seen
  later live in the edge rows above.  A change lists a base pair as ``BASE_TAG - k``.

The parents form a forest of the reached nodes under the roots: a node keeps its parent
while the edge from it stays, so only the subtrees under lost edges and lost roots can lose
reachability, and only they are searched again.
"""
from __future__ import annotations

from diffflow.common.jit import kernel
from diffflow.operators._search_kernels import (  # noqa: F401 (full, rehash: the callers')
    ANEXT,
    _mix,
    TO,
    drop_entry,
    edge_row,
    full,
    new_node,
    push_entry,
    rehash,
)

(ID, PARENT, OUT, IN, CHILD, SIB_NEXT, SIB_PREV, ROOTS, MARK, SEEN, WAS, BOUT, BOUT_END, BIN,
 BIN_END) = range(15)
NODE_FIELDS = 15
A, B, COUNT, LINKED = range(4)
EDGE_FIELDS = 4
BA, BB, BB_ID, BCOUNT, BLINKED = range(5)
BASE_FIELDS = 5
IN_FROM, IN_PAIR = range(2)
USED_NODES, USED_EDGES, CALL, SEARCH, LINKED_EDGES = range(5)
ROOT, NONE = -2, -1
BASE_TAG = -(1 << 40)  # (changes list base pair k as BASE_TAG - k; roots as -1 - node)


@kernel(inline="always")
def _node(node_table, nodes, reached, meta, node_id):
    i, new = new_node(node_table, nodes, meta, node_id)
    if new:
        reached[i] = 0
        nodes[i, PARENT] = NONE
        nodes[i, OUT] = -1
        nodes[i, IN] = -1
        nodes[i, CHILD] = -1
    return i


@kernel(inline="always")
def _touch(nodes, reached, i, touched, meta):
    if nodes[i, SEEN] != meta[CALL]:
        nodes[i, SEEN] = meta[CALL]
        nodes[i, WAS] = reached[i]
        touched[0] += 1
        touched[touched[0]] = i


@kernel(inline="always")
def _set_parent(nodes, v, p):
    """Move ``v`` under parent ``p`` (a node index, ``ROOT`` or ``NONE``)."""
    old = nodes[v, PARENT]
    if old >= 0:  # out of the old parent's child list
        nxt, prv = nodes[v, SIB_NEXT], nodes[v, SIB_PREV]
        if prv >= 0:
            nodes[prv, SIB_NEXT] = nxt
        else:
            nodes[old, CHILD] = nxt
        if nxt >= 0:
            nodes[nxt, SIB_PREV] = prv
    nodes[v, PARENT] = p
    if p >= 0:
        first = nodes[p, CHILD]
        nodes[v, SIB_NEXT] = first
        nodes[v, SIB_PREV] = -1
        if first >= 0:
            nodes[first, SIB_PREV] = v
        nodes[p, CHILD] = v


@kernel(inline="always")
def _reach_from(nodes, reached, u, x, queue, n, touched, meta):
    """Reach ``x`` from ``u`` if it is not reached yet (queued at ``n``); the new ``n``."""
    if reached[x] == 0:
        _touch(nodes, reached, x, touched, meta)
        reached[x] = 1
        _set_parent(nodes, x, u)
        queue[n] = x
        n += 1
    return n


@kernel
def _spread(nodes, reached, adj, base, queue, n, touched, meta):
    """Reach everything the ``n`` queued (reached) nodes lead to that is not reached yet."""
    pos = 0
    while pos < n:
        u = queue[pos]
        pos += 1
        for k in range(nodes[u, BOUT], nodes[u, BOUT_END]):
            # (the test first: a call per pair followed would cost more than the search)
            if base[k, BLINKED] == 1 and reached[base[k, BB]] == 0:
                n = _reach_from(nodes, reached, u, base[k, BB], queue, n, touched, meta)
        entry = nodes[u, OUT]
        while entry >= 0:
            x = adj[entry, TO]
            entry = adj[entry, ANEXT]
            if reached[x] == 0:
                n = _reach_from(nodes, reached, u, x, queue, n, touched, meta)


@kernel(inline="always")
def _base_pair(nodes, base, ia, b):
    """The base pair ``ia -> b`` (a target id), or -1 (binary search in ``ia``'s run)."""
    lo, hi = nodes[ia, BOUT], nodes[ia, BOUT_END]
    while lo < hi:
        mid = (lo + hi) >> 1
        if base[mid, BB_ID] < b:
            lo = mid + 1
        else:
            hi = mid
    if lo < nodes[ia, BOUT_END] and base[lo, BB_ID] == b:
        return lo
    return -1


@kernel
def index_nodes(node_table, nodes, reached, meta, ids, idx, start, known):
    """``idx[k]``: the node index of ``ids[k]`` (added when new), from ``start`` until the
    tables are full; returns where it stopped.  ``known`` holds each node's id, packed:
    probing it instead of the wide node rows keeps a million lookups in cache."""
    mask = len(node_table) - 1
    for k in range(start, len(ids)):
        if 2 * (meta[USED_NODES] + 1) > len(node_table) or meta[USED_NODES] + 1 > len(nodes):
            return k
        x = ids[k]
        if k > start and x == ids[k - 1]:
            idx[k] = idx[k - 1]
            continue
        h = _mix(x) & mask
        i = node_table[h]
        while i >= 0 and known[i] != x:
            h = (h + 1) & mask
            i = node_table[h]
        if i < 0:
            i = _node(node_table, nodes, reached, meta, x)
            known[i] = x
        idx[k] = i
    return len(ids)


@kernel
def sorted_distinct(kind, a, b, count):
    """Whether the rows ``(kind[k], a[k], b[k])`` strictly increase and no count is zero:
    :func:`~diffflow.arrangements.columnar.is_consolidated` on three columns, which a group
    arrives as (that one reads a row matrix, a copy of the group here)."""
    for k in range(len(kind)):
        if count[k] == 0:
            return False
        if k > 0:
            if kind[k] != kind[k - 1]:
                if kind[k] < kind[k - 1]:
                    return False
            elif a[k] != a[k - 1]:
                if a[k] < a[k - 1]:
                    return False
            elif b[k] <= b[k - 1]:
                return False
    return True


@kernel
def build_base(nodes, meta, base, base_in, ia, ib, b, count, cursor):
    """The base of the pairs ``ia[k] -> ib[k]`` (sorted by source, then target id ``b``,
    distinct, nonzero ``count``) and the in-pairs of each target, by counting sort
    (``cursor``: a zeroed scratch entry per node, packed where the node rows are wide)."""
    n = len(ia)
    for k in range(n):
        u = ia[k]
        base[k, BA] = u
        base[k, BB] = ib[k]
        base[k, BB_ID] = b[k]
        base[k, BCOUNT] = count[k]
        base[k, BLINKED] = 1 if count[k] > 0 else 0
        meta[LINKED_EDGES] += base[k, BLINKED]
        if k == 0 or ia[k - 1] != u:
            nodes[u, BOUT] = k
        nodes[u, BOUT_END] = k + 1
    for k in range(n):  # in-degrees, then each target's first in-pair
        cursor[ib[k]] += 1
    at = 0
    for v in range(meta[USED_NODES]):
        d = cursor[v]
        nodes[v, BIN] = at
        cursor[v] = at
        at += d
        nodes[v, BIN_END] = at
    for k in range(n):
        v = ib[k]
        j = cursor[v]
        base_in[j, IN_FROM] = ia[k]
        base_in[j, IN_PAIR] = k
        cursor[v] = j + 1


@kernel
def count_changes(nodes, node_table, edges, edge_table, meta, kind, a, b, diff, base, reached,
                  changed, start, n):
    """Add each change from row ``start`` on to its pair's or root's count, listing them in
    ``changed`` from ``n`` (pairs as ``e``, base pairs as ``BASE_TAG - k``, roots as
    ``-1 - node``) until the tables are full; returns ``(next row, n)``."""
    ia = -1
    for k in range(start, len(kind)):
        if full(nodes, node_table, edges, edge_table, meta):
            return k, n
        if ia < 0 or a[k] != a[k - 1]:  # (rows sorted by source: one search per source)
            ia = _node(node_table, nodes, reached, meta, a[k])
        if kind[k] == 1:
            nodes[ia, ROOTS] += diff[k]
            changed[n] = -1 - ia
            n += 1
            continue
        q = _base_pair(nodes, base, ia, b[k])
        if q >= 0:
            base[q, BCOUNT] += diff[k]
            changed[n] = BASE_TAG - q
            n += 1
            continue
        ib = _node(node_table, nodes, reached, meta, b[k])
        e = edge_row(edge_table, edges, meta, ia, ib)
        edges[e, COUNT] += diff[k]
        changed[n] = e
        n += 1
    return len(kind), n


@kernel(inline="always")
def _ends(edges, base, c):
    """``(source, target, count, linked)`` of a listed pair ``c`` (an edge row or base pair)."""
    if c >= 0:
        return edges[c, A], edges[c, B], edges[c, COUNT], edges[c, LINKED]
    q = BASE_TAG - c
    return base[q, BA], base[q, BB], base[q, BCOUNT], base[q, BLINKED]


@kernel
def apply_changes(nodes, reached, adj, edges, base, base_in, meta, changed, n, queue,
                  touched):
    """Apply the ``n`` edges (``a -> b``) and roots :func:`count_changes` listed in
    ``changed`` and keep the reached set exact: the subtrees under lost tree edges and lost roots are unreached, then
    searched again from reached in-neighbours; new edges and roots spread from reached nodes.
    ``touched`` lists (from 1) the nodes whose reached flag may have changed."""
    meta[CALL] += 1
    touched[0] = 0
    meta[SEARCH] += 1
    cut = meta[SEARCH]
    lost = 0  # cut nodes, gathered in queue from its end
    gained = 0  # gained pairs and roots, written back into changed
    top = len(queue)
    for k in range(n):
        c = changed[k]
        if c >= 0 or c <= BASE_TAG:
            u, v, count, linked = _ends(edges, base, c)
            want = count > 0
            if want and linked == 0:
                meta[LINKED_EDGES] += 1
                if c >= 0:
                    edges[c, LINKED] = 1
                    push_entry(nodes, adj, OUT, u, 2 * c, v)
                    push_entry(nodes, adj, IN, v, 2 * c + 1, u)
                else:
                    base[BASE_TAG - c, BLINKED] = 1
                changed[gained] = c
                gained += 1
            elif not want and linked == 1:
                meta[LINKED_EDGES] -= 1
                if c >= 0:
                    edges[c, LINKED] = 0
                    drop_entry(nodes, adj, OUT, u, 2 * c)
                    drop_entry(nodes, adj, IN, v, 2 * c + 1)
                else:
                    base[BASE_TAG - c, BLINKED] = 0
                if nodes[v, PARENT] == u and nodes[v, MARK] != cut:
                    nodes[v, MARK] = cut
                    lost += 1
                    queue[top - lost] = v
        else:
            r = -1 - c
            if nodes[r, ROOTS] > 0:
                changed[gained] = c
                gained += 1
            elif nodes[r, PARENT] == ROOT and nodes[r, MARK] != cut:
                nodes[r, MARK] = cut
                lost += 1
                queue[top - lost] = r
    # the subtrees under the cuts lose their reach (the queue's tail holds the cut nodes; the
    # subtrees are gathered from its head)
    members = 0
    for k in range(lost):
        c = queue[top - 1 - k]
        if reached[c] == 0:
            continue  # (already inside another cut's subtree)
        _set_parent(nodes, c, NONE)
        queue[members] = c
        members += 1
        start = members - 1
        while start < members:
            s = queue[start]
            start += 1
            _touch(nodes, reached, s, touched, meta)
            reached[s] = 0
            child = nodes[s, CHILD]
            while child >= 0:
                if reached[child] == 1:
                    queue[members] = child
                    members += 1
                child = nodes[child, SIB_NEXT]
    for k in range(members):  # (their children are all among them: lists start empty)
        s = queue[k]
        nodes[s, CHILD] = -1
        nodes[s, PARENT] = NONE
    # search them again: from roots among them and reached in-neighbours outside
    found = 0
    for k in range(members):
        s = queue[k]
        if nodes[s, ROOTS] > 0:
            reached[s] = 1
            _set_parent(nodes, s, ROOT)
        else:
            for j in range(nodes[s, BIN], nodes[s, BIN_END]):
                w = base_in[j, IN_FROM]
                if base[base_in[j, IN_PAIR], BLINKED] == 1 and reached[w] == 1:
                    reached[s] = 1
                    _set_parent(nodes, s, w)
                    break
            entry = nodes[s, IN] if reached[s] == 0 else -1
            while entry >= 0:
                w = adj[entry, TO]
                entry = adj[entry, ANEXT]
                if reached[w] == 1:
                    reached[s] = 1
                    _set_parent(nodes, s, w)
                    break
        if reached[s] == 1:
            queue[found] = s  # (found <= k: in place)
            found += 1
    _spread(nodes, reached, adj, base, queue, found, touched, meta)
    # new edges and roots
    for k in range(gained):
        c = changed[k]
        if c >= 0 or c <= BASE_TAG:
            u, v, _, _ = _ends(edges, base, c)
            if reached[u] == 1 and reached[v] == 0:
                _touch(nodes, reached, v, touched, meta)
                reached[v] = 1
                _set_parent(nodes, v, u)
                queue[0] = v
                _spread(nodes, reached, adj, base, queue, 1, touched, meta)
        else:
            r = -1 - c
            if reached[r] == 0:
                _touch(nodes, reached, r, touched, meta)
                reached[r] = 1
                _set_parent(nodes, r, ROOT)
                queue[0] = r
                _spread(nodes, reached, adj, base, queue, 1, touched, meta)
            elif nodes[r, PARENT] != ROOT:  # a reached node becomes a root: hang it there
                _set_parent(nodes, r, ROOT)
