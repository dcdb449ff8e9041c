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

Submodules load on first attribute access, as in numpy and scipy:

>>> flow = dd.Dataflow()
>>> e, r = flow.input("e", ["src", "dst"]), flow.input("r", ["node"])
>>> reach = dd.graphs.reachable(e, r).output()
>>> e.insert([(1, 2), (2, 3)]); r.insert([1]); flow.advance()
>>> sorted(reach.snapshot())
[(1,), (2,), (3,)]

Importing diffflow imports neither pyspark nor numba: kernels compile on first use.
"""
import importlib as _importlib

from diffflow import _aliases
from diffflow.api import (Aggregate, Arranged, Collection, Dataflow, InputCollection, Loop, Output,
                          Variable, col, count, lit, max, min, per_group, sum)
from diffflow.api import features as _features
from diffflow.common.errors import (CheckpointError, DatalogError, DatalogWarning,
                                    DiffflowError, ExplainError, ExpressionError, GraphError,
                                    MemoryLimitError, NonConvergenceError, OperatorError,
                                    StateFormatError, WorkerLost)
from diffflow.common import VERSION as __version__  # noqa: F401 - the package's version
from diffflow.common.schema import Schema
from diffflow.streaming import StreamingView

__all__ = ["Dataflow", "Collection", "InputCollection", "Arranged", "Output", "Aggregate",
           "Loop", "Variable", "DiffflowError", "GraphError", "ExpressionError", "ExplainError",
           "WorkerLost", "OperatorError", "MemoryLimitError", "NonConvergenceError", "Schema",
           "CheckpointError", "StateFormatError",
           "Program",
           "DatalogError", "DatalogWarning", "StreamingView", "col", "lit", "count", "sum",
           "min", "max", "per_group", "vectorized"]

_aliases.install()  # module paths from before the layered layout, deprecated


# features above the collection API attach to a Dataflow by the keyword that switches them
# on (diffflow.api.features); this face sits above every layer, so it registers them
def _explanations(access, value):
    from diffflow.explain.feature import Explanations
    return Explanations(access, value)


def _dashboard(access, value):
    from diffflow.pag.dashboard.server import LiveDashboard
    return LiveDashboard(access, value)


_features.register("explain", _explanations)      # Dataflow(explain=True)
_features.register("dashboard", _dashboard)       # Dataflow(trace=PATH, dashboard=PORT)

# loaded by ``dd.<name>`` on first use (PEP 562), so ``import diffflow`` stays cheap
_SUBMODULES = {"algorithms", "api", "arrangements", "cli", "common", "dataflow", "datalog",
               "explain", "graphs", "lattice", "operators", "pag", "runtime", "streaming"}
# old module paths (``dd.flow``, ``dd.dsl``...) load too, with their DeprecationWarning, but
# are not listed by dir(): introspection does not trip the warnings
_OLD_SUBMODULES = {old.split(".")[1] for old in _aliases.MOVED if old.count(".") == 1}


def __getattr__(name):
    if name == "Program":  # the Datalog front end (parser, analysis) loads on first use
        from diffflow.datalog.program import Program
        return Program
    if name == "vectorized":  # marks a user-defined functor's callable as taking arrays
        from diffflow.datalog.values.functors import vectorized
        return vectorized
    if name in _SUBMODULES or name in _OLD_SUBMODULES:
        return _importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'diffflow' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _SUBMODULES | {"Program", "vectorized"})
