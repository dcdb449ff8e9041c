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
change whose ``relation`` is ``None``.

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
[Change(target=(1, 4), relation='edge', fact=(1, 2), diff=-1), Change(target=(1, 4), relation='edge', fact=(1, 3), diff=1), Change(target=(1, 4), relation='edge', fact=(2, 3), diff=-1)]
>>> _ = p.remove("edge", [(3, 4)]); p.commit()      # no proof at all
>>> live.changes()[0], live[(1, 4)]
(Change(target=(1, 4), relation=None, fact=None, diff=-1), None)
"""
from __future__ import annotations

from typing import NamedTuple


class Change(NamedTuple):
    """An input fact entering (``diff`` +1) or leaving (-1) the explanation of ``target``;
    ``relation`` ``None``: the target itself stopped (-1) or started (+1) being derived."""
    target: tuple
    relation: str | None
    fact: tuple | None
    diff: int


class LiveExplanations:
    """The explanations of watched facts, kept current by every commit (see module doc).
    Index it by fact: an :class:`~diffflow.datalog.explain.derived.Explanation`, or ``None`` while the
    fact is not derived."""

    def __init__(self, program, relation: str, facts):
        from diffflow.datalog.explain.derived import _provenance_of, _target

        _provenance_of(program)
        self.program, self.relation = program, relation
        self.targets = list(dict.fromkeys(_target(program, relation, f) for f in facts))
        self.held: dict = {}             # requests in the flow, item -> True
        self.current: dict = {t: None for t in self.targets}
        self.commits = 0                 # engine commits the watch itself took
        self._changes: list = []
        self._closed = False
        self.refresh(initial=True)
        program._watches.append(self)

    def __getitem__(self, fact):
        key = tuple(fact) if isinstance(fact, (tuple, list)) else (fact,)
        if key not in self.current:
            from diffflow.datalog.explain.derived import ExplainError
            raise ExplainError(f"{key!r} is not watched here: watch it first (watched: "
                               f"{sorted(self.current)[:5]})")
        return self.current[key]

    def __iter__(self):
        return iter(self.targets)

    def refresh(self, initial: bool = False) -> None:
        """Read every proof again (after a commit; :class:`Program` calls it)."""
        from diffflow.datalog.explain.correct import correct, needs_correction
        from diffflow.datalog.explain.derived import Explanation, _leaves, _Search, _shaped, prove

        program = self.program
        search = _Search(program, program._compiled, self.held)
        shaped = needs_correction(program.analysed)
        for target in self.targets:
            root = search.run(self.relation, target)
            before = self.current[target]
            if root is None:
                self.current[target] = None
            else:
                inputs, rounds = _leaves(root), 0
                if shaped and _shaped(root):
                    inputs, rounds = correct(program, prove, self.relation, target, root,
                                             inputs)
                self.current[target] = Explanation(self.relation, target, root, inputs,
                                                   program, search.commits, rounds)
            self._record(target, before, self.current[target], initial)
        self.commits += search.commits
        self._release({item for item in self.held if item not in search.done})

    def _record(self, target, before, after, initial: bool) -> None:
        old = before.inputs if before is not None else {}
        new = after.inputs if after is not None else {}
        if (before is None) != (after is None) and not initial:
            self._changes.append(Change(target, None, None, 1 if after is not None else -1))
        for relation in sorted(set(old) | set(new)):
            was, now = old.get(relation, set()), new.get(relation, set())
            for fact in sorted(was ^ now):
                self._changes.append(Change(target, relation, fact, 1 if fact in now else -1))

    def _release(self, items) -> None:
        """Take back requests no proof uses; they leave the flow with the next commit."""
        from diffflow.datalog.explain.derived import _request

        removed: dict = {}
        for item in items:
            del self.held[item]
            request, row = _request(self.program._compiled, item)
            removed.setdefault(request, []).append(row)
        for request, rows in removed.items():
            request.remove(rows)

    def changes(self) -> list:
        """:class:`Change` s since the previous call (the first call: since the watch began,
        so it lists the first explanations' facts), by target, then relation and fact."""
        out, self._changes = self._changes, []
        return out

    def close(self) -> None:
        """Stop watching: the requests leave the flow with the next commit."""
        if not self._closed:
            self._closed = True
            self._release(list(self.held))
            self.program._watches.remove(self)
