"""Stage 3 of the Datalog front end: checks and normal form.  The program under analysis
(:mod:`.analyser`), types of every term (:mod:`.types`, :mod:`.record_types`,
:mod:`.kinds`), record and ADT declarations (:mod:`.structures`), user functors
(:mod:`.user_functors`), clause checks (:mod:`.clauses`), patterns (:mod:`.patterns`),
constant facts folded (:mod:`.constants`), pragmas, plans and strata; the result is an
:class:`~.analysed.Analysed` program (:mod:`.analysed`).
"""
