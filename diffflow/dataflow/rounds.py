"""Lowering a loop for compiled rounds: which loops can run without a Python call per round.

A loop whose body uses only operators with a compiled form is lowered to a
:class:`LoopProgram`: tables of integers that the round kernel
(:func:`diffflow.operators.rounds._kernels.run_rounds`) interprets, so one program serves
every loop and nothing is compiled per query.  The compiled forms:

* ``concat``, ``negate``, ``select`` and ``filter`` whose expressions are integer, boolean
  or symbol arithmetic and comparisons (``+ - * abs min max``, comparisons, ``& | ~``,
  Datalog's 32-bit wrapping) -- expressions become postfix code;
* ``arrange`` (keyed by a prefix of its columns) read by ``join`` s keyed by that prefix,
  ``distinct`` s over whole rows, and aggregates by that key of ``count``, ``sum``, ``min``
  and ``max`` over int columns;
* ``enter`` (what enters is fixed while the rounds run), ``feedback`` (with its round
  limit) and ``leave``.

Anything else -- floats, division, functions, other reductions (a user's reducer,
aggregates of floats or strings), per-row Python, a nested loop, a join of an arrangement with itself --
keeps the loop on the engine's general path; :func:`loop_paths` says which loop takes
which path and why (``Dataflow.explain_plan()``, ``diffflow explain-plan``).

>>> import diffflow as dd
>>> flow = dd.Dataflow(); e = flow.input("e", ["src", "dst"]); r = flow.input("r", ["node"])
>>> with flow.loop("reach") as loop:
...     v = loop.variable(r)
...     v.set(r.concat(v.join(e, left_on="node", right_on="src").select(node="dst")).distinct())
>>> _ = v.leave().output()
>>> [(scope.label, program is not None, why) for scope, program, why in loop_paths(flow.graph)]
[('reach', True, 'compiled rounds for small deltas')]
"""
from __future__ import annotations

import numpy as np

from diffflow.dataflow.expr import BinOp, Col, Lit, UnOp
from diffflow.operators.reducers import AggregateReducer, DistinctReducer
from diffflow.operators.rounds import codes as C

COMPILED = "compiled rounds for small deltas"


class NotLowered(Exception):
    """Why a loop keeps the general path (a sentence naming the operator)."""


class LoopProgram:
    """A loop's operators as the round kernel's tables (see :mod:`diffflow.operators.rounds`).

    ``node_ids[i]`` is the graph node of program node ``i`` (construction order);
    ``traces`` lists ``("arrange" | "reduce", node id)``: the spine each trace index reads
    (an arrange's, or a distinct's output).
    """

    def __init__(self, scope, node_ids, nodes, aggs, consumers, readers, orders, sources, code,
                 code_ptr, traces, trace_kk, trace_width, row_width):
        self.scope, self.node_ids = scope, node_ids
        self.nodes, self.aggs = nodes, aggs
        self.consumers_ptr, self.consumers = consumers
        self.readers_ptr, self.readers = readers
        self.orders, self.sources, self.code, self.code_ptr = orders, sources, code, code_ptr
        self.traces, self.trace_kk, self.trace_width = traces, trace_kk, trace_width
        self.row_width = row_width

    def kind(self, i: int) -> int:
        return int(self.nodes[i, 0])


def loop_paths(graph, symbols=None, fused=None) -> list:
    """``(scope, LoopProgram or None, why)`` for every loop of ``graph``, outermost first
    (``fused``: as for :func:`lower_loop`)."""
    found = []
    for scope in _loop_scopes(graph):
        try:
            found.append((scope, lower_loop(graph, scope, symbols, fused), COMPILED))
        except NotLowered as why:
            found.append((scope, None, str(why)))
    return found


def describe_loop_paths(graph, symbols=None, note: str | None = None) -> list:
    """Lines saying which path each loop's rounds take and why (``note``: a caveat for
    every loop, e.g. a runtime that keeps the general path); empty without loops.

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(); s = flow.input("s", ["x"]).select(x=dd.col("x") / 1)
    >>> _ = s.iterate(lambda c: s.concat(c.select(x=dd.col("x") / 2)), name="halve").output()
    >>> for line in describe_loop_paths(flow.graph): print(line)  # doctest: +ELLIPSIS
    loop 'halve' (built at ...): general path: select (node ..., built at ...) computes a float ...
    """
    lines = []
    for scope, program, why in loop_paths(graph, symbols):
        path = why if program is not None else f"general path: {why}"
        if program is not None and note:
            path = f"{path} ({note})"
        lines.append(f"{scope.describe()}: {path}")
    return lines


def _loop_scopes(graph) -> list:
    scopes = {}
    for node in graph.nodes:
        if node.scope is not None and node.scope.parent is not None:
            scopes.setdefault(node.scope.id, node.scope)
    return [scopes[k] for k in sorted(scopes)]


def lower_loop(graph, scope, symbols=None, fused=None) -> LoopProgram:
    """The program of one loop scope; raises :class:`NotLowered` saying why it has none.

    ``fused`` maps joins to the pure projections reading them that the engine fuses (the
    join writes the projected columns, the projection passes them on:
    ``runtime.engine.fused_projections``); the program does the same, so the rows waiting
    between the two are the same on both paths.
    """
    fused = fused or {}
    passing = set(fused.values())
    if scope.dim != 2:
        raise NotLowered("a loop nested in another loop (only outermost loops compile)")
    nodes = list(graph.nodes)
    consumers = graph.consumers()
    members = [n for n in nodes if n.scope is scope]
    if any(n.scope is not None and n.scope is not scope and scope in n.scope.ancestors()
           for n in nodes):
        raise NotLowered("it holds a nested loop")
    member_ids = {n.id for n in members}
    exits = [n for n in nodes if n.kind == "leave" and n.inputs and n.inputs[0] in member_ids]
    chosen = sorted(members + exits, key=lambda n: n.id)
    index = {n.id: i for i, n in enumerate(chosen)}
    rows = []
    code_rows, code_ptr = [], [0]
    orders, sources, aggs = [], [], []
    traces, trace_kk, trace_width = [], [], []
    trace_of = {}
    for node in chosen:
        width = node.schema.width
        in_width = node.input_widths[0] if node.input_widths else 0
        kind = node.kind
        row = [0] * C.NODE_COLUMNS
        if kind in ("concat", "negate", "enter"):
            row[:3] = [{"concat": C.CONCAT, "negate": C.NEGATE, "enter": C.ENTER}[kind],
                       width, width]
        elif kind == "leave":
            row[:3] = [C.EXIT, width, width]
        elif kind == "feedback":
            limit = scope.max_rounds
            row[:4] = [C.FEEDBACK, width, width, -1 if limit is None else int(limit)]
        elif kind == "select" and node.id in passing:
            row[:3] = [C.CONCAT, width, width]  # (its join wrote the projected columns)
        elif kind == "select":
            first = len(code_ptr) - 1
            exprs = node.params.get("exprs")
            plan = node.params.get("plan")
            schema = node.params.get("input_schema")
            if plan is not None:
                for j in plan:
                    code_rows.append((C.X_COL, int(j)))
                    code_ptr.append(len(code_rows))
            else:
                for expr in exprs:
                    _code(expr, schema, symbols, code_rows, node)
                    code_ptr.append(len(code_rows))
            row[:4] = [C.SELECT, in_width, width, first]
        elif kind == "filter":
            first = len(code_ptr) - 1
            _code(node.params["predicate"], node.params["input_schema"], symbols, code_rows,
                  node)
            code_ptr.append(len(code_rows))
            row[:4] = [C.FILTER, in_width, width, first]
        elif kind == "arrange":
            order = [int(c) for c in node.params["column_order"]]
            trace_of[node.id] = len(traces)
            traces.append(("arrange", node.id))
            trace_kk.append(int(node.params["key_width"]))
            trace_width.append(width)
            row[:6] = [C.ARRANGE, in_width, width, trace_of[node.id],
                       int(node.params["key_width"]), len(orders)]
            orders.extend(order)
        elif kind == "join":
            left, right = node.inputs
            if left == right:
                raise NotLowered(f"{node.describe()} joins an arrangement with itself")
            kk = int(node.params["key_width"])
            for side in (left, right):
                if nodes[side].kind != "arrange" or side not in index:
                    raise NotLowered(f"{node.describe()} reads {nodes[side].describe()}, "
                                     "not an arrangement of this loop")
                if int(nodes[side].params["key_width"]) != kk:
                    raise NotLowered(f"{node.describe()} joins on part of an arrangement's key")
            perm = np.asarray(node.params["perm"], np.int64)
            if node.id in fused:
                perm = perm[np.asarray(nodes[fused[node.id]].params["plan"], np.int64)]
            lw = nodes[left].schema.width
            row[:8] = [C.JOIN, 0, len(perm), index[left], index[right], kk, len(sources), lw]
            sources.extend(np.where(perm < lw, perm, perm + kk).tolist())
        elif kind == "reduce":
            reducer = node.params["reducer"]
            kk = int(node.params["key_width"])
            source = nodes[node.inputs[0]]
            if source.kind != "arrange" or int(source.params["key_width"]) != kk:
                raise NotLowered(f"{node.describe()} does not read an arrangement by its key")
            trace_of[node.id] = len(traces)
            traces.append(("reduce", node.id))
            trace_kk.append(kk)
            trace_width.append(width)
            if type(reducer) is DistinctReducer:
                if kk != source.schema.width:
                    raise NotLowered(f"{node.describe()} reads a key narrower than its rows")
                row[:6] = [C.DISTINCT, kk, kk, None, trace_of[node.id], kk]
            else:
                row[:8] = [C.AGGREGATE, source.schema.width, width, None, trace_of[node.id],
                           kk, len(aggs), 0]
                row[7] = _aggregates(reducer, kk, node, aggs)
        else:
            raise NotLowered(f"{node.describe()} has no compiled form")
        rows.append(row)
    # a distinct's input trace, the readers of each arrangement, and every consumer
    readers: list = [[] for _ in chosen]
    for i, node in enumerate(chosen):
        if node.kind == "reduce":
            source = node.inputs[0]
            if source not in index or nodes[source].kind != "arrange":
                raise NotLowered(f"{node.describe()} does not read an arrangement of this loop")
            rows[i][3] = trace_of[source]
            readers[index[source]].append((i, 2))
        elif node.kind == "join":
            readers[index[node.inputs[0]]].append((i, 0))
            readers[index[node.inputs[1]]].append((i, 1))
    edges: list = [[] for _ in chosen]
    for i, node in enumerate(chosen):
        if node.kind == "leave":
            continue  # (what leaves goes back to the engine)
        for consumer, port in consumers[node.id]:
            if consumer not in index:
                raise NotLowered(f"{nodes[consumer].describe()} reads the loop from outside "
                                 "without leaving it")
            if node.kind == "arrange":
                if nodes[consumer].kind not in ("join", "reduce"):
                    raise NotLowered(f"{nodes[consumer].describe()} reads an arrangement")
                continue  # (arrangements feed their readers through the traces)
            edges[i].append((index[consumer], port))
    table = np.array(rows, np.int64).reshape(-1, C.NODE_COLUMNS)
    return LoopProgram(scope, [n.id for n in chosen], table, np.array(aggs, np.int64).reshape(-1, 2),
                       _csr(edges), _csr(readers), np.array(orders, np.int64),
                       np.array(sources, np.int64),
                       np.array(code_rows, np.int64).reshape(-1, 2),
                       np.array(code_ptr, np.int64), traces, np.array(trace_kk, np.int64),
                       np.array(trace_width, np.int64),
                       max([1] + [max(r[1], r[2]) for r in rows]))


def _aggregates(reducer, kk: int, node, out: list) -> int:
    """Append the ``(kind, input column)`` rows of an aggregate; how many (NotLowered for a
    reducer or a type without a compiled form)."""
    if not isinstance(reducer, AggregateReducer) or not reducer.aggs:
        raise NotLowered(f"{node.describe()} has no compiled form yet (a reducer other than "
                         "distinct, count, sum, min and max)")
    for how, column, typ in reducer.aggs:
        if typ != "int" or how not in C.AGG_KINDS:
            raise NotLowered(f"{node.describe()} computes {how} over a {typ} column, which "
                             "has no compiled form yet")
        out.append((C.AGG_KINDS.index(how), 0 if column is None else kk + int(column)))
    return len(reducer.aggs)


def _csr(lists):
    ptr = np.zeros(len(lists) + 1, np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    flat = np.array([pair for x in lists for pair in x], np.int64).reshape(-1, 2)
    return ptr, flat


_BINARY = {"+": C.X_ADD, "-": C.X_SUB, "*": C.X_MUL, "==": C.X_EQ, "!=": C.X_NE,
           "<": C.X_LT, "<=": C.X_LE, ">": C.X_GT, ">=": C.X_GE, "&": C.X_AND, "|": C.X_OR,
           "max": C.X_MAX, "min": C.X_MIN}
_UNARY = {"-": C.X_NEG, "abs": C.X_ABS, "~": C.X_NOT, "wrap32": C.X_WRAP32,
          "wrapu32": C.X_WRAPU32}


#: the deepest expression the kernel evaluates (its stack's size)
STACK = 64


def _code(expr, schema, symbols, out: list, node) -> None:
    """Append ``expr``'s postfix code to ``out`` (NotLowered beyond the kernel's stack)."""
    start, depth, deepest = len(out), 0, 0
    _expression(expr, schema, symbols, out, node)
    for op, _ in out[start:]:
        depth += 1 if op in (C.X_COL, C.X_LIT) else 0 if op in _UNARY.values() else -1
        deepest = max(deepest, depth)
    if deepest > STACK:
        raise NotLowered(f"{node.describe()} computes an expression nested deeper than {STACK}")


def _expression(expr, schema, symbols, out: list, node) -> None:
    """Append ``expr``'s postfix code to ``out``; NotLowered for what has no compiled form."""
    if expr.infer(schema) == "float":  # (checked when the graph was built: it types)
        raise NotLowered(f"{node.describe()} computes a float ({expr!r})")
    if isinstance(expr, Col):
        out.append((C.X_COL, schema.index(expr.name)))
    elif isinstance(expr, Lit):
        value = expr.value
        if isinstance(value, str):
            if symbols is None:
                raise NotLowered(f"{node.describe()} compares with a string and no symbols")
            value = symbols.encode_one(value)
        value = int(value)
        if not -(1 << 63) <= value < (1 << 63):
            raise NotLowered(f"{node.describe()} holds a constant beyond 64 bits")
        out.append((C.X_LIT, value))
    elif isinstance(expr, BinOp) and expr.op in _BINARY:
        _expression(expr.left, schema, symbols, out, node)
        _expression(expr.right, schema, symbols, out, node)
        out.append((_BINARY[expr.op], 0))
    elif isinstance(expr, UnOp) and expr.op in _UNARY:
        _expression(expr.operand, schema, symbols, out, node)
        out.append((_UNARY[expr.op], 0))
    else:
        raise NotLowered(f"{node.describe()} computes {expr!r}, which has no compiled form")
