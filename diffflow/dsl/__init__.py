"""Datalog for diffflow: a Soufflé-compatible subset, compiled into the incremental engine.

``parser`` (text to :mod:`.ast`), ``analysis`` (checks, strata), ``compiler``
(collection API dataflow), ``program`` (the user-facing :class:`Program`),
``facts`` (Soufflé file formats).
"""
from .errors import DatalogError, DatalogWarning
from .program import Program

__all__ = ["DatalogError", "DatalogWarning", "Program"]
