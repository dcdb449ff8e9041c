"""Which atoms of a conjunction meet on which variables, and the order to join them in.

Two atoms *meet* on a variable when both bind it -- directly, or through the
equalities of the body.  An equality ``x = t`` whose right side's variables an
atom binds lets that atom compute ``x`` itself before the join, so ``x``
becomes a join key: a record pattern (analysis writes ``s([x, y], _)`` as
``s(#e1, _), x = #e1.0, y = #e1.1``), ``x = y + 1`` or ``x = y`` all join
on ``x`` instead of forming a cross product and filtering it (see
docs/DATALOG.md §1).  :func:`local_literals` picks those
equalities (and the filters they enable) for one atom; :func:`order_atoms`
orders the atoms so that each one meets the atoms before it whenever any does.

>>> from diffflow.datalog.syntax.parser import parse
>>> body = parse("r(x) :- a(x), b(y), x = y + 1.").rules[0].body[0].literals
>>> [a.relation for a in order_atoms(body[:2], set(), comparisons=body[2:])]
['a', 'b']
>>> sorted(derivable({"y"}, body[2:]))
['x', 'y']
"""
from __future__ import annotations

from diffflow.datalog.analysis.bindings import (assignment, atom_vars, comparison_vars, derivable,
                                                movable)
from diffflow.datalog.syntax import ast


def local_literals(atom, pending, outer) -> list:
    """The comparisons of ``pending`` that ``atom`` can apply on its own before it is
    joined to a frame binding ``outer`` -- if one of them computes a variable ``outer``
    binds (a join key the atom's own columns do not hold); else ``[]``.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> body = parse("r(x) :- a(x), b(y, z), x = y + 1, z > 2.").rules[0].body[0].literals
    >>> from diffflow.datalog.syntax.render import render_literal
    >>> [render_literal(c) for c in local_literals(body[1], body[2:], {"x"})]
    ['x = (y + 1)', 'z > 2']
    >>> local_literals(body[1], body[2:], {"z"})
    []
    """
    local, chosen = set(atom_vars(atom)), []
    keys = False
    changed = True
    while changed:
        changed = False
        for c in pending:
            if any(c is d for d in chosen) or not movable(c):
                continue
            found = assignment(c, local)
            if found is not None:
                local.add(found[0])
                keys = keys or found[0] in outer
            elif not comparison_vars(c) <= local:
                continue
            chosen.append(c)
            changed = True
    return chosen if keys else []


def order_atoms(atoms, bound, plan=None, comparisons=(), sizes=None):
    """Join order: a ``.plan``'s if given, else greedy -- first an atom that meets the
    atoms before it (on variables they share or compute through ``comparisons``), then
    the most constants, then the smallest estimated size (``sizes``: relation -> rows,
    when known), then leftmost.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> atoms = parse("r(x) :- a(x, y), b(y, 1), c(z).").rules[0].body[0].literals
    >>> [a.relation for a in order_atoms(atoms, set())]
    ['b', 'a', 'c']
    >>> [a.relation for a in order_atoms(atoms, set(), plan=[2, 0, 1])]
    ['c', 'a', 'b']
    >>> atoms = parse("r(x) :- a(x), b(x).").rules[0].body[0].literals
    >>> [a.relation for a in order_atoms(atoms, set(), sizes={"a": 10**6, "b": 10})]
    ['b', 'a']
    """
    if plan is not None:
        return [atoms[i] for i in plan]
    comparisons = [c for c in comparisons if movable(c)]
    remaining = list(atoms)
    bound = derivable(bound, comparisons)
    order = []
    sizes = sizes or {}
    while remaining:
        def score(item):
            index, atom = item
            meets = len(derivable(atom_vars(atom), comparisons) & bound) if bound else 0
            constants = sum(isinstance(a, (ast.Number, ast.Float, ast.String))
                            for a in atom.args)
            size = sizes.get(atom.relation)
            return (meets > 0 or not bound, meets, constants,
                    -size if size is not None else 0, -index)
        index, best = max(enumerate(remaining), key=score)
        order.append(best)
        bound = derivable(bound | set(atom_vars(best)), comparisons)
        remaining.pop(index)
    return order


#: a later atom reduces an earlier one before the join when it is estimated to keep at most
#: this share of the earlier atom's values on the variables the two share
SEMIJOIN_SHARE = 0.25

#: an atom estimated smaller than this is not reduced: its semijoin's own operators (a
#: projection kept distinct, an index of each side) would cost more than the rows it drops
SEMIJOIN_MIN_ROWS = 1000


def semijoin_reducers(order, sizes: dict, distinct=None) -> dict:
    """``id(atom) -> (later atom, shared variables)``: for an atom of the join ``order``, the
    later atom that filters it most strongly, when that one keeps at most
    :data:`SEMIJOIN_SHARE` of the atom's values on the variables they share -- joined to
    the atom's relation first, projected on those variables and kept distinct (a
    semijoin), so the joins between the atom and the later one never carry the rows it
    drops.  The share is estimated from distinct values per column (``distinct(relation,
    position)``, an input relation's, else ``None``) or, for a computed relation, its
    estimated size.  See docs/DATALOG.md §1.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> atoms = parse("r(x, w) :- a(x, y), b(y, z), c(z, w).").rules[0].body[0].literals
    >>> counts = {("b", 1): 5000, ("c", 0): 20}
    >>> found = semijoin_reducers(atoms, {"a": 10**4, "b": 10**4, "c": 20},
    ...                           lambda rel, at: counts.get((rel, at)))
    >>> [(a.relation, found[id(a)][0].relation, found[id(a)][1]) for a in atoms if id(a) in found]
    [('b', 'c', ['z'])]
    """
    def values(atom, at):
        known = distinct(atom.relation, at) if distinct is not None else None
        return known if known is not None else sizes.get(atom.relation)

    reducers: dict = {}
    for index, atom in enumerate(order):
        if sizes.get(atom.relation, 0) < SEMIJOIN_MIN_ROWS:
            continue
        mine = first_positions(atom)
        best = None
        for later in order[index + 1:]:
            if index == 0 and later is order[1]:
                continue  # (the first two atoms' join is no bigger for a semijoin first)
            theirs = first_positions(later)
            shared = [v for v in mine if v in theirs]
            if not shared or set(theirs) <= set(mine):  # (a pure filter: filter_atoms)
                continue
            shares = []
            for v in shared:
                own, other = values(atom, mine[v]), values(later, theirs[v])
                if own and other is not None:
                    shares.append(other / own)
            if shares and min(shares) <= SEMIJOIN_SHARE and \
                    (best is None or min(shares) < best[0]):
                best = (min(shares), later, shared)
        if best is not None:
            reducers[id(atom)] = best[1:]
    return reducers


def first_positions(atom) -> dict:
    """Each variable of an atom -> the position of its first occurrence."""
    positions: dict = {}
    for i, arg in enumerate(atom.args):
        if isinstance(arg, ast.Var) and arg.name not in positions:
            positions[arg.name] = i
    return positions


def distinct_counts(rows: dict):
    """``distinct(relation, position)``: how many distinct values the facts ``rows``
    (relation -> encoded rows) hold in that column, counted on first use; ``None`` for a
    relation without facts there.

    >>> import numpy as np
    >>> distinct = distinct_counts({"e": np.array([[1, 2], [1, 3], [2, 3]])})
    >>> distinct("e", 0), distinct("e", 1), distinct("f", 0)
    (2, 2, None)
    """
    import numpy as np

    counted: dict = {}

    def distinct(relation, position):
        key = (relation, position)
        if key not in counted:
            facts = rows.get(relation)
            counted[key] = None if facts is None or not len(facts) else \
                len(np.unique(facts[:, position]))
        return counted[key]
    return distinct


def estimate_sizes(analysed, input_sizes: dict) -> dict:
    """``relation -> estimated rows``: an input relation's facts; a computed relation's, the
    largest estimate among the relations its rules read (recursion: those outside its
    stratum), plus its own facts -- rough, but it ranks relations as a join order needs.

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl t(x: number, y: number)\\n"
    ...                   "t(x, y) :- e(x, y).\\nt(x, z) :- t(x, y), e(y, z)."))
    >>> estimate_sizes(a, {"e": 1000})
    {'e': 1000, 't': 1000}
    """
    sizes: dict = {}
    for stratum in analysed.strata:
        inside = set(stratum.relations)
        for name in stratum.relations:
            relation = analysed.relations[name]
            read = [sizes.get(lit.relation, 0) for clause in relation.clauses
                    for lit in clause.literals
                    if isinstance(lit, ast.Atom) and lit.relation not in inside]
            sizes[name] = input_sizes.get(name, 0) + max(read, default=0)
    return sizes


def filter_atoms(atoms) -> tuple:
    """``(hosts, filters)``: atoms whose variables another atom (their *host*) binds all of
    only filter it, so they are joined to their host's relation before the host joins the
    rest (a semijoin: relations are sets, so joining on every variable of the filter keeps
    each host row once) -- the intermediate rows never hold what the filter drops
    (sideways information passing, FlowLog's "robustness first").  A filter's ``_``
    arguments are no variables (each of its rows counts, as the body's matches do for
    an aggregate).  ``filters`` maps ``id(host)`` to its filters; ``hosts`` are the atoms
    left to order.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> atoms = parse("r(x, z) :- a(x, y), b(y, z), c(z), d(1, z).").rules[0].body[0].literals
    >>> hosts, filters = filter_atoms(atoms)
    >>> [h.relation for h in hosts], [f.relation for f in filters[id(atoms[1])]]
    (['a', 'b'], ['c', 'd'])
    """
    filters: dict = {}
    hosts = list(atoms)
    for index, atom in enumerate(atoms):
        own = set(atom_vars(atom))
        if not own or id(atom) in filters:  # (a host filters nothing else)
            continue
        host = next((h for at, h in enumerate(atoms) if h is not atom
                     and any(h is kept for kept in hosts)
                     and own <= set(atom_vars(h)) and (own < set(atom_vars(h)) or at < index)),
                    None)
        if host is not None:
            filters.setdefault(id(host), []).append(atom)
            hosts = [h for h in hosts if h is not atom]
    return hosts, filters
