"""The Datalog front end, in order: every pass a program goes through on its way from text to
the dataflow that computes it (as Soufflé's ``MainDriver`` lists its transforms).

==  ======================  ===================================================  ================================
#   pass                    what it does                                         where
==  ======================  ===================================================  ================================
1   preprocess              ``#include``, ``#define``, ``#if`` (C preprocessor)  :mod:`.syntax.preprocess`
2   parse                   text to syntax tree                                  :mod:`.syntax.parser`
3   expand components       ``.comp`` / ``.init`` copied out: a flat program;    :mod:`.transform.components`,
                            iteration counters (``debug_delta``) as rules        :mod:`.transform.iterations`
4   resolve types           ``.type`` declarations to base types                 :mod:`.analysis.types`
5   resolve structures      record and ADT types                                 :mod:`.analysis.structures`
6   bind user functors      ``@f(...)`` to ``.functor`` and its callable         :mod:`.analysis.user_functors`
7   declare relations       ``.decl``: attributes, qualifiers, choice-domains    :mod:`.analysis.analyser`
8   attach directives       ``.input``, ``.output``, ``.printsize``...           :mod:`.analysis.analyser`
9   read pragmas            ``.pragma`` settings                                 :mod:`.analysis.pragmas`
10  add rules               bodies to clauses (DNF); constant facts folded       :mod:`.analysis.analyser`
11  check eqrel             an equivalence closure takes no more                 here
12  select inline           relations to unfold                                  :mod:`.transform.inline`
13  check clauses           every variable bound and typed (head variables of    :mod:`.analysis.clauses`,
                            subtypes of their attributes' types)                 :mod:`.analysis.subtypes`
14  check inline uses       where an inline relation may stand                   :mod:`.transform.inline`
15  stratify                relations in dependency order (SCCs)                 :mod:`.analysis.strata`
16  number counters         ``autoinc()``                                        :mod:`.transform.counters`
17  check plans             ``.plan`` orders                                     :mod:`.analysis.plans`
18  unfold inline           inline relations unfolded; stratified again          :mod:`.transform.inline`
19  magic sets              relations computed only as far as outputs ask        :mod:`.transform.magic`
                            (``.pragma "magic-transform"``)
20  lower                   clauses to a dataflow (with provenance: heights,     :mod:`.lower.compiler`,
                            witness queries)                                     :mod:`.lower.provenance`
==  ======================  ===================================================  ================================

Passes 2-3 are :func:`parse_program` (after the preprocessor, pass 1), 3-18 :func:`analyse` (over an
:class:`~diffflow.datalog.analysis.analyser.Analyser`, the program under analysis; pass 3
does nothing on a program whose components are expanded already); the
:class:`~diffflow.datalog.program.Program` runs them all (:func:`front_end`), then
:func:`magic_sets` once it knows which relations are read (pass 19), then lowers.

>>> analysed = analyse(parse_program(".decl e(x: number)\\n.decl r(x: number) inline\\n"
...                                  ".decl s(x: number)\\nr(x) :- e(x).\\ns(x) :- r(x)."))
>>> list(analysed.relations), [s.relations for s in analysed.strata]
(['e', 's'], [['e'], ['s']])
>>> [name for name, _ in ANALYSIS]
... # doctest: +NORMALIZE_WHITESPACE
['resolve types', 'resolve structures', 'bind user functors', 'declare relations',
 'attach directives', 'read pragmas', 'add rules', 'check eqrel', 'select inline',
 'check clauses', 'check inline uses', 'stratify', 'number counters', 'check plans',
 'unfold inline']
"""
from __future__ import annotations

from diffflow.datalog.analysis.analysed import Analysed
from diffflow.datalog.analysis.analyser import Analyser
from diffflow.datalog.analysis.plans import check_plans
from diffflow.datalog.analysis.pragmas import read_pragmas
from diffflow.datalog.analysis.strata import stratify
from diffflow.datalog.analysis.structures import resolve_structures
from diffflow.datalog.analysis.subtypes import check_subtypes
from diffflow.datalog.analysis.types import resolve_types
from diffflow.datalog.analysis.user_functors import bind_user_functors
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.parser import parse
from diffflow.datalog.syntax.preprocess import preprocess
from diffflow.datalog.transform import inline as inlining
from diffflow.datalog.transform.components import expand_components
from diffflow.datalog.transform.counters import number_counters
from diffflow.datalog.transform.iterations import count_iterations
from diffflow.datalog.transform.magic import Unstratifiable, demand_transform, magic_relations


def parse_program(source: str, filename: str = "<program>") -> ast.Program:
    """Passes 2-3: preprocessed text to the flat syntax tree analysis reads.

    >>> program = parse_program(".comp C { .decl a(x: number) }\\n.init c = C")
    >>> [d.relation for d in program.declarations]
    ['c.a']
    """
    return count_iterations(expand_components(parse(source, filename), source), source)


def front_end(source: str, filename: str = "<program>", include_dirs=None, macros=None,
              functors: dict | None = None) -> tuple:
    """Passes 1-18: ``(preprocessed text, syntax tree, analysed program)``."""
    text = preprocess(source, filename, include_dirs, macros)
    tree = parse_program(text, filename)
    return text, tree, analyse(tree, text, functors)


# -- the analysis passes (4-18), each on the program under analysis --------------------------
def _resolve_types(a: Analyser) -> None:
    from diffflow.datalog.syntax.errors import DatalogWarning

    a.types = resolve_types(a.program.types, a.error)
    for t in a.program.types:
        if t.deprecated:
            kind = "number" if t.base == "number" else "symbol"
            a.warnings.append(DatalogWarning(
                f"deprecated type declaration {t.deprecated!r}, read as '.type {t.name} <: "
                f"{kind}' (as Soufflé does); write that instead", a.source,
                a.program.filename, t.line, t.column))
    for lattice in a.program.lattices:
        a.warnings.append(DatalogWarning(
            f"lattice {lattice.name!r} is read but ignored: diffflow does not support lattices "
            f"yet (a relation with a lattice attribute x: {lattice.name}<> is an error)",
            a.source, a.program.filename, lattice.line, lattice.column))


def _resolve_structures(a: Analyser) -> None:
    a.structures = resolve_structures(a.program.types, a.types, a.error)


def _bind_user_functors(a: Analyser) -> None:
    bind_user_functors(a, a.program, a.bindings)


def _read_pragmas(a: Analyser) -> None:
    a.pragmas, warnings, a.pragma_notes = read_pragmas(a.program.pragmas, a.source,
                                                       a.program.filename)
    a.warnings += warnings


def _add_rules(a: Analyser) -> None:
    for rule in a.program.rules + a.closure_rules():
        a.add_rule(rule)


def _check_eqrel(a: Analyser) -> None:
    for relation in a.relations.values():
        if relation.eqrel and (relation.dominated or relation.limit is not None):
            raise a.error(f"eqrel relation {relation.name!r} is the whole equivalence "
                          f"closure; it cannot also have subsumptive rules or .limitsize",
                          relation.declaration, hint="apply them to a relation computed from it")


def _select_inline(a: Analyser) -> None:
    a.inline = inlining.select(a, a.pragmas)
    for relation in a.relations.values():
        if relation.name in a.inline and relation.shaped:
            raise a.error(f"inline relation {relation.name!r} cannot be eqrel or have "
                          f"a choice-domain, .limitsize or subsumptive rules",
                          relation.declaration, hint="remove 'inline'")


def _check_clauses(a: Analyser) -> None:
    for relation in a.relations.values():
        for clause in relation.clauses + relation.dominated:
            a.check_clause(clause, lenient=relation.name in a.inline)
    check_subtypes(a)


def _stratify(a: Analyser) -> None:
    a.strata, a.notes = stratify(a.relations, a.error)


def _unfold_inline(a: Analyser) -> None:
    if not a.inline:
        return
    unfolded, inline_notes = inlining.unfold(a, a.inline)
    for name in a.inline:
        del a.relations[name]
    for name, clauses in unfolded.items():
        relation = a.relations[name]
        relation.ruled = bool(relation.clauses)
        relation.clauses = clauses
    a.strata, _ = stratify(a.relations, a.error)
    a.notes += inline_notes


#: the analysis passes in the order :func:`analyse` runs them
ANALYSIS = (
    ("resolve types", _resolve_types),
    ("resolve structures", _resolve_structures),
    ("bind user functors", _bind_user_functors),
    ("declare relations", Analyser.declare),
    ("attach directives", Analyser.attach_directives),
    ("read pragmas", _read_pragmas),
    ("add rules", _add_rules),
    ("check eqrel", _check_eqrel),
    ("select inline", _select_inline),
    ("check clauses", _check_clauses),
    ("check inline uses", lambda a: inlining.check_uses(a, a.inline)),
    ("stratify", _stratify),
    ("number counters", lambda a: number_counters(a, a.relations, a.strata, a.inline)),
    ("check plans", lambda a: check_plans(a, a.relations, a.strata)),
    ("unfold inline", _unfold_inline),
)


def analyse(program: ast.Program, source: str = "", functors: dict | None = None,
            eqrel_as_rules: bool = False) -> Analysed:
    """Passes 3-18: check a parsed program and bring it to the compiler's normal form.

    ``functors`` binds user-defined functors to Python callables; ``eqrel_as_rules``
    writes each eqrel relation as its reflexive, symmetric and transitive rules
    (provenance mode: so that its facts have proofs); otherwise its closure is computed by
    :mod:`~diffflow.datalog.lower.relation_value`.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> a = analyse(parse(".decl e(x: number)\\n.decl r(x: float)\\nr(1.5) :- e(_)."))
    >>> list(a.relations), a.relations["r"].types
    (['e', 'r'], ['float'])
    """
    a = Analyser(count_iterations(expand_components(program, source), source), source, functors,
                 eqrel_as_rules)
    for _name, run in ANALYSIS:
        run(a)
    return Analysed(a.program, a.source, a.relations, a.strata, a.pragma_notes + a.notes,
                    a.pragmas, a.warnings, a.inline, a.structures)


def magic_sets(analysed: Analysed, roots) -> Analysed:
    """Pass 19: ``.pragma "magic-transform"`` applied, with ``roots`` the relations read whole
    (``None``: every relation, so magic sets cannot leave any out and are not applied).

    >>> a = analyse(parse_program('.pragma "magic-transform" "*"\\n'
    ...                           ".decl e(x: number, y: number)\\n"
    ...                           ".decl t(x: number, y: number)\\n.decl q(y: number)\\n"
    ...                           "t(x, y) :- e(x, y).\\nt(x, z) :- t(x, y), e(y, z).\\n"
    ...                           "q(y) :- t(1, y)."))
    >>> list(magic_sets(a, ["q"]).on_demand)
    ['t']
    """
    _check_magic_names(analysed)
    chosen = magic_relations(analysed)
    if chosen is None:
        return analysed
    if roots is None:
        analysed.notes.append("magic sets not applied: every relation is read whole "
                              "(outputs=None); name the outputs to compute less")
        return analysed
    try:
        return demand_transform(analysed, roots, chosen)
    except Unstratifiable as exc:
        analysed.notes.append(f"magic sets not applied: the magic rules would make the "
                              f"program unstratifiable ({exc})")
        return analysed


def _check_magic_names(analysed: Analysed) -> None:
    """A located warning for each name in the magic-set pragmas that is no relation."""
    from diffflow.datalog.syntax.errors import DatalogWarning, did_you_mean

    for pragma in analysed.program.pragmas:
        if pragma.key not in ("magic-transform", "magic-transform-exclude"):
            continue
        for name in pragma.value.replace(" ", ",").split(","):
            name = name.strip()
            if name and name != "*" and name not in analysed.relations:
                analysed.warnings.append(DatalogWarning(
                    f"pragma {pragma.key!r} names {name!r}, which is no relation"
                    f"{did_you_mean(name, analysed.relations)}; it is ignored",
                    analysed.source, analysed.program.filename, pragma.line, pragma.column))
