"""User-defined functors: every ``@f(...)`` call bound to its ``.functor`` declaration and
its Python callable (``Program(functors=...)``, ``diffflow run --functors FILE.py``).

>>> import diffflow as dd
>>> p = dd.Program(".functor twice(x: number): number\\n.decl r(x: number)\\nr(@twice(21)).",
...                functors={"twice": lambda x: 2 * x})
>>> p.commit(); p.relation("r")
{(42,)}
"""
from __future__ import annotations

from diffflow.datalog.analysis.types import base_type
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import did_you_mean
from diffflow.datalog.values.functors import UserFunctor


def bind_user_functors(analyser, program, bindings: dict) -> None:
    """Resolve every ``@f(...)`` call of ``program`` to its ``.functor`` declaration and
    Python binding (:class:`UserFunctor`), or a located error."""
    decls = {}
    for decl in program.functors:
        if decl.name in decls:
            raise analyser.error(f"functor {decl.name!r} is declared twice (first at line "
                                 f"{decls[decl.name].line})", decl)
        decls[decl.name] = decl
    resolved = {}
    for call in sorted(_calls(program.rules), key=lambda c: (c.line, c.column)):
        name = call.name[1:]
        decl = decls.get(name)
        if decl is None:
            raise analyser.error(f"unknown functor @{name}{did_you_mean(name, list(decls))}",
                                 call, hint=f"declare it: .functor {name}(x: number): number")
        if name not in resolved:
            fn = bindings.get(name)
            if fn is None or not callable(fn):
                what = "has no Python binding" if fn is None else \
                    f"is bound to {type(fn).__name__} {fn!r:.40}, not a callable"
                raise analyser.error(
                    f"functor {name!r} (declared at line {decl.line}) {what}",
                    call, hint=f"pass Program(..., functors={{{name!r}: a_callable}}), or "
                               f"define {name} in a file given to diffflow run --functors")
            params = [base_type(t, decl, analyser.types, analyser.error) for t in decl.params]
            result = base_type(decl.result, decl, analyser.types, analyser.error)
            resolved[name] = UserFunctor(decl, params, result, fn, analyser.structures)
        call.user = resolved[name]
    unknown = sorted(set(bindings) - set(decls))
    if unknown:
        raise analyser.error(f"functors={{...}} binds {unknown[0]!r}, which no .functor "
                             f"declares{did_you_mean(unknown[0], list(decls))}", program)


def _calls(node):
    """Every user-defined functor call (``@f(...)``) under ``node``."""
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, ast.Node):
            if isinstance(node, ast.Functor) and node.name.startswith("@"):
                yield node
            stack.extend(getattr(node, f) for f in node.__dataclass_fields__
                         if f not in ("line", "column", "user"))
