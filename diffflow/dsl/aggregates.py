"""Aggregates in a clause: a correlated sub-plan grouped by the outer variables it shares.

``count``, ``sum``, ``min`` and ``max`` evaluate their body once per binding of
the bound outer variables that occur in it (the *correlation*): the body is
joined starting from those bindings, grouped by them, and the result joined
back.  An empty group counts and sums to zero; ``min`` and ``max`` of an empty
group have no value, so the outer rule does not fire.

>>> from diffflow.dsl.parser import parse
>>> (rule,) = parse("r(x, n) :- e(x), n = count : { f(x, y), y > z }.").rules
>>> sorted(aggregate_variables(rule.body[0].literals[1].right))
['x', 'y', 'z']
"""
from __future__ import annotations

from .. import collection as c
from ..expr import Lit
from . import ast
from .columns import UNIT, Frame, term_expression, var_column


def aggregate_variables(agg) -> set:
    """Every variable mentioned in an aggregate (the bound ones correlate it).

    >>> from diffflow.dsl.parser import parse
    >>> (rule,) = parse("r(s) :- s = sum w : { e(x, w), !f(x) }.").rules
    >>> sorted(aggregate_variables(rule.body[0].literals[0].right))
    ['w', 'x']
    """
    names = {v.name for v in ast.term_variables(agg.target)} if agg.target is not None else set()
    for lit in agg.body:
        names |= {v.name for v in ast.term_variables(*ast.literal_terms(lit))}
    return names


def compile_aggregate(clauses, frame, agg, outer, env, types, aggregates, steps, name):
    """Correlated aggregate: evaluate the body per binding of the outer variables.

    ``clauses`` is the :class:`~diffflow.dsl.joins.ClauseCompiler` that plans the
    body; ``outer`` are the bound variables that correlate it.  The result
    becomes the frame's variable ``name`` (column ``var_column(name)``) and
    ``aggregates[id(agg)]`` names that column.

    >>> from diffflow.dsl.analysis import analyse
    >>> from diffflow.dsl.compiler import compile_program
    >>> from diffflow.dsl.parser import parse
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
    target_vars = {v.name for v in ast.term_variables(agg.target)} if agg.target else set()
    inner_steps = []
    body, inner_aggs = clauses.conjunction(agg.body, env, types, set(group) | target_vars,
                                           start=start, steps=inner_steps)
    body_coll = body.collection
    if agg.function == "count":
        body_coll = body_coll.select(*group_cols, _t=0) if group else \
            body_coll.select(_t=0)
        spec = c.count()
    else:
        value = term_expression(agg.target, types, inner_aggs)
        body_coll = body_coll.select(*group_cols, _t=value)
        spec = {"sum": c.sum, "min": c.min, "max": c.max}[agg.function]("_t")
    result = body_coll.aggregate(by=group_cols, **{column: spec}) if group else \
        body_coll.select(_t="_t", **{UNIT: 0}).aggregate(by=[UNIT], **{column: spec})
    if agg.function in ("count", "sum"):  # an empty group counts or sums to zero
        zero = Lit(0.0) if types[id(agg)] == "float" else Lit(0)
        if group:
            missing = start.collection.antijoin(result, on=group_cols)
            result = result.concat(missing.select(*group_cols, **{column: zero}))
        else:
            missing = clauses.unit_collection().antijoin(result, on=[UNIT])
            result = result.concat(missing.select(UNIT, **{column: zero}))
    left = frame.collection
    if group:
        joined = left.join(result, on=group_cols)
    else:
        if UNIT not in left.columns:
            left = left.select(*left.columns, **{UNIT: 0})
        joined = left.join(result, on=[UNIT]).select(*frame.collection.columns, column)
    aggregates[id(agg)] = column
    steps.append(f"{agg.function} by ({', '.join(group)}) of [{' → '.join(inner_steps)}]")
    return Frame(joined, frame.variables + [name])
