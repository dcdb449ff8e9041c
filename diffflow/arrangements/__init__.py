"""Arrangements: indexed, multiversioned traces of a collection.

Columnar helpers (:mod:`.columnar`, :mod:`.layout`, :mod:`.small`; numba kernels in
:mod:`._kernels`, private to this package and compiled on first use), update chunks
(:mod:`.updates`, :mod:`.chunked`), immutable sorted batches (:mod:`.batch`), fuelled merges
(:mod:`.merging`), the geometric spine of batches with compaction and lookups
(:mod:`.spine`), a partitioned arrangement (:mod:`.arrangement`) and rows grouped by the
group of their bin (:mod:`.grouping`, for rescaling's step indexes).  Imports only
:mod:`diffflow.lattice` and :mod:`diffflow.common`.
"""
