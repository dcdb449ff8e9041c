"""Compiled rounds: a loop's rounds of one epoch run by one kernel, not operator by operator.

:mod:`.codes` names the integers of a lowered loop (built by
:mod:`diffflow.dataflow.rounds`); the private ``_kernels`` module runs them (imported, and
numba with it, only when a loop first runs compiled); the engine's driver,
:mod:`diffflow.runtime.compiled_rounds`, decides when a loop runs here and hands its state
back.  ``docs/ARCHITECTURE.md``, "Compiled rounds", says why the rounds of one epoch can run
this way and what stays exact.
"""
