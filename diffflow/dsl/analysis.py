"""Semantic checks and normal form: names, arity, types, range restriction, strata.

:func:`analyse` turns a parsed :class:`~diffflow.dsl.ast.Program` into an
:class:`Analysed` program the compiler can translate without further checks:

* every relation is declared, used with its arity, and its attribute types
  resolved to one of ``number``, ``unsigned``, ``float``, ``symbol``
  (:mod:`.types`);
* bodies are in disjunctive normal form: one :class:`Clause` per alternative;
* every variable of a head, a negation, a comparison or an aggregate's
  correlation is bound by a positive atom (or by ``x = expr`` of bound ones);
  every variable has one type, expressions are well typed, and the type of
  every term is recorded in its clause's ``term_types`` (:mod:`.clauses`,
  :mod:`.types`);
* relations are grouped into strata, strongly connected components in
  dependency order (:mod:`.strata`);
* facts with constant expressions are evaluated (:mod:`.constants`),
  ``.pragma`` settings read (:mod:`.pragmas`), ``.plan`` orders checked
  (:mod:`.plans`), and relations declared ``inline`` unfolded into the rules
  that use them (:mod:`.inline`), so ``relations`` holds only what is computed.

>>> from diffflow.dsl.parser import parse
>>> a = analyse(parse(".decl e(x: number, y: number)\\n.decl p(x: number, y: number)\\n"
...                   "p(x, y) :- e(x, y).\\np(x, z) :- p(x, y), e(y, z)."))
>>> [(s.relations, s.recursive) for s in a.strata]
[(['e'], False), (['p'], True)]
"""
from __future__ import annotations

import itertools

from . import ast
from . import inline as inlining
from .analysed import Analysed, Clause, Relation, Stratum  # noqa: F401 (imported from here)
from .clauses import ClauseChecks
from .constants import fold_fact
from .errors import DatalogError
from .plans import check_plans
from .pragmas import read_pragmas
from .strata import stratify
from .functors import bind_user_functors
from .types import (BASE_TYPES, NUMBER_RANGE, UNSIGNED_RANGE,  # noqa: F401 (imported from here)
                    base_type, resolve_types)

# accepted qualifiers; inline, no_inline and no_magic are read by .inline
_IGNORED_QUALIFIERS = {"btree", "brie", "inline", "no_inline", "magic", "no_magic", "override",
                       "btree_delete", "overridable"}
_OLD_IO_QUALIFIERS = {"input", "output", "printsize"}
_IO_PARAMS = {"IO", "filename", "delimiter", "headers", "attributeNames", "rfc4180",
              "compress"}


def analyse(program: ast.Program, source: str = "", functors: dict | None = None) -> Analysed:
    """Check a parsed program and bring it to the compiler's normal form.

    >>> from diffflow.dsl.parser import parse
    >>> a = analyse(parse(".decl e(x: number)\\n.decl r(x: float)\\nr(1.5) :- e(_)."))
    >>> list(a.relations), a.relations["r"].types
    (['e', 'r'], ['float'])
    """
    return _Analyser(program, source, functors).run()


class _Analyser(ClauseChecks):
    def __init__(self, program: ast.Program, source: str, functors: dict | None = None):
        self.program, self.source = program, source
        self.bindings = dict(functors or {})  # user-defined functors' Python callables
        self.types: dict = {}
        self.relations: dict = {}
        self.fresh = 0
        self.synthetic: set = set()  # ids of comparisons made by name_expressions
        self.directives = list(program.directives)  # plus old-style qualifiers

    def error(self, message, node, hint=None):
        return DatalogError(message, self.source, self.program.filename,
                            getattr(node, "line", None), getattr(node, "column", None), hint)

    def run(self) -> Analysed:
        self.types = resolve_types(self.program.types, self.error)
        bind_user_functors(self, self.program, self.bindings)
        self.declare()
        self.attach_directives()
        pragmas, warnings, pragma_notes = read_pragmas(self.program.pragmas, self.source,
                                                       self.program.filename)
        for rule in self.program.rules:
            self.add_rule(rule)
        inline = inlining.select(self, pragmas)
        for relation in self.relations.values():
            for clause in relation.clauses:
                self.check_clause(clause, lenient=relation.name in inline)
        inlining.check_uses(self, inline)
        strata, notes = stratify(self.relations, self.error)
        check_plans(self, self.relations, strata)
        if inline:
            unfolded, inline_notes = inlining.unfold(self, inline)
            for name in inline:
                del self.relations[name]
            for name, clauses in unfolded.items():
                relation = self.relations[name]
                relation.ruled = bool(relation.clauses)
                relation.clauses = clauses
            strata, _ = stratify(self.relations, self.error)
            notes += inline_notes
        return Analysed(self.program, self.source, self.relations, strata,
                        pragma_notes + notes, pragmas, warnings, inline)

    # -- declarations ----------------------------------------------------------------------
    def declare(self):
        for decl in self.program.declarations:
            if decl.relation in self.relations:
                first = self.relations[decl.relation].declaration
                raise self.error(f"relation {decl.relation!r} is declared twice (first at line "
                                 f"{first.line})", decl)
            names = [a.name for a in decl.attributes]
            for a in decl.attributes:
                if names.count(a.name) > 1:
                    raise self.error(f"attribute {a.name!r} appears twice in {decl.relation!r}", a)
            types = [base_type(a.type, a, self.types, self.error) for a in decl.attributes]
            relation = Relation(decl.relation, names, types, decl)
            for q in decl.qualifiers:
                if q == "eqrel":
                    raise self.error(f"{decl.relation!r}: eqrel relations are not supported",
                                     decl, hint="write the symmetric and transitive rules "
                                                "explicitly")
                if q in _OLD_IO_QUALIFIERS:
                    directive = ast.Directive(decl.line, decl.column, q, decl.relation, {})
                    self.directives.append(directive)
                elif q not in _IGNORED_QUALIFIERS:
                    raise self.error(f"unknown qualifier {q!r} on {decl.relation!r}", decl,
                                     hint="supported: input, output, printsize, inline, "
                                          "no_inline and the ignored data-structure hints "
                                          "btree, brie")
            self.relations[decl.relation] = relation

    def attach_directives(self):
        for d in self.directives:
            relation = self.lookup(d.relation, d)
            for key in d.params:
                if key not in _IO_PARAMS:
                    raise self.error(f"unknown parameter {key!r} in .{d.kind} {d.relation}", d,
                                     hint=f"supported: {', '.join(sorted(_IO_PARAMS))}")
            if d.params.get("delimiter") == "":
                raise self.error(f"an empty delimiter in .{d.kind} {d.relation}", d,
                                 hint='omit delimiter for TAB, or give one, e.g. delimiter=","')
            io = d.params.get("IO", "file")
            if io not in ("file", "stdout") or (io == "stdout" and d.kind == "input"):
                raise self.error(f"unsupported IO={io!r} in .{d.kind} {d.relation}", d,
                                 hint="use IO=file (or IO=stdout for outputs)")
            {"input": relation.inputs, "output": relation.outputs,
             "printsize": relation.printsize}[d.kind].append(d)

    # -- rules ----------------------------------------------------------------------------
    def add_rule(self, rule: ast.Rule):
        relation = self.lookup(rule.head.relation, rule.head)
        self.check_atom(rule.head)
        if not rule.body:
            if rule.plan:
                raise self.error("a fact has no body to plan", rule.plan[0],
                                 hint="remove the .plan after the fact")
            fact = fold_fact(self, rule, relation)  # constant expressions evaluated
            if fact is not None:
                relation.facts.append(fact)
            return
        for arg in rule.head.args:
            if isinstance(arg, ast.Wildcard):
                raise self.error(f"'_' in the head of {rule.head.relation}: a head needs a value "
                                 f"for every attribute", arg, hint="use a variable bound in the "
                                 "body or a constant")
        for alternative in rule.body:
            for literals in self.expand(alternative):
                relation.clauses.append(Clause(rule.head, self.name_expressions(literals), rule))

    def name_expressions(self, literals):
        """``r(x, y + 1)`` in a body becomes ``r(x, #e1), #e1 = y + 1`` (likewise aggregates)."""
        out, extra = [], []
        for lit in literals:
            atom = lit.atom if isinstance(lit, ast.Negation) else lit
            if isinstance(atom, ast.Atom) and any(
                    isinstance(a, (ast.BinaryOp, ast.Negative, ast.AggregateTerm, ast.Functor))
                    for a in atom.args):
                args = []
                for a in atom.args:
                    if isinstance(a, (ast.BinaryOp, ast.Negative, ast.AggregateTerm, ast.Functor)):
                        self.fresh += 1
                        var = ast.Var(a.line, a.column, f"#e{self.fresh}")
                        comparison = ast.Comparison(a.line, a.column, "=", var, a)
                        self.synthetic.add(id(comparison))
                        extra.append(comparison)
                        args.append(var)
                    else:
                        args.append(a)
                atom = ast.Atom(atom.line, atom.column, atom.relation, args)
                lit = ast.Negation(lit.line, lit.column, atom) \
                    if isinstance(lit, ast.Negation) else atom
            out.append(lit)
        return out + extra

    def expand(self, conjunction: ast.Conjunction):
        """Disjunctive normal form of a conjunction (nested ``;`` groups multiply out)."""
        options = []
        for literal in conjunction.literals:
            if isinstance(literal, ast.Disjunction):
                options.append([lits for alt in literal.alternatives for lits in self.expand(alt)])
            else:
                options.append([[literal]])
        for combination in itertools.product(*options):
            yield [lit for part in combination for lit in part]
