"""Small replays in Python: what a program derives from a handful of input facts, rule by
rule over sets.

The correction loop of explanations (:mod:`.correct`) replays the program on an
explanation's few facts, once per round; a freshly compiled dataflow takes ~15 ms to build
and run even on six facts, this takes well under one.  The semantics are the engine's:
strata in order, a recursive stratum's rules applied to its relations from empty until
nothing changes, bodies evaluated binding by binding with Soufflé's arithmetic by the
evaluator :mod:`.absent` uses.  Anything it cannot evaluate -- or a stratum that does not
settle -- returns ``None`` and the caller replays the compiled program instead, which also
stays the one :meth:`~.derived.Explanation.check` trusts.

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl edge(x: number, y: number)
... .decl path(x: number, y: number)
... path(x, y) :- edge(x, y).
... path(x, z) :- path(x, y), edge(y, z).''')
>>> sorted(interpret(p, {"edge": {(1, 2), (2, 3)}})["path"])
[(1, 2), (1, 3), (2, 3)]
"""
from __future__ import annotations

from diffflow.datalog.explain.evaluate import NONE, BodyEvaluator
from diffflow.datalog.lower.relation_value import value_of_set
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import is_counter

MAX_ROUNDS = 10_000
MAX_FACTS = 5_000   # larger replays go to the compiled program


class _Sets(BodyEvaluator):
    """The evaluator over relations held in a dict of sets."""

    def __init__(self, env: dict):
        self.env = env

    def facts(self, name) -> set:
        return self.env[name]


def interpret(program, inputs: dict) -> dict | None:
    """``{relation: set of facts}`` derived from ``inputs`` alone (facts written in the
    program text count only when ``inputs`` holds them), or ``None`` (see module doc)."""
    if sum(len(facts) for facts in inputs.values()) > MAX_FACTS:
        return None
    analysed = program.analysed
    values: dict = {name: set(inputs.get(name, ())) for name in analysed.relations}
    try:
        for stratum in analysed.strata:
            base = {name: set(inputs.get(name, ())) for name in stratum.relations}
            current = {name: set() for name in stratum.relations}
            for _ in range(MAX_ROUNDS):
                env = {**values, **current}
                evaluator = _Sets(env)
                new = {}
                for name in stratum.relations:
                    relation = analysed.relations[name]
                    rows = set(base[name])
                    for clause in relation.clauses:
                        rows |= _derive(evaluator, clause, relation)
                    new[name] = _declared(relation, rows, env, stratum.recursive) \
                        if relation.shaped else rows
                if new == current:
                    break
                current = new
            else:
                return None
            values.update(current)
    except (KeyError, AttributeError, TypeError, ValueError, ZeroDivisionError):
        return None   # a construct the evaluator does not know: replay compiled
    return values


def _declared(relation, candidates: set, env: dict, recursive: bool) -> set:
    """What the declaration adds (:mod:`~diffflow.datalog.lower.relation_value`); subsumptive rules read the
    candidates as the relation; inside recursion earlier rounds' choices stay."""
    dominated = set()
    if relation.dominated and recursive:  # last round's rows stay candidates
        candidates = candidates | env[relation.name]
    if relation.dominated:
        evaluator = _Sets({**env, relation.name: candidates})
        for clause in relation.dominated:
            dominated |= _derive(evaluator, clause, relation)
    return value_of_set(relation, candidates, dominated,
                        env[relation.name] if recursive else None)


def _derive(evaluator, clause, relation) -> set:
    """The head facts of every binding that satisfies the clause's body."""
    bindings, rest = [{}], list(clause.literals)
    while rest and bindings:
        lit = next((lit for lit in rest if evaluator.ready(lit, bindings[0], clause)), rest[0])
        rest.remove(lit)
        bindings = [b for binding in bindings for b in evaluator.apply(lit, binding, clause)]
    counters = [i for i, arg in enumerate(clause.head.args) if is_counter(arg)]
    if len(counters) != sum(is_counter(n) for n in ast.walk_terms(*clause.head.args)):
        raise TypeError("autoinc() inside an expression: replay compiled")
    out = set()
    for binding in bindings:
        values = [0 if i in counters else evaluator.term(arg, binding, clause)
                  for i, arg in enumerate(clause.head.args)]
        if any(v is NONE for v in values):
            continue
        out.add(tuple(float(v) if kind == "float" else v
                      for v, kind in zip(values, relation.types)))
    if counters:  # autoinc(): rank in value order (Python's, for numbers and symbols)
        if any(kind not in ("number", "unsigned", "float", "symbol") for kind in relation.types):
            raise TypeError("autoinc() ranks record ids: replay compiled")
        out = {tuple(rank * clause.head.args[i].counter[0] + clause.head.args[i].counter[1]
                     if i in counters else v for i, v in enumerate(row))
               for rank, row in enumerate(sorted(out))}
    return out


__all__ = ["interpret"]
