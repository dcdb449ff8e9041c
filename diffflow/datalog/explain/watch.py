"""Live explanations: watched facts whose explanations the engine keeps current as facts
are inserted and removed.

``program.watch(relation, facts)`` explains each fact and leaves the proof's requests in the
flow (:mod:`~diffflow.datalog.lower.provenance`: request inputs, witness and group queries).  From then on the
witness queries are ordinary collections: every :meth:`Program.commit` updates them by the
change alone, and the watch reads its proofs again from them.  A proof that did not change
costs no engine work; a proof that did asks only for its new facts, one commit per new
level.  Requests no proof uses any more are taken back with the next commit.  (Programs
whose proofs go through negation of a relation that negation shapes -- see
:mod:`.correct` -- also replay the program on the explanation, from scratch.)

:meth:`LiveExplanations.changes` lists the input facts that entered and left each
explanation since the last call; a watched fact that stops being derived says so with a
change whose ``relation`` is ``None``.  The explanations of collection outputs keep theirs
current the same way and report the same :class:`~diffflow.explain.vocabulary.Change` s
(:mod:`diffflow.explain.vocabulary`).

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl edge(x: number, y: number)
... .decl path(x: number, y: number)
... path(x, y) :- edge(x, y).
... path(x, z) :- edge(x, y), path(y, z).''', provenance=True)
>>> _ = p.insert("edge", [(1, 2), (2, 3), (3, 4)]); p.commit()
>>> live = p.watch("path", [(1, 4)])
>>> sorted(live[(1, 4)].inputs["edge"]), [c.fact for c in live.changes()]
([(1, 2), (2, 3), (3, 4)], [(1, 2), (2, 3), (3, 4)])
>>> _ = p.insert("edge", [(1, 3)]); p.commit()      # a shorter proof
>>> live.changes()
[Change(target=(1, 4), input='edge', row=(1, 2), diff=-1), Change(target=(1, 4), input='edge', row=(1, 3), diff=1), Change(target=(1, 4), input='edge', row=(2, 3), diff=-1)]
>>> _ = p.remove("edge", [(3, 4)]); p.commit()      # no proof at all
>>> live.changes()[0], live[(1, 4)]
(Change(target=(1, 4), input=None, row=None, diff=-1), None)
"""
from __future__ import annotations

from diffflow.common.errors import ExplainError
from diffflow.datalog.explain.correct import correct, needs_correction
from diffflow.datalog.explain.derived import (Explanation, ProofSearch, input_leaves, prove,
                                              request_of, require_provenance, rests_on_negation,
                                              target_fact)
from diffflow.explain import vocabulary

Change = vocabulary.Change  # what changes() lists: ``relation`` and ``fact`` name its fields

__all__ = ["Change", "LiveExplanations"]


class LiveExplanations(vocabulary.LiveExplanations):
    """The explanations of watched facts, kept current by every commit (see module doc).
    Index it by fact: an :class:`~diffflow.datalog.explain.derived.Explanation`, or ``None``
    while the fact is not derived."""

    def __init__(self, program, relation: str, facts):
        super().__init__()
        require_provenance(program)
        self.program, self.relation = program, relation
        self.targets = list(dict.fromkeys(target_fact(program, relation, f) for f in facts))
        self.held: dict = {}             # requests in the flow, item -> True
        self.current = {t: None for t in self.targets}
        self.commits = 0                 # engine commits the watch itself took
        self._closed = False
        self.refresh(initial=True)
        program._watches.append(self)

    def __getitem__(self, fact):
        key = self.key(fact)
        if key not in self.current:
            raise ExplainError(f"{key!r} is not watched here: watch it first (watched: "
                               f"{sorted(self.current)[:5]})")
        return self.current[key]

    def __iter__(self):
        return iter(self.targets)

    def refresh(self, initial: bool = False) -> None:
        """Read every proof again (after a commit; :class:`Program` calls it)."""
        program = self.program
        search = ProofSearch(program, program._compiled, self.held)
        shaped = needs_correction(program.analysed)
        for target in self.targets:
            root = search.run(self.relation, target)
            before = self.current[target]
            if root is None:
                self.current[target] = None
            else:
                inputs, rounds = input_leaves(root), 0
                if shaped and rests_on_negation(root):
                    inputs, rounds = correct(program, prove, self.relation, target, root,
                                             inputs)
                self.current[target] = Explanation(self.relation, target, root, inputs,
                                                   program, search.commits, rounds)
            self.record(target, before, self.current[target], initial)
        self.commits += search.commits
        self._release({item for item in self.held if item not in search.done})

    def _release(self, items) -> None:
        """Take back requests no proof uses; they leave the flow with the next commit."""
        removed: dict = {}
        for item in items:
            del self.held[item]
            request, row = request_of(self.program._compiled, item)
            removed.setdefault(request, []).append(row)
        for request, rows in removed.items():
            request.remove(rows)

    def close(self) -> None:
        """Stop watching: the requests leave the flow with the next commit."""
        if not self._closed:
            self._closed = True
            self._release(list(self.held))
            self.program._watches.remove(self)
