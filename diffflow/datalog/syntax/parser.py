"""Text to syntax tree: lark (LALR) parsing plus a transformer building :mod:`.ast` nodes.

>>> program = parse('.decl edge(x: number, y: number)\\nedge(1, 2).')
>>> program.declarations[0].relation, program.rules[0].head.args[1].value
('edge', 2)
"""
from __future__ import annotations

import functools

from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.annotations import blank_annotations
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.grammar import GRAMMAR
from diffflow.datalog.syntax.syntax_errors import raise_syntax_error
from diffflow.datalog.syntax.negation import negated
from diffflow.datalog.syntax.intrinsics import (CONSTRAINTS, ITERATION_COUNTER,
                                                NOT_YET)  # (string constraints Soufflé writes as atoms)


@functools.lru_cache(maxsize=1)
def _parser():
    from lark import Lark  # imported lazily: importing diffflow stays cheap

    # building the LALR tables takes ~0.15 s, loading them from lark's cache ~10 ms: every
    # `diffflow run` is a fresh process.  lark checks the file against a hash of the grammar,
    # the options and its own version, and rebuilds (and rewrites) it when they differ.
    return Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=True,
                cache=_cache_file() or False)


def _cache_file():
    """Where lark's parse tables are cached: ``__pycache__`` beside this module as Python's
    bytecode is, else the user's cache folder, else nowhere (None)."""
    import os

    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for folder in (os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__"),
                   os.path.join(home, "diffflow")):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return os.path.join(folder, "datalog-grammar.lark")
    return None


def parse(source: str, filename: str = "<program>") -> ast.Program:
    """Parse Datalog text into an :class:`~diffflow.datalog.syntax.ast.Program` (components
    not expanded yet: :func:`diffflow.datalog.passes.parse_program` does both).

    Syntax errors raise :class:`DatalogError` with the position and what was expected.

    >>> parse("p(x) :- q(x)").rules
    Traceback (most recent call last):
    ...
    diffflow.common.errors.DatalogError: <program>:1:13: error: unexpected end of the program ...
    """
    from lark.exceptions import UnexpectedInput

    text = blank_annotations(source, filename)  # (@[...]: read past, positions kept)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        raise_syntax_error(e, source, filename)
    return _Builder(source, filename).program(tree)


def _open_paren(source: str, token) -> tuple:
    """Line and column of the first '(' after ``token`` (the '(' of a plan order)."""
    at = source.index("(", token.end_pos)
    line = source.count("\n", 0, at) + 1
    return line, at - (source.rfind("\n", 0, at) + 1) + 1


def _at(token):
    """A position-only node at a token (for errors)."""
    return ast.Node(token.line, token.column)


def _int(text: str) -> tuple:
    unsigned = text.endswith("u")
    body = text[:-1] if unsigned else text
    if body.startswith("0x"):
        return int(body, 16), unsigned
    if body.startswith("0b"):
        return int(body, 2), unsigned
    return int(body), unsigned


def _ipv4(text: str):
    """The number an IPv4 literal stands for, as Soufflé's lexer computes it (a 32-bit
    signed int: 255.255.255.255 is -1), or None if a part is over 255.

    >>> _ipv4("10.0.0.1"), _ipv4("255.255.255.255"), _ipv4("1.2.3.256")
    (167772161, -1, None)
    """
    parts = [int(p) for p in text.split(".")]
    if any(p > 255 for p in parts):
        return None
    value = (parts[0] << 24) + (parts[1] << 16) + (parts[2] << 8) + parts[3]
    return value - (1 << 32) if value >= 1 << 31 else value


def _unescape(text: str) -> str:
    body = text[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    escapes = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(escapes.get(body[i + 1], "\\" + body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _Builder:
    """Walks the lark tree into AST dataclasses (explicit, so positions are exact)."""

    def __init__(self, source, filename):
        self.source, self.filename = source, filename

    def error(self, message, node, hint=None):
        return DatalogError(message, self.source, self.filename, node.line, node.column, hint)

    def program(self, tree) -> ast.Program:
        items = self.items(tree.children)
        return ast.Program(1, 1, self.filename, items["declarations"], items["types"],
                           items["directives"], items["rules"], items["pragmas"],
                           items["functors"], items["components"], items["inits"],
                           items["lattices"])

    def items(self, children) -> dict:
        """A program's or a component's elements, by kind."""
        out = {k: [] for k in ("declarations", "types", "directives", "rules", "pragmas",
                               "functors", "components", "inits", "overrides", "lattices")}
        for item in children:
            kind = item.data
            if kind == "functor_declaration":
                out["functors"].append(self.functor_declaration(item))
            elif kind == "declaration":
                out["declarations"].extend(self.declaration(item))
            elif kind == "debug_delta":  # .decl d = debug_delta(r) (see transform.iterations)
                _decl, name, _debug, target, *qualifiers = item.children
                out["declarations"].append(ast.Declaration(
                    name.line, name.column, str(name), [],
                    [str(q.children[0]) for q in qualifiers if q is not None],
                    mirrors=str(target)))
            elif kind in ("subtype", "type_alias", "record_type", "adt_type", "deprecated_type"):
                out["types"].append(self.type_declaration(item))
            elif kind == "directive":
                out["directives"].extend(self.directive(item))
            elif kind == "pragma":
                out["pragmas"].append(self.pragma(item))
            elif kind == "subsumption":
                out["rules"].append(self.subsumption(item))
            elif kind == "component":
                out["components"].append(self.component(item))
            elif kind == "init":
                _init, name, component_type = item.children
                out["inits"].append(ast.Init(name.line, name.column, str(name),
                                             self.component_type(component_type)))
            elif kind == "lattice":
                name = item.children[1]
                out["lattices"].append(ast.Lattice(item.children[0].line,
                                                   item.children[0].column, str(name)))
            elif kind == "override":
                name = item.children[1]
                out["overrides"].append(ast.Directive(name.line, name.column, "override",
                                                      str(name)))
            else:
                out["rules"].extend(self.clause(item))
        return out

    def component_type(self, tree) -> ast.ComponentType:
        name, *args = tree.children
        return ast.ComponentType(name.line, name.column, str(name),
                                 [str(a) for a in args if a is not None])

    def component(self, tree) -> ast.Component:
        _comp, own, *rest = tree.children
        bases = [self.component_type(c) for c in rest
                 if c is not None and getattr(c, "data", None) == "component_type"]
        body = [c for c in rest if c is not None and getattr(c, "data", None) != "component_type"]
        items = self.items(body)
        for kind in ("pragmas", "functors"):
            if items[kind]:
                raise self.error(f"{kind[:-1]} declarations belong outside components",
                                 items[kind][0])
        own_type = self.component_type(own)
        return ast.Component(own_type.line, own_type.column, own_type, bases,
                             items["declarations"], items["types"], items["directives"],
                             items["rules"], items["components"], items["inits"],
                             items["overrides"])

    def functor_declaration(self, tree):
        _decl, name, *rest = tree.children
        stateful = rest[-1] is not None and getattr(rest[-1], "type", "") == "STATEFUL"
        result = rest[-2]
        params = []
        for param in rest[:-2]:
            if param is None:
                continue
            first, second = param.children
            params.append(str(second if second is not None else first))
        return ast.FunctorDeclaration(name.line, name.column, str(name), params, str(result),
                                      stateful)

    def declaration(self, tree):
        """One :class:`~.ast.Declaration` per name of ``.decl A, B(...)`` (as in Soufflé)."""
        _decl, *rest = tree.children
        names, attributes, qualifiers, choice = [], [], [], []
        for child in rest:
            if child is None:
                continue
            if getattr(child, "type", None) == "IDENT":
                names.append(child)
            elif child.data == "attribute":
                attr_name, attr_type = child.children
                attributes.append(ast.Attribute(attr_name.line, attr_name.column,
                                                str(attr_name), str(attr_type)))
            elif child.data == "choice":
                choice = [ast.ChoiceDomain(d.children[0].line, d.children[0].column,
                                           [str(t) for t in d.children])
                          for d in child.children[1:]]
            else:
                q = child.children[0]
                if str(q) in qualifiers:  # (as in Soufflé)
                    raise self.error(f"qualifier {str(q)!r} is given twice", q,
                                     hint="remove one of them")
                qualifiers.append(str(q))
        return [ast.Declaration(name.line, name.column, str(name), list(attributes),
                                list(qualifiers), list(choice)) for name in names]

    def pragma(self, tree):
        _pragma, key, value = tree.children
        return ast.Pragma(key.line, key.column, _unescape(str(key)),
                          _unescape(str(value)) if value is not None else "")

    def type_declaration(self, tree):
        _type, name, *rest = tree.children
        if tree.data == "deprecated_type":  # .number_type T, .symbol_type T, .type T
            base = "number" if _type.type == "NUMBER_TYPE" else "symbol"
            return ast.TypeDeclaration(_type.line, _type.column, str(name), base,
                                       deprecated=f"{_type} {name}")
        if tree.data == "subtype":
            return ast.TypeDeclaration(name.line, name.column, str(name), str(rest[1]))
        if tree.data == "record_type":
            return ast.TypeDeclaration(name.line, name.column, str(name), "record",
                                       fields=self.attributes(rest))
        if tree.data == "adt_type":
            branches = [ast.Branch(b.children[0].line, b.children[0].column,
                                   str(b.children[0]), self.attributes(b.children[1:]))
                        for b in rest]
            return ast.TypeDeclaration(name.line, name.column, str(name), "adt",
                                       branches=branches)
        members = [str(t) for t in rest]  # (one member: an alias, equivalent to it)
        return ast.TypeDeclaration(name.line, name.column, str(name), members[0], members)

    def attributes(self, trees) -> list:
        """``name: type`` attributes (of a record type or an ADT branch), names unique."""
        out = []
        for tree in trees:
            if tree is None:
                continue
            name, kind = tree.children
            if any(a.name == str(name) for a in out):
                raise self.error(f"field {str(name)!r} appears twice", _at(name))
            out.append(ast.Attribute(name.line, name.column, str(name), str(kind)))
        return out

    def directive(self, tree):
        kind_token, *rest = tree.children
        params = {}
        if rest and rest[-1] is not None and getattr(rest[-1], "data", None) == "params":
            for p in rest[-1].children:
                if p is None:
                    continue
                key, value = p.children
                if value.type == "STRING":
                    params[str(key)] = _unescape(str(value))
                else:
                    params[str(key)] = str(value)
        names = [t for t in rest if t is not None and getattr(t, "type", None) == "IDENT"]
        kind = str(kind_token)[1:]
        return [ast.Directive(n.line, n.column, kind, str(n), dict(params)) for n in names]

    def clause(self, tree):
        *head_trees, _if, body_tree, plan_tree = tree.children
        heads = [self.atom(c) for c in head_trees]
        body = self.disjunction(body_tree) if body_tree is not None else []
        plan = self.plan(plan_tree) if plan_tree is not None else []
        return [ast.Rule(h.line, h.column, h, body, list(plan)) for h in heads]

    def subsumption(self, tree):
        """``r(a) <= r(b) :- body.``: the dominated tuple first, then the dominating one."""
        dominated, op, dominating, _if, body_tree, plan_tree = tree.children
        if str(op) != "<=":
            raise self.error(f"unexpected {str(op)!r} after a head; a subsumptive rule is "
                             f"written r(x) <= r(y) :- body.", op)
        head = self.atom(dominated)
        plan = self.plan(plan_tree) if plan_tree is not None else []
        return ast.Rule(head.line, head.column, head, self.disjunction(body_tree), list(plan),
                        self.atom(dominating))

    def plan(self, tree) -> list:
        """``.plan 0: (1, 2), 1: (2, 1)``: one :class:`~.ast.PlanOrder` per version."""
        orders = []
        for item in tree.children[1:]:
            version, *positions = item.children
            if any(t.endswith("u") or not t.isdigit() for t in [version, *positions]
                   if t is not None):
                bad = next(t for t in [version, *positions]
                           if t is not None and (t.endswith("u") or not t.isdigit()))
                raise self.error(f"{str(bad)!r} in .plan: versions and atom positions are "
                                 f"plain decimal numbers", bad)
            order = [int(t) for t in positions if t is not None]
            # the position of an order is its '(' (as Soufflé reports it)
            line, column = _open_paren(self.source, version)
            orders.append(ast.PlanOrder(line, column, int(version), order))
        return orders

    # -- bodies --------------------------------------------------------------------------
    def disjunction(self, tree) -> list:
        return [self.conjunction(c) for c in tree.children]

    def conjunction(self, tree):
        return ast.Conjunction(tree.meta.line, tree.meta.column, self.literals(tree.children))

    def literals(self, children) -> list:
        """The literals of a conjunction; ``!(a ; b)`` gives ``!a, !b`` among them."""
        literals = []
        for child in children:
            literal = self.literal(child)
            if child.data == "negation" and isinstance(literal, ast.Disjunction) \
                    and len(literal.alternatives) == 1:
                literals.extend(literal.alternatives[0].literals)
            else:
                literals.append(literal)
        return literals

    def literal(self, tree):
        kind = tree.data
        if kind == "atom":
            atom = self.atom(tree)
            return self.constraint(atom) if atom.relation in CONSTRAINTS else atom
        if kind == "negation":
            inner = tree.children[0]
            if inner.data == "atom":
                atom = self.atom(inner)
                if atom.relation in CONSTRAINTS:
                    return self.constraint(atom, negated=True)
                return ast.Negation(tree.meta.line, tree.meta.column, atom)
            return negated(self.literal(inner), tree.meta.line, tree.meta.column)
        if kind == "comparison":
            left, op, right = tree.children
            return ast.Comparison(op.line, op.column, str(op), self.term(left), self.term(right))
        if kind == "boolean":
            token = tree.children[0]
            return ast.Boolean(token.line, token.column, str(token) == "true")
        if kind == "group":
            return ast.Disjunction(tree.meta.line, tree.meta.column,
                                   self.disjunction(tree.children[0]))
        raise AssertionError(kind)

    def atom(self, tree):
        name, *args = tree.children
        args = [self.term(a) for a in args if a is not None]
        return ast.Atom(name.line, name.column, str(name), args)

    def constraint(self, atom: ast.Atom, negated: bool = False):
        """``contains(sub, s)`` / ``match(regex, s)``, written as atoms: Soufflé's string
        constraints, comparisons with those ops (``!contains`` negated)."""
        if len(atom.args) != 2:
            raise self.error(f"{atom.relation} takes 2 arguments, got {len(atom.args)}", atom)
        return ast.Comparison(atom.line, atom.column, "!" * negated + atom.relation,
                              *atom.args)

    # -- terms ---------------------------------------------------------------------------
    def term(self, tree):
        from lark import Token

        if isinstance(tree, Token):  # pragma: no cover - terms always arrive as trees
            raise AssertionError(tree)
        kind = tree.data
        if kind == "ipv4":
            token = tree.children[0]
            value = _ipv4(str(token))
            if value is None:
                raise self.error(f"IP address {token!s} out of range: each of its four "
                                 f"parts is at most 255", _at(token))
            return ast.Number(token.line, token.column, value, False)
        if kind in ("variable", "wildcard", "integer", "float", "string"):
            token = tree.children[0]
            line, column = token.line, token.column
            if kind == "variable":
                return ast.Var(line, column, str(token))
            if kind == "wildcard":
                return ast.Wildcard(line, column)
            if kind == "integer":
                value, unsigned = _int(str(token))
                return ast.Number(line, column, value, unsigned)
            if kind == "float":
                return ast.Float(line, column, float(str(token)))
            return ast.String(line, column, _unescape(str(token)))
        if kind == "binary":
            left, op, right = tree.children
            if op.type in ("PLUS", "MINUS", "TIMES", "DIVIDE", "MODULO", "CARET"):
                return ast.BinaryOp(op.line, op.column, str(op), self.term(left),
                                    self.term(right))
            return ast.Functor(op.line, op.column, str(op), [self.term(left), self.term(right)])
        if kind == "prefix":
            op, operand = tree.children
            return ast.Functor(op.line, op.column, str(op), [self.term(operand)])
        if kind in ("functor", "user_functor"):
            name, *args = tree.children
            args = [self.term(a) for a in args if a is not None]
            if kind == "user_functor":
                return ast.Functor(name.line, name.column, str(name), args)
            if str(name) in NOT_YET:
                raise self.error(f"{NOT_YET[str(name)]}: not supported yet", _at(name))
            return ast.Functor(name.line, name.column, str(name), args)
        if kind == "record":
            return ast.RecordTerm(tree.meta.line, tree.meta.column,
                                  [self.term(a) for a in tree.children if a is not None])
        if kind == "nil":
            token = tree.children[0]
            return ast.Nil(token.line, token.column)
        if kind == "iteration_counter":  # (see transform.iterations)
            token = tree.children[0]
            return ast.Functor(token.line, token.column, ITERATION_COUNTER, [])
        if kind == "branch":
            name, *args = tree.children
            return ast.BranchTerm(name.line, name.column, str(name)[1:],
                                  [self.term(a) for a in args if a is not None])
        if kind == "cast":
            token, operand, type_name = tree.children
            return ast.Functor(token.line, token.column, "as", [self.term(operand)],
                               str(type_name))
        if kind == "negative":
            op, operand = tree.children
            inner = self.term(operand)
            if isinstance(inner, (ast.Number, ast.Float)) and not getattr(inner, "unsigned", False):
                return type(inner)(op.line, op.column, -inner.value)
            return ast.Negative(op.line, op.column, inner)
        if kind == "aggregate":
            function = tree.children[0]
            if function.type == "COUNT":
                target, body = None, tree.children[1]
            else:
                target, body = self.term(tree.children[1]), tree.children[2]
            if body.data == "aggregate_atom":
                literals = [self.atom(body.children[0])]
            else:
                literals = self.literals(body.children)
            return ast.AggregateTerm(function.line, function.column, str(function), target,
                                     literals)
        raise AssertionError(kind)


def parse_atom(text: str, what: str, hint: str):
    """One atom written as in a ``.dl`` file (a fact, a query pattern), or a ``ValueError``
    naming ``what`` it was meant to be, with ``hint``.

    >>> parse_atom("tc(1, y)", "query", "e.g. tc(1, y)").relation
    'tc'
    >>> parse_atom("tc(1,", "query", "e.g. tc(1, y)")
    Traceback (most recent call last):
    ...
    ValueError: cannot read the query 'tc(1,': it ends too early; e.g. tc(1, y)
    """
    written = text.strip().removesuffix(".")
    try:
        rules = parse(written + ".", f"<{what}>").rules
    except DatalogError as exc:
        message = exc.message
        if exc.column is not None and exc.column > len(written):  # (at the '.' added here)
            message = "it ends too early"
        raise ValueError(f"cannot read the {what} {text!r}: {message}; {hint}") from None
    if len(rules) != 1 or rules[0].body:
        raise ValueError(f"cannot read the {what} {text!r}: expected one atom; {hint}")
    return rules[0].head
