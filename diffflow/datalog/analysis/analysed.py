"""What analysis produces and the compiler reads: relations, clauses, strata.

>>> from diffflow.datalog.passes import analyse
>>> from diffflow.datalog.syntax.parser import parse
>>> a = analyse(parse(".decl e(x: number)\\n.decl r(x: number)\\nr(x + 1) :- e(x)."))
>>> relation = a.relations["r"]
>>> relation.arity, relation.has_input, len(relation.clauses), a.strata[-1]
(1, False, 1, Stratum(relations=['r'], recursive=False))
"""
from __future__ import annotations

from dataclasses import dataclass, field

from diffflow.datalog.syntax import ast


@dataclass
class Relation:
    name: str
    attributes: list      # names
    types: list           # base types
    declaration: ast.Declaration
    inputs: list = field(default_factory=list)     # .input directives
    outputs: list = field(default_factory=list)    # .output directives
    printsize: list = field(default_factory=list)  # .printsize directives
    facts: list = field(default_factory=list)      # ground rules from the program text
    clauses: list = field(default_factory=list)    # Clause objects with this head
    ruled: bool = False  # has rules in the text (even if unfolding left no clause)
    # what the declaration adds to the rules' candidates (see .relation_value)
    eqrel: bool = False
    choice: list = field(default_factory=list)     # domains: lists of attribute positions
    limit: int | None = None                       # .limitsize
    dominated: list = field(default_factory=list)  # Clauses of its subsumptive rules
    takes_facts: bool = False  # an eqrel written as rules (provenance) that takes facts
    closure: list = field(default_factory=list)  # and its closure rules (numbered last)

    @property
    def shaped(self) -> bool:
        """Whether its value is more than the union of its rules (eqrel, subsumption,
        choice, .limitsize)."""
        return bool(self.eqrel or self.choice or self.limit is not None or self.dominated)

    @property
    def arity(self) -> int:
        return len(self.attributes)

    @property
    def has_input(self) -> bool:
        """Whether facts can be inserted: ``.input``, facts in the text, or no rules at all."""
        return bool(self.inputs or self.facts or self.takes_facts
                    or not (self.clauses or self.ruled))


@dataclass
class Clause:
    """One alternative of a rule: ``head :- literals`` with a flat conjunction.

    ``var_types`` holds each variable's base type and ``term_types`` the base
    type every term of the clause is evaluated in, as ``id(node) -> type``
    (see :mod:`.types`; read it with :meth:`type_of`).  ``plan`` is the join
    order a ``.plan`` asked for (0-based positions of the positive atoms, see
    :mod:`.plans`); ``unfolded`` names the inline relations unfolded into this
    clause and ``seed_types`` the variable types their declarations gave (see
    :mod:`~diffflow.datalog.transform.inline`).
    """
    head: ast.Atom
    literals: list         # Atom | Negation | Comparison | Boolean
    rule: ast.Rule
    var_types: dict = field(default_factory=dict)
    plan: list | None = None
    plan_version: int | None = None
    seed_types: dict = field(default_factory=dict)
    unfolded: list = field(default_factory=list)
    term_types: dict = field(default_factory=dict, repr=False, compare=False)

    def type_of(self, node) -> str:
        """The base type analysis recorded for a term of this clause.

        >>> from diffflow.datalog.passes import analyse
        >>> from diffflow.datalog.syntax.parser import parse
        >>> a = analyse(parse(".decl e(x: unsigned)\\ne(x + 1) :- e(x), x < 9."))
        >>> (clause,) = a.relations["e"].clauses
        >>> clause.type_of(clause.head.args[0].right), clause.type_of(clause.literals[1].right)
        ('unsigned', 'unsigned')
        """
        return self.term_types[id(node)]

    def aggregates(self) -> list:
        """The aggregates in the clause's comparisons and head (not those nested in one).

        >>> from diffflow.datalog.passes import analyse
        >>> from diffflow.datalog.syntax.parser import parse
        >>> a = analyse(parse(".decl e(x: number)\\n.decl r(n: number)\\n"
        ...                   "r(n) :- n = count : { e(_) }, n > min x : { e(x) }."))
        >>> [agg.function for agg in a.relations["r"].clauses[0].aggregates()]
        ['count', 'min']
        """
        terms = [t for lit in self.literals if isinstance(lit, ast.Comparison)
                 for t in ast.literal_terms(lit)]
        return ast.term_aggregates(*terms, *self.head.args)


@dataclass
class Stratum:
    relations: list
    recursive: bool


@dataclass
class Analysed:
    program: ast.Program
    source: str
    relations: dict                        # name -> Relation, in declaration order
    strata: list                           # Stratum, in evaluation order
    notes: list = field(default_factory=list)
    pragmas: dict = field(default_factory=dict)    # key -> value, see .pragmas
    warnings: list = field(default_factory=list)   # DatalogWarning
    inlined: dict = field(default_factory=dict)    # name -> Relation unfolded, never computed
    structures: dict = field(default_factory=dict)  # record / ADT type name -> Structure
    # relations magic sets left uncomputed: no output reads them whole (see transform.magic)
    on_demand: dict = field(default_factory=dict)
