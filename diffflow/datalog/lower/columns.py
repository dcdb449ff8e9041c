"""Columns: a relation's, a variable's, and terms as column expressions.

A relation's collection has columns ``c0, c1, ...`` (a nullary relation the
single column ``_unit``, always 0); a variable bound in a clause is column
:func:`var_column` of its name.  Numbers follow Soufflé: ``number``
arithmetic wraps to 32-bit signed, ``unsigned`` to 32-bit unsigned, ``/`` and
``%`` truncate toward zero.

>>> relation_columns(Relation("e", ["x", "w"], ["number", "float"], None))
[('c0', 'int'), ('c1', 'float')]
"""
from __future__ import annotations

from dataclasses import dataclass

from diffflow.dataflow.expr import Func, Lit, col, int_power, trunc_div, trunc_mod, wrap_int32, wrap_uint32
from diffflow.datalog.analysis.analysed import Relation
from diffflow.datalog.syntax import ast
from diffflow.datalog.values import functors, structures


class _ColumnTypes(dict):
    def __missing__(self, kind):  # a record type or an ADT: a column of record ids
        return "int"


COLUMN_TYPE = _ColumnTypes(number="int", unsigned="int", float="float", symbol="str")
UNIT = "_unit"


def relation_columns(relation: Relation) -> list:
    """Internal ``(name, type)`` columns of a relation's collection.

    >>> relation_columns(Relation("flag", [], [], None))
    [('_unit', 'int')]
    """
    if relation.arity == 0:
        return [(UNIT, "int")]
    return [(f"c{i}", COLUMN_TYPE[t]) for i, t in enumerate(relation.types)]


def var_column(name: str) -> str:
    """The column of a variable; one-to-one, so generated names (``#e1``, ``x#2``) never
    meet a user's.

    >>> var_column("x"), var_column("x_h1"), var_column("x#1"), var_column("?y")
    ('v_x', 'v_x__h1', 'v_x_h1', 'v__qy')
    """
    return "v_" + name.replace("_", "__").replace("?", "_q").replace("#", "_h")


@dataclass
class Frame:
    """Intermediate bindings of a clause: a collection and the column holding each variable.

    A *raw* frame is a relation scanned as it is (variables in its ``c*``
    columns), so a following join reads the relation's shared arrangement
    instead of a renamed copy.  ``named()`` renames to ``v_*`` columns.
    """
    collection: object
    variables: list  # variable names (internal columns excluded)
    raw: dict = None  # variable -> relation column, for a raw scan
    source: str = ""  # the scanned relation, for a raw scan

    def column(self, var: str) -> str:
        return self.raw[var] if self.raw is not None else var_column(var)

    def named(self) -> "Frame":
        if self.raw is None:
            return self
        names = {var_column(v): self.raw[v] for v in self.variables} or {UNIT: 0}
        return Frame(self.collection.select(**names), list(self.variables))


def term_expression(node, types: dict, aggregates: dict):
    """A column expression for a term, in the base type ``types`` records for it.

    ``types`` is the clause's record of term types (:mod:`~diffflow.datalog.analysis.types`); ``aggregates``
    gives the column holding each aggregate's value (by ``id``).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.analysis.types import TermTyping
    >>> (rule,) = parse("r(x * 2 + 1).").rules
    >>> term = rule.head.args[0]
    >>> term_expression(term, TermTyping().term_types(term, "unsigned"), {})
    wrapu32((wrapu32((col('v_x') * 2)) + 1))
    """
    kind = types[id(node)]
    if isinstance(node, ast.Var):
        return col(var_column(node.name))
    if isinstance(node, ast.Number):
        return Lit(float(node.value)) if kind == "float" else Lit(node.value)
    if isinstance(node, (ast.Float, ast.String)):
        return Lit(node.value)
    if isinstance(node, ast.AggregateTerm) or id(node) in aggregates:  # (or autoinc()'s)
        return col(aggregates[id(node)])
    if isinstance(node, ast.Nil):
        return Lit(0)
    if isinstance(node, (ast.RecordTerm, ast.BranchTerm)):
        args = [term_expression(a, types, aggregates) for a in node.args]
        kinds = [types[id(a)] for a in node.args]
        if isinstance(node, ast.BranchTerm):
            args, kinds = [Lit(node.number), *args], ["number", *kinds]
        return structures.pack_column(args, kinds)
    if isinstance(node, ast.FieldAccess):
        return structures.field_column(node, term_expression(node.record, types, aggregates),
                                       kind)
    if isinstance(node, ast.Negative):
        return _wrap(-term_expression(node.operand, types, aggregates), kind)
    if isinstance(node, ast.Functor):
        args = [term_expression(a, types, aggregates) for a in node.args]
        if node.name == "as":  # (number <-> unsigned: the same 32 bits)
            return _wrap(args[0], kind)
        if node.user is not None:  # @f: a user-defined functor
            out = {"symbol": "str", "float": "float"}.get(node.user.result, "int")
            return Func(node.name, node.user, args, out)
        return functors.column(node.name, args, kind, [types[id(a)] for a in node.args])
    left = term_expression(node.left, types, aggregates)
    right = term_expression(node.right, types, aggregates)
    op = node.op
    if kind == "symbol":  # (+ of symbols: concatenation)
        return functors.column("cat", [left, right], kind, ["symbol", "symbol"])
    if kind == "float":
        value = {"+": left.__add__, "-": left.__sub__, "*": left.__mul__,
                 "/": left.__truediv__, "^": left.__pow__,
                 "%": lambda r: trunc_mod(left, r)}[op](right)
        return value
    if op == "/":
        value = trunc_div(left, right)
    elif op == "%":
        value = trunc_mod(left, right)
    else:
        value = {"+": left.__add__, "-": left.__sub__, "*": left.__mul__,
                 "^": lambda r: int_power(left, r)}[op](right)
    return _wrap(value, kind)


def _wrap(value, kind):
    if kind == "number":
        return wrap_int32(value)
    if kind == "unsigned":
        return wrap_uint32(value)
    return value
