"""Clause bodies evaluated binding by binding in Python, with Soufflé's arithmetic: what the
explanations that read a few facts share (why a fact is not derived, :mod:`.absent`; small
replays, :mod:`.interpret`; witnesses read from indexes, :mod:`.witness`).

>>> from diffflow.datalog.program import Program
>>> p = Program(".decl e(x: number)\\n.decl r(x: number)\\nr(x + 1) :- e(x), x > 1.")
>>> _ = p.insert("e", [(1,), (5,)]); p.commit()
>>> (clause,) = p.relations["r"].clauses
>>> evaluator = BodyEvaluator(p)
>>> [b["x"] for b in evaluator.apply(clause.literals[0], {}, clause)]
[1, 5]
>>> evaluator.holds(clause.literals[1], {"x": 5}, clause)
True
"""
from __future__ import annotations

import math

from diffflow.datalog.analysis.constants import arithmetic, compare, functor, wrap
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import GENERATORS
from diffflow.datalog.values import structures
from diffflow.datalog.values.generators import range_values


class BodyEvaluator:
    """Clause bodies over the committed relations, binding by binding (``facts(name)``
    reads a relation; subclasses read elsewhere)."""

    def __init__(self, program):
        self.program = program
        self.relations: dict = {}

    def facts(self, name) -> set:
        if name not in self.relations:
            self.relations[name] = self.program.relation(name)
        return self.relations[name]

    def bind_head(self, clause, fact) -> dict | None:
        """The head's variables bound to the fact; ``None`` if a constant or a repeated
        variable disagrees (expressions in the head are checked after the body)."""
        binding: dict = {}
        for arg, value in zip(clause.head.args, fact):
            if isinstance(arg, ast.Var):
                if binding.setdefault(arg.name, value) != value:
                    return None
            elif isinstance(arg, (ast.Number, ast.Float, ast.String)) and arg.value != value:
                return None
        return binding

    def ready(self, lit, binding, clause) -> bool:
        if isinstance(lit, ast.Negation):
            return all(v.name in binding for v in ast.term_variables(*lit.atom.args))
        if isinstance(lit, ast.Comparison):
            free = {v.name for v in ast.term_variables(lit.left, lit.right)} - set(binding)
            return not free or self.assignment(lit, binding) is not None
        return True

    @staticmethod
    def assignment(lit, binding):
        if lit.op != "=":
            return None
        for target, other in ((lit.left, lit.right), (lit.right, lit.left)):
            if isinstance(target, ast.Var) and target.name not in binding and \
                    all(v.name in binding for v in ast.term_variables(other)):
                return target, other
        return None

    def apply(self, lit, binding, clause):
        """Every extension of ``binding`` that satisfies the literal."""
        if isinstance(lit, ast.Atom):
            yield from self.match(lit, binding)
        elif isinstance(lit, ast.Boolean):
            if lit.value:
                yield binding
        elif isinstance(lit, ast.Negation):
            if next(self.match(lit.atom, binding), None) is None:
                yield binding
        elif isinstance(lit, ast.Comparison) and (generated := self.generated(lit, binding,
                                                                             clause)):
            target, values = generated
            for value in values:
                if target is None:
                    yield binding
                else:
                    yield {**binding, target: value}
        elif (found := self.assignment(lit, binding)) is not None:
            value = self.term(found[1], binding, clause)
            if value is not NONE:
                yield {**binding, found[0].name: value}
        elif self.holds(lit, binding, clause):
            yield binding

    def generated(self, lit, binding, clause):
        """For ``x = range(...)``: ``(x, its values)`` when ``x`` is unbound, else ``(None,
        [x] if x is among them)``; None for any other comparison."""
        generator = next((side for side in (lit.left, lit.right) if isinstance(side, ast.Functor)
                          and side.name in GENERATORS), None)
        if generator is None:
            return None
        args = [self.term(a, binding, clause) for a in generator.args]
        if NONE in args:
            return None, []
        kind = clause.term_types[id(generator)]
        _, values = range_values(*([a] for a in args[:2]),
                                 [args[2]] if len(args) > 2 else None, kind)
        values = [float(v) if kind == "float" else int(v) for v in values]
        other = lit.right if generator is lit.left else lit.left
        if isinstance(other, ast.Var) and other.name not in binding:
            return other.name, values
        value = self.term(other, binding, clause)
        return None, [value] if value in values else []

    def holds(self, lit, binding, clause) -> bool:
        if isinstance(lit, (ast.Atom, ast.Negation, ast.Boolean)):
            return next(iter(self.apply(lit, binding, clause)), None) is not None
        left, right = self.term(lit.left, binding, clause), self.term(lit.right, binding, clause)
        if left is NONE or right is NONE:
            return False
        return compare(lit.op, left, right)

    def match(self, atom, binding):
        for row in self.facts(atom.relation):
            extended = dict(binding)
            for arg, value in zip(atom.args, row):
                if isinstance(arg, ast.Var):
                    if extended.setdefault(arg.name, value) != value:
                        break
                elif not isinstance(arg, ast.Wildcard) and arg.value != value:
                    break
            else:
                yield extended

    def term(self, node, binding, clause):
        """A term's value with Soufflé's arithmetic (:func:`~diffflow.datalog.analysis.constants.arithmetic`)."""
        kind = clause.term_types.get(id(node))
        if isinstance(node, ast.Var):
            return binding[node.name]
        if isinstance(node, (ast.Number, ast.Float, ast.String)):
            return float(node.value) if kind == "float" else node.value
        if isinstance(node, ast.AggregateTerm):
            return self.aggregate(node, binding, clause)
        if isinstance(node, (ast.RecordTerm, ast.Nil, ast.BranchTerm, ast.FieldAccess)):
            return structures.value(node, lambda part: self.term(part, binding, clause))
        if isinstance(node, ast.Negative):
            value = self.term(node.operand, binding, clause)
            return value if value is NONE else wrap(-value, kind)
        if isinstance(node, ast.Functor):
            args = [self.term(a, binding, clause) for a in node.args]
            if any(a is NONE for a in args):
                return NONE
            return functor(node, args, kind, [clause.term_types.get(id(a)) for a in node.args])
        a, b = self.term(node.left, binding, clause), self.term(node.right, binding, clause)
        if a is NONE or b is NONE:
            return NONE
        return arithmetic(node.op, a, b, kind)

    def aggregate(self, agg, binding, clause):
        members, rest = [binding], list(agg.body)
        while rest:
            lit = next((lit for lit in rest if self.ready(lit, members[0], clause)), rest[0]) \
                if members else rest[0]
            rest.remove(lit)
            members = [b for m in members for b in self.apply(lit, m, clause)]
        if agg.function == "count":
            return len(members)
        values = [self.term(agg.target, m, clause) for m in members]
        if agg.function == "sum":
            return wrap(sum(values), clause.term_types.get(id(agg))) if values else 0
        if not values:
            return NONE
        if agg.function == "mean":
            return math.fsum(float(v) for v in values) / len(values)
        return min(values) if agg.function == "min" else max(values)


NONE = object()  # min or max of no members: no value (a term without one)


def typed_value(value, kind):
    """A value given as text on a command line, in the type of the variable it binds.

    >>> typed_value("3", "number"), typed_value('"a"', "symbol")
    (3, 'a')
    >>> typed_value("abc", "number")
    Traceback (most recent call last):
    ...
    ValueError: 'abc' is not a number
    """
    try:
        if isinstance(value, str) and kind in ("number", "unsigned"):
            return int(value)
        if isinstance(value, str) and kind == "float":
            return float(value)
    except ValueError:
        what = {"float": "a float", "unsigned": "an unsigned"}.get(kind, "a number")
        raise ValueError(f"{value!r} is not {what}") from None
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value
