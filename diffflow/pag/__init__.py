"""Program activity graphs (PAGs): what a dataflow execution did and what was critical.

A PAG (SnailTrail, ST2) has one vertex per event of an execution and one edge
per activity: a worker's local activity (processing, waiting, ...) or a
message between workers.  This package reads execution traces (diffflow's
own, ST2 PAGs, Spark event logs), builds PAGs per snapshot and computes
critical participation, metrics and invariant violations.
"""

from diffflow.pag.api import (FORMATS, PAG, as_pag, cp, cp_frame, cp_json, from_events, invariants,
                              load, metrics, parse_duration)  # noqa: E402,E501
from diffflow.pag.online import PagFlow  # noqa: E402
from diffflow.pag.relations import match  # noqa: E402
from diffflow.runtime.events import TraceError, read_events  # noqa: E402

__all__ = ["FORMATS", "PAG", "PagFlow", "TraceError", "as_pag", "cp", "cp_frame", "cp_json", "from_events",
           "invariants", "load", "match", "metrics", "parse_duration", "read_events"]


def __getattr__(name):
    # the event schema moved to diffflow.runtime.events; its old path still imports (deprecated)
    if name == "events":
        import importlib

        return importlib.import_module("diffflow.pag.events")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
