"""What every layer shares: one error hierarchy (:mod:`.errors`), column types, schemas and
the int64 encoding kernels see (:mod:`.schema`), records interned as ids (:mod:`.records`),
giving memory back (:mod:`.memory`).  The bottom layer: it imports nothing of diffflow.
"""

VERSION = "0.1.0"  # the package's version (``diffflow.__version__``, ``diffflow --version``)
