"""Features that attach to a :class:`~diffflow.api.flow.Dataflow` from above the collection API.

Explanations (:mod:`diffflow.explain`) and the live dashboard (:mod:`diffflow.pag.dashboard`)
sit above the collection API in the layer stack (``docs/ARCHITECTURE.md``), so the API cannot
import them.  Instead each *registers* a factory under the keyword that switches it on
(``Dataflow(explain=True)``, ``Dataflow(dashboard=PORT)``).  The package's face,
``diffflow/__init__.py``, which sits above every layer, does the registering; a module that
imports nothing above it can therefore not reach a feature by accident.

A dataflow created with a feature's keyword calls ``factory(access, value)`` -- ``access`` a
:class:`FlowAccess`, the narrow view of the dataflow a feature may use, ``value`` the
keyword's value -- and then the feature's hooks (:class:`Feature`):

=======================  ===========================================================
hook                     when
=======================  ===========================================================
``before_start()``       once, before the runtime starts (the graph is still open)
``after_close()``        after each ``advance()`` closed an epoch, before computing it
``after_run()``          after each computation of closed epochs
``close()``              at ``Dataflow.close()``
=======================  ===========================================================

>>> class Counter(Feature):
...     def __init__(self, access, value):
...         self.access, self.runs = access, 0
...     def after_run(self):
...         self.runs += 1
>>> register("count_runs", Counter)
>>> import diffflow as dd
>>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); _ = a.output()
>>> counter = attach(flow, "count_runs", True)
>>> a.insert([1]); flow.advance(); flow.advance(); counter.runs
2
>>> _ = _FACTORIES.pop("count_runs")
"""
from __future__ import annotations

_FACTORIES: dict = {}


def register(name: str, factory) -> None:
    """Make ``factory(access, value)`` the feature ``name`` (replacing an earlier one)."""
    _FACTORIES[name] = factory


def attach(flow, name: str, value):
    """Create feature ``name`` for ``flow`` and attach it; returns the feature."""
    factory = _FACTORIES.get(name)
    if factory is None:  # (only a package face that skipped registering gets here)
        raise RuntimeError(f"no feature {name!r} is registered; import diffflow, whose "
                           f"__init__ registers the built-in features")
    feature = factory(FlowAccess(flow), value)
    flow._features[name] = feature
    return feature


def restore(flow, name: str, state: dict):
    """Attach feature ``name`` to a dataflow unpickled from before features existed; the
    feature takes over what ``state`` (the old pickle's attributes) held of it, if it can
    (a ``restore(state)`` method)."""
    feature = attach(flow, name, True)
    if hasattr(feature, "restore"):
        feature.restore(state)
    return feature


def attached(flow, name: str):
    """The feature ``name`` of ``flow``, or ``None`` when it was not switched on."""
    return getattr(flow, "_features", {}).get(name)


class Feature:
    """What a dataflow calls on an attached feature; every hook does nothing by default."""

    def before_start(self) -> None:
        """Once, before the runtime starts: the graph may still grow."""

    def after_close(self) -> None:
        """After ``advance()`` closed an epoch, before it is computed."""

    def after_run(self) -> None:
        """After closed epochs were computed."""

    def close(self) -> None:
        """At ``Dataflow.close()``."""


class FlowAccess:
    """The parts of a dataflow a feature may read besides its public methods.

    ``flow`` is the dataflow itself (its graph, symbols, epoch, inputs' public API).
    """

    def __init__(self, flow):
        self.flow = flow

    @property
    def runtime(self):
        """The running runtime, or ``None`` before the first ``advance()`` (or after close)."""
        return self.flow._runtime

    def input_name(self, node_id: int) -> str:
        """The name of the input whose node is ``node_id``."""
        return next(i.name for i in self.flow._inputs if i.node.id == node_id)

    @property
    def arrangements(self) -> dict:
        """``{(node id, key columns): Arranged}``: the arrangements built so far (shared)."""
        return dict(self.flow._arrangements)

    def staged(self) -> list:
        """The inputs changed since the last ``advance()``."""
        return [i for i in self.flow._inputs if i._staged]

    def pending(self) -> str | None:
        """Why the dataflow's latest state is not computed yet, or ``None`` when it is."""
        staged = [i.name for i in self.staged()]
        if staged:
            return (f"{', '.join(staged)} changed since the last advance(); explanations are "
                    f"of computed epochs: advance() first")
        if self.flow._unrun:
            return ("epochs closed by advance(run=False) are not computed yet: call "
                    "flow.run() first")
        return None

    def replica(self, node_count: int):
        """A new local dataflow over copies of this one's first ``node_count`` nodes, sharing
        its symbols, with an :class:`~diffflow.api.inputs.InputCollection` for each input
        among them; returns ``(dataflow, {input name: input})``."""
        return self.flow._replica(node_count)
