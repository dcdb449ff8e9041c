"""Why is a fact *not* derived: for each rule that could derive it, the body literal that
fails (Soufflé's ``explainnegation``).

Two modes.  *Automatic* (the default): each rule's head is bound to the fact and its body is
evaluated literal by literal over the relations as of the last commit, in source order (a
literal waits until the variables it needs are bound); the first literal that no binding
survives is the reason, shown with the smallest binding that got that far.  *Chosen*, as in
Soufflé: ``rule=`` picks one rule and ``bindings=`` gives every body variable a value; each
literal is then marked ``✓`` (holds) or ``x`` (fails), and a negated atom is shown as
Soufflé shows it, by its relation alone: ``!r()``.  Neither needs provenance.

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
--------------------------------(R2)
           path("a","d")            
>>> print(p.explain_absent("path", ("a", "d"), rule=2, bindings={"y": "c"}))
edge("a", "c") x path("c", "d") x 
------------------------------(R2)
          path("a","d")           
"""
from __future__ import annotations

from dataclasses import dataclass, field

from diffflow.common.errors import ExplainError
from diffflow.datalog.explain.evaluate import BodyEvaluator, typed_value
from diffflow.datalog.explain.proof import Leaf, _Inner, format_value, show
from diffflow.datalog.lower.provenance import rule_numbers
from diffflow.datalog.syntax import ast

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
    rel = program.relations[relation]
    numbers = rule_numbers(rel)
    clauses = [c for c in rel.clauses if rule is None or numbers[id(c)] == rule]
    if rule is not None and not clauses:
        listed = ", ".join(str(n) for n in sorted(numbers.values())) or "none"
        raise ExplainError(f"{relation} has no rule {rule} (its rules: {listed}; a fact "
                           f"written in the text takes a number too but derives nothing else)")
    if bindings is not None and rule is None:
        raise ExplainError("bindings= goes with rule=: pick the rule the values are for")
    evaluator = RuleChecker(program)
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


class RuleChecker(BodyEvaluator):
    """A rule's body over the committed relations: every literal marked for chosen
    bindings, or the first literal that no binding survives."""

    def mark_all(self, clause, head, chosen) -> list:
        binding = dict(head)
        for name, value in chosen.items():
            binding[name] = typed_value(value, clause.var_types.get(name))
        needed = [v.name for lit in clause.literals
                  for v in ast.term_variables(*ast.literal_terms(lit))]
        missing = list(dict.fromkeys(v for v in needed if v not in binding))
        if missing:
            raise ExplainError(f"give a value for every body variable of the rule: missing "
                               f"{', '.join(missing)} (bindings={{...}})")
        return [(_chosen_text(lit, binding), HOLDS if self.holds(lit, binding, clause)
                 else FAILS) for lit in _in_proof_order(clause.literals)]

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


def _chosen_text(lit, binding) -> str:
    """A literal as Soufflé's ``explainnegation`` shows it: a negated atom by its relation
    alone, ``!neg()`` (Soufflé keeps no arguments of negations for it)."""
    if isinstance(lit, ast.Negation):
        return f"!{lit.atom.relation}()"
    return show(lit, binding)


def _in_proof_order(literals) -> list:
    """Atoms and negations in body order, then constraints, as Soufflé lists them;
    analysis' own equalities (``#e1 = x + 1``) are not the user's, so not listed."""
    constraints = [lit for lit in literals if isinstance(lit, ast.Comparison) and
                   not any(v.name.startswith("#")
                           for v in ast.term_variables(lit.left, lit.right))]
    return [lit for lit in literals if not isinstance(lit, ast.Comparison)] + constraints
