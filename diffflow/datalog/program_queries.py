"""What :class:`~diffflow.datalog.program.Program` answers besides its relations: point
queries (magic sets), explanations of facts present and absent, and its rules as Soufflé
numbers them (a part of ``Program``, kept apart for size).

>>> import diffflow as dd
>>> p = dd.Program(".decl e(x: number)\\n.decl r(x: number)\\nr(x) :- e(x).", outputs=[])
>>> _ = p.insert("e", [(1,), (2,)]); p.commit(); p.query("r(2)")
[(2,)]
"""
from __future__ import annotations


class ProgramQueries:
    """The queries and explanations of a :class:`~diffflow.datalog.program.Program`."""

    # -- queries (see .query) ---------------------------------------------------------------
    def query(self, pattern: str, live: bool = False):
        """The facts of a relation that match ``pattern`` -- constants, variables and ``_``,
        as in a rule body -- as sorted tuples, as of the last commit.  A relation the program
        computes whole is filtered; any other (not among ``outputs``) is computed only as
        far as the constants demand (magic sets: for ``tc(30, y)``, the paths from 30).
        ``live=True`` returns a :class:`~diffflow.datalog.query.StandingQuery` kept current
        by every commit (``rows()``, ``changes()``, ``close()``).

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number, y: number)\\n.decl tc(x: number, y: number)\\n"
        ...             "tc(x, y) :- e(x, y).\\ntc(x, z) :- tc(x, y), e(y, z).", outputs=[])
        >>> _ = p.insert("e", [(1, 2), (2, 3), (4, 5)]); p.commit()
        >>> p.query("tc(1, y)"), p.query("tc(_, 5)")
        ([(1, 2), (1, 3)], [(4, 5)])
        """
        from diffflow.datalog.query import answer

        return answer(self, pattern, live)

    def _engine(self, relation: str, adornment: str):
        """The query engine of a relation and adornment, built on first use."""
        from diffflow.datalog.query import QueryEngine

        key = (relation, adornment)
        if key not in self._engines:  # (it shares the symbols even if the program re-plans)
            self._engines[key] = QueryEngine(self, relation, adornment)
        return self._engines[key]

    # -- explanations ---------------------------------------------------------------------------
    def explain(self, relation: str, fact):
        """Why ``fact`` is in ``relation``: an :class:`~diffflow.datalog.explain.derived.Explanation` with
        a proof tree of minimal height (``.tree``; ``print`` it for Soufflé's layout) and the
        input facts it rests on (``.inputs``), as of the last commit.  Needs a program built
        with ``provenance=True`` (or ``.pragma "provenance" "explain"``).

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number)\\n.decl r(x: number)\\nr(x + 1) :- e(x).",
        ...             provenance=True)
        >>> _ = p.insert("e", [(1,), (5,)]); p.commit()
        >>> p.explain("r", (2,)).inputs
        {'e': {(1,)}}
        """
        from diffflow.datalog.explain.derived import explain
        return explain(self, relation, fact)

    def watch(self, relation: str, facts):
        """Live explanations of ``facts`` of ``relation``, kept current by every
        :meth:`commit` (:class:`~diffflow.datalog.explain.watch.LiveExplanations`: index it by fact;
        ``changes()`` lists input facts entering and leaving each explanation).

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number)\\n.decl r(x: number)\\nr(x) :- e(x).",
        ...             provenance=True)
        >>> _ = p.insert("e", [(1,)]); p.commit()
        >>> live = p.watch("r", [(1,)]); _ = p.remove("e", [(1,)]); p.commit()
        >>> live.changes()
        [Change(target=(1,), input='e', row=(1,), diff=1), Change(target=(1,), input=None, row=None, diff=-1), Change(target=(1,), input='e', row=(1,), diff=-1)]
        """
        from diffflow.datalog.explain.watch import LiveExplanations

        return LiveExplanations(self, relation, facts)

    def explain_absent(self, relation: str, fact, rule: int | None = None,
                       bindings: dict | None = None):
        """Why ``fact`` is *not* in ``relation``: for each rule that could derive it, the
        body literal that fails (an :class:`~diffflow.datalog.explain.absent.Absence`; ``print`` it for
        Soufflé's ``explainnegation`` layout).  ``rule=`` with ``bindings=`` (a value for
        every body variable) marks each literal of that rule instead.

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number)\\n.decl r(x: number)\\nr(x) :- e(x), x > 1.")
        >>> _ = p.insert("e", [(1,)]); p.commit()
        >>> [c.failing for c in p.explain_absent("r", (1,)).checks]
        [['1 > 1']]
        """
        from diffflow.datalog.explain.absent import explain_absent
        from diffflow.datalog.explain.derived import ExplainError, target_fact

        fact = target_fact(self, relation, fact)
        if fact in self.relation(relation):
            raise ExplainError(f"{relation}{fact!r} is in {relation}: use explain() to see "
                               f"why it holds")
        return explain_absent(self, relation, fact, rule, bindings)

    def rules(self) -> dict:
        """``relation -> {rule number: rule text}``, numbered and written as in Soufflé's
        proofs (a relation's facts and rules from 1 in source order; a body literal a line).

        >>> import diffflow as dd
        >>> dd.Program(".decl e(x: number)\\ne(1).\\ne(x + 1) :- e(x), x < 5.").rules()
        {'e': {2: 'e((x+1)) :- \\n   e(x),\\n   x < 5.'}}
        """
        from diffflow.datalog.explain.rule_text import clause_text
        from diffflow.datalog.lower.provenance import rule_numbers

        numbered = {}
        for name, relation in self.relations.items():
            numbers = rule_numbers(relation)
            numbered[name] = {numbers[id(c)]: clause_text(c) for c in relation.clauses}
        return numbered

    def _replica(self, provenance: bool = False):
        """The same program, compiled afresh with no facts committed (the replay of
        :meth:`Explanation.check` and of the correction loop)."""
        return type(self)(self.source, filename=self.filename, provenance=provenance,
                          **self._text_options)
