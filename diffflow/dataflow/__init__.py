"""The dataflow graph as an intermediate representation: nodes, scopes and the user's source
lines (:mod:`.graph`), progress tracking -- pointstamps, path summaries, frontiers
(:mod:`.progress`) -- and column expressions (:mod:`.expr`).  It knows nothing of the
collection API above it; below it, it imports the lattice and :mod:`diffflow.common`.
"""
