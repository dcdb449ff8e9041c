"""Record types and algebraic data types resolved from their ``.type`` declarations (their
values live in :mod:`diffflow.datalog.values.structures`).

>>> from diffflow.datalog.syntax.parser import parse
>>> program = parse(".type L = [h: number, t: L]\\n.type T = A {x: L} | B {}")
>>> s = resolve_structures(program.types, {"L": "L", "T": "T"}, None)
>>> s["L"].fields, list(s["T"].branches)
([('h', 'number'), ('t', 'L')], ['A', 'B'])
"""
from __future__ import annotations

from diffflow.datalog.analysis.types import base_type
from diffflow.datalog.values.structures import Structure


def resolve_structures(declarations: list, types: dict, error) -> dict:
    """``{type name: Structure}`` for the record and ADT declarations; field types are
    resolved through ``types`` (``{name: base type}``, record and ADT names their own).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (t,) = parse(".type P = [a: Id, b: P]").types
    >>> resolve_structures([t], {"Id": "number", "P": "P"}, None)["P"].fields
    [('a', 'number'), ('b', 'P')]
    """
    out: dict = {}
    owners: dict = {}
    for t in declarations:
        if t.base == "record":
            out[t.name] = Structure(t.name, fields=[
                (f.name, base_type(f.type, f, types, error)) for f in t.fields])
        elif t.base == "adt":
            branches = {}
            for b in t.branches:
                if b.name in owners:
                    raise error(f"branch {b.name!r} is already a branch of "
                                f"{owners[b.name]!r}", b,
                                hint="a branch name belongs to one algebraic data type")
                owners[b.name] = t.name
                branches[b.name] = [(f.name, base_type(f.type, f, types, error))
                                    for f in b.fields]
            out[t.name] = Structure(t.name, branches=branches)
    return out
