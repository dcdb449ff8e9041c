"""The Datalog syntax tree: plain dataclasses, each carrying its source position.

Every node has ``line`` and ``column`` (1-based) so that analysis errors can
point at the exact token.  ``to_data()`` gives a JSON-friendly nested form
(used by the parser's golden tests and handy for debugging).

>>> from diffflow.datalog.syntax.parser import parse
>>> program = parse("p(x) :- q(x, _).")
>>> rule = program.rules[0]
>>> rule.head.relation, [type(t).__name__ for t in rule.body[0].literals[0].args]
('p', ['Var', 'Wildcard'])
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields


@dataclass
class Node:
    line: int
    column: int

    def to_data(self):
        """A nested dict/list form without positions except ``at`` = "line:col"."""
        out = {"node": type(self).__name__, "at": f"{self.line}:{self.column}"}
        for f in fields(self):
            if f.name in ("line", "column") or f.metadata.get("omit"):
                continue
            value = getattr(self, f.name)
            if f.metadata.get("omit_empty") and not value:
                continue  # optional parts (plans, pragmas) only when present
            out[f.name] = _data(value)
        return out


def _data(value):
    if isinstance(value, Node):
        return value.to_data()
    if isinstance(value, (list, tuple)):
        return [_data(v) for v in value]
    if isinstance(value, dict):
        return {k: _data(v) for k, v in value.items()}
    return value


# -- terms ---------------------------------------------------------------------------------

@dataclass
class Var(Node):
    name: str


@dataclass
class Wildcard(Node):
    pass


@dataclass
class Number(Node):
    """An integer constant; ``unsigned`` for a literal written with a ``u`` suffix."""
    value: int
    unsigned: bool = False


@dataclass
class Float(Node):
    value: float


@dataclass
class String(Node):
    value: str


@dataclass
class BinaryOp(Node):
    """Arithmetic ``+ - * / % ^``."""
    op: str
    left: Node
    right: Node


@dataclass
class Negative(Node):
    operand: Node


@dataclass
class Functor(Node):
    """An intrinsic functor call (:mod:`~diffflow.datalog.values.functors`): ``cat(a, b)``, ``x band y``, ``bnot x``,
    ``min(a, b)``; ``as(x, T)`` is ``Functor("as", [x], type_name="T")``."""
    name: str
    args: list
    type_name: str | None = field(default=None, metadata={"omit_empty": True})
    # a user-defined functor's (@f) declaration and binding, set by analysis
    user: object = field(default=None, compare=False, repr=False,
                         metadata={"omit_empty": True, "omit": True})
    # autoinc(): (stride, offset) of its numbers, set by analysis (see .counters)
    counter: tuple | None = field(default=None, compare=False, repr=False,
                                  metadata={"omit_empty": True, "omit": True})


@dataclass
class RecordTerm(Node):
    """A record ``[a, b]``: built from its elements, or taken apart where it is matched."""
    args: list


@dataclass
class Nil(Node):
    """``nil``: the empty record of every record type."""


@dataclass
class BranchTerm(Node):
    """An algebraic data type's branch ``$Name(a, b)`` (``$Name`` when it has no fields)."""
    branch: str
    args: list
    number: int = field(default=-1, compare=False, metadata={"omit": True})  # (set by analysis)


@dataclass
class FieldAccess(Node):
    """Field ``index`` of the record or ADT value ``record``, matched by a pattern of
    ``width`` elements -- analysis writes a matched record ``r = [x, y]`` as ``r.-1 = 1,
    x = r.0, y = r.1``.  Index -1 is the pattern's test: 1 when the value is a record (not
    nil), or a value of ADT branch ``branch`` (number ``number``), else 0."""
    record: Node
    index: int
    width: int
    branch: str | None = None
    number: int = field(default=-1, compare=False, metadata={"omit": True})


@dataclass
class AggregateTerm(Node):
    """``count : {...}``, ``sum x : {...}``, ``min x : {...}``, ``max x : {...}``."""
    function: str
    target: Node | None
    body: list  # of literals (a conjunction)


# -- literals ------------------------------------------------------------------------------

@dataclass
class Atom(Node):
    relation: str
    args: list


@dataclass
class Negation(Node):
    atom: Atom


@dataclass
class Comparison(Node):
    op: str  # = != < <= > >=
    left: Node
    right: Node


@dataclass
class Boolean(Node):
    value: bool


@dataclass
class Conjunction(Node):
    literals: list  # Atom | Negation | Comparison | Boolean | Disjunction


@dataclass
class Disjunction(Node):
    alternatives: list  # of Conjunction


# -- items ---------------------------------------------------------------------------------

@dataclass
class Attribute(Node):
    name: str
    type: str


@dataclass
class ChoiceDomain(Node):
    """One domain of ``choice-domain x, (y, z)``: the attributes that pick one tuple."""
    attributes: list  # names


@dataclass
class Declaration(Node):
    relation: str
    attributes: list
    qualifiers: list = field(default_factory=list)
    choice: list = field(default_factory=list, metadata={"omit_empty": True})  # ChoiceDomain
    # ``.decl d = debug_delta(r)``: the relation ``r`` whose rows ``d`` holds with their
    # iteration (its attributes are filled in by transform.iterations)
    mirrors: str = field(default="", metadata={"omit_empty": True})


@dataclass
class TypeDeclaration(Node):
    """``.type T <: base`` (subtype), ``.type T = base`` (alias, or a union of several),
    ``.type T = [a: number, b: T]`` (record: ``base`` is ``"record"``) or
    ``.type T = A {x: number} | B {}`` (algebraic data type: ``base`` is ``"adt"``)."""
    name: str
    base: str
    alternatives: list = field(default_factory=list)  # union (or alias) members, if any
    fields: list = field(default_factory=list, metadata={"omit_empty": True})  # Attribute
    branches: list = field(default_factory=list, metadata={"omit_empty": True})  # Branch
    # the deprecated form written (`.number_type T`, `.symbol_type T`, a bare `.type T`): a
    # subtype of number or symbol, with a warning
    deprecated: str = field(default="", metadata={"omit_empty": True})


@dataclass
class Branch(Node):
    """One branch ``Name {x: number, y: T}`` of an algebraic data type."""
    name: str
    fields: list  # Attribute


@dataclass
class Directive(Node):
    """``.input r``, ``.output r(IO=file, filename="...")``, ``.printsize r``."""
    kind: str
    relation: str
    params: dict = field(default_factory=dict)


@dataclass
class PlanOrder(Node):
    """One version's order in ``.plan 0: (2, 1)``: body atom positions, 1-based."""
    version: int
    order: list


@dataclass
class Rule(Node):
    """``head :- body.``; ``body`` is a list of alternatives (conjunctions) after ``;``.

    A fact ``r(1, 2).`` is a rule with an empty body list.  ``plan`` holds the
    :class:`PlanOrder` items of a ``.plan`` clause after the rule, if any.  A
    subsumptive rule ``r(a) <= r(b) :- body.`` has the dominated atom as ``head``
    and the dominating one as ``dominating``.
    """
    head: Atom
    body: list  # of Conjunction; [] for a fact
    plan: list = field(default_factory=list, metadata={"omit_empty": True})
    dominating: Atom | None = field(default=None, metadata={"omit_empty": True})


@dataclass
class Pragma(Node):
    """``.pragma "key" "value"`` (``value`` is "" for the one-argument form)."""
    key: str
    value: str


@dataclass
class FunctorDeclaration(Node):
    """``.functor f(a: number, symbol): symbol`` (``stateful`` when so marked)."""
    name: str
    params: list  # type names
    result: str
    stateful: bool = False


@dataclass
class ComponentType(Node):
    """``Name<number, T>`` in a component's bases or an ``.init``."""
    name: str
    args: list = field(default_factory=list)  # type (or component) names


@dataclass
class Component(Node):
    """``.comp Name<T> : Base<T> { ... }``: its ``type`` (name and parameters), bases and
    elements, including nested components, ``.init`` and ``.override`` names."""
    type: ComponentType
    bases: list
    declarations: list = field(default_factory=list)
    types: list = field(default_factory=list)
    directives: list = field(default_factory=list)
    rules: list = field(default_factory=list)
    components: list = field(default_factory=list)
    inits: list = field(default_factory=list)
    overrides: list = field(default_factory=list)  # Directive-like: (name, node)


@dataclass
class Lattice(Node):
    """``.lattice T<> { ... }``: read (its operators are not kept), as diffflow does not
    support lattices yet; a relation with a lattice attribute ``x: T<>`` is an error."""
    name: str


@dataclass
class Init(Node):
    """``.init instance = Component<args>``."""
    name: str
    component: ComponentType


@dataclass
class Program(Node):
    filename: str
    declarations: list
    types: list
    directives: list
    rules: list
    pragmas: list = field(default_factory=list, metadata={"omit_empty": True})
    functors: list = field(default_factory=list, metadata={"omit_empty": True})
    components: list = field(default_factory=list, metadata={"omit_empty": True})
    inits: list = field(default_factory=list, metadata={"omit_empty": True})
    lattices: list = field(default_factory=list, metadata={"omit_empty": True})  # Lattice

    def to_data(self):
        data = super().to_data()
        data.pop("filename")
        return data


def walk_terms(*terms, aggregates: bool = False):
    """Every sub-term of ``terms``, each before its parts, left to right.

    An aggregate is yielded but not entered: its target and body are a scope of
    their own.  With ``aggregates`` they are entered too: the target's sub-terms
    follow the aggregate, then each literal of its body, followed by the
    sub-terms of that literal's arguments or sides.  This is the one traversal
    of terms; the helpers below and the rest of the front end use it.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(x) :- e(x), x = 1 + -y * (count : { e(z) }).").rules
    >>> c = rule.body[0].literals[1]
    >>> [type(n).__name__ for n in walk_terms(c.left, c.right)]
    ['Var', 'BinaryOp', 'Number', 'BinaryOp', 'Negative', 'Var', 'AggregateTerm']
    >>> [type(n).__name__ for n in walk_terms(c.right.right.right, aggregates=True)]
    ['AggregateTerm', 'Atom', 'Var']
    """
    stack = list(reversed(terms))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, BinaryOp):
            stack += [node.right, node.left]
        elif isinstance(node, Negative):
            stack.append(node.operand)
        elif isinstance(node, (Functor, RecordTerm, BranchTerm)):
            stack += reversed(node.args)
        elif isinstance(node, FieldAccess):
            stack.append(node.record)
        elif aggregates and isinstance(node, AggregateTerm):
            inner = [] if node.target is None else [node.target]
            for lit in node.body:
                inner += [lit, *literal_terms(lit)]
            stack += reversed(inner)


def literal_terms(lit) -> list:
    """The terms of a literal: an atom's (or negated atom's) arguments, a comparison's sides.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> [len(literal_terms(l)) for l in parse("r(x) :- e(x, _), !f(x), x < 2, true.")
    ...                                  .rules[0].body[0].literals]
    [2, 1, 2, 0]
    """
    if isinstance(lit, Negation):
        lit = lit.atom
    if isinstance(lit, Atom):
        return list(lit.args)
    if isinstance(lit, Comparison):
        return [lit.left, lit.right]
    return []


def term_variables(*terms) -> list:
    """The variables of terms (an aggregate's own variables are local to it, so not these).

    >>> term_variables(BinaryOp(1, 1, "+", Var(1, 1, "x"), Negative(1, 5, Var(1, 6, "y"))))
    [Var(line=1, column=1, name='x'), Var(line=1, column=6, name='y')]
    """
    return [n for n in walk_terms(*terms) if isinstance(n, Var)]


def term_aggregates(*terms) -> list:
    """The aggregates in terms, outermost first (not those nested in an aggregate).

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(n + 1) :- n = count : { e(_) }.").rules
    >>> [a.function for a in term_aggregates(*literal_terms(rule.body[0].literals[0]))]
    ['count']
    """
    return [n for n in walk_terms(*terms) if isinstance(n, AggregateTerm)]


def clause_relations(literals, head_args=()) -> list:
    """Every relation a body reads: its atoms, its negations, and those inside aggregates.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(n) :- e(x), !f(x), n = count : { g(x, _), !h(x) }.").rules
    >>> clause_relations(rule.body[0].literals, rule.head.args)
    ['e', 'f', 'g', 'h']
    """
    names = []
    terms = list(head_args)
    for lit in literals:
        atom = lit.atom if isinstance(lit, Negation) else lit
        if isinstance(atom, Atom):
            names.append(atom.relation)
        terms += literal_terms(lit)
    for node in walk_terms(*terms, aggregates=True):
        atom = node.atom if isinstance(node, Negation) else node
        if isinstance(atom, Atom):
            names.append(atom.relation)
    return names
