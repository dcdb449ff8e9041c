"""Numba helpers shared by the graph tactics' kernels (:mod:`._components_kernels`,
:mod:`._reach_kernels`): open-addressing hash tables of node and edge row indices, and
doubly linked adjacency lists.

Both tactics' tables agree on these columns: a node row's ``ID`` is column 0; an edge row's
ends ``A``, ``B`` are columns 0 and 1; an adjacency entry is ``TO``, ``ANEXT``, ``APREV``;
``meta`` is ``[nodes used, edges used, call stamp, search stamp, edges linked]``.
"""
from __future__ import annotations

from diffflow.common.jit import kernel

ID = 0
A, B = 0, 1
TO, ANEXT, APREV = range(3)
USED_NODES, USED_EDGES, CALL, SEARCH, LINKED_EDGES = range(5)


@kernel(inline="always")
def _mix(x):
    """A 64-bit finaliser (murmur3's), as signed arithmetic with logical shifts."""
    x ^= (x >> 33) & 0x7FFFFFFF
    x *= -49064778989728563      # 0xff51afd7ed558ccd
    x ^= (x >> 33) & 0x7FFFFFFF
    x *= -4265267296055464877    # 0xc4ceb9fe1a85ec53
    x ^= (x >> 33) & 0x7FFFFFFF
    return x


@kernel(inline="always")
def node_slot(node_table, nodes, node_id):
    """``(index or -1, table slot)`` of ``node_id``."""
    mask = len(node_table) - 1
    h = _mix(node_id) & mask
    while True:
        i = node_table[h]
        if i < 0 or nodes[i, ID] == node_id:
            return i, h
        h = (h + 1) & mask


@kernel(inline="always")
def edge_slot(edge_table, edges, a, b):
    mask = len(edge_table) - 1
    h = _mix(_mix(a) ^ b) & mask
    while True:
        e = edge_table[h]
        if e < 0 or (edges[e, A] == a and edges[e, B] == b):
            return e, h
        h = (h + 1) & mask


@kernel
def rehash(node_table, nodes, edge_table, edges, meta):
    """Fill fresh (all -1) tables from the node and edge rows."""
    for i in range(meta[USED_NODES]):
        _, h = node_slot(node_table, nodes, nodes[i, ID])
        node_table[h] = i
    for e in range(meta[USED_EDGES]):
        _, h = edge_slot(edge_table, edges, edges[e, A], edges[e, B])
        edge_table[h] = e


@kernel(inline="always")
def full(nodes, node_table, edges, edge_table, meta):
    """Whether the tables lack room for one more row's two nodes and pair (at most half
    full hash tables)."""
    used, pairs = meta[USED_NODES] + 2, meta[USED_EDGES] + 1
    return (used > len(nodes) or 2 * used > len(node_table) or pairs > len(edges)
            or 2 * pairs > len(edge_table))


@kernel(inline="always")
def push_entry(nodes, adj, head_field, i, entry, to):
    """Put adjacency ``entry`` (pointing to node ``to``) first in the list that node ``i``'s
    column ``head_field`` starts."""
    first = nodes[i, head_field]
    adj[entry, TO] = to
    adj[entry, ANEXT] = first
    adj[entry, APREV] = -1
    if first >= 0:
        adj[first, APREV] = entry
    nodes[i, head_field] = entry


@kernel(inline="always")
def drop_entry(nodes, adj, head_field, i, entry):
    """Take adjacency ``entry`` out of the list that node ``i``'s column ``head_field``
    starts."""
    nxt, prv = adj[entry, ANEXT], adj[entry, APREV]
    if prv >= 0:
        adj[prv, ANEXT] = nxt
    else:
        nodes[i, head_field] = nxt
    if nxt >= 0:
        adj[nxt, APREV] = prv


@kernel(inline="always")
def new_node(node_table, nodes, meta, node_id):
    """``(index, whether new)`` of ``node_id``; a new node's row is zero but for its ``ID``."""
    i, h = node_slot(node_table, nodes, node_id)
    if i >= 0:
        return i, False
    i = meta[USED_NODES]
    meta[USED_NODES] = i + 1
    node_table[h] = i
    for f in range(nodes.shape[1]):
        nodes[i, f] = 0
    nodes[i, ID] = node_id
    return i, True


@kernel(inline="always")
def edge_row(edge_table, edges, meta, a, b):
    """The index of the edge row ``a -> b`` (node indices), added (zero but for its ends)
    when new."""
    e, h = edge_slot(edge_table, edges, a, b)
    if e < 0:
        e = meta[USED_EDGES]
        meta[USED_EDGES] = e + 1
        edge_table[h] = e
        for f in range(edges.shape[1]):
            edges[e, f] = 0
        edges[e, A] = a
        edges[e, B] = b
    return e
