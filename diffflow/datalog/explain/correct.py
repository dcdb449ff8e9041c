"""Replay and correct (``docs/EXPLAIN.md`` §5): make an explanation reproduce its fact through
nested negation and aggregates over non-monotone relations.

The input leaves of a proof reproduce its fact when everything the proof rests on is
monotone.  With ``Q :- A, !N.  N :- B, !D.``, a replay on the leaves can derive a *spurious*
``N`` -- one the full input does not derive, because a ``D`` fact outside the explanation
blocks it -- and lose ``Q``.  The loop replays the program on the explanation, walks the
reference proof down to what the replay lost, and for every spurious fact found there walks
the replay's own proof of it down to the literal that the full input falsifies; the facts
that falsify it are explained too (their proofs join the explanation).  Each round adds input
facts; a round that cannot add any (never seen in tests) falls back to the whole input, which
reproduces everything.

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl a(x: number)
... .decl b(x: number)
... .decl d(x: number)
... .decl n(x: number)
... .decl q(x: number)
... n(x) :- b(x), !d(x).
... q(x) :- a(x), b(x), !n(x).''', provenance=True)
>>> _ = p.insert("a", [(1,)]); _ = p.insert("b", [(1,)]); _ = p.insert("d", [(1,)])
>>> p.commit()
>>> ex = p.explain("q", (1,))
>>> sorted(ex.inputs), ex.rounds   # a(1), b(1) alone derive n(1); d(1) blocks it
(['a', 'b', 'd'], 2)
>>> ex.check()
"""
from __future__ import annotations

from diffflow.datalog.explain.interpret import interpret
from diffflow.datalog.explain.proof import GroupNode, Leaf, ProofTree
from diffflow.datalog.syntax import ast
from diffflow.explain.vocabulary import replay_and_correct


def needs_correction(analysed) -> bool:
    """Whether some negation or aggregate reads a non-monotone relation: one that a negation
    or an aggregate shapes, directly or through the relations it is derived from.  Only then
    can a replay on a proof's input leaves diverge from the full run."""
    shaped: set = set()
    grew = True
    while grew:  # to a fixpoint: recursion can shape a relation through itself
        grew = False
        for name, relation in analysed.relations.items():
            if name not in shaped and any(
                    _is_shaping(lit) or isinstance(lit, ast.Atom) and lit.relation in shaped
                    for clause in relation.clauses for lit in clause.literals):
                shaped.add(name)
                grew = True
    return any(_reads(lit) & shaped
               for relation in analysed.relations.values()
               for clause in relation.clauses for lit in clause.literals
               if _is_shaping(lit))


def _is_shaping(lit) -> bool:
    return isinstance(lit, ast.Negation) or \
        isinstance(lit, ast.Comparison) and bool(ast.term_aggregates(lit.left, lit.right))


def _reads(lit) -> set:
    """Relations a negation or an aggregate reads."""
    if isinstance(lit, ast.Negation):
        return {lit.atom.relation}
    names = set()
    for node in ast.walk_terms(lit.left, lit.right, aggregates=True):
        if isinstance(node, (ast.Atom, ast.Negation)):
            names.add((node.atom if isinstance(node, ast.Negation) else node).relation)
    return names


def correct(program, prove, relation: str, fact: tuple, tree, inputs: dict):
    """Grow ``inputs`` until a replay on them derives ``relation(fact)``; returns the inputs
    and the number of replays.  ``prove(program, relation, fact)`` gives a proof tree."""
    proofs = {(relation, fact): tree}

    def grow(replayed) -> bool:
        wanted: set = set()
        replayed.missing(tree, wanted, proofs)
        grown = False
        for rel, f in sorted(wanted - set(proofs)):
            proofs[(rel, f)] = sub = prove(program, rel, f)
            for node in sub.nodes():
                if node.rule is None and node.fact not in inputs.get(node.relation, set()):
                    inputs.setdefault(node.relation, set()).add(node.fact)
                    grown = True
        return grown

    reproduced, rounds = replay_and_correct(lambda: _Replay(program, inputs, prove),
                                            lambda replayed: fact in replayed.facts(relation),
                                            grow)
    if reproduced:
        return inputs, rounds
    everything = {name: set(program.relation(name)) for name in program._compiled.inputs}
    return {name: facts for name, facts in everything.items() if facts}, rounds


class _Replay:
    """The program on the explanation's inputs alone, compared with the full run (and with
    provenance, when a spurious fact's own derivation has to be read)."""

    def __init__(self, program, inputs, prove):
        self.program, self.prove = program, prove
        self.inputs = inputs
        # most replays only confirm: evaluated in Python over the few facts, or compiled
        self.interpreted = interpret(program, inputs)
        self.run = replay(program, inputs) if self.interpreted is None else None
        self.proving = None                  # with provenance, once a proof is needed
        self.cache: dict = {}

    def facts(self, relation) -> set:
        key = ("replay", relation)
        if key not in self.cache:
            self.cache[key] = self.interpreted[relation] if self.run is None \
                else self.run.relation(relation)
        return self.cache[key]

    def reference(self, relation) -> set:
        key = ("reference", relation)
        if key not in self.cache:
            self.cache[key] = self.program.relation(relation)
        return self.cache[key]

    def missing(self, node, wanted: set, proofs: dict, seen=None) -> None:
        """``node`` (a reference proof) does not hold in the replay: find why, under it."""
        seen = set() if seen is None else seen
        if id(node) in seen:
            return
        seen.add(id(node))
        for child in node.children:
            if isinstance(child, ProofTree):
                if child.fact not in self.facts(child.relation):
                    self.missing(child, wanted, proofs, seen)
            elif isinstance(child, GroupNode):
                self.missing(child, wanted, proofs, seen)
                for rel, pattern in child.patterns:
                    self.agree(rel, pattern, wanted, proofs, seen)
            elif isinstance(child, Leaf) and child.negated is not None:
                self.agree(*child.negated, wanted, proofs, seen)

    def agree(self, relation, pattern, wanted, proofs, seen) -> None:
        """Make the replay agree with the full run on the facts matching ``pattern``
        (``None`` matches anything): explain the reference's that the replay lacks, block
        the replay's that the reference lacks."""
        for f in _matching(self.reference(relation) - self.facts(relation), pattern):
            if (relation, f) in proofs:
                self.missing(proofs[(relation, f)], wanted, proofs, seen)
            else:
                wanted.add((relation, f))
        for f in _matching(self.facts(relation) - self.reference(relation), pattern):
            self.block(relation, f, wanted, proofs, seen)

    def block(self, relation, fact, wanted, proofs, seen) -> None:
        """``relation(fact)`` holds in the replay only: follow one replay derivation of it
        down to a literal the full run falsifies."""
        key = ("blocked", relation, fact)
        if key in self.cache:
            return
        self.cache[key] = True
        if self.proving is None:
            self.proving = replay(self.program, self.inputs, provenance=True)
        node = self.prove(self.proving, relation, fact)
        while True:
            spurious = [c for c in node.children if isinstance(c, ProofTree)
                        and c.fact not in self.reference(c.relation)]
            if not spurious:
                break
            node = spurious[0]
        for child in node.children:
            if isinstance(child, Leaf) and child.negated is not None:
                self.agree(*child.negated, wanted, proofs, seen)
            elif isinstance(child, GroupNode):
                for rel, pattern in child.patterns:
                    self.agree(rel, pattern, wanted, proofs, seen)


def _matching(facts, pattern) -> list:
    return sorted(f for f in facts
                  if all(p is None or p == v for p, v in zip(pattern, f)))


def replay(program, inputs: dict, provenance: bool = False):
    """A fresh copy of ``program`` with only ``inputs`` committed (facts written in the
    program text count as input: those not in ``inputs`` are left out)."""
    run = program._replica(provenance=provenance)
    for name, relation in run.relations.items():
        if relation.facts:
            text = [tuple(a.value for a in rule.head.args) for rule in relation.facts]
            keep = inputs.get(name, set())
            run.remove(name, [f for f in text if f not in keep])
    for name, facts in inputs.items():
        run.insert(name, sorted(facts))
    run.commit()
    return run
