"""Where and how a dataflow runs: the per-partition engine every runtime drives
(:mod:`.engine`), the runtime interface (:mod:`.base`) and its placements -- local
(:mod:`.local`), in-process and process workers (:mod:`.cluster`, :mod:`.transports`,
:mod:`.worker`), Spark (:mod:`.spark`, the only module that imports pyspark) -- routing of
keys to partitions (:mod:`.routing`), the wire format (:mod:`.wire`), the execution event
schema and tracing (:mod:`.events`, :mod:`.tracing`, :mod:`.trace_sink`; :mod:`diffflow.pag`
reads them), and live rescaling (:mod:`.rescale`).  Imports the dataflow IR and below.
"""


def __getattr__(name):
    # migrate and step_index moved to diffflow.runtime.rescale; their old paths still import
    # (deprecated)
    if name in ("migrate", "step_index"):
        import importlib

        return importlib.import_module(f"diffflow.runtime.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
