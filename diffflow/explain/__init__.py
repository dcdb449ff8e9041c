"""Explanations of collection-API dataflows: ``Dataflow(explain=True)``,
:meth:`Output.explain <diffflow.api.outputs.Output.explain>` and ``flow.explanations``.

:mod:`.heights` (first occurrence of every row), :mod:`.queries` (witness queries),
:mod:`.search` (the search and the explanations), :mod:`.correct` (correction rounds for
differences), :mod:`.replay` (replays on chosen inputs), :mod:`.live` (live explanations).
"""
