"""Relations declared ``inline``: unfolded into the rules that use them, never materialised.

Soufflé replaces every use of an inline relation by the bodies of its clauses,
so the relation itself is never built (a pair relation of two 10^4 inputs
would have 10^8 facts).  :func:`unfold` does the same on the analysed program:

* a positive use ``b(u1, ..., un)`` in a clause becomes one clause per clause
  of ``b`` (facts included): the clause's variables get fresh names, each head
  variable is replaced by the use's argument (a variable or a constant; a
  ``_`` keeps the fresh variable), and a head constant, expression or repeated
  variable becomes an equality with the use's argument;
* a negated use ``!b(u...)`` becomes, by De Morgan, the conjunction over
  ``b``'s clauses of "some literal of that clause fails": the product of their
  negated literals.  This needs every variable of the clause to be fixed by
  the use, so a clause that introduces a variable (other than one computed
  from the others, ``y = x + 1``) cannot be negated, and neither can a use with
  ``_`` -- both are errors, as in Soufflé;
* as in Soufflé, an inline relation cannot be ``.input``, ``.output`` or
  ``.printsize``, inline relations cannot depend on each other in a cycle, and
  an inline relation cannot be used inside an aggregate (``count : { b(x) }``
  counts distinct facts of ``b``, which its unfolded bodies do not give);
* an inline relation's clauses need not be range-restricted on their own
  (``b(x, y) :- x = y + 1.``); the unfolded clauses are checked instead, even one that
  can never hold and is dropped (``0 < 0`` once a constant is put in), as Soufflé checks.

The ``inline-exclude`` pragma and the ``no_inline`` / ``no_magic`` qualifiers
keep a relation materialised.

>>> from diffflow.datalog.syntax.parser import parse
>>> from diffflow.datalog.passes import analyse
>>> a = analyse(parse(".decl n(x: number)\\n.decl pair(x: number, y: number) inline\\n"
...                   ".decl r(x: number)\\npair(x, y) :- n(x), n(y).\\n"
...                   "r(x) :- pair(x, 3)."))
>>> sorted(a.relations), sorted(a.inlined)
(['n', 'r'], ['pair'])
>>> [[(l.relation, [getattr(t, 'name', getattr(t, 'value', '_')) for t in l.args])
...   for l in c.literals] for c in a.relations["r"].clauses]
[[('n', ['x']), ('n', [3])]]
"""
from __future__ import annotations

import itertools
import re

from diffflow.datalog.analysis.analysed import Clause
from diffflow.datalog.analysis.constants import comparison_holds
from diffflow.datalog.analysis.strata import tarjan
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogError

_NEGATED_OP = {"=": "!=", "!=": "=", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}
MAX_UNFOLDED = 10_000  # clauses one rule may unfold into before it is an error


def select(analyser, pragmas: dict) -> dict:
    """The relations to inline (``name -> Relation``), after Soufflé's declaration checks.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.passes import analyse
    >>> analyse(parse(".decl e(x: number) inline output"))
    Traceback (most recent call last):
    ...
    diffflow.common.errors.DatalogError: <program>:1:7: error: IO relation e cannot be inlined
    ...
    """
    excluded = {n.strip() for n in pragmas.get("inline-exclude", "").split(",") if n.strip()}
    chosen = {}
    for name, relation in analyser.relations.items():
        qualifiers = relation.declaration.qualifiers
        if "inline" not in qualifiers or name in excluded or \
                {"no_inline", "no_magic"} & set(qualifiers):
            continue
        if relation.inputs or relation.outputs or relation.printsize:
            raise analyser.error(f"IO relation {name} cannot be inlined", relation.declaration,
                                 hint=f"remove 'inline' from the .decl of {name}: an .input, "
                                      f".output or .printsize relation is materialised")
        chosen[name] = relation
    _check_cycles(analyser, chosen)
    return chosen


def check_uses(analyser, inline: dict) -> None:
    """Uses Soufflé rejects: inside aggregates, and negated with ``_``.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.passes import analyse
    >>> analyse(parse(".decl e(x: number)\\n.decl i(x: number) inline\\ni(x) :- e(x).\\n"
    ...               "e(x) :- e(x), !i(_)."))
    Traceback (most recent call last):
    ...
    diffflow.common.errors.DatalogError: <program>:4:18: error: Cannot inline negated atom containing an unnamed variable
    ...
    """
    for relation in analyser.relations.values():
        for clause in relation.clauses:
            for agg in clause.aggregates():
                for lit in agg.body:
                    atom = lit.atom if isinstance(lit, ast.Negation) else lit
                    if isinstance(atom, ast.Atom) and atom.relation in inline:
                        raise analyser.error(
                            "Cannot inline relations that appear in aggregator", atom,
                            hint=f"an aggregate ranges over the distinct facts of "
                                 f"{atom.relation}, which its unfolded rules do not give; "
                                 f"remove 'inline' from its .decl")
            for lit in clause.literals:
                if isinstance(lit, ast.Negation) and lit.atom.relation in inline:
                    for arg in lit.atom.args:
                        if isinstance(arg, ast.Wildcard):
                            raise analyser.error(
                                "Cannot inline negated atom containing an unnamed variable", arg,
                                hint=f"name the variable, or remove 'inline' from the .decl of "
                                     f"{lit.atom.relation}")


def unfold(analyser, inline: dict) -> tuple:
    """``(clauses by relation name, notes)``: every clause of a materialised relation with
    its inline atoms unfolded, checked again (binding and types).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.passes import analyse
    >>> a = analyse(parse(".decl e(x: number)\\n.decl i(x: number) inline\\n.decl r(x: number)\\n"
    ...                   "i(x) :- e(x), x > 1.\\nr(x) :- i(x), !i(x + 1)."))
    >>> [len(c.literals) for c in a.relations["r"].clauses], a.notes
    ([4, 4], ['i is inline: unfolded into the rules of r, never computed'])
    """
    unfolder = _Unfolder(analyser, inline)
    result, notes, used = {}, [], {}
    for name, relation in analyser.relations.items():
        if name in inline:
            continue
        clauses = []
        for clause in relation.clauses:
            expanded = unfolder.clause(clause, check_dead=True)
            if expanded is None:
                clauses.append(clause)
                continue
            for new in expanded:
                _recheck(analyser, new, clause)
                for r in new.unfolded:
                    used.setdefault(r, set()).add(name)
            clauses.extend(expanded)
        result[name] = clauses
    for name in inline:
        users = ", ".join(sorted(used.get(name, ())))
        where = f"unfolded into the rules of {users}" if users else "used by no rule"
        notes.append(f"{name} is inline: {where}, never computed")
    return result, notes


class _Unfolder:
    def __init__(self, analyser, inline):
        self.analyser, self.inline = analyser, inline
        self.fresh = 0
        self._definitions: dict = {}

    def definitions(self, name) -> list:
        """The clauses of inline relation ``name`` as ``(head args, literals, seed types)``,
        themselves unfolded (inline relations form no cycle, so this ends)."""
        if name not in self._definitions:
            relation = self.inline[name]
            out = [(fact.head.args, [], {}) for fact in relation.facts]
            for clause in relation.clauses:
                expanded = self.clause(clause)
                for c in expanded if expanded is not None else [clause]:
                    out.append((c.head.args, c.literals, c.seed_types))
            self._definitions[name] = out
        return self._definitions[name]

    def clause(self, clause, check_dead=False):
        """The clauses replacing ``clause`` (None if it uses no inline relation).

        ``check_dead``: an unfolding that can never hold (``0 < 0`` once a constant is put
        in) is dropped, but its variables must be bound all the same, as Soufflé checks
        them before it simplifies anything."""
        if not any(self.is_inline(lit) for lit in clause.literals):
            return None
        self.count = 0
        out = []
        for literals, seeds, names in self.bodies(list(clause.literals),
                                                  dict(clause.seed_types), []):
            new = Clause(clause.head, [lit for lit in literals if lit is not _DEAD],
                         clause.rule, seed_types=seeds, unfolded=sorted(set(names)))
            if any(lit is _DEAD for lit in literals):
                if check_dead:
                    _check_bound(self.analyser, new, clause)
                continue
            out.append(new)
        return out

    def is_inline(self, lit) -> bool:
        atom = lit.atom if isinstance(lit, ast.Negation) else lit
        return isinstance(atom, ast.Atom) and atom.relation in self.inline

    def bodies(self, literals, seeds, names):
        """Every unfolding of ``literals``, first inline literal first (in body order)."""
        at = next((i for i, lit in enumerate(literals) if self.is_inline(lit)), None)
        if at is None:
            simplified = _simplify(literals, self.analyser)
            if simplified is None:  # e.g. n(x), !n(x): the clause can never hold
                if any(lit is _DEAD for lit in literals):
                    yield literals, seeds, names  # (only for the binding check)
                return
            literals = simplified
            self.count += 1
            if self.count > MAX_UNFOLDED:
                raise self.analyser.error(
                    f"unfolding inline relations into this rule makes more than "
                    f"{MAX_UNFOLDED:,} clauses", literals[0] if literals else None,
                    hint="remove 'inline' from the .decl of " + ", ".join(sorted(set(names))))
            yield literals, seeds, names
            return
        lit = literals[at]
        before, after = literals[:at], literals[at + 1:]
        options = self.positive(lit) if isinstance(lit, ast.Atom) else self.negated(lit)
        name = lit.relation if isinstance(lit, ast.Atom) else lit.atom.relation
        for inst, more in list(options):
            yield from self.bodies(before + inst + after, {**seeds, **more}, names + [name])

    def instantiate(self, use: ast.Atom, head_args, literals, seeds, keep_dead=False) -> tuple:
        """One clause of the used relation, renamed apart and matched with ``use`` (body
        None if it cannot hold; with ``keep_dead``, if only its own body cannot once
        matched, that body and :data:`_DEAD`)."""
        self.fresh += 1
        suffix = f"#{self.fresh}"
        relation = self.inline[use.relation]
        rename = _Renamer(suffix)
        head_args = [rename.term(a) for a in head_args]
        literals = [rename.literal(lit) for lit in literals]
        types = {name + suffix: kind for name, kind in seeds.items()}
        subst, extra = {}, []
        for h, u, kind in zip(head_args, use.args, relation.types):
            if isinstance(u, ast.Var):
                types[u.name] = kind
            if isinstance(h, ast.Var) and h.name not in subst:
                subst[h.name] = h if isinstance(u, ast.Wildcard) else u
                if isinstance(u, ast.Wildcard):
                    types[h.name] = kind
            elif not isinstance(u, ast.Wildcard):
                extra.append(ast.Comparison(u.line, u.column, "=", u, h))
        substitute = _Substituter(subst)
        matched = [substitute.literal(lit) for lit in literals + extra]
        body = _simplify(matched, self.analyser)
        if body is None and keep_dead and \
                _simplify([substitute.literal(lit) for lit in extra], self.analyser) is not None:
            return matched + [_DEAD], types
        return body, types

    def positive(self, use):
        for head_args, literals, seeds in self.definitions(use.relation):
            body, types = self.instantiate(use, head_args, literals, seeds, keep_dead=True)
            if body is not None:  # a clause whose constants cannot match adds nothing
                yield body, types

    def negated(self, negation):
        use = negation.atom
        outer = {a.name for a in use.args if isinstance(a, ast.Var)}
        choices, fixed, types = [], [], {}
        for head_args, literals, seeds in self.definitions(use.relation):
            body, more = self.instantiate(use, head_args, literals, seeds)
            if body is None:  # that clause cannot hold here: its negation always does
                continue
            types.update(more)
            definitions, conditions = _split_definitions(body, outer)
            if definitions is None:
                raise self.analyser.error(
                    "Cannot inline negated relation which may introduce new variables",
                    negation, hint=f"a clause of {use.relation} has a variable its head does "
                                   f"not fix; remove 'inline' from the .decl of {use.relation}")
            if not conditions:  # that clause always holds, so the negation never does
                return
            fixed += definitions
            choices.append([_negate(c) for c in conditions])
        size = 1
        for options in choices:
            size *= len(options)
        if size > MAX_UNFOLDED:
            raise self.analyser.error(
                f"inlining this negation of {use.relation} would make {size:,} clauses (one "
                f"per way to falsify each of its clauses)", negation,
                hint=f"remove 'inline' from the .decl of {use.relation}")
        for combination in itertools.product(*choices):
            body = _simplify(fixed + list(combination), self.analyser)
            if body is not None:
                yield body, types


def _simplify(literals, typing):
    """Drop what is true, and None if something is false: comparisons of constants,
    ``true``/``false``, one variable equal to two different constants, an atom next to its
    negation; repeated literals are kept once.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.analysis.types import TermTyping
    >>> lits = parse("r(x) :- 1 < 2, x = 1, e(x), x = 1, true.").rules[0].body[0].literals
    >>> [type(l).__name__ for l in _simplify(lits, TermTyping())]
    ['Comparison', 'Atom']
    >>> _simplify(parse("r(x) :- x = 1, e(x), 1 = x + 0, x = 2.").rules[0].body[0].literals,
    ...           TermTyping())
    >>> _simplify(parse("r(x) :- e(x, _), n(x), !e(x, _).").rules[0].body[0].literals,
    ...           TermTyping())
    """
    out, seen, equal = [], set(), {}
    for lit in literals:
        if isinstance(lit, ast.Boolean):
            if not lit.value:
                return None
            continue
        if isinstance(lit, ast.Comparison):
            if not _literal_vars(lit) and not ast.term_aggregates(lit.left, lit.right):
                try:
                    holds = comparison_holds(lit, typing.comparison_term_types(lit))
                except ArithmeticError:
                    holds = None  # kept: the error is the run's to raise
                if holds is False:
                    return None
                if holds:
                    continue
            if lit.op == "=":
                for var, const in ((lit.left, lit.right), (lit.right, lit.left)):
                    if isinstance(var, ast.Var) and isinstance(const, (ast.Number, ast.String)):
                        value = (type(const).__name__, const.value)
                        if equal.setdefault(var.name, value) != value:
                            return None
        key = repr(_strip(lit.to_data()))
        if key not in seen:
            seen.add(key)
            out.append(lit)
    for lit in out:  # an atom and its own negation: never both
        if isinstance(lit, ast.Negation) and repr(_strip(lit.atom.to_data())) in seen:
            return None
    return out


def _strip(data):
    """A node's data without positions (literals equal up to where they were written)."""
    if isinstance(data, dict):
        return {k: _strip(v) for k, v in data.items() if k != "at"}
    if isinstance(data, list):
        return [_strip(v) for v in data]
    return data


def _split_definitions(literals, outer):
    """``(definitions, conditions)``: ``v = expr`` literals that compute a variable not in
    ``outer`` from known ones, and the rest; None if some other variable is introduced."""
    known = set(outer)
    definitions, rest = [], list(literals)
    progress = True
    while progress:
        progress = False
        for lit in list(rest):
            if isinstance(lit, ast.Comparison) and lit.op == "=":
                for target, expr in ((lit.left, lit.right), (lit.right, lit.left)):
                    if isinstance(target, ast.Var) and target.name not in known and \
                            _total(expr) and {v.name for v in ast.term_variables(expr)} <= known:
                        known.add(target.name)
                        definitions.append(lit)
                        rest.remove(lit)
                        progress = True
                        break
    for lit in rest:
        names = _literal_vars(lit)
        if not names <= known:
            return None, None
    return definitions, rest


def _total(expr) -> bool:
    """An expression with a value for every input (``min`` / ``max`` of nothing has none)."""
    return all(agg.function in ("count", "sum") for agg in ast.term_aggregates(expr))


def _negate(lit):
    if isinstance(lit, ast.Atom):
        return ast.Negation(lit.line, lit.column, lit)
    if isinstance(lit, ast.Negation):
        return lit.atom
    if isinstance(lit, ast.Comparison):
        return ast.Comparison(lit.line, lit.column, _NEGATED_OP[lit.op], lit.left, lit.right)
    if isinstance(lit, ast.Boolean):
        return ast.Boolean(lit.line, lit.column, not lit.value)
    raise AssertionError(lit)


def _literal_vars(lit) -> set:
    if isinstance(lit, ast.Negation):
        lit = lit.atom
    if isinstance(lit, ast.Atom):
        return {a.name for a in lit.args if isinstance(a, ast.Var)}
    if isinstance(lit, ast.Comparison):
        return {v.name for v in ast.term_variables(lit.left, lit.right)}
    return set()


class _TermMap:
    """Rebuilds literals and terms, mapping every variable (aggregate bodies included)."""

    def var(self, node):  # pragma: no cover - overridden
        raise NotImplementedError

    def term(self, node):
        if isinstance(node, ast.Var):
            return self.var(node)
        if isinstance(node, ast.BinaryOp):
            return ast.BinaryOp(node.line, node.column, node.op, self.term(node.left),
                                self.term(node.right))
        if isinstance(node, ast.Negative):
            return ast.Negative(node.line, node.column, self.term(node.operand))
        if isinstance(node, ast.Functor):
            return ast.Functor(node.line, node.column, node.name,
                               [self.term(a) for a in node.args], node.type_name, node.user,
                               node.counter)
        if isinstance(node, ast.RecordTerm):
            return ast.RecordTerm(node.line, node.column, [self.term(a) for a in node.args])
        if isinstance(node, ast.BranchTerm):
            return ast.BranchTerm(node.line, node.column, node.branch,
                                  [self.term(a) for a in node.args], node.number)
        if isinstance(node, ast.FieldAccess):
            return ast.FieldAccess(node.line, node.column, self.term(node.record), node.index,
                                   node.width, node.branch, node.number)
        if isinstance(node, ast.AggregateTerm):
            target = self.term(node.target) if node.target is not None else None
            return ast.AggregateTerm(node.line, node.column, node.function, target,
                                     [self.literal(lit) for lit in node.body])
        return node

    def literal(self, lit):
        if isinstance(lit, ast.Atom):
            return ast.Atom(lit.line, lit.column, lit.relation, [self.term(a) for a in lit.args])
        if isinstance(lit, ast.Negation):
            return ast.Negation(lit.line, lit.column, self.literal(lit.atom))
        if isinstance(lit, ast.Comparison):
            return ast.Comparison(lit.line, lit.column, lit.op, self.term(lit.left),
                                  self.term(lit.right))
        return lit


class _Renamer(_TermMap):
    def __init__(self, suffix):
        self.suffix = suffix

    def var(self, node):
        return ast.Var(node.line, node.column, node.name + self.suffix)


class _Substituter(_TermMap):
    def __init__(self, subst):
        self.subst = subst

    def var(self, node):
        return self.subst.get(node.name, node)


def _check_cycles(analyser, chosen: dict) -> None:
    def uses(relation):
        found = []
        for clause in relation.clauses:
            for lit in clause.literals:
                atom = lit.atom if isinstance(lit, ast.Negation) else lit
                if isinstance(atom, ast.Atom) and atom.relation in chosen:
                    found.append(atom.relation)
        return found

    successors = {name: uses(relation) for name, relation in chosen.items()}
    for component in tarjan(list(chosen), successors):
        if len(component) > 1 or component[0] in successors[component[0]]:
            ordered = [n for n in chosen if n in component]
            first = chosen[ordered[0]].declaration
            raise analyser.error(
                f"Cannot inline cyclically dependent relations {{{', '.join(ordered)}}}", first,
                hint="a recursive relation must be computed: remove 'inline' from one of them")


_RENAMED = re.compile(r"'(#?[^'#\s]*)(?:#\d+)+'")


def display(name: str) -> str:
    """A variable's name as the user wrote it (without the suffixes of unfolding).

    >>> display("x#3#7"), display("#e1#2"), display("y")
    ('x', '#e1', 'y')
    """
    return _RENAMED.sub(r"'\1'", f"'{name}'")[1:-1]


#: marks an unfolding that can never hold (kept for the binding check only)
_DEAD = ast.Boolean(0, 0, False)


def _check_bound(analyser, dead, original) -> None:
    """An unfolding that can never hold: only an unbound variable in it is an error."""
    try:
        _recheck(analyser, dead, original)
    except DatalogError as e:
        if "is not bound" in e.message:
            raise


def _recheck(analyser, new, original) -> None:
    try:
        analyser.check_clause(new)
    except DatalogError as e:
        names = ", ".join(new.unfolded)
        raise e.rebuilt(_RENAMED.sub(r"'\1'", e.message),
                        hint=(e.hint + "; " if e.hint else "") +
                        f"this is where inline {names} is unfolded into the rule at line "
                        f"{original.rule.line}") from None
