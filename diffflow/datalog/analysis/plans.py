"""``.plan`` clauses: checked as Soufflé checks them, then used to order a clause's joins.

In Soufflé, ``r(x) :- a(x), b(x). .plan 0: (2, 1)`` asks for the body atoms
to be joined in the order 2, 1 (1-based positions of the positive atoms of
the clause, after ``;`` is multiplied out).  A recursive clause is evaluated
in one *version* per body atom of its own stratum (version ``i`` reads the
new facts of the ``i``-th such atom), and ``.plan`` gives an order per version.

diffflow evaluates a clause as one incremental join pipeline in every round,
whichever input changed, so one order serves all versions: it uses version 0
(or the lowest version given).  The checks follow Soufflé:

* every order is a permutation of ``1..n`` for the ``n`` positive body atoms
  ("Invalid execution order in plan (expected n atoms, not m)" or
  "(incomplete)");
* a recursive clause with ``k`` atoms of its own stratum has versions
  ``0..k-1`` only; a non-recursive clause has version 0 only.  (Soufflé
  rejects any plan on a non-recursive clause, and versions before 2.4 ignored
  one; diffflow applies its version 0, which is what its author asked for.)

>>> from diffflow.datalog.syntax.parser import parse
>>> from diffflow.datalog.passes import analyse
>>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl p(x: number, y: number)\\n"
...                   "p(x, z) :- e(x, y), e(y, z). .plan 0: (2, 1)"))
>>> a.relations["p"].clauses[0].plan
[1, 0]
"""
from __future__ import annotations

from diffflow.datalog.syntax import ast


def check_plans(analyser, relations: dict, strata: list) -> None:
    """Validate every clause's ``.plan`` and set ``clause.plan`` (0-based atom order).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.passes import analyse
    >>> analyse(parse(".decl e(x: number)\\ne(x) :- e(x). .plan 0: (2)"))
    Traceback (most recent call last):
    ...
    diffflow.common.errors.DatalogError: <program>:2:24: error: Invalid execution order in plan (incomplete)
    ...
    """
    stratum_of = {name: i for i, s in enumerate(strata) for name in s.relations}
    for relation in relations.values():
        for clause in relation.clauses:
            if clause.rule.plan:
                _check_clause(analyser, clause, stratum_of)


def _check_clause(analyser, clause, stratum_of) -> None:
    atoms = [lit for lit in clause.literals if isinstance(lit, ast.Atom)]
    n = len(atoms)
    listing = ", ".join(f"{i + 1}: {a.relation}" for i, a in enumerate(atoms)) or "none"
    for item in clause.rule.plan:
        if len(item.order) != n:
            raise analyser.error(
                f"Invalid execution order in plan (expected {n} atoms, not {len(item.order)})",
                item, hint=f"the body atoms are {listing}; list each position once")
        if sorted(item.order) != list(range(1, n + 1)):
            raise analyser.error("Invalid execution order in plan (incomplete)", item,
                                 hint=f"the body atoms are {listing}; list each position once")
    head = stratum_of[clause.head.relation]
    recursive = sum(stratum_of[a.relation] == head for a in atoms)
    versions = max(recursive, 1)
    for item in clause.rule.plan:
        if item.version >= versions:
            allowed = "0" if versions == 1 else f"0..{versions - 1}"
            why = "a non-recursive clause has one version" if not recursive else \
                f"the clause has {recursive} atom(s) of its own stratum"
            raise analyser.error(f"execution plan for version {item.version}: only versions "
                                 f"{allowed} permitted", item, hint=why)
    chosen = min(reversed(clause.rule.plan), key=lambda item: item.version)  # last wins
    clause.plan = [p - 1 for p in chosen.order]
    clause.plan_version = chosen.version
