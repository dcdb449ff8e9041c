"""Subtypes: a head's variable must have a subtype of its attribute's type, as in Soufflé.

Soufflé types a variable by the positive body atoms it appears in (the
greatest type below all their attributes' types) and requires each head
argument's type to be a subtype of the head attribute's: with ``.type
Celsius <: number``, ``hot(t) :- reading(t)`` for ``reading(t: number)`` and
``hot(t: Celsius)`` is an error, since a number need not be a Celsius.
Constants and computed values (``t + 1``, ``cat(...)``, ``as(t, Celsius)``)
are of any type of their kind, so only a head argument that is a variable is
checked, and only where its type is known without doubt: a variable inside a
record or ADT value, or only in negations and aggregates, is left alone (its
base type is checked by :mod:`.clauses` all the same).

The subtype order: ``.type A <: B`` makes A a subtype of B; ``.type U = A | B``
has A and B below it, and is below what both are below; ``.type A = B``
(an alias) is B.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> analyse(parse(".type C <: number\\n.decl r(t: number)\\n.decl hot(t: C)\\n"
...               "hot(t) :- r(t)."))
Traceback (most recent call last):
...
diffflow.common.errors.DatalogError: <program>:4:5: error: 't' is of type number here (from r at line 4), which is not a subtype of C, the type of attribute 't' of hot
...
"""
from __future__ import annotations

from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import BASE_TYPES


class SubtypeOrder:
    """The subtype order of a program's ``.type`` declarations.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> order = SubtypeOrder(parse(".type A <: symbol\\n.type B <: A\\n.type U = B | C\\n"
    ...                            ".type C <: symbol").types)
    >>> order.below("B", "A"), order.below("A", "B"), order.below("U", "symbol")
    (True, False, True)
    >>> order.meet(["A", "B", "U"]), order.meet(["B", "C"])
    ('B', None)
    """

    def __init__(self, declarations: list):
        self.parent: dict = {}   # subtype -> its base
        self.members: dict = {}  # union or alias -> its members
        self.own: set = set()    # record and ADT types
        for t in declarations:
            if t.base in ("record", "adt") and not t.alternatives:
                self.own.add(t.name)
            elif t.alternatives:
                self.members[t.name] = list(t.alternatives)
            else:
                self.parent[t.name] = t.base

    def known(self, name: str) -> bool:
        return name in BASE_TYPES or name in self.parent or name in self.members or \
            name in self.own

    def below(self, low: str, high: str, depth: int = 0) -> bool:
        """Whether ``low`` is a subtype of ``high`` (each a subtype of itself)."""
        if depth > 64:  # (a cycle: reported by type resolution)
            return False
        if low in self.members:
            return all(self.below(m, high, depth + 1) for m in self.members[low])
        if low == high:
            return True
        if high in self.members and any(self.below(low, m, depth + 1)
                                        for m in self.members[high]):
            return True
        return low in self.parent and self.below(self.parent[low], high, depth + 1)

    def meet(self, names: list):
        """The one of ``names`` below all others, or None."""
        return next((n for n in names if all(self.below(n, m) for m in names)), None)


def check_subtypes(analyser) -> None:
    """Every clause's head variables against their attributes' types (see the module)."""
    order = SubtypeOrder(analyser.program.types)
    if not (order.parent or order.members):  # only base, record and ADT types: nothing to do
        return
    for relation in analyser.relations.values():
        for clause in relation.clauses + relation.dominated:
            _check_clause(analyser, order, clause)


def _check_clause(analyser, order: SubtypeOrder, clause) -> None:
    relations = analyser.relations
    seen: dict = {}      # variable -> [(type, atom)] of the positive atoms it is in
    unsure: set = set()  # variables inside a record or an ADT value
    same: dict = {}      # variable -> the variable it is equal to (x = y)

    def find(name):
        while name in same:
            name = same[name]
        return name

    for lit in clause.literals:
        if isinstance(lit, ast.Atom) and lit.relation in relations:
            declaration = relations[lit.relation].declaration
            for arg, attribute in zip(lit.args, declaration.attributes):
                if isinstance(arg, ast.Var):
                    seen.setdefault(arg.name, []).append((attribute.type, lit))
        if isinstance(lit, ast.Comparison) and lit.op == "=" and \
                isinstance(lit.left, ast.Var) and isinstance(lit.right, ast.Var):
            left, right = find(lit.left.name), find(lit.right.name)
            if left != right:
                same[left] = right
        for term in ast.walk_terms(*ast.literal_terms(lit)):
            if isinstance(term, (ast.RecordTerm, ast.BranchTerm)):
                unsure.update(v.name for v in ast.walk_terms(*term.args)
                              if isinstance(v, ast.Var))
    groups: dict = {}
    for name, uses in seen.items():
        groups.setdefault(find(name), []).extend(uses)
    unsure = {find(name) for name in unsure}
    head = relations[clause.head.relation].declaration
    for arg, attribute in zip(clause.head.args, head.attributes):
        if not isinstance(arg, ast.Var) or find(arg.name) in unsure:
            continue
        uses = groups.get(find(arg.name))
        if not uses or not order.known(attribute.type) or \
                not all(order.known(t) for t, _ in uses):
            continue
        kind = order.meet([t for t, _ in uses])
        if kind is None or order.below(kind, attribute.type) or \
                (kind in order.own and order.below(attribute.type, kind)):
            continue
        atom = next(a for t, a in uses if t == kind)
        raise analyser.error(
            f"{arg.name!r} is of type {kind} here (from {atom.relation} at line {atom.line}), "
            f"which is not a subtype of {attribute.type}, the type of attribute "
            f"{attribute.name!r} of {head.relation}", arg,
            hint=f"as in Soufflé, a head argument's type must be a subtype of its "
                 f"attribute's (declared at line {attribute.line}); convert with "
                 f"as({arg.name}, {attribute.type}) if that is meant")
