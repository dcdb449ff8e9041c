"""The join writes its output straight from runs of equal keys once the kernels are loaded.

``join_updates`` then skips the pair arrays (``matching_pairs``) that its numpy tactic and
its rescaling path (dead bins) still build.  Both must give the same updates in the same
order, whichever side is searched (a small delta against a big batch, a big delta against a
small batch, one merge pass between equals), for duplicate keys, wide keys and empty runs;
and ``matching_ranges`` must describe exactly the pairs ``matching_pairs`` lists.
"""
from __future__ import annotations

import numpy as np
import pytest

from diffflow.arrangements import columnar, small
from diffflow.arrangements.batch import Batch
from diffflow.arrangements.updates import Updates
from diffflow.lattice import Antichain
from diffflow.operators.join import join_updates, matching_pairs, matching_ranges


def batch(rng, n, width, key_width, dim, domain):
    u = Updates(rng.integers(0, domain, (n, width)), rng.integers(0, 4, (n, dim)),
                rng.choice([-2, -1, 1, 3], n))
    return Batch.from_updates(u, key_width, Antichain.minimum(dim), Antichain(d=dim))


SIZES = [(1, 500), (500, 1), (40, 60), (0, 30), (30, 0), (300, 300)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sizes", SIZES)
def test_the_join_from_ranges_matches_the_join_from_pairs(seed, sizes, monkeypatch):
    columnar.load_kernels()
    rng = np.random.default_rng(seed)
    key_width = 1 + seed % 2
    domain = 6 if seed % 3 else 40
    left = batch(rng, sizes[0], key_width + 1, key_width, 2, domain)
    right = batch(rng, sizes[1], key_width + 2, key_width, 2, domain)
    out_width = left.rows.shape[1] + right.rows.shape[1] - key_width
    perm = rng.permutation(out_width).astype(np.int64)
    fused = join_updates(left, right, key_width, perm)
    monkeypatch.setattr(small, "loaded", lambda: False)   # the pairs path
    paired = join_updates(left, right, key_width, perm)
    if paired is None:
        assert fused is None
        return
    for name in ("rows", "times", "diffs"):
        assert np.array_equal(getattr(fused, name), getattr(paired, name)), name


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sizes", SIZES)
def test_matching_ranges_describe_the_matching_pairs(seed, sizes):
    columnar.load_kernels()
    rng = np.random.default_rng(100 + seed)
    width = 1 + seed % 2
    probe = np.unique(rng.integers(0, 5, (sizes[0], width)), axis=0).repeat(2, axis=0)
    batch_keys = np.sort(rng.integers(0, 5, (sizes[1], width)), axis=0)
    batch_keys = batch_keys[np.lexsort(batch_keys.T[::-1])]
    wide = np.concatenate([probe, rng.integers(-9, 9, (len(probe), 2))], axis=1)  # values
    probe_first, lo, hi = matching_ranges(np.ascontiguousarray(wide), batch_keys, width)
    owners = np.repeat(np.arange(len(lo)), hi - lo)
    others = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)] or [np.zeros(0, int)])
    pairs = (owners, others) if probe_first else (others, owners)
    want = matching_pairs(probe, batch_keys)
    got = sorted(zip(*(p.tolist() for p in pairs)))
    assert got == sorted(zip(*(w.tolist() for w in want)))
    # and every pair has equal keys, every equal pair is there
    brute = [(i, j) for i in range(len(probe)) for j in range(len(batch_keys))
             if (probe[i] == batch_keys[j]).all()]
    assert got == brute
