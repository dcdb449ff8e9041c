"""Witnesses read from indexes: the body instances that derive a fact, evaluated binding by
binding over arrangements of the relations, between commits.

:mod:`~diffflow.datalog.lower.provenance` compiles, per clause, a request-driven witness query; asking it costs an
engine commit per proof level.  This evaluates the same conditions -- the clause's literals
with every positive atom read from ``#h:`` (its facts and proof heights) below the fact's
height, the aggregates' values, the head's equalities -- with the evaluator of
:mod:`.evaluate`, whose atoms look facts up in :class:`~diffflow.explain.queries.Index`es
(an arrangement of the relation by one column, or by all of them, shared with the program's
own where one exists).  A proof level is then a few binary searches.  Anything it cannot
evaluate raises :class:`Unsupported` and :mod:`.derived` asks the engine instead.

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl edge(x: number, y: number)
... .decl path(x: number, y: number)
... path(x, y) :- edge(x, y).
... path(x, z) :- edge(x, y), path(y, z).''', provenance=True)
>>> _ = p.insert("edge", [(1, 2), (2, 3)]); p.commit()
>>> lookups = p._compiled.lookups
>>> lookups.height("path", (1, 3)), lookups.height("path", (3, 1))
(2, None)
"""
from __future__ import annotations

import numpy as np

from diffflow.api.features import FlowAccess
from diffflow.common.schema import decode_rows, encode_column
from diffflow.datalog.explain.evaluate import BodyEvaluator
from diffflow.datalog.lower.columns import UNIT
from diffflow.datalog.lower.provenance import HEIGHTS
from diffflow.datalog.syntax import ast
from diffflow.explain.queries import TOP, Index, Reading


class Unsupported(Exception):
    """A witness this evaluator cannot read (the engine's query answers instead)."""


class Lookups:
    """Indexes of every relation, by all of a fact's columns and by each single column
    (built before the program's first commit): of its ``#h:`` twin (facts and heights),
    which serves reads of the relation too, or of an input-only relation itself (its
    facts all have height 0)."""

    def __init__(self, flow, values: dict, relations: dict):
        self.flow = flow
        context = Reading(FlowAccess(flow))
        self.indexes: dict = {}    # relation name -> {column positions: Index}
        self.arity: dict = {}
        self.ground: set = set()   # input-only relations: indexed without heights
        for name, relation in relations.items():
            source = values.get(HEIGHTS + name)
            if not relation.clauses and values.get(name) is not None:
                source = values[name]
                self.ground.add(name)
            if source is None:
                continue
            self.arity[name] = relation.arity
            # single columns first: an index by all columns reads a prefix of one of them
            by = [(i,) for i in range(relation.arity) if relation.arity > 1]
            by.append(tuple(range(relation.arity)))
            self.indexes[name] = {
                positions: Index(source, [f"c{i}" for i in positions] or [UNIT], "ground",
                                 context)
                for positions in by}
        for indexes in self.indexes.values():
            for index in indexes.values():
                index.place()

    def _index(self, name: str, bound: dict):
        """The index to read ``name`` by, and the encoded key (``None``: matches nothing)."""
        indexes = self.indexes.get(name.removeprefix(HEIGHTS))
        if indexes is None:
            raise Unsupported(f"no index of {name}")
        usable = [p for p in indexes if set(p) <= set(bound)]
        if not usable:
            raise Unsupported(f"{name} read with nothing bound")
        positions = max(usable, key=len)
        index = indexes[positions]
        schema = index.node.schema
        try:
            key = tuple(encode_column([bound[p]], schema.types[i], self.flow.symbols, name)
                        .item() for i, p in enumerate(positions))
        except (TypeError, ValueError):
            key = None   # a value of the wrong type matches nothing
        return index, key

    def count(self, name: str, bound: dict) -> int:
        """How many updates a read of ``name`` by ``bound`` scans (to order the reads)."""
        index, key = self._index(name, bound)
        return 0 if key is None else len(index.gather([key])[0])

    def rows(self, name: str, bound: dict) -> list:
        """The facts of ``name`` (with their height last for ``#h:``) whose columns
        ``bound`` (position -> value) holds."""
        index, key = self._index(name, bound)
        if key is None:
            return []
        schema = index.node.schema
        found = index.read([key], [TOP])[0]
        if not found:
            return []
        arranged = decode_rows(np.array(list(found), dtype=np.int64), schema,
                               self.flow.symbols)
        relation = name.removeprefix(HEIGHTS)
        arity = self.arity[relation]
        order = [schema.names.index(f"c{i}") for i in range(arity)]
        facts = [tuple(row[i] for i in order) for row in arranged]
        if name.startswith(HEIGHTS):   # the height last
            at = None if relation in self.ground else schema.names.index(f"c{arity}")
            facts = [f + (0 if at is None else row[at],) for f, row in zip(facts, arranged)]
        return [f for f in facts if all(f[p] == v for p, v in bound.items())]

    def height(self, relation: str, fact: tuple):
        """``relation(fact)``'s proof height, or ``None`` when it does not hold."""
        arity = self.arity[relation]
        found = self.rows(HEIGHTS + relation, dict(enumerate(fact)))
        return min((f[arity] for f in found), default=None)


class _Typed:
    """What the evaluator reads of a clause: its terms' types."""

    def __init__(self, types):
        self.term_types, self.var_types = types, {}


class Evaluator(BodyEvaluator):
    """The evaluator of :mod:`.absent` with atoms read from :class:`Lookups`."""

    def __init__(self, lookups: Lookups):
        self.lookups = lookups

    @staticmethod
    def bound(atom, binding) -> dict:
        """``position -> value`` of the atom's arguments that ``binding`` fixes."""
        bound = {}
        for i, arg in enumerate(atom.args):
            if isinstance(arg, ast.Var):
                if arg.name in binding:
                    bound[i] = binding[arg.name]
            elif not isinstance(arg, ast.Wildcard):
                bound[i] = arg.value
        return bound

    def match(self, atom, binding):
        for row in self.lookups.rows(atom.relation, self.bound(atom, binding)):
            extended = dict(binding)
            for arg, value in zip(atom.args, row):
                if isinstance(arg, ast.Var):
                    if extended.setdefault(arg.name, value) != value:
                        break
            else:
                yield extended

    def solve(self, literals, binding, types) -> list:
        """Every binding extending ``binding`` that satisfies ``literals``."""
        clause = _Typed(types)
        bindings, rest = [binding], list(literals)
        while rest and bindings:
            lit = self._next(rest, bindings[0], clause)
            rest.remove(lit)
            bindings = [b for current in bindings for b in self.apply(lit, current, clause)]
        return bindings

    def _next(self, rest, binding, clause):
        """The literal to apply next: a ready condition (it only filters or assigns), else
        the atom whose read finds the fewest facts for ``binding``."""
        ready = [lit for lit in rest if self.ready(lit, binding, clause)]
        conditions = [lit for lit in ready if not isinstance(lit, ast.Atom)]
        if conditions:
            return conditions[0]
        atoms = [lit for lit in ready if isinstance(lit, ast.Atom)]
        if not atoms:
            raise Unsupported("no literal can be evaluated with what is bound")
        return min(atoms, key=lambda atom: self._cost(atom, binding))

    def _cost(self, atom, binding) -> float:
        try:
            return self.lookups.count(atom.relation, self.bound(atom, binding))
        except Unsupported:   # nothing bound: read last, if at all
            return float("inf")


def witness_rows(evaluator, witness, fact: tuple, height: int) -> list:
    """The sorted rows (``witness.variables``) deriving ``fact`` below ``height``."""
    binding = {var: fact[int(column[1:])] for var, column in witness.bind.items()
               if var != witness.top}
    binding[witness.top] = height
    found = evaluator.solve([*witness.body, *witness.conditions], binding, witness.types)
    return _rows(found, witness.variables)


def group_rows(evaluator, group, key: tuple) -> list:
    """The sorted member rows (``group.variables``) of a group asked by ``key``."""
    found = evaluator.solve([*group.body, *group.conditions], dict(zip(group.key, key)),
                            group.types)
    return _rows(found, group.variables)


def _rows(bindings, variables) -> list:
    try:
        return sorted({tuple(b[v] for v in variables) for b in bindings})
    except KeyError as missing:
        raise Unsupported(f"a witness variable is never bound: {missing}") from None


__all__ = ["Evaluator", "Lookups", "Unsupported", "group_rows", "witness_rows"]
