"""A join step consolidates its output as it comes once it is big (``join.Compacting``).

At the real threshold only big steps do it (a closure's round derives each fact many
times); here the threshold is two rows, so every multi-row step of the random differential
tests slices its joins and consolidates, and the answers must not change.
"""
from __future__ import annotations

import numpy as np
import pytest

from diffflow.arrangements import columnar
from diffflow.arrangements.batch import Batch
from diffflow.arrangements.updates import Updates
from diffflow.operators import join
from tests.algorithms import test_graphs
from tests.operators import test_operators_random


@pytest.fixture
def tiny_threshold(monkeypatch):
    """Kernels loaded (the sliced path), threshold 2; yields the consolidation count."""
    columnar.load_kernels()
    monkeypatch.setattr(join, "COMPACT_ROWS", 2)
    calls = [0]
    consolidate = join.Compacting._consolidate

    def counted(self):
        calls[0] += 1
        consolidate(self)

    monkeypatch.setattr(join.Compacting, "_consolidate", counted)
    return calls


@pytest.mark.local_runtime  # the threshold and the count are patched in this process
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(4))
def test_random_joins_with_compacting(tiny_threshold, seed, parts):
    test_operators_random.test_join(seed, parts)
    test_operators_random.test_self_join_two_keys(seed, parts)
    test_operators_random.test_join_then_aggregate_pipeline(seed, parts)
    assert tiny_threshold[0] > 0


@pytest.mark.slow
@pytest.mark.local_runtime  # the threshold is patched in this process
@pytest.mark.parametrize("parts", [1, 3])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name", sorted(test_graphs.ALGORITHMS))
def test_graph_loops_with_compacting(tiny_threshold, name, seed, parts, monkeypatch):
    monkeypatch.setenv("DIFFFLOW_GRAPH_LOOPS", "1")  # (the loops join; the search tactics not)
    test_graphs.test_against_networkx(name, seed, parts)
    assert tiny_threshold[0] > 0


def test_pieces_cover_the_whole_join():
    """Pieces of at most ``limit`` rows (whole probe runs) concatenate to the one-piece join."""
    columnar.load_kernels()
    rng = np.random.default_rng(7)
    for limit in (1, 3, 10, 1000):
        left, right = (Batch.from_updates(Updates(rng.integers(0, 5, (n, 2)),
                                                  rng.integers(0, 3, (n, 2)),
                                                  rng.choice([-1, 1, 2], n)), 1, None, None)
                       for n in (40, 60))
        perm = np.array([2, 0, 1])
        whole = join.join_updates(left, right, 1, perm)
        pieces = list(join.join_pieces(left, right, 1, perm, limit))
        glued = Updates(*(np.concatenate(c) for c in zip(*pieces)))
        for name in ("rows", "times", "diffs"):
            assert np.array_equal(getattr(glued, name), getattr(whole, name)), name
        # a piece exceeds the limit only by one probe row's run
        assert all(len(p) <= limit + 60 for p in pieces)
        if len(whole) > limit + 60:
            assert len(pieces) >= 2
