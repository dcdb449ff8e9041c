"""Benchmarks as commands of the package: ``diffflow bench graphs``.

* :mod:`.rmat` — R-MAT (Graph500 Kronecker) graphs of any scale, numpy only;
* :mod:`.datasets` — the real graphs: shipped, cached, or downloaded from SNAP when asked;
* :mod:`.download` — a download verified (size, checksum) before it is renamed into place;
* :mod:`.peers` — scipy, networkx and DuckDB computing the same answers from scratch;
* :mod:`.graphs` — the measurement: initial computation, then batches of edge updates;
* :mod:`.report` — the table, the JSON and the plot;
* :mod:`.cli` — the ``diffflow bench`` sub-commands.

:mod:`.rmat` and :mod:`.peers` import only numpy and the standard library at the top, so
the scripts of ``bench/`` load them as files, without importing diffflow.
"""
