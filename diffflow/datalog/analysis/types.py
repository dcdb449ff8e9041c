"""Types: ``.type`` declarations resolved to base types, and the type of every term.

This module is the one place that decides types.  Analysis (which is a
:class:`TermTyping`) checks every term with :meth:`TermTyping.expr_type` and
records, per clause, the base type each term is evaluated in
(:attr:`~diffflow.datalog.analysis.analysed.Clause.term_types`, a dict from ``id(node)`` to
``number``, ``unsigned``, ``float`` or ``symbol``).  The compiler, the folding
of constant facts and the tests' reference evaluator read that record.

A term is evaluated in the type of the expression it belongs to: a head
argument in its attribute's type, both sides of a comparison (or an
assignment ``x = e``) in the type they unify to, an integer constant taking the
type of what it is combined with (a comparison of plain integers is a
``number`` one).  ``+`` of two symbols joins them, as ``cat`` does (Soufflé's too).  ``sum``, ``min`` and ``max`` have their target's type, so the
target is evaluated in the type the aggregate is used in; ``count`` is a
``number``.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".decl e(x: float)\\n.decl r(x: float)\\nr(x * 2) :- e(x), x < 3."))
>>> (clause,) = a.relations["r"].clauses
>>> [clause.term_types[id(n)] for n in ast.walk_terms(*clause.head.args)]
['float', 'float', 'float']
>>> comparison = clause.literals[1]
>>> clause.term_types[id(comparison.right)]
'float'
"""
from __future__ import annotations

from types import MappingProxyType

from diffflow.datalog.analysis.difference_warnings import DifferenceWarnings
from diffflow.datalog.analysis.kinds import LITERAL, NIL, RECORD, Unknown, _article, kind_name
from diffflow.datalog.analysis.record_types import RecordTyping
from diffflow.datalog.syntax import ast, intrinsics
from diffflow.datalog.syntax.errors import DatalogError, did_you_mean
from diffflow.datalog.syntax.intrinsics import BASE_TYPES, NUMBER_RANGE, UNSIGNED_RANGE

_CONSTANTS = (ast.Number, ast.Float, ast.String)
_TYPE_HINT = "use number, unsigned, float, symbol or a .type you declare"


def resolve_types(declarations: list, error) -> dict:
    """``{name: base type}`` for ``.type`` declarations (subtypes, aliases, unions of one base).

    ``error(message, node)`` makes the located error.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> resolve_types(parse(".type Id <: number\\n.type Key = Id").types, None)
    {'Id': 'number', 'Key': 'number'}
    """
    pending: dict = {}
    resolved: dict = {}
    for t in declarations:
        if t.name in BASE_TYPES:
            raise error(f"type {t.name!r} is built in and cannot be redefined", t)
        if t.name in pending:
            first = pending[t.name]
            raise error(f"type {t.name!r} is declared twice (first at line {first.line})", t,
                        hint="give one of them another name")
        pending[t.name] = t

    def resolve(name, node, seen=()):
        if name in BASE_TYPES:
            return name
        if name in resolved:
            return resolved[name]
        if name in seen:
            raise error(f"type {name!r} is defined in terms of itself", node)
        decl = pending.get(name)
        if decl is None:
            raise error(f"unknown type {name!r}{did_you_mean(name, [*BASE_TYPES, *pending])}",
                        node, hint=_TYPE_HINT)
        if decl.base in ("record", "adt") and not decl.alternatives:
            resolved[name] = name  # (a record type or an ADT is its own base type)
            return name
        members = decl.alternatives or [decl.base]
        bases = {resolve(m, decl, (*seen, name)) for m in members}
        if not decl.alternatives and bases <= {r for r in resolved if resolved[r] == r}:
            raise error(f"subtype {name!r} of {decl.base!r}, which is a record or ADT type: "
                        f"Soufflé allows subtypes of number, unsigned, float and symbol "
                        f"(and their subtypes) only", decl,
                        hint=f"write .type {name} = {decl.base} for another name of it")
        if len(members) > 1 and not bases <= set(BASE_TYPES):
            raise error(f"union type {name!r} has a record or ADT member; unions are of "
                        f"subtypes of one base type (as in Soufflé)", decl,
                        hint="use an algebraic data type (.type T = A {...} | B {...})")
        if len(bases) != 1:
            raise error(f"union type {name!r} mixes {sorted(bases)}; unions are of subtypes "
                        f"of one base type (as in Soufflé)", decl)
        resolved[name] = bases.pop()
        return resolved[name]

    for t in declarations:
        resolve(t.name, t)
    return resolved


def base_type(name: str, node, types: dict, error) -> str:
    """The base type of a type name, given the resolved ``.type`` declarations ``types``.

    >>> base_type("Id", None, {"Id": "symbol"}, None), base_type("float", None, {}, None)
    ('symbol', 'float')
    """
    if name in BASE_TYPES:
        return name
    if name in types:
        return types[name]
    raise error(f"unknown type {name!r}{did_you_mean(name, [*BASE_TYPES, *types])}", node,
                hint=_TYPE_HINT)


def unify(typing, node, left, right, what="arithmetic"):
    """The type of ``left`` and ``right`` combined at ``node`` (``literal`` gives way).

    >>> unify(TermTyping(), None, LITERAL, "float"), unify(TermTyping(), None, LITERAL, LITERAL)
    ('float', '[literal]')
    """
    if left is None or right is None:
        raise Unknown()
    structures = typing.structures
    if left in (RECORD, NIL) or right in (RECORD, NIL):
        other = right if left in (RECORD, NIL) else left
        if other in (RECORD, NIL):
            return RECORD if RECORD in (left, right) else NIL
        if other in structures and structures[other].is_record:
            return other
        raise typing.error(f"type clash in {what}: a record where {_article(kind_name(other))}"
                           f" is expected", node,
                           hint="nil and [...] are values of record types" if other in
                           structures else None)
    if (left in structures or right in structures) and left != right:
        raise typing.error(f"type clash in {what}: {kind_name(left)} and {kind_name(right)}",
                           node, hint="a record or ADT value compares only with values of "
                                      "its own type")
    if LITERAL in (left, right) and "symbol" in (left, right):
        raise typing.error(f"type clash in {what}: a number and a symbol", node,
                           hint='write symbols in double quotes, e.g. "a"')
    if left == LITERAL:
        return right
    if right == LITERAL or left == right:
        return left
    op = getattr(node, "op", None) or getattr(node, "name", "?")  # (a Functor: its name)
    raise typing.error(f"type clash in {what}: {left} {op} {right}", node,
                       hint="both sides need the same type; diffflow, like Soufflé, "
                            "does not convert between number, unsigned, float and symbol")


class TermTyping(RecordTyping, DifferenceWarnings):
    """Type inference and checks of terms, and the record of each term's type.

    The analyser is a ``TermTyping`` (it supplies ``error``, ``relations`` and
    ``synthetic``); on its own, ``TermTyping()`` types terms without a program
    (constant terms, doctests).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(-7 / 2u).").rules
    >>> TermTyping().expr_type(rule.head.args[0], {})
    'unsigned'
    """
    relations = MappingProxyType({})  # name -> Relation, for the types of atom arguments
    structures = MappingProxyType({})  # record and ADT type name -> Structure
    synthetic = frozenset()  # ids of comparisons analysis made from expressions in atoms

    def error(self, message, node, hint=None):
        """A DatalogError at ``node`` (the analyser's also shows the program's line)."""
        return DatalogError(message, None, "<program>", getattr(node, "line", None),
                            getattr(node, "column", None), hint)

    # -- inference and checks ------------------------------------------------------------
    def expr_type(self, node, types, strict=True):
        """Base type of a term; ``LITERAL`` for an untyped integer, None for a free var."""
        if isinstance(node, ast.Var):
            kind = types.get(node.name)
            if kind is None and strict:
                raise Unknown()
            return kind
        if isinstance(node, ast.Number):
            return "unsigned" if node.unsigned else LITERAL
        if isinstance(node, ast.Float):
            return "float"
        if isinstance(node, ast.String):
            return "symbol"
        if isinstance(node, ast.Wildcard):
            raise self.error("'_' is only allowed as an atom argument", node)
        if isinstance(node, ast.RecordTerm):
            for arg in node.args:
                if not isinstance(arg, ast.Wildcard):
                    self.expr_type(arg, types, strict)
            return RECORD
        if isinstance(node, ast.Nil):
            return NIL
        if isinstance(node, ast.BranchTerm):
            return self.branch_type(node, types, strict)
        if isinstance(node, ast.FieldAccess):
            return self.field_type(node, types, strict)
        if isinstance(node, ast.AggregateTerm):
            if node.function == "count":
                return "number"
            if node.function == "mean":
                self.expr_type(node.target, types, strict)
                return "float"
            return self.expr_type(node.target, types, strict)
        if isinstance(node, ast.Negative):
            kind = self.expr_type(node.operand, types, strict)
            self.not_structured(kind, node, "unary minus")
            if kind == "symbol":
                raise self.error("unary minus of a symbol", node)
            if kind == "unsigned":
                raise self.error("unary minus of an unsigned value", node)
            return kind
        if isinstance(node, ast.BinaryOp):
            left = self.expr_type(node.left, types, strict)
            right = self.expr_type(node.right, types, strict)
            self.not_structured(left, node, f"arithmetic '{node.op}'")
            self.not_structured(right, node, f"arithmetic '{node.op}'")
            if "symbol" in (left, right) and (node.op != "+" or left != right):
                raise self.error(f"arithmetic '{node.op}' on a symbol", node,
                                 hint="+ joins two symbols (as cat does; Soufflé's too); "
                                      "to_string(x) makes a symbol of a number")
            return unify(self, node, left, right)
        if isinstance(node, ast.Functor):
            return self.functor_type(node, types, strict)
        raise AssertionError(node)

    def functor_type(self, node: ast.Functor, types, strict=True):
        """The type of a functor call, its arguments checked against its signature
        (:data:`~diffflow.datalog.values.intrinsics.SIGNATURES`); ``literal`` for a numeric one of
        plain integers (it takes the type it is used in, as ``+`` does)."""
        name = node.name
        if name == "as":
            return self.cast_type(node, types, strict)
        if node.user is not None:  # @f: its .functor declaration's types
            params, result = node.user.params, node.user.result
            if len(params) != len(node.args):
                raise self.error(f"{name} takes {len(params)} argument"
                                 f"{'s' * (len(params) != 1)}, got {len(node.args)}", node)
        else:
            params = intrinsics.parameters(name, len(node.args))
            if params is None:
                raise self.error(f"{name} takes {intrinsics.arity_text(name)}, got "
                                 f"{len(node.args)}", node)
            result = intrinsics.SIGNATURES[name][1]
        common = None  # (the type of the "T" arguments so far)
        generic = node.user is None  # ("T", "numeric": an intrinsic's; a user's are types)
        for position, (arg, param) in enumerate(zip(node.args, params), 1):
            got = self.expr_type(arg, types, strict)
            if generic and param == "any":  # (ord: of any value, a record's of its type)
                if got == RECORD:
                    raise self.error(f"{name} of [...]: its record type is not known", arg,
                                     hint=f"bind it to a variable of a record type first, "
                                          f"e.g. r = [a, b], R(r), {name}(r)")
                continue
            if generic:
                self.not_structured(got, arg, name)
            if generic and param == "T":
                if got == "symbol" and name not in ("min", "max"):  # (those: by text)
                    raise self.error(f"{name} of a symbol is not supported", arg,
                                     hint=f"{name} takes number, unsigned or float values")
                if got is None:
                    raise Unknown()
                common = got if common is None else \
                    unify(self, node, common, got, what=f"the arguments of {name}")
            elif generic and param == "numeric":
                if got == "symbol":
                    raise self.error(f"{name} needs a number, unsigned or float, got a symbol",
                                     arg)
            elif generic and param == "scalar":
                pass  # text to parse, or a numeric value to convert (not_structured: above)
            elif got is not None and not self.fits(got, param):
                raise self.error(f"argument {position} of {name} must be a {param}, but "
                                 f"this is {_article(kind_name(got))}", arg)
        if not generic or result != "T":
            return result
        if name in intrinsics.BITWISE and common == "float":
            raise self.error(f"{name} needs number or unsigned values, not float", node)
        return LITERAL if common is None else common

    def cast_type(self, node: ast.Functor, types, strict=True):
        """``as(x, T)``: ``x`` seen as a ``T`` -- between a type and its subtypes or aliases
        (same base type), and between number and unsigned (the 32-bit pattern kept)."""
        got = self.expr_type(node.args[0], types, strict)
        target = base_type(node.type_name, node, getattr(self, "types", {}) or {}, self.error)
        if self.is_structured(got) or target in self.structures:
            raise self.error(f"as(..., {node.type_name}): records and ADT values are built "
                             f"with [...] and $Branch(...), not cast", node)
        if got in (None, LITERAL) or got == target or {got, target} == {"number", "unsigned"}:
            return target
        raise self.error(f"as(..., {node.type_name}) of a {kind_name(got)}: diffflow casts "
                         f"only within one base type and between number and unsigned", node)

    def check_constant(self, node, kind):
        """A constant where a ``kind`` is expected: its type and 32-bit range."""
        if kind in self.structures:
            what = {ast.String: "a string", ast.Float: "a float"}.get(type(node), "a number")
            raise self.error(f"type clash: {what} where {_article(kind)} is expected", node,
                             hint="write a record as [a, b] (or nil) and an ADT value as "
                                  "$Branch(...)")
        if isinstance(node, ast.String):
            if kind != "symbol":
                raise self.error(f"type clash: a string where a {kind} is expected", node)
        elif isinstance(node, ast.Float):
            if kind != "float":
                raise self.error(f"type clash: a float where a {kind} is expected", node)
        elif isinstance(node, ast.Number):
            if kind == "symbol":
                raise self.error("type clash: a number where a symbol is expected", node,
                                 hint='write symbols in double quotes, e.g. "a"')
            if node.unsigned and kind == "number":
                raise self.error("type clash: an unsigned constant where a number is expected",
                                 node)
            low, high = UNSIGNED_RANGE if kind == "unsigned" else NUMBER_RANGE
            if kind != "float" and not low <= node.value <= high:
                raise self.error(f"{node.value} does not fit a 32-bit {kind}", node,
                                 hint="use unsigned (e.g. 4000000000u) or float for larger "
                                      "values" if kind == "number" else None)

    def check_literal_ranges(self, node, kind):
        """Integer constants inside a term must fit the term's 32-bit type."""
        own = self.term_types(node, kind)  # (a functor's arguments have their own types)
        ranges = {"number": NUMBER_RANGE, "unsigned": UNSIGNED_RANGE}
        bad = [n for n in ast.walk_terms(node) if isinstance(n, ast.Number) and
               own.get(id(n)) in ranges and not
               ranges[own[id(n)]][0] <= n.value <= ranges[own[id(n)]][1]]
        if bad:  # the rightmost is reported (as it always was)
            kind = own[id(bad[-1])]
            raise self.error(f"{bad[-1].value} does not fit a 32-bit {kind}", bad[-1],
                             hint="use unsigned (e.g. 4000000000u) or float for larger values"
                                  if kind == "number" else None)

    def check_comparison(self, c: ast.Comparison, left, right):
        """Sides of types ``left`` and ``right`` compared (or assigned) with ``c.op``."""
        if left is None or right is None:
            raise self.error("cannot infer the type of this comparison", c)
        what = "an expression inside an atom" if id(c) in self.synthetic else "comparison"
        kind = unify(self, c, left, right, what=what)
        if kind in (RECORD, NIL):
            raise self.error("cannot infer the record type of this comparison", c,
                             hint="compare with a variable of the record type")
        if kind in self.structures and c.op not in ("=", "!="):
            raise self.error(f"{c.op} of {kind} values: records and ADT values compare only "
                             f"with = and !=", c)
        self.check_literal_ranges(c.left, kind)
        self.check_literal_ranges(c.right, kind)
        if c.op.lstrip("!") in intrinsics.CONSTRAINTS:
            if kind != "symbol":
                raise self.error(f"{c.op.lstrip('!')} needs two symbols, got "
                                 f"{kind_name(kind)}s", c)
            if c.op.lstrip("!") == "match" and isinstance(c.left, ast.String):
                self._check_regex(c.left)
            return

    # -- the record ------------------------------------------------------------------------
    def comparison_type(self, c: ast.Comparison, var_types: dict) -> str:
        """The base type both sides of a (checked) comparison are evaluated in.

        >>> from diffflow.datalog.syntax.parser import parse
        >>> [TermTyping().comparison_type(c, {"x": "float"}) for c in
        ...  parse("r(1) :- 1 < 2, 1 < 2u, x > 1.").rules[0].body[0].literals]
        ['number', 'unsigned', 'float']
        """
        try:
            left = self.expr_type(c.left, var_types, strict=False)
            right = self.expr_type(c.right, var_types, strict=False)
            return kind_name(unify(self, c, left, right))
        except Unknown:  # only variables of unknown type: integers by default
            if any(isinstance(side, (ast.RecordTerm, ast.Nil, ast.BranchTerm, ast.FieldAccess))
                   for side in (c.left, c.right)):
                return None  # (a record's type is known only with its variables')
            return "number"

    def record_term(self, record: dict, term, kind: str, var_types: dict) -> None:
        """Record in ``record`` (``id(node) -> base type``) the type of every node of
        ``term``, used where a ``kind`` is expected; aggregates' targets and bodies too.

        >>> from diffflow.datalog.syntax.parser import parse
        >>> (rule,) = parse("r(max 7 / 2 : { 1 < 2 }).").rules
        >>> record = {}
        >>> TermTyping().record_term(record, rule.head.args[0], "float", {})
        >>> sorted(record.values())
        ['float', 'float', 'float', 'float', 'number', 'number']
        """
        stack = [(term, kind)]
        while stack:
            node, kind = stack.pop()
            if isinstance(node, ast.Var):
                own = var_types.get(node.name)
                record[id(node)] = own if own in BASE_TYPES or own in self.structures else kind
            elif isinstance(node, ast.AggregateTerm):
                inner = "number" if node.function == "count" else kind
                if node.function == "mean":  # (a float of a target in its own type)
                    own = self._own_type(node.target, var_types)
                    inner = "number" if own in (None, LITERAL) else own
                record[id(node)] = "float" if node.function == "mean" else inner
                if node.target is not None:
                    self.record_term(record, node.target, inner, var_types)
                for lit in node.body:
                    self.record_literal(record, lit, var_types)
            elif isinstance(node, ast.Functor):
                record[id(node)] = kind  # (the call's type; its arguments have their own)
                stack += zip(node.args, self.functor_arg_types(node, kind, var_types))
            elif isinstance(node, ast.RecordTerm):
                self.check_record(node, kind, var_types)
                record[id(node)] = kind
                stack += [(a, t) for a, (_, t) in zip(node.args, self.structures[kind].fields)
                          if not isinstance(a, ast.Wildcard)]
            elif isinstance(node, ast.BranchTerm):
                own = self.owner(node)
                record[id(node)] = own.name
                stack += zip(node.args, [t for _, t in own.branches[node.branch]])
            elif isinstance(node, ast.FieldAccess):
                record[id(node)] = kind
                stack.append((node.record, self._own_type(node.record, var_types)))
            else:
                record[id(node)] = kind
                if isinstance(node, ast.BinaryOp):
                    stack += [(node.left, kind), (node.right, kind)]
                elif isinstance(node, ast.Negative):
                    stack.append((node.operand, kind))

    def _own_type(self, node, var_types: dict):
        """A term's own type, None while a variable in it has none."""
        try:
            return self.expr_type(node, var_types, strict=False)
        except Unknown:
            return None

    def functor_arg_types(self, node: ast.Functor, kind: str, var_types: dict) -> list:
        """The types a functor call's arguments are evaluated in, the call being a ``kind``."""
        if node.name == "as":
            own = self._own_type(node.args[0], var_types)
            return [kind if own in (None, LITERAL) else own]
        if node.user is not None:  # (a user functor's parameters are types)
            return list(node.user.params)
        params = intrinsics.parameters(node.name, len(node.args)) or []
        out = []
        for arg, param in zip(node.args, params):
            if param == "T":
                out.append(kind)
            elif param == "numeric":
                own = self._own_type(arg, var_types)
                out.append(kind_name(own) if own is not None else "number")
            elif param in ("scalar", "any"):  # (to_number and friends: of text, or a number
                own = self._own_type(arg, var_types)  # converted; ord: of any value)
                out.append(kind_name(own) if own is not None else "symbol")
            else:
                out.append(param)
        return out

    def record_literal(self, record: dict, lit, var_types: dict) -> None:
        """Record the types of a literal's terms: atom arguments have their attribute's type."""
        if isinstance(lit, ast.Comparison):
            kind = self.comparison_type(lit, var_types)
            if kind is None:
                return
            for side in (lit.left, lit.right):
                self.record_term(record, side, kind, var_types)
            if lit.op in ("<", "<=", ">", ">="):
                self._check_ord_order(lit, record)
            return
        atom = lit.atom if isinstance(lit, ast.Negation) else lit
        relation = self.relations.get(atom.relation) if isinstance(atom, ast.Atom) else None
        if relation is not None:
            for arg, kind in zip(atom.args, relation.types):
                self.record_term(record, arg, kind, var_types)

    def term_types(self, term, kind: str, var_types: dict | None = None) -> dict:
        """``{id(node): base type}`` for a term used where a ``kind`` is expected.

        >>> from diffflow.datalog.syntax.parser import parse
        >>> (rule,) = parse("r(1 + 2).").rules
        >>> set(TermTyping().term_types(rule.head.args[0], "unsigned").values())
        {'unsigned'}
        """
        record: dict = {}
        self.record_term(record, term, kind, var_types or {})
        return record

    def comparison_term_types(self, c: ast.Comparison, var_types: dict | None = None) -> dict:
        """``{id(node): base type}`` for the terms of a comparison.

        >>> from diffflow.datalog.syntax.parser import parse
        >>> (c,) = parse("r(1) :- 2 < 1 + 2u.").rules[0].body[0].literals
        >>> sorted(set(TermTyping().comparison_term_types(c).values()))
        ['unsigned']
        """
        record: dict = {}
        self.record_literal(record, c, var_types or {})
        return record

    def clause_term_types(self, clause, head_types: list, var_types: dict) -> dict:
        """``{id(node): base type}`` for every term of a checked clause: its head's, its
        literals' and those in its aggregates."""
        record: dict = {}
        for arg, kind in zip(clause.head.args, head_types):
            self.record_term(record, arg, kind, var_types)
        for lit in clause.literals:
            self.record_literal(record, lit, var_types)
        return record
