"""Explanations of collection-API dataflows: ``Dataflow(explain=True)`` and
:meth:`Output.explain <diffflow.outputs.Output.explain>` (heights in :mod:`.heights`,
witness queries and the search in :mod:`.search`, replays in :mod:`.replay`)."""
