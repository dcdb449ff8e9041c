"""Stage 4 of the Datalog front end: rewrites of a program -- components expanded
(:mod:`.components`), ``autoinc()`` numbered (:mod:`.counters`), inline relations unfolded
(:mod:`.inline`).  :mod:`diffflow.datalog.passes` runs them in their place among the
analysis passes.
"""
