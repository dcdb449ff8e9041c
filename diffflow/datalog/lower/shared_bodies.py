"""Joins computed once: rules with the same body, and the same first joins of different
bodies, keyed up to the names of their variables.

Several heads on one body (``a(x, y), b(y, x) :- e(x, y), f(y).``) become clauses with
the same literals, and programs repeat bodies under other names; each would build its own
joins and arrangements.  :func:`body_key` names a clause's body up to a renaming of its
variables -- its literals with each variable renamed by first appearance, the collections
its atoms read, the variables' types and which of them the head needs -- so the compiler
builds the joins of a body once and gives the next clause the same rows under its own
variable names (:func:`renamed`).  Bodies with aggregates are not shared (an aggregate's
columns belong to its clause).

Different bodies often start alike (``r1(x, w) :- a(x, y), b(y, z), c(z, w).`` and
``r2(x, w) :- a(x, y), b(y, z), d(z, w).``): :func:`step_key` names each join of a
body's order by everything its rows depend on -- the previous step's key, the atom (its
relation's collection, constants and variables in canonical names, and what filters it
first) and the variables kept after it -- so the second rule reads the first one's
``a ⋈ b``.  See docs/DATALOG.md §1.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl r(x: number, y: number)\\n"
...                   "r(x, y), r(y, x) :- e(x, z), e(z, y).\\nr(a, b) :- e(a, c), e(c, b)."))
>>> env = {"e": type("C", (), {"node": type("N", (), {"id": 1})})}
>>> keys = [body_key(c, env, {v.name for v in c.head.args}) for c in a.relations["r"].clauses]
>>> keys[0] == keys[1] == keys[2]
True
"""
from __future__ import annotations

import copy

from diffflow.datalog.lower.columns import Frame, var_column
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.render import render_literal, render_term


def body_key(clause, env, needed) -> tuple | None:
    """The clause's body up to variable names (``None``: not shared)."""
    if clause.aggregates() or clause.plan is not None or not clause.literals:
        return None
    names: dict = {}
    literals = copy.deepcopy(clause.literals)
    reads = []
    for lit in literals:
        atom = lit.atom if isinstance(lit, ast.Negation) else lit
        if isinstance(atom, ast.Atom):
            collection = env.get(atom.relation)
            if collection is None:
                return None
            reads.append(collection.node.id)
        for node in ast.walk_terms(*ast.literal_terms(lit)):
            if isinstance(node, ast.Var):
                node.name = names.setdefault(node.name, f"#c{len(names)}")
    kinds = tuple(clause.var_types.get(v) for v in names)
    wanted = tuple(sorted(names[v] for v in needed if v in names))
    return tuple(render_literal(lit) for lit in literals), tuple(reads), kinds, wanted


def canonical_names(clause) -> dict:
    """Variable -> its canonical name in :func:`body_key` (first appearance)."""
    names: dict = {}
    for lit in clause.literals:
        for node in ast.walk_terms(*ast.literal_terms(lit)):
            if isinstance(node, ast.Var):
                names.setdefault(node.name, f"#c{len(names)}")
    return names


def renamed(frame: Frame, first: dict, this: dict) -> Frame:
    """``frame`` (built for the clause whose canonical names are ``first``) with its
    variables named as in the clause whose canonical names are ``this``."""
    back = {canon: var for var, canon in this.items()}
    variables = [back[first[v]] for v in frame.variables]
    columns = {var_column(new): var_column(old) for new, old in zip(variables, frame.variables)}
    return Frame(frame.collection.select(**columns) if columns else frame.collection, variables)


def atom_code(atom, env, canon: dict) -> tuple | None:
    """The atom as a key: its relation's collection and each argument -- a variable by its
    canonical name (``canon``: variable -> name, extended in order of appearance), a
    constant by its type and value; ``None`` when its relation has no collection.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> atom = parse("r() :- a(x, 1, x).").rules[0].body[0].literals[0]
    >>> env = {"a": type("C", (), {"node": type("N", (), {"id": 7})})}
    >>> atom_code(atom, env, {})
    (7, ('#c0', ('Number', '1'), '#c0'))
    """
    collection = env.get(atom.relation)
    if collection is None:
        return None
    args = []
    for arg in atom.args:
        if isinstance(arg, ast.Var):
            args.append(canon.setdefault(arg.name, f"#c{len(canon)}"))
        else:
            args.append((type(arg).__name__, render_term(arg)))
    return collection.node.id, tuple(args)


def step_key(previous, parts, kept, canon: dict) -> tuple | None:
    """The key of one join step: ``previous`` step's key, the codes of ``parts`` (the atom
    and what filters it, :func:`atom_code`) and the canonical names of the variables
    ``kept`` after it (``None`` when a part has no key)."""
    if previous is None or any(p is None for p in parts):
        return None
    return previous, tuple(parts), tuple(sorted(canon[v] for v in kept))
