"""R-MAT graphs (Chakrabarti et al. 2004; Graph500's Kronecker generator): every edge picks
one quadrant of the adjacency matrix per bit of its node ids, with probabilities ``a``,
``b``, ``c`` and ``1 - a - b - c``.  Graph500's ``a, b, c = 0.57, 0.19, 0.19`` give the
skewed degrees of a social graph (Twitter-like: a few hubs, a long tail).

Numpy only, columnar: one pass of random draws per bit for all edges at once.  This module
imports nothing of diffflow, so the ``bench/`` scripts load it as a file.

>>> rmat_edges(8, 1000).shape
(1000, 2)
"""
from __future__ import annotations

import numpy as np

GRAPH500 = (0.57, 0.19, 0.19)  # a, b, c: Graph500's R-MAT parameters


def rmat_sample(rng, scale: int, n: int, a=0.57, b=0.19, c=0.19) -> np.ndarray:
    """``n`` R-MAT node pairs over ``2**scale`` nodes, self loops and duplicates included.

    >>> pairs = rmat_sample(np.random.default_rng(0), 4, 100)
    >>> pairs.shape, bool(pairs.max() < 16)
    ((100, 2), True)
    """
    src = np.zeros(n, np.int64)
    dst = np.zeros(n, np.int64)
    for bit in range(scale):
        r = rng.random(n)
        right = (r >= a) & (r < a + b) | (r >= a + b + c)
        down = r >= a + b
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    return np.stack([src, dst], 1)


def rmat_edges(scale: int, count: int, seed: int = 0, a=0.57, b=0.19, c=0.19) -> np.ndarray:
    """``count`` distinct R-MAT edges over ``2**scale`` nodes, no self loops, in random order.

    >>> e = rmat_edges(6, 200, seed=1)
    >>> len(np.unique(e, axis=0)), bool((e[:, 0] != e[:, 1]).all())
    (200, True)
    """
    possible = (1 << scale) * ((1 << scale) - 1)
    if count > possible // 2:
        raise ValueError(f"R-MAT scale {scale} has {1 << scale:,} nodes: {count:,} distinct edges "
                         f"is too dense for it (at most {possible // 2:,}); lower --edges or "
                         f"raise --scale")
    rng = np.random.default_rng(seed)
    out = np.zeros((0, 2), np.int64)
    while len(out) < count:
        batch = rmat_sample(rng, scale, int((count - len(out)) * 1.3) + 16, a, b, c)
        batch = batch[batch[:, 0] != batch[:, 1]]
        out = np.unique(np.concatenate([out, batch]), axis=0)
    return out[rng.permutation(len(out))[:count]]


def graph500_edges(scale: int, edge_factor: int, seed: int = 0) -> np.ndarray:
    """Graph500-sized R-MAT graph: ``edge_factor * 2**scale`` pairs sampled (Graph500's a, b,
    c), self loops and duplicates dropped (s15 x8: 243,678 edges; s17 x16: 1,942,371), in
    random order.  Unlike Graph500, node ids are not permuted.

    >>> len(graph500_edges(8, 4)) <= 4 * 256
    True
    """
    rng = np.random.default_rng(seed)
    out = rmat_sample(rng, scale, edge_factor << scale)
    out = np.unique(out[out[:, 0] != out[:, 1]], axis=0)
    return out[rng.permutation(len(out))]
