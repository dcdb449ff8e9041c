"""Explanations as a feature of a dataflow: ``Dataflow(explain=True)``.

Attached through :mod:`diffflow.api.features` (the package face registers it): before the
dataflow starts, :class:`Explanations` builds its heights and witness queries onto the graph
(:class:`~diffflow.explain.provenance.Provenance`); after each epoch it keeps the live
explanations (:mod:`.live`) current.  :meth:`Output.explain <diffflow.Output.explain>` and
:meth:`Dataflow.explanations <diffflow.Dataflow.explanations>` come here.

>>> import diffflow as dd
>>> flow = dd.Dataflow(explain=True); a = flow.input("a", ["x"]); out = a.output()
>>> a.insert([1]); flow.advance(); out.explain([(1,)]).inputs
{'a': {(1,): 1}}
"""
from __future__ import annotations

from diffflow.api.features import Feature
from diffflow.common.errors import ExplainError
from diffflow.explain.live import LiveExplanations
from diffflow.explain.provenance import Provenance
from diffflow.explain.queries import indexes_of


class Explanations(Feature):
    """A dataflow's explanations: its provenance, and the live explanations to refresh."""

    def __init__(self, access, value=True):
        self.access = access
        self.provenance = None
        self.followed: list = []   # live explanations, refreshed after every run

    def before_start(self) -> None:
        self.provenance = Provenance(self.access)   # builds onto the graph, once

    def after_close(self) -> None:
        self.provenance.record_changes(bool(self.followed))

    def after_run(self) -> None:
        if not self.followed:
            return
        changes = self.provenance.take_changes()
        for live in list(self.followed):   # live explanations read what the epochs changed
            live.refresh(changes=changes)

    def restore(self, state: dict) -> None:
        """Take over the explanations of a dataflow pickled before features existed (its
        provenance, changed-keys recorders and live explanations were its own attributes)."""
        provenance = state.get("_provenance")
        if provenance is not None:
            provenance.access = self.access
            provenance.recorders = state.get("_changed_keys", {})
            provenance.read_log = None
            for index in indexes_of(provenance.queries):
                index.context = provenance
            self.provenance = provenance
        for live in state.get("_live", []):
            live.explanations = self
            self.follow(live)

    def ready(self) -> Provenance:
        """The provenance, once something was computed (a clear error before)."""
        if self.access.runtime is None:
            raise ExplainError("nothing computed yet: advance() the dataflow first")
        return self.provenance

    def explain(self, output, rows):
        """:meth:`Output.explain <diffflow.Output.explain>`."""
        return self.ready().explain(output, rows)

    def live(self, output) -> LiveExplanations:
        """:meth:`Dataflow.explanations <diffflow.Dataflow.explanations>`."""
        return LiveExplanations(self, output)

    def follow(self, live) -> None:
        if live not in self.followed:
            self.followed.append(live)

    def unfollow(self, live) -> None:
        if live in self.followed:
            self.followed.remove(live)


def provenance_of(flow) -> Provenance:
    """The provenance (heights, witness queries) of a dataflow built with ``explain=True``,
    once it has computed something; a clear error otherwise.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(explain=True); a = flow.input("a", ["x"]); _ = a.output()
    >>> a.insert([1]); flow.advance(); type(provenance_of(flow)).__name__
    'Provenance'
    """
    return flow._explainer().ready()
