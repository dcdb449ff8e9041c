"""Loading the operators' numba kernels ahead of use, for long-running processes.

A process loads numba and each kernel on first use (:mod:`diffflow.arrangements.small`
explains why a short one never does); a partition worker lives long, and an epoch that
meets a kernel first pays for loading it (numba's import and runtime ~0.25 s, each variant
~3-10 ms).  :func:`load_cached_kernels` loads them all ahead, a kernel at a time, so the
worker can do it while idle (:meth:`diffflow.runtime.worker.WorkerServer.serve`).  Compiled
rounds' kernels (:mod:`.rounds`) serve the local runtime only and are left out.
"""
from __future__ import annotations


def load_cached_kernels():
    """Load the arrangement kernels, then every cached variant of every operator kernel
    (:func:`diffflow.common.jit.load_cached`); a generator yielding each kernel's name (or
    a step's) once loaded.

    >>> steps = load_cached_kernels(); next(steps)
    'load_kernels'
    """
    from diffflow.arrangements.columnar import load_cached_kernels as arrangement_kernels
    from diffflow.common.jit import load_cached

    yield from arrangement_kernels()
    from diffflow.operators import (_chain_kernels, _components_kernels, _join_kernels,
                                    _reach_kernels, _reduce_kernels, _search_kernels)

    for module in (_join_kernels, _reduce_kernels, _chain_kernels, _search_kernels,
                   _components_kernels, _reach_kernels):
        yield from load_cached(module)
