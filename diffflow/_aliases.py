"""Module paths from before the layered layout, kept importable with a ``DeprecationWarning``.

``import diffflow.dsl.parser`` or ``from diffflow.collection import Dataflow`` keep working:
the old name is a thin module that forwards every attribute to the module's new home (and,
where the old module re-exported names, to those names' homes).  The warning names the new
path.  ``docs/ARCHITECTURE.md`` shows where everything lives now.

>>> import importlib, sys, warnings
>>> _ = sys.modules.pop("diffflow.flow", None)     # (as in a fresh interpreter)
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     old = importlib.import_module("diffflow.flow")
>>> old.Dataflow.__module__, str(caught[0].message).split(";")[0]
('diffflow.api.flow', 'diffflow.flow moved to diffflow.api.flow')
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
import warnings

#: old module path -> its new home, then the homes of names the old module also exported
MOVED = {
    "diffflow.aggregates": ("diffflow.api.aggregates",),
    "diffflow.arranged": ("diffflow.api.arranged", "diffflow.api"),
    "diffflow.collection": ("diffflow.api.collection", "diffflow.api.flow", "diffflow"),
    "diffflow.custom_reducers": ("diffflow.api.custom_reducers",),
    "diffflow.errors": ("diffflow.common.errors",),
    "diffflow.expr": ("diffflow.dataflow.expr",),
    "diffflow.flow": ("diffflow.api.flow",),
    "diffflow.inputs": ("diffflow.api.inputs", "diffflow.api.flow"),
    "diffflow.iteration": ("diffflow.api.iteration",),
    "diffflow.memory": ("diffflow.common.memory",),
    "diffflow.outputs": ("diffflow.api.outputs", "diffflow.api.flow"),
    "diffflow.records": ("diffflow.common.records",),
    "diffflow.schema": ("diffflow.common.schema",),
    "diffflow.rescale": ("diffflow.runtime.rescale.plans", "diffflow.runtime.rescale.pacing"),
    "diffflow.runtime.migrate": ("diffflow.runtime.rescale.migrate",),
    "diffflow.runtime.step_index": ("diffflow.runtime.rescale.step_index",),
    "diffflow.pag.events": ("diffflow.runtime.events",),
    "diffflow.provenance": ("diffflow.explain",),
    "diffflow.provenance.correct": ("diffflow.explain.correct", "diffflow.explain.vocabulary"),
    "diffflow.provenance.heights": ("diffflow.explain.heights",),
    "diffflow.provenance.live": ("diffflow.explain.live", "diffflow.explain.feature"),
    "diffflow.provenance.queries": ("diffflow.explain.queries",),
    "diffflow.provenance.replay": ("diffflow.explain.replay",),
    "diffflow.provenance.search": ("diffflow.explain.search", "diffflow.explain.provenance",
                                   "diffflow.explain.feature"),
    "diffflow.dsl": ("diffflow.datalog",),
    "diffflow.dsl._choice_kernel": ("diffflow.datalog.lower._choice_kernel",),
    "diffflow.dsl.absent": ("diffflow.datalog.explain.absent",
                            "diffflow.datalog.explain.evaluate"),
    "diffflow.dsl.aggregates": ("diffflow.datalog.lower.aggregates",),
    "diffflow.dsl.analysed": ("diffflow.datalog.analysis.analysed",),
    "diffflow.dsl.analysis": ("diffflow.datalog.passes", "diffflow.datalog.analysis.analyser",
                              "diffflow.datalog.analysis.analysed",
                              "diffflow.datalog.syntax.intrinsics"),
    "diffflow.dsl.ast": ("diffflow.datalog.syntax.ast",),
    "diffflow.dsl.clauses": ("diffflow.datalog.analysis.clauses",),
    "diffflow.dsl.columns": ("diffflow.datalog.lower.columns",),
    "diffflow.dsl.compiler": ("diffflow.datalog.lower.compiler", "diffflow.datalog.lower.columns"),
    "diffflow.dsl.components": ("diffflow.datalog.transform.components",),
    "diffflow.dsl.constants": ("diffflow.datalog.analysis.constants",),
    "diffflow.dsl.correct": ("diffflow.datalog.explain.correct", "diffflow.explain.vocabulary"),
    "diffflow.dsl.counters": ("diffflow.datalog.transform.counters",
                              "diffflow.datalog.syntax.intrinsics"),
    "diffflow.dsl.errors": ("diffflow.datalog.syntax.errors",),
    "diffflow.dsl.explain": ("diffflow.datalog.explain.derived",),
    "diffflow.dsl.explain_cli": ("diffflow.datalog.cli.explain",),
    "diffflow.dsl.explain_shell": ("diffflow.datalog.cli.shell",),
    "diffflow.dsl.facts": ("diffflow.datalog.values.facts",),
    "diffflow.dsl.functors": ("diffflow.datalog.values.functors",
                              "diffflow.datalog.syntax.intrinsics",
                              "diffflow.datalog.analysis.user_functors"),
    "diffflow.dsl.generators": ("diffflow.datalog.values.generators",),
    "diffflow.dsl.grammar": ("diffflow.datalog.syntax.grammar",),
    "diffflow.dsl.inline": ("diffflow.datalog.transform.inline",),
    "diffflow.dsl.interpret": ("diffflow.datalog.explain.interpret",),
    "diffflow.dsl.joins": ("diffflow.datalog.lower.joins",),
    "diffflow.dsl.kinds": ("diffflow.datalog.analysis.kinds",),
    "diffflow.dsl.parser": ("diffflow.datalog.syntax.parser",),
    "diffflow.dsl.patterns": ("diffflow.datalog.analysis.patterns",),
    "diffflow.dsl.plans": ("diffflow.datalog.analysis.plans",),
    "diffflow.dsl.pragmas": ("diffflow.datalog.analysis.pragmas",),
    "diffflow.dsl.preprocess": ("diffflow.datalog.syntax.preprocess",),
    "diffflow.dsl.program": ("diffflow.datalog.program", "diffflow.datalog.passes",
                             "diffflow.datalog.lower.rows", "diffflow.datalog.lower.columns",
                             "diffflow.datalog.syntax.intrinsics"),
    "diffflow.dsl.proof": ("diffflow.datalog.explain.proof",),
    "diffflow.dsl.provenance": ("diffflow.datalog.lower.provenance",),
    "diffflow.dsl.record_text": ("diffflow.datalog.values.record_text",),
    "diffflow.dsl.record_types": ("diffflow.datalog.analysis.record_types",),
    "diffflow.dsl.relation_value": ("diffflow.datalog.lower.relation_value",),
    "diffflow.dsl.render": ("diffflow.datalog.syntax.render",),
    "diffflow.dsl.strata": ("diffflow.datalog.analysis.strata",),
    "diffflow.dsl.structures": ("diffflow.datalog.values.structures",
                                "diffflow.datalog.analysis.structures"),
    "diffflow.dsl.types": ("diffflow.datalog.analysis.types",
                           "diffflow.datalog.syntax.intrinsics"),
    "diffflow.dsl.watch": ("diffflow.datalog.explain.watch",),
    "diffflow.dsl.witness": ("diffflow.datalog.explain.witness",),
}
_PACKAGES = {"diffflow.dsl", "diffflow.provenance"}
#: (old module path, name) -> (new home, new name): names whose meaning moved with them
RENAMED = {
    # the old parser also expanded components; that is pass 3 now, after the parse
    ("diffflow.dsl.parser", "parse"): ("diffflow.datalog.passes", "parse_program"),
}
#: what the warning adds for a module whose names did not all move to its new home
NOTES = {
    "diffflow.dsl.parser": "parse, which also expanded components, is "
                           "diffflow.datalog.passes.parse_program",
    "diffflow.dsl.analysis": "analyse is diffflow.datalog.passes.analyse",
}
#: ``__all__`` of the old modules that declared one (``from diffflow.collection import *``)
OLD_ALL = {
    "diffflow.collection": ["Collection", "Arranged", "Dataflow", "RUNTIMES", "InputCollection",
                            "Output", "Aggregate", "GraphError", "count", "sum", "min", "max",
                            "col", "lit", "per_group"],
    "diffflow.dsl": ["DatalogError", "DatalogWarning", "Program"],
    "diffflow.dsl.interpret": ["interpret"],
    "diffflow.dsl.witness": ["Evaluator", "Lookups", "Unsupported", "group_rows", "witness_rows"],
    "diffflow.provenance.search": ["CollectionExplanation", "ExplainError", "Provenance"],
}


class _Forwarding(types.ModuleType):
    """An old module path: attributes come from the new homes, first found first."""

    def __getattr__(self, name):
        if name == "__all__":  # what ``from old.path import *`` takes
            return list(OLD_ALL.get(self.__name__) or _public(MOVED[self.__name__][0]))
        if name.startswith("__"):
            raise AttributeError(name)
        child = f"{self.__name__}.{name}"
        if child in MOVED:  # an old submodule, as an attribute of its old package
            return importlib.import_module(child)
        renamed = RENAMED.get((self.__name__, name))
        if renamed is not None:
            return getattr(importlib.import_module(renamed[0]), renamed[1])
        for home in MOVED[self.__name__]:
            module = importlib.import_module(home)
            if name in vars(module) or hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {self.__name__!r} (now {MOVED[self.__name__][0]!r}) "
                             f"has no attribute {name!r}")

    def __dir__(self):
        names = set()
        for home in MOVED[self.__name__]:
            names |= set(dir(importlib.import_module(home)))
        return sorted(names)


class _Finder:
    """Finds the old paths of :data:`MOVED` (and only those): a meta path finder and the
    loader of what it finds (the import protocol's methods; not importlib.abc's classes,
    whose import costs ~10 ms of every ``import diffflow``)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self,
                                               is_package=fullname in _PACKAGES)

    def create_module(self, spec):
        module = _Forwarding(spec.name)
        module.__doc__ = f"Moved: see {MOVED[spec.name][0]} (this name is deprecated)."
        if spec.name in _PACKAGES:
            module.__path__ = []  # submodules are found by this finder, by name
        return module

    def exec_module(self, module):
        new = MOVED[module.__name__][0]
        note = f" ({NOTES[module.__name__]})" if module.__name__ in NOTES else ""
        warnings.warn(f"{module.__name__} moved to {new}{note}; import it from there (the old "
                      f"path is kept for now and will be removed)", DeprecationWarning,
                      stacklevel=_importer_level())


def _importer_level() -> int:
    """The stack level of the code that imported the old path.  Frames of this module, of
    ``importlib.import_module`` and of the package's own ``__getattr__`` (``dd.flow``) are
    passed over and counted; importlib's bootstrap frames are passed over uncounted, since
    ``warnings`` skips them itself."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:
            frame = frame.f_back
            continue
        if name not in _PASSED_OVER and not name.endswith(_IMPORT_MODULE):
            return level
        level += 1
        frame = frame.f_back
    return level


def _public(module_name: str) -> list:
    module = importlib.import_module(module_name)
    return getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]


_IMPORT_MODULE = os.path.join("importlib", "__init__.py")
_PASSED_OVER = {__file__, os.path.join(os.path.dirname(__file__), "__init__.py")}


def install() -> None:
    """Make the old paths importable (idempotent; the package does it on import).  The
    finder goes first: an old folder left behind with only ``__pycache__`` in it (a checkout
    updated in place) would otherwise be found as an empty namespace package."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
