"""Numba kernels of the connected-components tactic (private to :mod:`.reduce_components`).

The state is a handful of int64 tables the caller owns and sizes (it grows them before a
call, so no kernel allocates):

* ``nodes[i]`` -- one row per node ever seen: ``ID`` (the user's id), ``LABEL`` (the
  smallest id of its component), ``DEGREE`` (adjacency entries; 0: the node is absent),
  ``HEAD`` (first adjacency entry), ``NEXT``/``PREV`` (the ring of its component's
  members), ``MARK`` (search stamps), ``SEEN``/``WAS``/``OLD`` (the node's presence and
  label before the current call, recorded when the call first touches it);
* ``edges[e]`` -- one row per unordered pair of node indices ``A <= B``: the directed
  counts ``AB`` and ``BA`` and ``LINKED`` (whether its adjacency entries exist: while some
  direction has a positive count);
* ``adj[2e + s]`` -- adjacency entries (side ``s`` of edge ``e``): ``TO``, ``NEXT``,
  ``PREV`` in the node's list;
* ``node_table``/``edge_table`` -- open-addressing hash tables of indices (-1: empty);
* ``meta`` -- ``[nodes used, edges used, call stamp, search stamp]``.

Why a ring per component: a merge relabels the members of the component whose label is not
the smaller one, and a split relabels one side; both walk members without a search.
"""
from __future__ import annotations

from diffflow.common.jit import kernel
from diffflow.operators._search_kernels import (  # noqa: F401 (rehash: the callers')
    ANEXT,
    TO,
    drop_entry,
    edge_row,
    full,
    new_node,
    push_entry,
    rehash,
)

# node fields
ID, LABEL, DEGREE, HEAD, NEXT, PREV, MARK, SEEN, WAS, OLD = range(10)
NODE_FIELDS = 10
# edge fields
A, B, AB, BA, LINKED = range(5)
EDGE_FIELDS = 5
# meta fields
USED_NODES, USED_EDGES, CALL, SEARCH, LINKED_EDGES = range(5)


@kernel(inline="always")
def _touch(nodes, i, touched, meta):
    """Record node ``i``'s presence and label before this call changes them."""
    if nodes[i, SEEN] != meta[CALL]:
        nodes[i, SEEN] = meta[CALL]
        nodes[i, WAS] = 1 if nodes[i, DEGREE] > 0 else 0
        nodes[i, OLD] = nodes[i, LABEL]
        touched[0] += 1
        touched[touched[0]] = i


@kernel(inline="always")
def _node(node_table, nodes, meta, node_id):
    """The index of ``node_id``, added (absent, its own label, alone in its ring) when new."""
    i, new = new_node(node_table, nodes, meta, node_id)
    if new:
        nodes[i, LABEL] = node_id
        nodes[i, HEAD] = -1
        nodes[i, NEXT] = i
        nodes[i, PREV] = i
    return i


@kernel(inline="always")
def _link_entry(nodes, adj, i, entry, to):
    push_entry(nodes, adj, HEAD, i, entry, to)
    nodes[i, DEGREE] += 1


@kernel(inline="always")
def _unlink_entry(nodes, adj, i, entry):
    drop_entry(nodes, adj, HEAD, i, entry)
    nodes[i, DEGREE] -= 1


@kernel(inline="always")
def _revive(nodes, i, touched, meta):
    """Node ``i`` gains its first adjacency entry: alone in its component."""
    if nodes[i, DEGREE] == 0:
        _touch(nodes, i, touched, meta)
        nodes[i, LABEL] = nodes[i, ID]
        nodes[i, NEXT] = i
        nodes[i, PREV] = i


@kernel
def count_changes(nodes, node_table, edges, edge_table, meta, src, dst, diff, changed, start, n):
    """Add each directed change from row ``start`` on to its pair's counts, listing the
    pairs in ``changed`` (from ``n``) until the tables are full; returns ``(next row, n)``."""
    ia = -1
    for k in range(start, len(src)):
        if full(nodes, node_table, edges, edge_table, meta):
            return k, n
        if ia < 0 or src[k] != src[k - 1]:  # (rows sorted by source: one search each)
            ia = _node(node_table, nodes, meta, src[k])
        ib = _node(node_table, nodes, meta, dst[k])
        a, b = (ia, ib) if ia <= ib else (ib, ia)
        e = edge_row(edge_table, edges, meta, a, b)
        if ia == a:
            edges[e, AB] += diff[k]
        else:
            edges[e, BA] += diff[k]
        # (a pair changed twice, once per direction, is listed twice: the second finds it
        # settled)
        changed[n] = e
        n += 1
    return len(src), n


@kernel
def _relabel_ring(nodes, start, label, touched, meta):
    """Give every member of ``start``'s ring the label ``label``."""
    i = start
    while True:
        if nodes[i, LABEL] != label:
            _touch(nodes, i, touched, meta)
            nodes[i, LABEL] = label
        i = nodes[i, NEXT]
        if i == start:
            break


@kernel
def _merge(nodes, ia, ib, touched, meta):
    """Join the components of nodes ``ia`` and ``ib`` (both present)."""
    la, lb = nodes[ia, LABEL], nodes[ib, LABEL]
    if la == lb:
        return
    if lb < la:
        ia, ib, la, lb = ib, ia, lb, la
    _relabel_ring(nodes, ib, la, touched, meta)
    # splice the rings: a -> (b's ring) -> a's old next
    an, bn = nodes[ia, NEXT], nodes[ib, NEXT]
    nodes[ia, NEXT] = bn
    nodes[bn, PREV] = ia
    nodes[ib, NEXT] = an
    nodes[an, PREV] = ib


@kernel(inline="always")
def _step_search(nodes, adj, queue, state, mine, theirs):
    """Scan one adjacency entry of a breadth-first search; ``state`` is ``[scanned node
    position, queue length, current entry]``.  Returns 1 when it meets the other search,
    -1 when this one is exhausted, 0 otherwise."""
    while state[2] < 0:
        state[0] += 1
        if state[0] >= state[1]:
            return -1
        state[2] = nodes[queue[state[0]], HEAD]
    entry = state[2]
    state[2] = adj[entry, ANEXT]
    x = adj[entry, TO]
    m = nodes[x, MARK]
    if m == theirs:
        return 1
    if m != mine:
        nodes[x, MARK] = mine
        queue[state[1]] = x
        state[1] += 1
    return 0


@kernel
def _split(nodes, adj, ia, ib, qa, qb, touched, meta):
    """After the pair ``(ia, ib)`` lost its last edge: if they are no longer connected,
    the side a search exhausts first becomes a component of its own."""
    meta[SEARCH] += 2
    ma, mb = meta[SEARCH], meta[SEARCH] + 1
    nodes[ia, MARK] = ma
    nodes[ib, MARK] = mb
    qa[0], qb[0] = ia, ib
    sa = qa[-3:]  # three spare cells at the end of each queue hold its search state
    sb = qb[-3:]
    sa[0], sa[1], sa[2] = 0, 1, nodes[ia, HEAD]
    sb[0], sb[1], sb[2] = 0, 1, nodes[ib, HEAD]
    while True:
        r = _step_search(nodes, adj, qa, sa, ma, mb)
        if r == 1:
            return
        if r == -1:
            side, queue, other = sa, qa, ib
            break
        r = _step_search(nodes, adj, qb, sb, mb, ma)
        if r == 1:
            return
        if r == -1:
            side, queue, other = sb, qb, ia
            break
    n = side[1]
    label = nodes[other, LABEL]
    # take the exhausted side out of the ring
    for k in range(n):
        i = queue[k]
        p, q = nodes[i, PREV], nodes[i, NEXT]
        nodes[p, NEXT] = q
        nodes[q, PREV] = p
    lowest = nodes[queue[0], ID]
    for k in range(n):
        i = queue[k]
        nodes[i, NEXT] = queue[(k + 1) % n]
        nodes[i, PREV] = queue[(k - 1) % n]
        lowest = min(lowest, nodes[i, ID])
    if lowest == label:  # the component's smallest id left with this side: relabel the rest
        rest = nodes[other, ID]
        i = nodes[other, NEXT]
        while i != other:
            rest = min(rest, nodes[i, ID])
            i = nodes[i, NEXT]
        _relabel_ring(nodes, other, rest, touched, meta)
    else:
        _relabel_ring(nodes, queue[0], lowest, touched, meta)


@kernel
def apply_changes(nodes, edges, adj, meta, changed, n, qa, qb, touched):
    """Apply the ``n`` pairs :func:`count_changes` listed in ``changed`` and keep every
    present node's label exact: links first (merging components), then each lost pair in
    turn (a split, found by two searches that stop when either is exhausted).

    ``touched[0]`` becomes the count of nodes whose presence or label may have changed,
    listed from ``touched[1]``; their ``WAS``/``OLD`` fields say what they were."""
    meta[CALL] += 1
    touched[0] = 0
    lost = 0
    for k in range(n):
        e = changed[k]
        a, b = edges[e, A], edges[e, B]
        want = edges[e, AB] > 0 or edges[e, BA] > 0
        if want and edges[e, LINKED] == 0:
            edges[e, LINKED] = 1
            meta[LINKED_EDGES] += 1
            _revive(nodes, a, touched, meta)
            _revive(nodes, b, touched, meta)
            _link_entry(nodes, adj, a, 2 * e, b)
            if a != b:
                _link_entry(nodes, adj, b, 2 * e + 1, a)
                _merge(nodes, a, b, touched, meta)
        elif not want and edges[e, LINKED] == 1:
            edges[e, LINKED] = 0
            meta[LINKED_EDGES] -= 1
            changed[lost] = e  # (lost <= k: the list is reused in place)
            lost += 1
    for k in range(lost):
        e = changed[k]
        a, b = edges[e, A], edges[e, B]
        _touch(nodes, a, touched, meta)
        _touch(nodes, b, touched, meta)
        _unlink_entry(nodes, adj, a, 2 * e)
        if a != b:
            _unlink_entry(nodes, adj, b, 2 * e + 1)
            _split(nodes, adj, a, b, qa, qb, touched, meta)
    # a node left with no entry is absent: alone in its component, out of every ring
    for k in range(touched[0]):
        i = touched[k + 1]
        if nodes[i, DEGREE] == 0:
            nodes[i, NEXT] = i
            nodes[i, PREV] = i


@kernel
def label_all(nodes, adj, meta, queue):
    """Label every present node from scratch (a search per component), building the rings."""
    meta[SEARCH] += 2
    mark = meta[SEARCH]
    for s in range(meta[USED_NODES]):
        if nodes[s, DEGREE] == 0 or nodes[s, MARK] == mark:
            continue
        nodes[s, MARK] = mark
        queue[0] = s
        n, pos = 1, 0
        lowest = nodes[s, ID]
        while pos < n:
            entry = nodes[queue[pos], HEAD]
            pos += 1
            while entry >= 0:
                x = adj[entry, TO]
                entry = adj[entry, ANEXT]
                if nodes[x, MARK] != mark:
                    nodes[x, MARK] = mark
                    queue[n] = x
                    n += 1
                    lowest = min(lowest, nodes[x, ID])
        for k in range(n):
            i = queue[k]
            nodes[i, LABEL] = lowest
            nodes[i, NEXT] = queue[(k + 1) % n]
            nodes[i, PREV] = queue[(k - 1) % n]


@kernel
def link_all(nodes, edges, adj, meta, changed, n):
    """Link the listed pairs with a positive direction, without labelling
    (:func:`label_all` follows)."""
    for k in range(n):
        e = changed[k]
        if edges[e, LINKED] == 0 and (edges[e, AB] > 0 or edges[e, BA] > 0):
            edges[e, LINKED] = 1
            meta[LINKED_EDGES] += 1
            a, b = edges[e, A], edges[e, B]
            _link_entry(nodes, adj, a, 2 * e, b)
            if a != b:
                _link_entry(nodes, adj, b, 2 * e + 1, a)
