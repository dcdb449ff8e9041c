"""The operators, one file per family: linear ones (:mod:`.linear`), ``arrange``, ``join``,
``reduce`` (driver :mod:`.reduce`, tactics :mod:`.reducers`, :mod:`.reduce_extremum`,
:mod:`.reduce_custom`, and the plain :mod:`.reduce_reference` kept for tests), ``iterate``'s
scope operators and ``output``; :mod:`.registry` maps node kinds to them.  Each operator
steps on chunks of ``(row, time, diff)`` updates and reads and writes arrangements; it knows
nothing of graphs or runtimes.
"""
