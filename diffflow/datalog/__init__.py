"""Datalog for diffflow: a Soufflé-compatible subset, compiled into the incremental engine.

``parser`` (text to :mod:`.syntax.ast`), ``analysis`` (checks and normal form:
``types`` decides and records the type of every term, ``clauses`` checks
binding, ``strata`` orders relations, ``analysed`` holds the result),
``compiler`` (collection API dataflow: ``joins``, ``aggregates``, ``columns``,
``render``), ``program`` (the user-facing :class:`Program`), ``facts``
(Soufflé file formats).
"""
from diffflow.datalog.syntax.errors import DatalogError, DatalogWarning
from diffflow.datalog.program import Program

__all__ = ["DatalogError", "DatalogWarning", "Program"]
