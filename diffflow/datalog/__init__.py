"""Datalog for diffflow: a Soufflé-compatible subset, compiled into the incremental engine.

The front end is a pipeline of stages, one package each, each importing only earlier ones:
:mod:`.syntax` (text to tree) -> :mod:`.values` (evaluating functors, records, fact files)
-> :mod:`.analysis` (checks and normal form) -> :mod:`.transform` (rewrites) ->
:mod:`.passes` (the passes in order) -> :mod:`.lower` (to a dataflow) -> :mod:`.explain`
(why a fact is derived) -> :mod:`.program` (:class:`Program`, what users hold) ->
:mod:`.cli` (the ``diffflow`` commands).
"""
from diffflow.common.errors import DatalogError, DatalogWarning
from diffflow.datalog.program import Program

__all__ = ["DatalogError", "DatalogWarning", "Program"]
