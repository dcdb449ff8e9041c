"""``autoinc()``: numbers for a rule's rows that stay exact under updates.

Soufflé's ``autoinc()`` gives the next value of a global counter each time a
rule fires, so its numbers depend on evaluation order.  diffflow gives it a
meaning that does not: a rule ``r(x, autoinc()) :- body.`` numbers its
distinct head rows (the other arguments) by their rank in value order
(attributes in order; numbers by value, symbols by text), so an incremental
run always equals a fresh one.  With ``k`` uses in the program (use ``j``
counted from 0 in the program's order), a row of rank ``i`` gets ``i * k +
j``: numbers are unique across the program, and a program with one use
numbers its rows 0, 1, 2, ... as Soufflé's counter does.

Under updates a new row shifts the numbers of the rows after it (each
changed number is one removed and one added row); the ranking is a reduce
over the rule's whole result, so a change costs that result's size.

``autoinc()`` is a head argument of a rule with a body (a fact with it is an
error, as in Soufflé; write ``r(autoinc()) :- true.``), or part of one:
``r(x, autoinc() * 2 + 1)`` numbers the rows of the other arguments and of
that expression's variables, then computes the expression.  As in Soufflé, it
is not in a recursive rule; unlike Soufflé (a kept difference), not in a body,
since a body has no rows to number.

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl name(n: symbol)
... .decl numbered(n: symbol, i: number)
... numbered(n, autoinc()) :- name(n).''')
>>> _ = p.insert("name", [("b",), ("a",), ("c",)]); p.commit()
>>> sorted(p.relation("numbered"))
[('a', 0), ('b', 1), ('c', 2)]
"""
from __future__ import annotations

import dataclasses

from diffflow.datalog.analysis.aggregate_scopes import copy_term
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import is_counter


def number_counters(analyser, relations: dict, strata: list, inline=()) -> None:
    """Check every ``autoinc()`` and give each its ``(stride, offset)`` (in place);
    ``inline``: the relations to be unfolded, which cannot number rows."""
    recursive = {name for s in strata if s.recursive for name in s.relations}
    uses, seen = [], set()
    for relation in relations.values():
        for clause in relation.clauses + relation.dominated:
            args = list(clause.head.args)
            for i, arg in enumerate(args):
                nodes = [n for n in ast.walk_terms(arg) if is_counter(n)]
                if any(id(n) in seen for n in nodes):  # (a rule's alternatives after ';'
                    args[i] = copy_term(arg)             # share its head: a use each)
                    clause.head = dataclasses.replace(clause.head, args=args)
                seen.update(id(n) for n in ast.walk_terms(args[i]) if is_counter(n))
            for lit in clause.literals:
                for node in ast.walk_terms(*ast.literal_terms(lit), aggregates=True):
                    if is_counter(node):
                        raise _misplaced(analyser, node)
            for arg in clause.head.args:
                inside = [n for n in ast.walk_terms(arg, aggregates=True)
                          if is_counter(n) and not any(n is m for m in ast.walk_terms(arg))]
                if inside:
                    raise _misplaced(analyser, inside[0], "inside an aggregate")
                nodes = [n for n in ast.walk_terms(arg) if is_counter(n)]
                if nodes and ast.term_aggregates(arg):
                    raise analyser.error("autoinc() and an aggregate in one head argument are "
                                         "not supported", nodes[0], hint="assign the "
                                         "aggregate to a variable in the body first")
                for node in nodes:
                    if relation.name in inline:
                        raise analyser.error(f"autoinc() in a rule of inline relation "
                                             f"{relation.name!r}", node, hint="remove 'inline'")
                    if relation.name in recursive:
                        raise analyser.error("autoinc() in a recursive rule: its numbers "
                                             "would feed the rows they number", node,
                                             hint="number the rows in a relation computed "
                                                  "after the recursion")
                    uses.append(node)
    uses.sort(key=lambda n: (n.line, n.column))
    for offset, node in enumerate(uses):
        node.counter = (len(uses), offset)


def _misplaced(analyser, node, where="in its body"):
    """A located error for an ``autoinc()`` that is not a whole head argument (a kept
    difference from Soufflé, whose global counter can be read anywhere)."""
    return analyser.error(f"autoinc() must be in a rule's head, not {where}: diffflow "
                          f"numbers a rule's rows by their value order, so that updates stay "
                          f"exact (Soufflé reads a global counter wherever autoinc() is "
                          f"evaluated)", node,
                          hint="number the rows in the head: r(x, autoinc()) :- body.")
