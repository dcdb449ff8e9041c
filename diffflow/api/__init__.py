"""The collection API: build a dataflow from collections, then change its inputs.

Bottom to top: :mod:`.aggregates`, :mod:`.custom_reducers` and :mod:`.outputs` (what a
reduction computes; reading results); :mod:`.arranged` (shared indexes and the joins and
reductions on them); :mod:`.collection`; :mod:`.inputs` and :mod:`.iteration` (collections
changed from outside; loops); :mod:`.features` (what attaches from above: explanations, the
dashboard); :mod:`.flow` (the :class:`Dataflow`, the only module that reaches the runtime).

These names are also ``diffflow``'s own (``import diffflow as dd``).
"""
from diffflow.api.aggregates import Aggregate, count, max, min, sum
from diffflow.api.arranged import Arranged
from diffflow.api.collection import Collection
from diffflow.api.custom_reducers import per_group
from diffflow.api.flow import RUNTIMES, Dataflow
from diffflow.api.inputs import InputCollection
from diffflow.api.iteration import Loop, Variable
from diffflow.api.outputs import Output
from diffflow.dataflow.expr import col, lit

__all__ = ["Dataflow", "RUNTIMES", "Collection", "InputCollection", "Arranged", "Output",
           "Aggregate", "Loop", "Variable", "col", "lit", "count", "sum", "min", "max",
           "per_group"]
