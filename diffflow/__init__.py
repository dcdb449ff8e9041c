"""diffflow: an incremental, differential-dataflow-style relational engine for Python.

Write a query once with the collection API; diffflow keeps its answer exact
as the inputs change, epoch by epoch.

>>> import diffflow as dd
>>> flow = dd.Dataflow()
>>> edges = flow.input("edges", ["src", "dst"])
>>> two_hop = edges.join(edges.select(mid="src", dst2="dst"), left_on="dst", right_on="mid")
>>> paths = two_hop.select("src", dst="dst2").distinct().output()
>>> edges.insert([(1, 2), (2, 3)]); flow.advance()
>>> paths.snapshot()
{(1, 3): 1}

Importing diffflow imports neither pyspark nor numba: kernels compile on first use.
"""
from .collection import (Aggregate, Arranged, Collection, Dataflow, GraphError, InputCollection,
                         Output, count, max, min, sum)
from .dsl import DatalogError, DatalogWarning, Program
from .expr import col, lit
from .iteration import Loop, Variable
from .runtime.local import NonConvergenceError, OperatorError
from .schema import Schema
from .streaming import StreamingView

__all__ = ["Dataflow", "Collection", "InputCollection", "Arranged", "Output", "Aggregate",
           "Loop", "Variable", "GraphError", "OperatorError", "NonConvergenceError", "Schema",
           "Program", "DatalogError", "DatalogWarning", "StreamingView", "col", "lit", "count", "sum", "min", "max"]
__version__ = "0.1.0"
