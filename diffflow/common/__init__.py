"""What every layer shares: one error hierarchy (:mod:`.errors`), column types, schemas and
the int64 encoding kernels see (:mod:`.schema`), records interned as ids (:mod:`.records`),
giving memory back (:mod:`.memory`).  The bottom layer: it imports nothing of diffflow.
"""
