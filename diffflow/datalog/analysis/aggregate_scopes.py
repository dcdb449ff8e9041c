"""Scopes of aggregates as Soufflé reads them: local targets, witnesses, mutual dependence.

A variable inside an aggregate is *injected* when the scope around it binds it (the rule's
positive atoms and assignments, or an enclosing aggregate's body); then the aggregate is
evaluated once per its value.  Otherwise it is local to the aggregate, except:

- the target's variables are always local (``m = max x : { f(x) }`` next to ``e(x)``
  takes the maximum over all of ``f``): they are renamed apart;
- a variable that ``min`` or ``max`` binds and that is used outside, unbound there, is a
  *witness*: it takes the values of the body rows that reach the extremum.  As Soufflé
  does, the body's literals are copied into the rule, with the target replaced by the
  aggregate's value, so every witnessing row gives a row (an ordinary rule: updates that
  change the witness retract the old rows).  ``count``, ``sum`` and ``mean`` have no
  witness, so a variable only they bind cannot be used outside.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> from diffflow.datalog.syntax.render import render_literal
>>> a = analyse(parse(".decl s(n: symbol, h: number)\\n.decl t(n: symbol, h: number)\\n"
...                   "t(n, h) :- h = max x : { s(n, x) }."))
>>> [render_literal(lit) for lit in a.relations["t"].clauses[0].literals]
['h = max x : { s(#v1, x) }', 's(n, h)']
"""
from __future__ import annotations

import dataclasses

from diffflow.datalog.syntax import ast


def copy_term(node, names: dict | None = None, values: dict | None = None):
    """A deep copy of a term or literal; variables renamed by ``names`` ({old: new}) or
    replaced by the terms ``values`` ({name: term}) wherever they occur, aggregates' bodies
    included.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.syntax.render import render_literal
    >>> (lit,) = parse("r() :- x < count : { e(x, y) }.").rules[0].body[0].literals
    >>> render_literal(copy_term(lit, {"y": "z"}, {"x": ast.Number(1, 1, 7)}))
    '7 < count : { e(7, z) }'
    """
    names, values = names or {}, values or {}

    def copy(value):
        if isinstance(value, ast.Var):
            if value.name in values:
                return copy_term(values[value.name])
            return dataclasses.replace(value, name=names.get(value.name, value.name))
        if isinstance(value, ast.Node):
            return dataclasses.replace(value, **{f.name: copy(getattr(value, f.name))
                                                 for f in dataclasses.fields(value)
                                                 if f.name not in ("line", "column")})
        if isinstance(value, list):
            return [copy(v) for v in value]
        return value
    return copy(node)


def _variables(*terms) -> set:
    """Every variable name in terms, aggregates' bodies included."""
    return {n.name for n in ast.walk_terms(*terms, aggregates=True) if isinstance(n, ast.Var)}


def _own_bound(checks, body, around: set) -> set:
    """What an aggregate's body binds at its own level (not its inner aggregates'), given
    the variables ``around`` it that are bound."""
    bound = set(around)
    for lit in body:
        if isinstance(lit, ast.Atom):
            bound |= {v.name for v in ast.term_variables(*lit.args)}
    checks.bind_assignments([l for l in body if isinstance(l, ast.Comparison)], bound)
    return bound - set(around)


def _inner(body) -> list:
    """The aggregates directly inside a body's comparisons."""
    return [agg for lit in body if isinstance(lit, ast.Comparison)
            for agg in ast.term_aggregates(lit.left, lit.right)]


def _fresh(checks, prefix: str) -> str:
    checks.fresh += 1
    return f"#{prefix}{checks.fresh}"


def check_mutual_dependence(checks, literals) -> None:
    """Soufflé's check: two aggregates of a rule where each uses, unbound, a variable that
    the other's body binds are *mutually dependent*, and the rule is refused (as Soufflé
    refuses it, even when the rule binds both variables).

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> analyse(parse(".decl e(a: number, b: number)\\n.decl r(a: number)\\n"
    ...   "r(a) :- e(a, b), 0 = count : { e(x, b), x < a }, 0 = count : { e(a, y), y < b }."))
    Traceback (most recent call last):
    ...
    diffflow.common.errors.DatalogError: <program>:3:22: error: mutually dependent aggregates: this one binds 'b' in its body and takes 'a' from outside, the one at line 3, column 54 binds 'a' and takes 'b'
    ...
    """
    parts = []
    for lit in literals:
        if not isinstance(lit, ast.Comparison):
            continue
        aggs = ast.term_aggregates(lit.left, lit.right)
        if not aggs:
            continue
        grounded = set()
        stack = list(aggs)
        while stack:
            agg = stack.pop()
            grounded |= _own_bound(checks, agg.body, set())
            stack += _inner(agg.body)
        for side, other in ((lit.left, lit.right), (lit.right, lit.left)):
            if lit.op == "=" and isinstance(side, ast.Var) and \
                    isinstance(other, ast.AggregateTerm):
                grounded.add(side.name)
        parts.append((aggs[0], _variables(lit.left, lit.right), grounded))
    for i, (agg, names, grounded) in enumerate(parts):
        for other, other_names, other_grounded in parts[i + 1:]:
            uses = sorted((names - grounded) & other_grounded)
            binds = sorted((other_names - other_grounded) & grounded)
            if uses and binds:
                raise checks.error(
                    f"mutually dependent aggregates: this one binds {binds[0]!r} in its body "
                    f"and takes {uses[0]!r} from outside, the one at line {other.line}, "
                    f"column {other.column} binds {uses[0]!r} and takes {binds[0]!r}", agg,
                    hint="Soufflé refuses such a pair even when the rule binds both "
                         "variables; rename the variables local to one of the aggregates")


def scope_aggregates(checks, head: ast.Atom, literals: list):
    """A rule's aggregates with their targets renamed apart and their witnesses grounded
    (see the module's text); returns the new head and literals.  ``checks`` is the
    analyser (its ``error``, ``fresh`` counter and ``bind_assignments``).

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.syntax.parser import parse
    >>> from diffflow.datalog.syntax.render import render_literal
    >>> a = analyse(parse(".decl e(x: number)\\n.decl r(x: number, m: number)\\n"
    ...                   "r(x, m) :- e(x), m = max x : { e(x) }."))
    >>> [render_literal(lit) for lit in a.relations["r"].clauses[0].literals]
    ['e(x)', 'm = max #v1 : { e(#v1) }']
    """
    if not ast.term_aggregates(*head.args, *[t for lit in literals
                                              if isinstance(lit, ast.Comparison)
                                              for t in ast.literal_terms(lit)]):
        return head, literals
    bound, free = _top_scope(checks, head, literals)
    head, literals = _local_targets(checks, head, literals, free)
    return _ground_witnesses(checks, head, literals, bound, free)


def _top_scope(checks, head, literals):
    """The variables the rule binds outside its aggregates, and those it uses unbound."""
    bound = set()
    for lit in literals:
        if isinstance(lit, ast.Atom):
            bound |= {v.name for v in ast.term_variables(*lit.args)}
    checks.bind_assignments([l for l in literals if isinstance(l, ast.Comparison)], bound)
    used = {v.name for v in ast.term_variables(*head.args, *[t for lit in literals
                                                              for t in ast.literal_terms(lit)])}
    return bound, used - bound


def _local_targets(checks, head, literals, free):
    """Rename an aggregate's target variables that also occur outside it (but not the
    witnesses: those used outside unbound)."""
    def rename(agg, outside: set):
        target = _variables(agg.target) if agg.target is not None else set()
        clash = {v: _fresh(checks, "v") for v in sorted((target & outside) - free)}
        if clash:
            agg = copy_term(agg, clash)
        terms = [*([agg.target] if agg.target is not None else []),
                 *(t for lit in agg.body for t in ast.literal_terms(lit))]
        body = [_map_aggregates(lit, lambda inner: rename(
                    inner, outside | _variables_except(terms, inner)))
                if isinstance(lit, ast.Comparison) else lit for lit in agg.body]
        return dataclasses.replace(agg, body=body)

    terms = [*head.args, *(t for lit in literals for t in ast.literal_terms(lit))]

    def top(agg):
        return rename(agg, _variables_except(terms, agg))
    literals = [_map_aggregates(lit, top) if isinstance(lit, ast.Comparison) else lit
                for lit in literals]
    head = dataclasses.replace(head, args=[_map_aggregates(a, top) for a in head.args])
    return head, literals


def _variables_except(terms, skip) -> set:
    """The variables of terms, aggregates' bodies included, except inside ``skip``."""
    names, stack = set(), list(terms)
    while stack:
        for node in ast.walk_terms(stack.pop()):
            if isinstance(node, ast.Var):
                names.add(node.name)
            elif isinstance(node, ast.AggregateTerm) and node is not skip:
                stack += [*([node.target] if node.target is not None else []),
                          *(t for lit in node.body for t in ast.literal_terms(lit))]
    return names


def _map_aggregates(node, fn):
    """``node`` with each outermost aggregate in it replaced by ``fn(aggregate)``."""
    if isinstance(node, ast.AggregateTerm):
        return fn(node)
    if isinstance(node, ast.Comparison):
        return dataclasses.replace(node, left=_map_aggregates(node.left, fn),
                                   right=_map_aggregates(node.right, fn))
    if isinstance(node, ast.BinaryOp):
        return dataclasses.replace(node, left=_map_aggregates(node.left, fn),
                                   right=_map_aggregates(node.right, fn))
    if isinstance(node, ast.Negative):
        return dataclasses.replace(node, operand=_map_aggregates(node.operand, fn))
    if isinstance(node, (ast.Functor, ast.RecordTerm, ast.BranchTerm)):
        return dataclasses.replace(node, args=[_map_aggregates(a, fn) for a in node.args])
    return node


def _ground_witnesses(checks, head, literals, bound, free):
    if not free:
        return head, literals
    extra = []  # the witnesses' grounding literals

    def witness(agg, around: set, top: bool, enclosing: set, named=None):
        """``agg`` with its witnesses renamed apart (and those of the aggregates inside);
        their grounding literals go to ``extra``.  ``named``: the variable that a rule's
        ``v = agg`` assigns it."""
        own = _own_bound(checks, agg.body, around)
        witnesses = sorted(own & free)
        if witnesses and agg.function not in ("min", "max"):
            var = next(v for v in ast.walk_terms(*[t for lit in agg.body
                                                   for t in ast.literal_terms(lit)])
                       if isinstance(v, ast.Var) and v.name == witnesses[0])
            raise checks.error(
                f"variable {witnesses[0]!r} is bound only inside this {agg.function}, but is "
                f"used outside it: only min and max have witnesses", var,
                hint=f"bind {witnesses[0]!r} outside the aggregate too (as Soufflé, which "
                     f"reports a witness problem here)")
        body = []
        for lit in agg.body:  # the aggregates inside first: their own witnesses
            if isinstance(lit, ast.Comparison):
                lit = _map_aggregates(lit, lambda inner: witness(
                    inner, around | own, False, enclosing | own))
            body.append(lit)
        agg = dataclasses.replace(agg, body=body)
        if not witnesses:
            return agg
        injected = (_variables(*[t for lit in agg.body for t in ast.literal_terms(lit)])
                    & enclosing) - bound
        if not top and injected:
            raise checks.error(
                f"a witness of an aggregate inside another aggregate's body that uses that "
                f"body's variable {min(injected)!r} is not supported", agg,
                hint="bind the witness in a rule of its own")
        value = named or _fresh(checks, "x")
        renamed = copy_term(agg, {w: _fresh(checks, "v") for w in witnesses})
        if named is None:
            extra.append(ast.Comparison(agg.line, agg.column, "=",
                                        ast.Var(agg.line, agg.column, value),
                                        copy_term(renamed) if not top else renamed))
        # the body's literals, its other local variables renamed apart, the target's
        # variable replaced by the value (or the value assigned the target's expression)
        locals_ = _variables(*[t for lit in agg.body for t in ast.literal_terms(lit)],
                             *([agg.target] if agg.target is not None else [])) \
            - set(witnesses) - bound
        target = agg.target
        values = {}
        if isinstance(target, ast.Var):
            values[target.name] = ast.Var(target.line, target.column, value)
            locals_.discard(target.name)
        names = {v: _fresh(checks, "v") for v in sorted(locals_)}
        extra.extend(copy_term(lit, names, values) for lit in agg.body)
        if target is not None and not isinstance(target, ast.Var):
            extra.append(ast.Comparison(target.line, target.column, "=",
                                        ast.Var(target.line, target.column, value),
                                        copy_term(target, names)))
        return ast.Var(agg.line, agg.column, value) if top and named is None else renamed

    out = []
    for lit in literals:
        if isinstance(lit, ast.Comparison) and ast.term_aggregates(lit.left, lit.right):
            before = len(extra)
            named = next((side.name for side, other in ((lit.left, lit.right),
                                                        (lit.right, lit.left))
                          if lit.op == "=" and isinstance(side, ast.Var) and
                          isinstance(other, ast.AggregateTerm)), None)
            lit = _map_aggregates(lit, lambda agg, named=named: witness(agg, bound, True, set(),
                                                                         named))
            if len(extra) != before and lit.op == "=" and any(
                    isinstance(side, ast.Wildcard) for side in (lit.left, lit.right)):
                lit = None  # ``_ = min ... : {...}``: only its witnesses are wanted
        if lit is not None:
            out.append(lit)
    head = dataclasses.replace(head, args=[
        _map_aggregates(a, lambda agg: witness(agg, bound, True, set())) for a in head.args])
    return head, out + extra
