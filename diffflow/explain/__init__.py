"""Why is this row in my output: explanations of collection-API dataflows.

``Dataflow(explain=True)``, :meth:`Output.explain <diffflow.Output.explain>` and
:meth:`Dataflow.explanations <diffflow.Dataflow.explanations>`.  The vocabulary
(:mod:`.vocabulary`: explanation, replay, replay and correct, live explanations, ``Change``)
is shared with Datalog's explanations (:mod:`diffflow.datalog.explain`); ``docs/EXPLAIN.md``
describes the model.  Modules, bottom to top: :mod:`.vocabulary`; :mod:`.heights` (first
occurrence of every row); :mod:`.queries` (witness queries over indexes); :mod:`.replay`
(replays on chosen inputs); :mod:`.search` (the search, and the explanations it gives);
:mod:`.correct` (correction rounds for differences); :mod:`.provenance` (all of it built
onto a dataflow); :mod:`.live` (live explanations); :mod:`.feature` (what attaches it to a
dataflow: :mod:`diffflow.api.features`).
"""
