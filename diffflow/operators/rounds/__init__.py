"""Compiled rounds: a loop's rounds of one epoch run by one kernel, not operator by operator.

:mod:`.codes` names the integers of a lowered loop (built by
:mod:`diffflow.dataflow.rounds`); the private ``_kernels`` module runs them (imported, and
numba with it, only when a loop first runs compiled); the engine's driver,
:mod:`diffflow.runtime.compiled_rounds`, decides when a loop runs here and hands its state
back.  ``docs/ARCHITECTURE.md``, "Compiled rounds", says why the rounds of one epoch can run
this way and what stays exact.
"""


def run_rounds(*tables):
    """:func:`._kernels.run_rounds` (the kernel module, and numba, imported on first use).

    The arguments and results are the tables described in :mod:`.codes` and the kernel's
    docstring; :mod:`diffflow.runtime.compiled_rounds` is the caller.
    """
    from diffflow.operators.rounds import _kernels

    return _kernels.run_rounds(*tables)
