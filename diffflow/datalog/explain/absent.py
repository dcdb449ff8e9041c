"""Why is a fact *not* derived: for each rule that could derive it, the body literal that
fails (Soufflé's ``explainnegation``).

Two modes.  *Automatic* (the default): each rule's head is bound to the fact and its body is
evaluated literal by literal over the relations as of the last commit, in source order (a
literal waits until the variables it needs are bound); the first literal that no binding
survives is the reason, shown with the smallest binding that got that far.  *Chosen*, as in
Soufflé: ``rule=`` picks one rule and ``bindings=`` gives every body variable a value; each
literal is then marked ``✓`` (holds) or ``x`` (fails).  Neither needs provenance.

This is a diagnostic on one fact: it reads the relations a rule mentions (once per call) and
evaluates in Python, like an interactive query, not on the engine's incremental path.

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl edge(x: symbol, y: symbol)
... .decl path(x: symbol, y: symbol)
... path(x, y) :- edge(x, y).
... path(x, z) :- edge(x, y), path(y, z).''')
>>> _ = p.insert("edge", [("a", "b"), ("b", "c")]); p.commit()
>>> print(p.explain_absent("path", ("a", "d")))
edge("a", "d") x 
-------------(R1)
  path("a","d")  
<BLANKLINE>
edge("a", "b") ✓ path("b", "d") x 
------------------------------(R2)
          path("a","d")           
>>> print(p.explain_absent("path", ("a", "d"), rule=2, bindings={"y": "c"}))
edge("a", "c") x path("c", "d") x 
------------------------------(R2)
          path("a","d")           
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from diffflow.datalog.syntax import ast
from diffflow.datalog.values import structures
from diffflow.datalog.transform.constants import arithmetic, compare, functor, wrap
from diffflow.datalog.values.functors import GENERATORS
from diffflow.datalog.values.generators import range_values
from diffflow.datalog.explain.proof import Leaf, _Inner, format_value, show

HOLDS, FAILS, UNKNOWN = "✓", "x", "?"


@dataclass(eq=False)
class RuleCheck(_Inner):
    """One rule's verdict: its body literals with their values and marks (``✓`` holds,
    ``x`` fails, ``?`` not evaluated), printed like Soufflé's ``explainnegation``."""
    relation: str
    fact: tuple
    rule: int
    literals: list          # (text, mark)
    note: str = ""          # why the rule cannot apply at all (its head does not match)

    @property
    def text(self) -> str:
        return f"{self.relation}({','.join(format_value(v) for v in self.fact)})"

    @property
    def label(self) -> str:
        return f"(R{self.rule})"

    @property
    def children(self) -> list:
        if self.note:
            return [Leaf(self.note)]
        return [Leaf(f"{text} {mark}") for text, mark in self.literals]

    @property
    def failing(self) -> list:
        """The texts of the literals that fail."""
        return [text for text, mark in self.literals if mark == FAILS]


@dataclass
class Absence:
    """Why ``relation(fact)`` is not derived: one :class:`RuleCheck` per rule (none when the
    relation has no rules: the fact would have to be an input)."""
    relation: str
    fact: tuple
    checks: list = field(default_factory=list)

    def __str__(self) -> str:
        if not self.checks:
            return (f"{self.relation}({', '.join(format_value(v) for v in self.fact)}) is not "
                    f"derived: {self.relation} has no rules, so the tuple would be an input "
                    f"fact")
        return "\n\n".join(str(check) for check in self.checks)


def explain_absent(program, relation: str, fact: tuple, rule: int | None = None,
                   bindings: dict | None = None) -> Absence:
    """The :class:`Absence` of a fact the program does not derive (see module doc); the
    caller has checked the relation and the fact's arity and types."""
    from diffflow.datalog.explain.derived import ExplainError
    from diffflow.datalog.lower.provenance import rule_numbers

    rel = program.relations[relation]
    numbers = rule_numbers(rel)
    clauses = [c for c in rel.clauses if rule is None or numbers[id(c)] == rule]
    if rule is not None and not clauses:
        listed = ", ".join(str(n) for n in sorted(numbers.values())) or "none"
        raise ExplainError(f"{relation} has no rule {rule} (its rules: {listed}; a fact "
                           f"written in the text takes a number too but derives nothing else)")
    if bindings is not None and rule is None:
        raise ExplainError("bindings= goes with rule=: pick the rule the values are for")
    evaluator = _Evaluator(program)
    checks = []
    for clause in clauses:
        head = evaluator.bind_head(clause, fact)
        number = numbers[id(clause)]
        if head is None:
            checks.append(RuleCheck(relation, fact, number, [],
                                    "the rule's head cannot take these values"))
        elif bindings is not None:
            checks.append(RuleCheck(relation, fact, number,
                                    evaluator.mark_all(clause, head, bindings)))
        else:
            checks.append(RuleCheck(relation, fact, number, evaluator.first_failing(clause, head)))
    return Absence(relation, fact, checks)


class _Evaluator:
    """Clause bodies over the committed relations, binding by binding."""

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

    def mark_all(self, clause, head, chosen) -> list:
        from diffflow.datalog.explain.derived import ExplainError
        binding = dict(head)
        for name, value in chosen.items():
            binding[name] = _typed(value, clause.var_types.get(name))
        needed = [v.name for lit in clause.literals
                  for v in ast.term_variables(*ast.literal_terms(lit))]
        missing = list(dict.fromkeys(v for v in needed if v not in binding))
        if missing:
            raise ExplainError(f"give a value for every body variable of the rule: missing "
                               f"{', '.join(missing)} (bindings={{...}})")
        return [(show(lit, binding), HOLDS if self.holds(lit, binding, clause) else FAILS)
                for lit in _in_proof_order(clause.literals)]

    def first_failing(self, clause, head) -> list:
        bindings, done = [head], []
        rest = [lit for lit in clause.literals]
        failed = None
        while rest:
            lit = next((lit for lit in rest if self.ready(lit, bindings[0], clause)), rest[0])
            rest.remove(lit)
            survivors = [b for binding in bindings for b in self.apply(lit, binding, clause)]
            if not survivors:
                failed = lit
                break
            bindings = survivors
            done.append(lit)
        example = min(bindings, key=lambda b: sorted((k, repr(v)) for k, v in b.items()))
        marks = []
        for lit in _in_proof_order(clause.literals):
            if lit is failed:
                mark = FAILS
            elif any(lit is d for d in done):
                mark = HOLDS
            else:
                mark = UNKNOWN
            marks.append((show(lit, example), mark))
        if failed is None:  # the head's expressions are what fail
            marks.append((f"head {show(clause.head, example)}", FAILS))
        return marks

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
            if value is not _NONE:
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
        if _NONE in args:
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
        if left is _NONE or right is _NONE:
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
        """A term's value with Soufflé's arithmetic (:func:`~diffflow.datalog.transform.constants.arithmetic`)."""
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
            return value if value is _NONE else wrap(-value, kind)
        if isinstance(node, ast.Functor):
            args = [self.term(a, binding, clause) for a in node.args]
            if any(a is _NONE for a in args):
                return _NONE
            return functor(node, args, kind, [clause.term_types.get(id(a)) for a in node.args])
        a, b = self.term(node.left, binding, clause), self.term(node.right, binding, clause)
        if a is _NONE or b is _NONE:
            return _NONE
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
            return _NONE
        if agg.function == "mean":
            return math.fsum(float(v) for v in values) / len(values)
        return min(values) if agg.function == "min" else max(values)


_NONE = object()  # min or max of no members: no value


def _typed(value, kind):
    if isinstance(value, str) and kind in ("number", "unsigned"):
        return int(value)
    if isinstance(value, str) and kind == "float":
        return float(value)
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def _in_proof_order(literals) -> list:
    """Atoms and negations in body order, then constraints, as Soufflé lists them;
    analysis' own equalities (``#e1 = x + 1``) are not the user's, so not listed."""
    constraints = [lit for lit in literals if isinstance(lit, ast.Comparison) and
                   not any(v.name.startswith("#")
                           for v in ast.term_variables(lit.left, lit.right))]
    return [lit for lit in literals if not isinstance(lit, ast.Comparison)] + constraints
