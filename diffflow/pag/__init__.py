"""Program activity graphs (PAGs): what a dataflow execution did and what was critical.

A PAG (SnailTrail, ST2) has one vertex per event of an execution and one edge
per activity: a worker's local activity (processing, waiting, ...) or a
message between workers.  This package reads execution traces (diffflow's
own, ST2 PAGs, Spark event logs), builds PAGs per snapshot and computes
critical participation, metrics and invariant violations.
"""

from .api import FORMATS, PAG, cp_frame, cp_json, from_events, load, parse_duration  # noqa: E402
from .events import TraceError, read_events  # noqa: E402
from .invariants import violations  # noqa: E402
from .metrics import metrics  # noqa: E402
from .relations import match  # noqa: E402

__all__ = ["FORMATS", "PAG", "TraceError", "cp_frame", "cp_json", "from_events", "load", "match", "metrics",
           "parse_duration", "read_events", "violations"]
