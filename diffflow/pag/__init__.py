"""Program activity graphs (PAGs): what a dataflow execution did and what was critical.

A PAG (SnailTrail, ST2) has one vertex per event of an execution and one edge
per activity: a worker's local activity (processing, waiting, ...) or a
message between workers.  This package reads execution traces (diffflow's
own, ST2 PAGs, Spark event logs), builds PAGs per snapshot and computes
critical participation, metrics and invariant violations.
"""
