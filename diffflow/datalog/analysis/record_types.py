"""Typing of records and algebraic data types: record and branch terms, ``nil``, the field
accesses patterns become, and where a record may stand.

:class:`RecordTyping` is a part of :class:`~diffflow.datalog.analysis.types.TermTyping` (which supplies
``expr_type``, ``error``, ``check_constant`` and ``structures``, the program's record and
ADT types, :mod:`~diffflow.datalog.values.structures`).
"""
from __future__ import annotations

from diffflow.datalog.analysis.kinds import LITERAL, NIL, RECORD, Unknown, _article, kind_name
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import did_you_mean
from diffflow.datalog.values.structures import branch_owners


class RecordTyping:
    """The record and ADT half of term typing."""

    def is_structured(self, kind) -> bool:
        """Whether ``kind`` is a record type, an ADT, or a record or nil not yet typed."""
        return kind in (RECORD, NIL) or kind in self.structures

    def not_structured(self, kind, node, what):
        if self.is_structured(kind):
            raise self.error(f"{what} of a record or ADT value", node,
                             hint="take its fields apart first, e.g. [a, b] = r")

    def fits(self, got, kind) -> bool:
        """Whether a term of type ``got`` can stand where a ``kind`` is expected."""
        if got == kind:
            return True
        if got == LITERAL:
            return kind in ("number", "unsigned", "float")
        if got in (RECORD, NIL):
            return kind in self.structures and self.structures[kind].is_record
        return False

    def branch_type(self, node: ast.BranchTerm, types, strict=True):
        """The ADT of ``$B(args)``; its arguments are checked against the branch's fields."""
        structure = self.owner(node)
        fields = structure.branches[node.branch]
        if len(node.args) != len(fields):
            raise self.error(f"${node.branch} has {len(fields)} field(s) "
                             f"({', '.join(n for n, _ in fields) or 'none'}), got "
                             f"{len(node.args)}", node)
        for arg, (name, kind) in zip(node.args, fields):
            self.check_part(arg, kind, types, strict, f"field {name!r} of ${node.branch}")
        node.number = structure.branch_number(node.branch)
        return structure.name

    def owner(self, node: ast.BranchTerm):
        owners = branch_owners(self.structures)
        if node.branch not in owners:
            raise self.error(f"unknown branch ${node.branch}"
                             f"{did_you_mean(node.branch, owners)}", node,
                             hint="declare it in an algebraic data type, e.g. "
                                  f".type T = {node.branch} {{x: number}} | Other {{}}")
        return owners[node.branch]

    def check_part(self, arg, kind, types, strict, where):
        """An element of a record or ADT term, which must fit the field's type ``kind``."""
        if isinstance(arg, ast.Wildcard):
            return
        if isinstance(arg, ast.RecordTerm):
            self.check_record(arg, kind, types, strict)
            return
        try:
            got = self.expr_type(arg, types, strict)
        except Unknown:
            if strict:
                raise
            return
        if got is not None and not self.fits(got, kind):
            raise self.error(f"type clash: {where} is {_article(kind_name(kind))}, but this "
                             f"is {_article(kind_name(got))}", arg)
        if isinstance(arg, (ast.Number, ast.Float, ast.String)):
            self.check_constant(arg, kind)

    def check_record(self, node: ast.RecordTerm, kind, types, strict=False):
        """``[a, b]`` where a ``kind`` is expected: a record type with as many fields, each
        element fitting its field."""
        structure = self.structures.get(kind)
        if structure is None or not structure.is_record:
            raise self.error(f"type clash: a record where {_article(kind_name(kind))} is "
                             f"expected", node)
        if len(node.args) != len(structure.fields):
            raise self.error(f"record type {kind} has {len(structure.fields)} field(s) "
                             f"({', '.join(n for n, _ in structure.fields)}), but this record "
                             f"has {len(node.args)}", node)
        for arg, (name, field) in zip(node.args, structure.fields):
            self.check_part(arg, field, types, strict, f"field {name!r} of {kind}")

    def field_type(self, node: ast.FieldAccess, types, strict=True):
        """The type of field ``index`` of a record or ADT value (analysis makes these)."""
        kind = self.expr_type(node.record, types, strict)
        if kind is None:
            return None
        structure = self.structures.get(kind)
        if structure is None or structure.is_record != (node.branch is None):
            what = "a record" if node.branch is None else f"${node.branch}(...)"
            raise self.error(f"type clash: {what} matched against "
                             f"{_article(kind_name(kind))}", node)
        fields = structure.fields if structure.is_record else structure.branches[node.branch]
        if node.width != len(fields):
            what = f"record type {kind}" if structure.is_record else f"${node.branch}"
            raise self.error(f"{what} has {len(fields)} field(s) "
                             f"({', '.join(n for n, _ in fields) or 'none'}), but this "
                             f"pattern has {node.width}", node)
        if node.index < 0:  # (the pattern's test: 1 or 0)
            return "number"
        return fields[node.index][1]
