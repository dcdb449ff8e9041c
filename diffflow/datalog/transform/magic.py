"""Magic sets: compute only the facts some rule, output or query asks for.

A relation read with some arguments known -- ``query() :- samegen(16384, 32767).``
reads ``samegen`` with both bound, ``tc(30, y)`` with the first -- need not be
computed whole.  The transform follows the bindings (an *adornment*: ``b`` for
a bound argument, ``f`` for a free one) from the relations whose every fact is
wanted (the *roots*: outputs, or every relation) through the rules:

* a relation read with adornment ``α`` containing a ``b`` gets an *adorned*
  copy ``rel#α`` whose rules start with the *magic* relation ``rel#α#magic`` --
  the bound values asked for -- so they derive only facts for those values;
* each body atom of an adorned rule is read in the order bindings flow (SIPS:
  an atom with the most bound arguments next, as Soufflé's default), and a magic
  rule says which values the atoms before it ask of it:
  ``q#bf#magic(y) :- p#bf#magic(x), e(x, y).``;
* relations read with every argument free keep their name and are complete;
  so do input relations, relations whose value is more than the union of
  their rules (eqrel, choice, ``.limitsize``, subsumption), relations with
  ``autoinc()``, relations declared ``no_magic`` or listed in
  ``magic-transform-exclude``, and everything read under a negation or an
  aggregate (a negation needs the whole relation);
* a recursion whose value depends on the round a fact arrives in (it holds a choice,
  ``.limitsize`` or subsumptive relation, or an aggregate over itself) adorns nothing:
  magic relations would join it and change when its facts arrive;
* relations no root reads are not computed at all: ``Program`` answers
  queries on them on demand (:meth:`~diffflow.datalog.program.Program.query`).

The result is the same facts in every root, for every input and every update
(magic relations are ordinary rules, so they stay incremental).  If the magic
rules would make the program unstratifiable (a negation inside a cycle), the
transform is not applied and a plan note says so.  See docs/DATALOG.md §2.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl t(x: number, y: number)\\n"
...                   ".decl q(y: number)\\nt(x, y) :- e(x, y).\\n"
...                   "t(x, z) :- t(x, y), e(y, z).\\nq(y) :- t(1, y)."))
>>> sorted(demand_transform(a, roots=["q"]).relations)
['e', 'q', 't#bf', 't#bf#magic']
"""
from __future__ import annotations

from dataclasses import replace

from diffflow.datalog.analysis.analysed import Analysed, Clause, Relation
from diffflow.datalog.analysis.bindings import atom_vars, derivable, movable
from diffflow.datalog.analysis.strata import stratify
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import is_counter

_CONSTANTS = (ast.Number, ast.Float, ast.String)


class Unstratifiable(Exception):
    """The magic rules would put a negation or aggregate inside a recursion."""


def magic_relations(analysed: Analysed) -> set | None:
    """The relations ``.pragma "magic-transform"`` asks to transform (``None``: no pragma),
    with every relation that reads one of them (as Soufflé: bindings reach a relation
    only through the rules that read it)."""
    value = analysed.pragmas.get("magic-transform")
    if value is None:
        return None
    names = {n.strip() for n in value.replace(" ", ",").split(",") if n.strip()}
    if "*" in names:
        return set(analysed.relations)
    readers: dict = {}
    for relation in analysed.relations.values():
        for clause in relation.clauses:
            for name in _reads(clause, positive=True):
                readers.setdefault(name, set()).add(relation.name)
    chosen, todo = set(), [n for n in names if n in analysed.relations]
    while todo:
        name = todo.pop()
        if name not in chosen:
            chosen.add(name)
            todo.extend(readers.get(name, ()))
    return chosen


def rounds_matter(analysed: Analysed) -> set:
    """Relations of a recursion whose value depends on the round a fact arrives in: one
    holding a choice-domain, ``.limitsize`` or subsumptive relation, or an aggregate over
    the recursion (min through recursion).  Magic sets change when facts arrive (a magic
    relation joins the recursion), so these relations read nothing adorned."""
    out = set()
    for stratum in analysed.strata:
        if not stratum.recursive:
            continue
        inside = set(stratum.relations)
        members = [analysed.relations[n] for n in stratum.relations]
        if any(r.shaped and not r.eqrel for r in members) or any(
                set(ast.clause_relations(agg.body)) & inside
                for r in members for c in r.clauses for agg in c.aggregates()):
            out |= inside
    return out


def excluded(analysed: Analysed) -> set:
    """Relations the transform never adorns (see the module docstring)."""
    out = {n.strip() for n in analysed.pragmas.get("magic-transform-exclude", "").split(",")
           if n.strip()}
    out |= rounds_matter(analysed)
    for relation in analysed.relations.values():
        if relation.has_input or relation.shaped or not relation.clauses or \
                "no_magic" in relation.declaration.qualifiers or \
                any(is_counter(a) for c in relation.clauses
                    for a in ast.walk_terms(*c.head.args)):
            out.add(relation.name)
    return out


def demand_transform(analysed: Analysed, roots, transformable=None, seeds=()) -> Analysed:
    """The program restricted to what ``roots`` (relations wanted whole) and ``seeds``
    (``(relation, adornment)`` pairs whose magic relation is an input: the values
    queries ask for) demand; ``transformable`` limits the relations adorned (default:
    all).  Raises :class:`Unstratifiable` when the result cannot be stratified."""
    relations = analysed.relations
    allowed = set(relations) if transformable is None else set(transformable)
    allowed -= excluded(analysed)
    untouched = rounds_matter(analysed)  # (their bodies read nothing adorned either)
    out: dict = {}
    for name, relation in relations.items():  # inputs accept facts whatever is asked
        if relation.has_input and not relation.clauses:
            out[name] = relation
    # (an input relation with rules too stays whole: it takes facts whatever is asked)
    roots = [*roots, *(n for n, r in relations.items() if r.has_input and r.clauses)]
    todo = [(name, "f" * relations[name].arity) for name in roots]
    for name, adornment in seeds:
        magic = _magic_relation(relations[name], adornment)
        magic.takes_facts = True
        out[magic.name] = magic
        todo.append((name, adornment))
    done = set()
    while todo:
        name, adornment = todo.pop()
        if (name, adornment) in done:
            continue
        done.add((name, adornment))
        relation = relations[name]
        bound = "b" in adornment and name in allowed
        if not bound:
            adornment = "f" * relation.arity
            if (name, adornment) in done and name in out:
                continue
            done.add((name, adornment))
        target = _adorned_relation(relation, adornment) if bound else \
            replace(relation, clauses=[])
        out[target.name] = target
        for clause in relation.clauses:
            new, magic_clauses, reads = _adorn_clause(
                clause, adornment if bound else None, relations,
                allowed if name not in untouched else set())
            new.head = replace(clause.head, relation=target.name)
            target.clauses.append(new)
            for asked, how, magic_clause in magic_clauses:
                owner = magic_name(asked, how)
                if owner not in out:
                    out[owner] = _magic_relation(relations[asked], how)
                out[owner].clauses.append(magic_clause)
            todo.extend(reads)
        for clause in relation.dominated:
            todo.extend((r, "f" * relations[r].arity) for r in _reads(clause, positive=True))
    strata, notes = _stratify(out)
    on_demand = {n: r for n, r in relations.items() if n not in out}
    notes = analysed.notes + [n for n in notes if n not in analysed.notes]
    return Analysed(analysed.program, analysed.source, out, strata, notes,
                    analysed.pragmas, analysed.warnings, analysed.inlined,
                    analysed.structures, on_demand=on_demand)


def _stratify(relations):
    def error(message, node, hint=None):
        return Unstratifiable(message)
    return stratify(relations, error)


def _reads(clause, positive: bool = False) -> list:
    """Relations a clause reads under a negation or an aggregate (with ``positive``: its
    positive atoms too)."""
    literals = clause.literals if positive else \
        [lit for lit in clause.literals if not isinstance(lit, ast.Atom)]
    return ast.clause_relations(literals, clause.head.args)


def adorned_name(name: str, adornment: str) -> str:
    return f"{name}#{adornment}" if "b" in adornment else name


def magic_name(name: str, adornment: str) -> str:
    return f"{name}#{adornment}#magic"


def _adorned_relation(relation: Relation, adornment: str) -> Relation:
    return Relation(adorned_name(relation.name, adornment), list(relation.attributes),
                    list(relation.types), relation.declaration)


def _magic_relation(relation: Relation, adornment: str) -> Relation:
    keep = [i for i, c in enumerate(adornment) if c == "b"]
    return Relation(magic_name(relation.name, adornment),
                    [relation.attributes[i] for i in keep], [relation.types[i] for i in keep],
                    relation.declaration)


def _restates(head, body) -> bool:
    """Whether a magic rule only says ``m(x) :- m(x).`` (a recursive call asking what its
    own rule was asked): it derives nothing, and would cost a loop."""
    return len(body) == 1 and isinstance(body[0], ast.Atom) and \
        body[0].relation == head.relation and \
        [getattr(a, "name", a) for a in body[0].args] == [getattr(a, "name", a) for a in head.args]


def _implies_magic(atom, head, adornment) -> bool:
    """Whether a body atom reads the head's own adorned relation with the head's bound
    arguments: every fact it holds was derived for asked values, so the magic atom
    adds nothing to the rule (``tc#bf(x, z) :- tc#bf(x, y), e(y, z).``)."""
    if atom.relation != adorned_name(head.relation, adornment):
        return False
    return all(isinstance(h, ast.Var) and isinstance(a, ast.Var) and h.name == a.name
               for h, a, c in zip(head.args, atom.args, adornment) if c == "b")


def _is_bound(arg, bound) -> bool:
    return isinstance(arg, _CONSTANTS) or (isinstance(arg, ast.Var) and arg.name in bound)


def _adorn_clause(clause: Clause, adornment, relations, allowed):
    """``(clause with adorned body atoms, [(relation, adornment, magic clause)],
    [(relation, adornment) read])``;
    ``adornment`` ``None``: the head is wanted whole (no magic atom)."""
    at = (clause.rule.line, clause.rule.column)
    literals = list(clause.literals)
    atoms = [lit for lit in literals if isinstance(lit, ast.Atom)]
    rest = [lit for lit in literals if not isinstance(lit, ast.Atom)]
    comparisons = [c for c in rest if movable(c)]
    prefix, bound = [], set()
    if adornment is not None:
        args = []
        for arg, c in zip(clause.head.args, adornment):
            if c != "b":
                continue
            if isinstance(arg, (ast.Var, *_CONSTANTS)):
                args.append(arg)
                if isinstance(arg, ast.Var):
                    bound.add(arg.name)
            else:  # an expression in the head: the asked value must equal it
                var = ast.Var(arg.line, arg.column, f"#m{len(args)}")
                args.append(var)
                rest.append(ast.Comparison(arg.line, arg.column, "=", var, arg))
                clause.term_types[id(var)] = clause.term_types[id(arg)]
                clause.var_types[var.name] = clause.term_types[id(arg)]
        prefix.append(ast.Atom(*at, magic_name(clause.head.relation, adornment), args))
    # Variables the head binds are asked values: they bind an atom's argument directly, but
    # not through arithmetic (as Soufflé's "weakly bound"), else a recursive rule such as
    # gen(x) :- gen(x + 1), valid(x) would ask gen for x + 1, x + 2, ... without end.
    weak, strong = set(bound), set()
    bound = weak | derivable(strong, comparisons)
    placed, magic_clauses, reads = list(prefix), [], []
    renamed: dict = {}  # id(atom) -> the atom as the adorned clause reads it
    remaining = list(atoms)
    while remaining:
        def score(item):
            index, atom = item
            known = sum(_is_bound(a, bound) for a in atom.args)
            return (known == len(atom.args), known, -index)
        index, atom = max(enumerate(remaining), key=score)
        remaining.pop(index)
        how = "".join("b" if _is_bound(a, bound) else "f" for a in atom.args)
        read = atom
        if "b" in how and atom.relation in allowed:
            head = ast.Atom(*at, magic_name(atom.relation, how),
                            [a for a, c in zip(atom.args, how) if c == "b"])
            body = list(placed) + [c for c in comparisons
                                   if {v.name for v in ast.term_variables(c.left, c.right)}
                                   <= bound]
            if not _restates(head, body):
                magic_clauses.append((atom.relation, how,
                                      replace(clause, head=head, literals=body, plan=None,
                                              plan_version=None)))
            reads.append((atom.relation, how))
            read = replace(atom, relation=adorned_name(atom.relation, how))
        else:
            reads.append((atom.relation, "f" * len(atom.args)))
        renamed[id(atom)] = read
        placed.append(read)
        strong |= set(atom_vars(atom))
        bound = weak | derivable(strong, comparisons)
    reads.extend((r, "f" * relations[r].arity) for r in _reads(clause))
    body = [renamed[id(a)] for a in atoms]
    if prefix and any(_implies_magic(atom, clause.head, adornment) for atom in body):
        prefix = []  # a recursive atom asked the same values holds only asked facts
    plan = clause.plan
    if plan is not None and prefix:  # the magic atom first, then the order asked for
        plan = [0] + [i + 1 for i in plan]
    new = replace(clause, literals=prefix + body + rest, plan=plan)
    return new, magic_clauses, reads
