"""Soufflé's iteration counters: ``debug_delta`` relations and ``recursive_iteration_cnt()``.

Soufflé evaluates a recursion in semi-naive iterations: iteration 0 runs the rules that read
no relation of the recursion, and iteration ``k`` joins the facts iteration ``k - 1`` found
first.  ``.decl d = debug_delta(r)`` declares ``d`` as ``r``'s attributes plus one
``unsigned``: each row of ``r`` with the iteration that first derived it, and
``recursive_iteration_cnt()`` in a recursive rule is the iteration evaluating it.

diffflow has no such rounds: an update re-derives only what changed.  So it computes the
iteration as what it is, a property of the derivations: a rule whose body holds facts of the
recursion first found in iterations ``i1, ..., im`` fires in iteration ``1 + max(i1, ...,
im)`` (0 with no such fact), and a fact's iteration is the least over its derivations.  That
is a least fixpoint of ``min`` over ``max``, like provenance heights, and it is written as
rules, so it stays exact under updates.  Every relation ``r`` of a recursion that needs it
gets two hidden relations:

* ``r#derivation(args, i)``: one rule per rule of ``r``, whose body reads
  ``s#iteration(args, v)`` for each atom of the recursion and computes
  ``i = 1 + max(v, ...)``; ``recursive_iteration_cnt()`` reads ``i``;
* ``r#iteration(args, i)``: ``i = min j : { r#derivation(args, j) }``;

and ``r`` itself is ``r#iteration`` without ``i``.  A ``debug_delta`` relation of a relation
outside any recursion holds its rows with iteration 0.  This costs the recursion about
twice its own work, and only in recursions that count.

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl e(x: number, y: number)
... .decl reach(x: number)
... .decl reach_debug = debug_delta(reach)
... reach(1).
... reach(y) :- reach(x), e(x, y), recursive_iteration_cnt() < 3.''')
>>> _ = p.insert("e", [(1, 2), (2, 3), (3, 4), (4, 5), (1, 3)]); p.commit()
>>> sorted(p.relation("reach_debug"))
[(1, 0), (2, 1), (3, 1), (4, 2)]
"""
from __future__ import annotations

import dataclasses

from diffflow.datalog.analysis.analyser import alternatives
from diffflow.datalog.analysis.strata import tarjan
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogError
from diffflow.datalog.syntax.intrinsics import ITERATION_COUNTER

DERIVATION, ITERATION = "#derivation", "#iteration"
#: what the errors below suggest instead
_COLUMN_HINT = ("count the steps in a column of the relation instead, e.g. r(y, n + 1) :- "
                "r(x, n), e(x, y), n < 100.")


def count_iterations(program: ast.Program, source: str = "") -> ast.Program:
    """The flat program with its ``debug_delta`` relations and iteration counters written as
    rules (the program itself when it has neither).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> flat = count_iterations(parse(".decl r(x: number)\\n.decl d = debug_delta(r)\\n"
    ...                               "r(1).\\nr(x + 1) :- r(x), x < 3."))
    >>> sorted(d.relation for d in flat.declarations)
    ['d', 'r', 'r#derivation', 'r#iteration']
    """
    mirrors = [d for d in program.declarations if d.mirrors]
    uses = [(rule, node) for rule in program.rules for node in _counters(rule)]
    if not mirrors and not uses:
        return program
    return _Counting(program, source).run(mirrors, uses)


def _counters(rule: ast.Rule) -> list:
    terms = list(rule.head.args)
    for conjunction in rule.body:
        terms += [t for lit in _flat_literals(conjunction) for t in ast.literal_terms(lit)]
    return [n for n in ast.walk_terms(*terms, aggregates=True)
            if isinstance(n, ast.Functor) and n.name == ITERATION_COUNTER]


def _reads(rule: ast.Rule) -> set:
    """Every relation a rule reads, wherever in its body."""
    out = set()
    terms = list(rule.head.args)
    for conjunction in rule.body:
        for lit in _flat_literals(conjunction):
            atom = lit.atom if isinstance(lit, ast.Negation) else lit
            if isinstance(atom, ast.Atom):
                out.add(atom.relation)
            terms += ast.literal_terms(lit)
    out.update(ast.clause_relations([], terms))
    return out


def _flat_literals(lit) -> list:
    if isinstance(lit, ast.Conjunction):
        return [x for y in lit.literals for x in _flat_literals(y)]
    if isinstance(lit, ast.Disjunction):
        return [x for y in lit.alternatives for x in _flat_literals(y)]
    return [lit]


def _replace_counters(node, by: ast.Var):
    """A copy of a term or literal with each ``recursive_iteration_cnt()`` replaced by ``by``."""
    if isinstance(node, ast.Functor) and node.name == ITERATION_COUNTER:
        return dataclasses.replace(by, line=node.line, column=node.column)
    if isinstance(node, ast.Node):
        return dataclasses.replace(node, **{f.name: _replace_counters(getattr(node, f.name), by)
                                            for f in dataclasses.fields(node)
                                            if f.name not in ("line", "column")})
    if isinstance(node, list):
        return [_replace_counters(v, by) for v in node]
    return node


class _Counting:
    def __init__(self, program: ast.Program, source: str):
        self.program, self.source = program, source
        self.declarations = {d.relation: d for d in program.declarations}

    def error(self, message, node, hint=None):
        return DatalogError(message, self.source, self.program.filename, node.line, node.column,
                            hint)

    def run(self, mirrors: list, uses: list) -> ast.Program:
        for d in mirrors:
            target = self.declarations.get(d.mirrors)
            if target is None or target.mirrors:
                raise self.error(f"debug_delta({d.mirrors}): {d.mirrors!r} is no relation "
                                 f"declared with attributes", d,
                                 hint="name a relation declared with .decl r(...)")
        rules_of: dict = {}
        for rule in self.program.rules:
            rules_of.setdefault(rule.head.relation, []).append(rule)
        reads = {name: set().union(*(_reads(r) for r in rules_of.get(name, ())))
                 & set(self.declarations) for name in self.declarations}
        component = {}
        for scc in tarjan(list(self.declarations), {n: sorted(reads[n]) for n in reads}):
            recursive = len(scc) > 1 or scc[0] in reads[scc[0]]
            for name in scc:
                component[name] = frozenset(scc) if recursive else None
        counted = set()
        for rule, node in uses:
            scc = component.get(rule.head.relation)
            if scc is None or not rule.body or not (_reads(rule) & scc):
                raise self.error("recursive_iteration_cnt() in a rule that is not recursive: "
                                 "it is the iteration of the recursion evaluating the rule, "
                                 "and this rule reads no relation of a recursion it derives",
                                 node, hint=_COLUMN_HINT)
            counted.add(scc)
        counted |= {component[d.mirrors] for d in mirrors if component[d.mirrors] is not None}
        declarations = [d for d in self.program.declarations if not d.mirrors]
        rules = [r for r in self.program.rules
                 if not any(r.head.relation in scc for scc in counted)]
        for scc in sorted(counted, key=sorted):
            self.check(scc, rules_of)
            for name in sorted(scc):
                declarations += self.hidden_declarations(name)
                rules += self.counting_rules(name, scc, rules_of.get(name, ()))
        for d in mirrors:
            declarations.append(self.mirror(d, component[d.mirrors] is not None))
            rules.append(self.mirror_rule(d, component[d.mirrors] is not None))
        return dataclasses.replace(self.program, declarations=declarations, rules=rules)

    # -- what iteration counting cannot mean ------------------------------------------------
    def check(self, scc, rules_of) -> None:
        def order_matters(name, what, node, hint=None):
            return self.error(f"relation {name!r} is in a recursion that counts iterations "
                              f"({', '.join(sorted(scc))}), so it cannot have {what}", node,
                              hint=hint)
        for name in sorted(scc):
            d = self.declarations[name]
            for q in ("eqrel", "inline"):
                if q in d.qualifiers:
                    raise order_matters(name, f"'{q}'", d, hint=f"remove '{q}'")
            if d.choice:
                raise order_matters(name, "a choice-domain", d)
            for directive in self.program.directives:
                if directive.relation == name and directive.kind in ("input", "limitsize"):
                    raise order_matters(
                        name, f".{directive.kind}", directive,
                        hint="read the input into another relation and copy it with a rule"
                        if directive.kind == "input" else None)
            for rule in rules_of.get(name, ()):
                if rule.dominating is not None:
                    raise order_matters(name, "subsumptive rules", rule)
                for conjunction in rule.body:
                    for lit in _flat_literals(conjunction):
                        for node in ast.walk_terms(*ast.literal_terms(lit), aggregates=True):
                            if isinstance(node, ast.AggregateTerm) and \
                                    set(ast.clause_relations(node.body)) & scc:
                                raise self.error(
                                    "an aggregate over a relation of its own recursion, in "
                                    "a recursion that counts iterations: not supported",
                                    node, hint="aggregate after the recursion")

    # -- the hidden relations and their rules -----------------------------------------------
    def hidden_declarations(self, name: str) -> list:
        d = self.declarations[name]
        attributes = [*d.attributes, ast.Attribute(d.line, d.column, "#iteration", "unsigned")]
        return [ast.Declaration(d.line, d.column, name + suffix, list(attributes))
                for suffix in (DERIVATION, ITERATION)]

    def counting_rules(self, name: str, scc, rules) -> list:
        d = self.declarations[name]
        at = (d.line, d.column)
        out = [self.derivation(rule, alternative, scc)
               for rule in rules for alternative in (
                   [] if not rule.body else
                   [lits for conj in rule.body for lits in alternatives(conj)])]
        out += [self.fact(rule) for rule in rules if not rule.body]
        row = [ast.Var(*at, f"#counted{i}") for i in range(len(d.attributes))]
        least, each = ast.Var(*at, "#first"), ast.Var(*at, "#derived")
        smallest = ast.AggregateTerm(*at, "min", each,
                                     [ast.Atom(*at, name + DERIVATION, [*row, each])])
        out.append(ast.Rule(*at, ast.Atom(*at, name + ITERATION, [*row, least]),
                            [ast.Conjunction(*at, [
                                ast.Atom(*at, name + DERIVATION, [*row, ast.Wildcard(*at)]),
                                ast.Comparison(*at, "=", least, smallest)])]))
        out.append(ast.Rule(*at, ast.Atom(*at, name, list(row)), [ast.Conjunction(*at, [
            ast.Atom(*at, name + ITERATION, [*row, ast.Wildcard(*at)])])]))
        return out

    def derivation(self, rule: ast.Rule, literals: list, scc) -> ast.Rule:
        at = (rule.line, rule.column)
        iteration = ast.Var(*at, "#iteration")
        body, found = [], []
        for lit in literals:
            if isinstance(lit, ast.Atom) and lit.relation in scc:
                found.append(ast.Var(lit.line, lit.column, f"#found{len(found)}"))
                lit = dataclasses.replace(lit, relation=lit.relation + ITERATION,
                                          args=[*lit.args, found[-1]])
            body.append(_replace_counters(lit, iteration))
        if found:
            latest = found[0] if len(found) == 1 else ast.Functor(*at, "max", list(found))
            value = ast.BinaryOp(*at, "+", ast.Number(*at, 1, unsigned=True), latest)
        else:  # iteration 0 (Soufflé's preamble)
            value = ast.Number(*at, 0, unsigned=True)
        body.append(ast.Comparison(*at, "=", iteration, value))
        head = _replace_counters(rule.head, iteration)
        head = dataclasses.replace(head, relation=head.relation + DERIVATION,
                                   args=[*head.args, iteration])
        return dataclasses.replace(rule, head=head, body=[ast.Conjunction(*at, body)])

    def fact(self, rule: ast.Rule) -> ast.Rule:
        zero = ast.Number(rule.line, rule.column, 0, unsigned=True)
        return dataclasses.replace(rule, head=dataclasses.replace(
            rule.head, relation=rule.head.relation + DERIVATION, args=[*rule.head.args, zero]))

    def mirror(self, d: ast.Declaration, counted: bool) -> ast.Declaration:
        target = self.declarations[d.mirrors]
        return dataclasses.replace(d, mirrors="", attributes=[
            *target.attributes, ast.Attribute(d.line, d.column, "iteration", "unsigned")])

    def mirror_rule(self, d: ast.Declaration, counted: bool) -> ast.Rule:
        at = (d.line, d.column)
        row = [ast.Var(*at, f"#counted{i}") for i in range(len(self.declarations[d.mirrors].attributes))]
        if counted:
            iteration = ast.Var(*at, "#iteration")
            return ast.Rule(*at, ast.Atom(*at, d.relation, [*row, iteration]), [
                ast.Conjunction(*at, [ast.Atom(*at, d.mirrors + ITERATION, [*row, iteration])])])
        return ast.Rule(*at, ast.Atom(*at, d.relation, [*row, ast.Number(*at, 0, unsigned=True)]),
                        [ast.Conjunction(*at, [ast.Atom(*at, d.mirrors, list(row))])])
