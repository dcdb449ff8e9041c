"""The column-by-column lattice helpers against brute force."""
import random

import numpy as np
import pytest

from diffflow.lattice import Antichain
from diffflow.lattice.times import _dominated, advance_by, rows_less_equal


@pytest.mark.parametrize("seed", range(200))
def test_lattice_helpers(seed):
    rng = random.Random(seed)
    d = rng.randint(1, 4)
    n = rng.randint(0, 30)
    k = rng.randint(1, 7)
    times = np.array([[rng.randrange(5) for _ in range(d)] for _ in range(n)],
                     dtype=np.int64).reshape(n, d)
    F = np.array([[rng.randrange(5) for _ in range(d)] for _ in range(k)], dtype=np.int64)
    # _dominated
    want = np.array([any(all(f <= t) for f in F) for t in times], dtype=bool)
    assert _dominated(F, times).tolist() == want.tolist()
    # advance_by: meet of joins; the invariant with admitted times
    adv = advance_by(times, F)
    for t, a in zip(times, adv):
        assert tuple(a) == tuple(np.min([np.maximum(t, f) for f in F], axis=0))
    if n:
        single = advance_by(times[0], F)
        assert single.tolist() == adv[0].tolist()
    chain = Antichain(F, d=d)
    adv2 = advance_by(times, chain)
    for t, a in zip(times, adv2):
        # h <= t2 iff adv(h) <= t2 for all t2 admitted by F
        for _ in range(5):
            t2 = np.array([rng.randrange(7) for _ in range(d)])
            if any(all(f <= t2) for f in chain.elements):
                assert bool(np.all(t <= t2)) == bool(np.all(a <= t2))
    # rows_less_equal
    if n:
        other = np.array([[rng.randrange(5) for _ in range(d)] for _ in range(n)], dtype=np.int64)
        assert rows_less_equal(times, other).tolist() == np.all(times <= other, axis=1).tolist()
