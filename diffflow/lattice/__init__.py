"""Product-order time lattice and frontiers for diffflow.

Times are tuples of ``d`` non-negative int64 coordinates (epoch first, then
one round counter per nested loop) ordered by the product order; ``join`` is
the coordinate-wise max and ``meet`` the coordinate-wise min.  Frontiers are
antichains of such times.  The central invariant, relied on for compaction:
for every ``t2`` a frontier ``F`` admits, ``t <= t2`` iff
``advance_by(t, F) <= t2``.

Frontiers have one canonical representation, :class:`Antichain`, the one
operators see.  Progress tracking keeps them internally as sorted tuples of
time tuples (:mod:`.frontiers`), a faster form for the handful of times a
frontier holds, and converts at the operator boundary.  Every minimal-element
and antichain computation of diffflow lives in this package.

This package depends on numpy only.

>>> F = Antichain([(1, 0), (0, 2)])
>>> advance_by((0, 0), F).tolist(), F.admits((0, 0))
([0, 0], False)
>>> advance_by((0, 3), F).tolist()
[0, 3]
"""

from diffflow.lattice.antichain import Antichain
from diffflow.lattice.frontiers import (ADVANCE, ENTER, IDENTITY, LEAVE, antichain_of,
                                        times_frontier)
from diffflow.lattice.times import (advance_by, as_times, join, less_equal, less_than, lex_order,
                                    meet, minimal, minimal_tuples)

__all__ = [
    "Antichain",
    "ADVANCE",
    "ENTER",
    "IDENTITY",
    "LEAVE",
    "antichain_of",
    "minimal_tuples",
    "times_frontier",
    "advance_by",
    "as_times",
    "join",
    "less_equal",
    "less_than",
    "lex_order",
    "meet",
    "minimal",
]
