"""A plain, slow, obviously-correct Datalog evaluator used as the tests' oracle.

It interprets the analysed program (the same parse and checks the compiler
sees) tuple by tuple with nested loops, stratum by stratum, iterating each
stratum from empty relations until nothing changes.  It shares no code with
the compiler or the engine.  Arithmetic follows Soufflé: 32-bit wrapping
``number`` and ``unsigned``, ``/`` and ``%`` truncating toward zero.

The type each term is evaluated in is read from analysis' record
(``clause.term_types``), as the compiler reads it: type inference is
analysis' job (tests/datalog/test_errors.py checks it); this oracle checks
that the dataflow computes what the typed rules say.
"""
from __future__ import annotations

import math
import operator
import re

from diffflow.datalog.passes import analyse
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.parser import parse
from diffflow.datalog.values.structures import AdtValue


def evaluate(source: str, facts: dict, max_rounds: int = 10_000, functors=None) -> dict:
    """``{relation: set of tuples}`` for ``facts`` (``{relation: iterable of tuples}``);
    ``functors`` binds ``.functor`` declarations (the user's own Python functions)."""
    analysed = analyse(parse(source), source, functors)
    values: dict = {}
    base = {name: set() for name in analysed.relations}
    for name, relation in analysed.relations.items():
        for rule in relation.facts:
            base[name].add(tuple(a.value for a in rule.head.args))
    for name, rows in facts.items():
        base[name] |= {tuple(r) for r in rows}
    for stratum in analysed.strata:
        current = {n: set() for n in stratum.relations}
        for _ in range(max_rounds):
            env = dict(values)
            env.update(current)
            new = {}
            for n in stratum.relations:
                relation = analysed.relations[n]
                rows = set(base[n])
                for clause in relation.clauses:
                    rows |= _clause(clause, env, relation)
                new[n] = _declared(relation, rows, env,
                                   current[n] if stratum.recursive else None)
            if new == current:
                break
            current = new
        else:
            raise RuntimeError(f"stratum {stratum.relations} did not converge")
        values.update(current)
    return values


def _declared(relation, rows, env, previous) -> set:
    """What the declaration adds to the rules' rows: eqrel closure, subsumption (a row
    dominated by another row goes), choice domains (a greedy pass in value order),
    .limitsize (the first n in value order).  Value order is Python's tuple order: symbols
    are str here, compared by code point, which is UTF-8 byte order.  Inside recursion
    (``previous``: the last round's rows) choices made in earlier rounds stay and new ones
    are made among candidates whose domain values are still free."""
    if relation.eqrel:
        rows = _equivalence_closure(rows)
    if relation.dominated and previous is not None:
        rows = rows | previous  # inside recursion, what was kept stays a candidate
    if relation.dominated:
        scope = dict(env)
        scope[relation.name] = rows
        dominated = set()
        for clause in relation.dominated:  # each says "differs somewhere" itself
            dominated |= _clause(clause, scope, relation)
        rows = rows - dominated
    if relation.choice:
        taken = [{tuple(row[i] for i in domain) for row in previous or ()}
                 for domain in relation.choice]
        kept = set(previous or ())
        for row in sorted(rows):
            keys = [tuple(row[i] for i in domain) for domain in relation.choice]
            if not any(k in t for k, t in zip(keys, taken)):
                kept.add(row)
                for k, t in zip(keys, taken):
                    t.add(k)
        rows = kept
    if relation.limit is not None and previous is not None:
        rows = previous | set(sorted(rows - previous)[:relation.limit - len(previous)])
    elif relation.limit is not None:
        rows = set(sorted(rows)[:relation.limit])
    return rows


def _equivalence_closure(pairs) -> set:
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for a, b in pairs:
        parent[find(a)] = find(b)
    classes = {}
    for x in list(parent):
        classes.setdefault(find(x), []).append(x)
    return {(a, b) for members in classes.values() for a in members for b in members}


def _clause(clause, env, relation) -> set:
    args = clause.head.args
    numbered = [i for i, arg in enumerate(args) if _counters(arg)]
    rows = {}  # the row to number -> a binding that gives it
    for binding in _solve(clause.literals, [{}], env, clause):
        values, seen = [], set()
        for i, (arg, kind) in enumerate(zip(args, relation.types)):
            if i in numbered:  # autoinc() in it: the row holds its variables' values
                for var in ast.term_variables(arg):
                    if var.name not in seen:
                        seen.add(var.name)
                        values.append(binding[var.name])
                continue
            value = _term(arg, binding, env, clause)
            if value is _NONE:  # min/max over nothing in the head
                break
            values.append(_convert(value, kind))
        else:
            rows.setdefault(tuple(values), binding)
    # autoinc(): the rows' rank in Python's order, times stride plus offset
    out = set()
    for rank, key in enumerate(sorted(rows) if numbered else rows):  # (records hold None)
        binding = dict(rows[key])
        for i in numbered:
            for node in _counters(args[i]):
                binding[("#autoinc", id(node))] = rank * node.counter[0] + node.counter[1]
        out.add(tuple(_convert(_term(arg, binding, env, clause), kind)
                      for arg, kind in zip(args, relation.types)))
    return out


def _counters(term) -> list:
    return [n for n in ast.walk_terms(term) if isinstance(n, ast.Functor) and n.name == "autoinc"]


def _convert(value, kind):
    if kind == "float":
        return float(value)
    if kind == "number":
        return _wrap32(value)
    if kind == "unsigned":
        return value % 2**32
    return value


def _solve(literals, bindings, env, clause):
    """All bindings (a list: duplicates matter for aggregates) satisfying ``literals``."""
    atoms = [l for l in literals if isinstance(l, ast.Atom)]
    rest = [l for l in literals if not isinstance(l, ast.Atom)]
    for atom in atoms:
        bindings = [b2 for b in bindings for b2 in _match(atom, b, env[atom.relation])]
    while rest:
        for lit in rest:
            ready = _ready(lit, bindings, clause)
            if ready:
                break
        else:
            raise AssertionError(f"nothing ready among {rest}")
        rest.remove(lit)
        bindings = [b2 for b in bindings for b2 in _apply(lit, b, env, clause)]
    return bindings


def _ready(lit, bindings, clause) -> bool:
    if not bindings:
        return True
    bound = set(bindings[0])
    if isinstance(lit, ast.Negation):
        return {a.name for a in lit.atom.args if isinstance(a, ast.Var)} <= bound
    if isinstance(lit, ast.Comparison):
        free = {v.name for v in ast.term_variables(lit.left, lit.right)} - bound
        if not free:
            return True
        return lit.op == "=" and len(free) == 1 and (
            (isinstance(lit.left, ast.Var) and lit.left.name in free) or
            (isinstance(lit.right, ast.Var) and lit.right.name in free))
    return True


def _match(atom, binding, rows):
    for row in rows:
        b = dict(binding)
        ok = True
        for arg, value in zip(atom.args, row):
            if isinstance(arg, ast.Var):
                if arg.name in b:
                    if b[arg.name] != value:
                        ok = False
                        break
                else:
                    b[arg.name] = value
            elif isinstance(arg, (ast.Number, ast.Float, ast.String)):
                if arg.value != value:
                    ok = False
                    break
        if ok:
            yield b


def _range(begin, end, step=None):
    """Soufflé's range(begin, end[, step]) by counting (like Python's slices)."""
    if step is None:
        step = (end > begin) - (end < begin)
    if step == 0:
        return [begin] if begin != end else []
    out, k = [], 0
    while True:
        value = begin + k * step
        if (step > 0 and value >= end) or (step < 0 and value <= end):
            return out
        out.append(value)
        k += 1


def _apply(lit, binding, env, clause):
    if isinstance(lit, ast.Boolean):
        return [binding] if lit.value else []
    sides = ((lit.left, lit.right), (lit.right, lit.left)) \
        if isinstance(lit, ast.Comparison) else ()
    for gen, other in sides:
        if isinstance(gen, ast.Functor) and gen.name == "range":
            args = [_term(a, binding, env, clause) for a in gen.args]
            values = [_convert(v, clause.type_of(gen)) for v in _range(*args)]
            if isinstance(other, ast.Var) and other.name not in binding:
                return [{**binding, other.name: v} for v in values]
            return [binding] if _term(other, binding, env, clause) in values else []
    if isinstance(lit, ast.Boolean):
        return [binding] if lit.value else []
    if isinstance(lit, ast.Negation):
        return [] if any(True for _ in _match(lit.atom, binding, env[lit.atom.relation])) \
            else [binding]
    for target, other in ((lit.left, lit.right), (lit.right, lit.left)):
        if lit.op == "=" and isinstance(target, ast.Var) and target.name not in binding:
            value = _term(other, binding, env, clause)
            if value is _NONE:
                return []
            b = dict(binding)
            b[target.name] = _convert(value, clause.type_of(target))
            return [b]
    left = _term(lit.left, binding, env, clause)
    right = _term(lit.right, binding, env, clause)
    if left is _NONE or right is _NONE:
        return []
    if lit.op.lstrip("!") == "contains":
        holds = (left in right) != lit.op.startswith("!")
    elif lit.op.lstrip("!") == "match":
        holds = _valid_regex(left) and \
            (re.fullmatch(left, right) is not None) != lit.op.startswith("!")
    else:
        holds = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
                 ">": operator.gt, ">=": operator.ge}[lit.op](left, right)
    return [binding] if holds else []


_NONE = object()  # min/max over nothing: the rule does not fire


def _wrap32(v):
    return (v + 2**31) % 2**32 - 2**31


def _term(node, binding, env, clause):
    if isinstance(node, ast.Functor) and node.name == "autoinc":  # (numbered by _clause)
        return binding[("#autoinc", id(node))]
    kind = clause.type_of(node)
    if isinstance(node, ast.Var):
        return binding[node.name]
    if isinstance(node, (ast.Number, ast.Float, ast.String)):
        return float(node.value) if kind == "float" and isinstance(node, ast.Number) \
            else node.value
    if isinstance(node, ast.AggregateTerm):
        return _aggregate(node, binding, env, clause)
    if isinstance(node, ast.Nil):
        return None
    if isinstance(node, (ast.RecordTerm, ast.BranchTerm)):
        parts = tuple(_term(a, binding, env, clause) for a in node.args)
        if _NONE in parts:
            return _NONE
        return parts if isinstance(node, ast.RecordTerm) else AdtValue(node.branch, parts)
    if isinstance(node, ast.FieldAccess):
        return _field(node, _term(node.record, binding, env, clause))
    if isinstance(node, ast.Negative):
        value = _term(node.operand, binding, env, clause)
        return _NONE if value is _NONE else _fix(-value, kind)
    if isinstance(node, ast.Functor):
        args = [_term(a, binding, env, clause) for a in node.args]
        if any(a is _NONE for a in args):
            return _NONE
        if node.user is not None:  # @f: the user's function, its result in the declared type
            return node.user.scalar(args)
        return _functor(node.name, args, kind, [clause.type_of(a) for a in node.args])
    a = _term(node.left, binding, env, clause)
    b = _term(node.right, binding, env, clause)
    if a is _NONE or b is _NONE:
        return _NONE
    op = node.op
    if kind == "symbol":  # + of symbols: the two joined
        return a + b
    if kind == "float":
        return {"+": a + b, "-": a - b, "*": a * b}.get(op) if op in "+-*" else \
            (a / b if op == "/" else math.fmod(a, b) if op == "%" else a ** b)
    if op == "/":
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return _fix(q, kind)
    if op == "%":
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return _fix(a - b * q, kind)
    if op == "^":
        return _fix(a ** b, kind)
    return _fix({"+": a + b, "-": a - b, "*": a * b}[op], kind)


def _field(node, value):
    """A record is a tuple (nil: None), an ADT value an AdtValue; index -1 tests the shape."""
    if node.branch is None:
        matches = value is not None
        fields = value
    else:
        matches = isinstance(value, AdtValue) and value.branch == node.branch
        fields = value.args if matches else None
    if node.index == -1:
        return 1 if matches else 0
    return fields[node.index] if matches else 0


def _valid_regex(pattern):
    """Soufflé's regexes are C++ ECMAScript ones: a brace starting no {n}, {n,} or {n,m}
    and a group (? other than (?: (?= (?! are invalid there; an invalid regex makes both
    match and !match false."""
    plain = re.sub(r"\\.|\[(\\.|[^]])*\]", "", pattern)  # (escapes and classes left out)
    if re.search(r"\{(?![0-9]+(,[0-9]*)?\})|\(\?[^:=!]", plain):
        return False
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _functor(name, args, kind, arg_kinds):
    """Soufflé's intrinsic functors, one row at a time: strings measured in UTF-8 bytes,
    32-bit two's complement for number and unsigned."""
    if name == "cat":
        return "".join(args)
    if name == "strlen":
        return len(args[0].encode("utf-8"))
    if name == "substr":
        data, start, length = args[0].encode("utf-8"), args[1], args[2]
        if not 0 <= start <= len(data):
            return ""
        return data[start:] .decode("utf-8", "replace") if length < 0 else \
            data[start:start + length].decode("utf-8", "replace")
    if name == "to_number":
        return int(args[0].strip().split()[0])
    if name == "to_string":
        return "%f" % args[0] if arg_kinds[0] == "float" else \
            args[0] if arg_kinds[0] == "symbol" else "%d" % args[0]
    if name in ("itou", "utoi"):
        return _fix(args[0], "unsigned" if name == "itou" else "number")
    if name in ("itof", "utof"):
        return float(args[0])
    if name in ("ftoi", "ftou"):
        return _fix(math.trunc(args[0]), "number" if name == "ftoi" else "unsigned")
    if name == "as":
        return _fix(args[0], kind)
    if name == "min":
        return min(args)
    if name == "max":
        return max(args)
    if name == "abs":
        return _fix(abs(args[0]), kind)
    bits = [a % 2**32 for a in args]  # the 32-bit patterns
    if name in ("land", "lor", "lxor"):
        a, b = args[0] != 0, args[1] != 0
        return int(a and b if name == "land" else a or b if name == "lor" else a != b)
    if name == "lnot":
        return int(args[0] == 0)
    if name == "bnot":
        return _fix(~bits[0], kind)
    if name == "band":
        return _fix(bits[0] & bits[1], kind)
    if name == "bor":
        return _fix(bits[0] | bits[1], kind)
    if name == "bxor":
        return _fix(bits[0] ^ bits[1], kind)
    shift = args[1] % 32 if len(args) > 1 else 0  # (Soufflé masks shift amounts with 31)
    if name == "bshl":
        return _fix(bits[0] << shift, kind)
    if name == "bshru":
        return _fix(bits[0] >> shift, kind)
    if name == "bshr":
        signed = bits[0] - 2**32 if kind == "number" and bits[0] >= 2**31 else bits[0]
        return _fix(signed >> shift, kind)
    raise AssertionError(name)


def _fix(value, kind):
    if kind == "number":
        return _wrap32(value)
    if kind == "unsigned":
        return value % 2**32
    return value


def _aggregate(agg, binding, env, clause):
    outer = {k: v for k, v in binding.items()}
    solutions = _solve(list(agg.body), [outer], env, clause)
    if _materialised(agg):  # the distinct bindings of its own named variables (Soufflé's
        # relation of them), not its inner aggregates' local ones
        own = sorted({v.name for lit in agg.body
                      for v in ast.term_variables(*ast.literal_terms(lit))} | set(outer))
        solutions = list({tuple(s[v] for v in own): s for s in solutions}.values())
    if agg.function == "count":
        return len(solutions)
    kind = clause.type_of(agg)
    values = [_term(agg.target, s, env, clause) for s in solutions]
    if agg.function == "sum":
        return _fix(sum(values), kind) if values else (0.0 if kind == "float" else 0)
    if not values:
        return _NONE
    if agg.function == "mean":  # (exact: the test programs average small integers)
        return sum(float(v) for v in values) / len(values)
    return min(values) if agg.function == "min" else max(values)


def _materialised(agg) -> bool:
    """Soufflé's rule: several atoms, an aggregate or range() inside, or a variable
    repeated in the one atom."""
    atoms = [lit for lit in agg.body if isinstance(lit, ast.Atom)]
    terms = [*([agg.target] if agg.target is not None else []),
             *(t for lit in agg.body for t in ast.literal_terms(lit))]
    inside = [n for n in ast.walk_terms(*terms, aggregates=True)
              if isinstance(n, ast.AggregateTerm) or
              (isinstance(n, ast.Functor) and n.name == "range")]
    names = [a.name for atom in atoms for a in atom.args if isinstance(a, ast.Var)]
    return len(atoms) > 1 or bool(inside) or len(names) != len(set(names))
