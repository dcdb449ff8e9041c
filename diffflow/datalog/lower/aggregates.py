"""Aggregates in a clause: a correlated sub-plan grouped by the outer variables it shares.

``count``, ``sum``, ``mean``, ``min`` and ``max`` evaluate their body once per binding of
the bound outer variables that occur in it (the *correlation*): the body is
joined starting from those bindings, grouped by them, and the result joined
back.  An empty group counts and sums to zero; ``mean``, ``min`` and ``max`` of an
empty group have no value, so the outer rule does not fire.  ``mean`` is a float: the sum
of its target's values (each as a float) over their number, as Soufflé computes it.

>>> from diffflow.datalog.syntax.parser import parse
>>> (rule,) = parse("r(x, n) :- e(x), n = count : { f(x, y), y > z }.").rules
>>> sorted(aggregate_variables(rule.body[0].literals[1].right))
['x', 'y', 'z']
"""
from __future__ import annotations

from diffflow.api import aggregates as c
from diffflow.dataflow.expr import Lit, col
from diffflow.datalog.lower.columns import UNIT, Frame, term_expression, var_column
from diffflow.datalog.syntax import ast, intrinsics
from diffflow.datalog.syntax.render import render_term


def aggregate_variables(agg) -> set:
    """Every variable mentioned in an aggregate (the bound ones correlate it).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(s) :- s = sum w : { e(x, w), !f(x) }.").rules
    >>> sorted(aggregate_variables(rule.body[0].literals[0].right))
    ['w', 'x']
    """
    names = {v.name for v in ast.term_variables(agg.target)} if agg.target is not None else set()
    for lit in agg.body:
        names |= {v.name for v in ast.term_variables(*ast.literal_terms(lit))}
        for inner in ast.term_aggregates(*ast.literal_terms(lit)):  # (nested: theirs too)
            names |= aggregate_variables(inner)
    return names


def compile_aggregate(clauses, frame, agg, outer, env, types, aggregates, steps, name):
    """Correlated aggregate: evaluate the body per binding of the outer variables.

    ``clauses`` is the :class:`~diffflow.datalog.lower.joins.ClauseCompiler` that plans the
    body; ``outer`` are the bound variables that correlate it.  The result
    becomes the frame's variable ``name`` (column ``var_column(name)``) and
    ``aggregates[id(agg)]`` names that column.

    >>> from diffflow.datalog.passes import analyse
    >>> from diffflow.datalog.lower.compiler import compile_program
    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl r(x: number, n: number)\\n"
    ...                   "r(x, n) :- e(x, _), n = count : { e(x, y) }."))
    >>> [line.strip() for line in compile_program(a).plan if "count by" in line]
    ['scan e(x, _) → count by (x) of [join e(x, y) on (x)] → assign n = count : { e(x, y) }']
    """
    column = var_column(name)
    group = sorted(outer)
    group_cols = [var_column(v) for v in group]
    if group:
        keys = frame.collection.select(*group_cols).distinct()
        start = Frame(keys, list(group))
    else:
        start = None
    clauses.tag(render_term(agg))  # (the groups it is computed for; its body names its own)
    target_vars = {v.name for v in ast.term_variables(agg.target)} if agg.target else set()
    # provenance mode: the body reads relations with their proof heights, and the group's
    # height -- every member's for count/sum, the lowest winner's for min/max -- comes out
    # in one more column, so a proof through an aggregate stays well founded
    height = getattr(clauses, "aggregate_heights", {}).get(id(agg))
    literals, member_heights = (agg.body, []) if height is None else \
        clauses.heights_of(agg.body, types)
    inner_steps = []
    # a body Soufflé materialises (several atoms, an aggregate or range(...) inside, a
    # variable repeated in its one atom) ranges over the distinct bindings of its own named
    # variables: ``_`` and the inner aggregates' own variables are not among them
    own = _own_variables(agg) if materialised(agg) else set()
    body, inner_aggs = clauses.conjunction(literals, env, types,
                                           set(group) | target_vars | set(member_heights) |
                                           own, start=start, steps=inner_steps)
    body_coll = body.collection
    extra = {} if height is None else {"_h": clauses.highest(member_heights)}
    if own:
        bindings = [var_column(v) for v in sorted(set(group) | target_vars | own)]
        if height is None:
            body_coll = body_coll.select(*bindings).distinct()
        else:  # (a binding's height: its lowest row's)
            body_coll = body_coll.select(*bindings, **extra).aggregate(by=bindings,
                                                                       _h=c.min("_h"))
            extra = {"_h": col("_h")}
    if agg.function == "count":
        body_coll = body_coll.select(*group_cols, _t=0, **extra) if group else \
            body_coll.select(_t=0, **extra)
        spec = c.count()
    elif agg.function == "mean":  # the sum of the values as floats, over their number
        value = term_expression(agg.target, types, inner_aggs)
        if types[id(agg.target)] != "float":
            value = value * Lit(1.0)
        body_coll = body_coll.select(*group_cols, _t=value, **extra)
        spec = None
    else:
        value = term_expression(agg.target, types, inner_aggs)
        body_coll = body_coll.select(*group_cols, _t=value, **extra)
        spec = {"sum": c.sum, "min": c.min, "max": c.max}[agg.function]("_t")
    if not group:
        body_coll = body_coll.select(*body_coll.columns, **{UNIT: 0})
    by = group_cols or [UNIT]
    if height is not None and agg.function in ("min", "max") and \
            types[id(agg)] in ("number", "unsigned"):
        result = _packed_extremum(agg, body_coll, by, column, var_column(height))
    elif spec is None:  # mean
        totals = body_coll.aggregate(by=by, _total=c.sum("_t"), _members=c.count())
        result = totals.select(*by, **{column: col("_total") / col("_members")})
        if height is not None:
            result = _with_group_height(agg, body_coll, result, by, column,
                                        var_column(height))
    else:
        result = body_coll.aggregate(by=by, **{column: spec})
        if height is not None:
            result = _with_group_height(agg, body_coll, result, by, column,
                                        var_column(height))
    if agg.function in ("count", "sum"):  # an empty group counts or sums to zero
        zero = Lit(0.0) if types[id(agg)] == "float" else Lit(0)
        zeros = {column: zero, **({} if height is None else {var_column(height): Lit(0)})}
        if group:
            missing = start.collection.antijoin(result, on=group_cols)
            result = result.concat(missing.select(*group_cols, **zeros))
        else:
            missing = clauses.unit_collection().antijoin(result, on=[UNIT])
            result = result.concat(missing.select(UNIT, **zeros))
    left = frame.collection
    produced = [name] if height is None else [name, height]
    if group:
        joined = left.join(result, on=group_cols)
    else:
        if UNIT not in left.columns:
            left = left.select(*left.columns, **{UNIT: 0})
        joined = left.join(result, on=[UNIT]).select(*frame.collection.columns,
                                                     *[var_column(v) for v in produced])
    aggregates[id(agg)] = column
    steps.append(f"{agg.function} by ({', '.join(group)}) of [{' → '.join(inner_steps)}]")
    return Frame(joined, frame.variables + produced)


def materialised(agg) -> bool:
    """Whether Soufflé evaluates an aggregate's body as a relation of its named variables
    (so the aggregate ranges over their distinct bindings, not over the body's rows): a
    body of several atoms, with an aggregate or ``range(...)`` inside, or with a variable
    repeated in its one atom.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(n) :- n = count : { e(x, _), f(x) }.").rules
    >>> materialised(rule.body[0].literals[0].right)
    True
    """
    atoms = [lit for lit in agg.body if isinstance(lit, ast.Atom)]
    if len(atoms) > 1:
        return True
    inner = list(ast.walk_terms(*([agg.target] if agg.target is not None else []),
                                *(t for lit in agg.body for t in ast.literal_terms(lit)),
                                aggregates=True))
    if any(isinstance(n, ast.AggregateTerm) or
           isinstance(n, ast.Functor) and n.name in intrinsics.GENERATORS for n in inner):
        return True
    names = [a.name for atom in atoms for a in atom.args if isinstance(a, ast.Var)]
    return len(names) != len(set(names))


def _own_variables(agg) -> set:
    """The named variables of an aggregate's body, not those of the aggregates inside."""
    return {v.name for lit in agg.body for v in ast.term_variables(*ast.literal_terms(lit))}


_SHIFT = 2 ** 28  # proof heights stay far below this; 32-bit values times it fit in int64


def _packed_extremum(agg, members, by, column, height):
    """An integer ``min``/``max`` and its lowest winner's height in one reduction: the value
    and the height packed in one int64 (the height inverted for ``max``)."""
    low = agg.function == "min"
    packed = col("_t") * _SHIFT + (col("_h") if low else (_SHIFT - 1) - col("_h"))
    extremum = (c.min if low else c.max)("_p")
    result = members.select(*by, _p=packed).aggregate(by=by, _p=extremum)
    rest = col("_p") % _SHIFT
    return result.select(*by, **{column: col("_p") // _SHIFT,
                                 height: rest if low else (_SHIFT - 1) - rest})


def _with_group_height(agg, members, result, by, column, height):
    """``result`` (group, value) with the group's proof height: the highest member's for
    ``count``/``sum``, the lowest winning member's for ``min``/``max``."""
    if agg.function in ("count", "sum", "mean"):
        highest = members.aggregate(by=by, **{height: c.max("_h")})
        return result.join(highest, on=by)
    winners = members.join(result, left_on=[*by, "_t"], right_on=[*by, column])
    lowest = winners.aggregate(by=by, **{height: c.min("_h")})
    return result.join(lowest, on=by)
