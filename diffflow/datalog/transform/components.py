"""Components: ``.comp`` / ``.init`` expanded into a flat program before analysis.

Each ``.init instance = Comp<args>`` copies the component's elements -- those of
its bases first (``.comp Sub : Base<T>``), minus the rules of relations it
``.override``\\ s -- with:

* its type parameters replaced by the arguments (a parameter may also name the
  component a nested ``.init`` or a base uses);
* the relations and types it declares, and the instances it makes, prefixed
  ``instance.``; any other name is resolved in the enclosing instance, and so
  on out to the program (a component's rules may use relations of the
  program or of an enclosing component);
* the positions of the original text, so errors point at the component's lines.

>>> from diffflow.datalog.syntax.parser import parse
>>> flat = expand_components(parse(".comp C<T> { .decl r(x: T)\\n r(1). }\\n.init i = C<float>"))
>>> [(d.relation, d.attributes[0].type) for d in flat.declarations], flat.rules[0].head.relation
([('i.r', 'float')], 'i.r')
"""
from __future__ import annotations

import dataclasses

from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogError, did_you_mean


def expand_components(program: ast.Program, source: str = "") -> ast.Program:
    """The program with every component instantiated and every ``.comp`` gone."""
    if not program.components and not program.inits:
        return program
    out = {k: list(getattr(program, k)) for k in ("declarations", "types", "directives",
                                                  "rules")}
    expander = _Expander(program, source, out)
    program_scope = _Scope({c.type.name: c for c in program.components}, None)
    expander.check_unique(program.components, program.inits)
    expander.check_namespaces(program)
    for comp in program.components:
        expander.check_overrides(comp, program_scope)
    for init in program.inits:
        expander.instantiate(init, program_scope, "", lambda name: name, lambda name: name, {})
    return dataclasses.replace(program, components=[], inits=[], **out)


@dataclasses.dataclass
class _Scope:
    """The components visible at a place: those defined there, then the enclosing ones."""
    components: dict
    parent: "_Scope | None"

    def find(self, name):
        scope = self
        while scope is not None:
            if name in scope.components:
                return scope.components[name], scope
            scope = scope.parent
        return None, None

    def names(self) -> list:
        scope, out = self, []
        while scope is not None:
            out += list(scope.components)
            scope = scope.parent
        return out


class _Expander:
    def __init__(self, program, source, out):
        self.program, self.source, self.out = program, source, out
        self.depth = 0

    def error(self, message, node, hint=None):
        return DatalogError(message, self.source, self.program.filename, node.line, node.column,
                            hint)

    def check_unique(self, components, inits):
        seen = {}
        for c in components:
            if c.type.name in seen:
                raise self.error(f"component {c.type.name!r} is declared twice (first at line "
                                 f"{seen[c.type.name].line})", c)
            seen[c.type.name] = c
        names = {}
        for i in inits:
            if i.name in names:
                raise self.error(f"instance {i.name!r} is initialised twice (first at line "
                                 f"{names[i.name].line})", i)
            names[i.name] = i

    def component(self, node, name: str, scope: _Scope):
        comp, home = scope.find(name)
        if comp is None:
            raise self.error(f"unknown component {name!r}{did_you_mean(name, scope.names())}",
                             node, hint="declare it with .comp " + name + " { ... }")
        return comp, home

    def check_namespaces(self, program):
        """Soufflé's check that the program's components and instances have names of their
        own: no type's, relation's, component's or earlier instance's (that a type and a
        relation share one is found by analysis, on the expanded program)."""
        names = {}
        for what, nodes in (("type", program.types), ("relation", program.declarations)):
            for node in nodes:
                names.setdefault(node.name if what == "type" else node.relation, (what, node))
        for what, nodes in (("component", program.components), ("instance", program.inits)):
            for node in nodes:
                name = node.type.name if what == "component" else node.name
                if name in names:
                    other, first = names[name]
                    at = node.type if what == "component" else node
                    raise self.error(f"{what} {name!r} has the name of the {other} declared at "
                                     f"line {first.line}; a component or an instance needs a "
                                     f"name of its own (as in Soufflé)", at,
                                     hint=f"rename the {what} or the {other}")
                names[name] = (what, node)

    def check_overrides(self, comp, home: _Scope):
        """Soufflé's check of every ``.override`` of a component's definition (instantiated or
        not): it names a relation the component inherits, from bases known by name (a base
        named by a type parameter is known only when instantiated), declared overridable."""
        scope = _Scope({c.type.name: c for c in comp.components}, home)
        own = {d.relation: d for d in comp.declarations}
        for override in comp.overrides:
            if override.relation in own:
                raise self.error(
                    f".override {override.relation}: {comp.type.name!r} declares "
                    f"{override.relation!r} itself (line {own[override.relation].line}); "
                    f".override replaces the rules of a relation a base declares", override,
                    hint=f"remove '.override {override.relation}'")
        parents, todo = [], [(comp, home)]
        while todo:
            current, where = todo.pop()
            for base in current.bases:
                if base.name in current.type.args:
                    continue
                found, found_home = where.find(base.name)
                if found is not None and all(found is not p for p, _ in parents):
                    parents.append((found, found_home))
                    todo.append((found, found_home))
        for override in comp.overrides:
            for parent, _ in parents:
                for d in parent.declarations:
                    if d.relation == override.relation and "overridable" not in d.qualifiers:
                        raise self.error(
                            f".override {override.relation}: {override.relation!r} is not "
                            f"declared overridable", override,
                            hint=f"declared at line {d.line} (in {parent.type.name!r}); add the "
                                 f"qualifier 'overridable' there")
        for nested in comp.components:
            self.check_overrides(nested, scope)

    def bind(self, comp, args: list, node) -> dict:
        params = comp.type.args
        if len(args) != len(params):
            raise self.error(f"component {comp.type.name!r} takes {len(params)} type "
                             f"parameter(s) ({', '.join(params) or 'none'}), got {len(args)}",
                             node)
        return dict(zip(params, args))

    # -- one instance ----------------------------------------------------------------------
    def instantiate(self, init: ast.Init, scope: _Scope, prefix: str, outer_relation,
                    outer_type, outer_binding: dict):
        self.depth += 1
        if self.depth > 64:
            raise self.error(f"instantiating {init.component.name!r} nests more than 64 "
                             f"levels: a component that instantiates itself?", init)
        try:
            name = outer_binding.get(init.component.name, init.component.name)
            comp, home = self.component(init.component, name, scope)
            args = [outer_binding.get(a, outer_type(a)) for a in init.component.args]
            elements = self.collect(comp, self.bind(comp, args, init.component), home, init)
            self.emit(elements, prefix + init.name + ".", outer_relation, outer_type)
        finally:
            self.depth -= 1

    def collect(self, comp, binding: dict, home: _Scope, at) -> dict:
        """The component's elements with its bases' first, type parameters substituted,
        overridden rules dropped; ``scope`` is where its nested components live."""
        parts = {k: [] for k in ("declarations", "types", "directives", "rules", "inits")}
        scope = _Scope({c.type.name: c for c in comp.components}, home)
        self.check_unique(comp.components, comp.inits)
        inherited_scopes = []
        for base in comp.bases:
            base_name = binding.get(base.name, base.name)
            base_comp, base_home = self.component(base, base_name, scope)
            if self.depth > 64:
                raise self.error(f"component {comp.type.name!r} inherits from itself", base)
            self.depth += 1
            try:
                base_args = [binding.get(a, a) for a in base.args]
                inherited = self.collect(base_comp, self.bind(base_comp, base_args, base),
                                         base_home, base)
            finally:
                self.depth -= 1
            inherited_scopes.append(inherited.pop("scope"))
            for k in parts:
                parts[k] += inherited[k]
        for override in comp.overrides:
            declared = [d for d in parts["declarations"] if d.relation == override.relation]
            if not declared:
                raise self.error(f".override {override.relation}: no base of "
                                 f"{comp.type.name!r} declares {override.relation!r}", override)
            parts["rules"] = [r for r in parts["rules"] if r.head.relation != override.relation]
        typed = _Substitute(binding)
        parts["declarations"] += [typed.declaration(d) for d in comp.declarations]
        parts["types"] += [typed.type_declaration(t) for t in comp.types]
        parts["directives"] += list(comp.directives)
        parts["rules"] += [typed.rule(r) for r in comp.rules]
        parts["inits"] += [(i, scope, binding) for i in comp.inits]
        for s in inherited_scopes:  # a base's nested components stay visible to its inits
            scope.components = {**s.components, **scope.components}
        parts["scope"] = scope
        return parts

    def emit(self, parts: dict, prefix: str, outer_relation, outer_type):
        relations = {d.relation for d in parts["declarations"]}
        types = {t.name for t in parts["types"]}
        instances = {i.name for i, _, _ in parts["inits"]}

        def relation(name):
            if name in relations or name.split(".")[0] in instances:
                return prefix + name
            return outer_relation(name)

        def type_name(name):  # (D.T: the type T of the instance D made here)
            if name in types or ("." in name and name.split(".")[0] in instances):
                return prefix + name
            return outer_type(name)

        branches = {b.name for t in parts["types"] for b in t.branches}

        def branch(name):  # (an ADT's branches are the instance's: $instance.Branch)
            return prefix + name if name in branches else name

        rename = _Rewrite(relation, type_name, branch)
        for d in parts["declarations"]:
            self.out["declarations"].append(rename.declaration(d))
        for t in parts["types"]:
            self.out["types"].append(rename.type_declaration(t))
        for d in parts["directives"]:
            self.out["directives"].append(dataclasses.replace(d, relation=relation(d.relation)))
        for r in parts["rules"]:
            self.out["rules"].append(rename.rule(r))
        for init, scope, binding in parts["inits"]:
            self.instantiate(init, scope, prefix, relation, type_name, binding)


class _Rewrite:
    """Copies of syntax with relation and type names mapped."""

    def __init__(self, relation, type_name, branch=lambda name: name):
        self.relation, self.type_name, self.branch = relation, type_name, branch

    def declaration(self, d):
        return dataclasses.replace(
            d, relation=self.relation(d.relation),
            mirrors=self.relation(d.mirrors) if d.mirrors else "",
            attributes=[dataclasses.replace(a, type=self.type_name(a.type))
                        for a in d.attributes])

    def type_declaration(self, t):
        return dataclasses.replace(
            t, name=self.type_name(t.name), base=self.type_name(t.base),
            alternatives=[self.type_name(a) for a in t.alternatives],
            fields=[self.attribute(f) for f in t.fields],
            branches=[dataclasses.replace(b, name=self.branch(b.name),
                                          fields=[self.attribute(f) for f in b.fields])
                      for b in t.branches])

    def attribute(self, a):
        return dataclasses.replace(a, type=self.type_name(a.type))

    def rule(self, r):
        return dataclasses.replace(
            r, head=self.atom(r.head), body=[self.literal(c) for c in r.body],
            dominating=self.atom(r.dominating) if r.dominating is not None else None)

    def atom(self, a):
        return dataclasses.replace(a, relation=self.relation(a.relation),
                                   args=[self.term(t) for t in a.args])

    def literal(self, lit):
        if isinstance(lit, ast.Atom):
            return self.atom(lit)
        if isinstance(lit, ast.Negation):
            return dataclasses.replace(lit, atom=self.atom(lit.atom))
        if isinstance(lit, ast.Comparison):
            return dataclasses.replace(lit, left=self.term(lit.left), right=self.term(lit.right))
        if isinstance(lit, ast.Conjunction):
            return dataclasses.replace(lit, literals=[self.literal(x) for x in lit.literals])
        if isinstance(lit, ast.Disjunction):
            return dataclasses.replace(lit, alternatives=[self.literal(x)
                                                          for x in lit.alternatives])
        return lit

    def term(self, t):
        if isinstance(t, ast.BinaryOp):
            return dataclasses.replace(t, left=self.term(t.left), right=self.term(t.right))
        if isinstance(t, ast.Negative):
            return dataclasses.replace(t, operand=self.term(t.operand))
        if isinstance(t, ast.Functor):
            return dataclasses.replace(
                t, args=[self.term(a) for a in t.args],
                type_name=self.type_name(t.type_name) if t.type_name else None)
        if isinstance(t, ast.AggregateTerm):
            return dataclasses.replace(
                t, target=self.term(t.target) if t.target is not None else None,
                body=[self.literal(x) for x in t.body])
        if isinstance(t, ast.RecordTerm):
            return dataclasses.replace(t, args=[self.term(a) for a in t.args])
        if isinstance(t, ast.BranchTerm):
            return dataclasses.replace(t, branch=self.branch(t.branch),
                                       args=[self.term(a) for a in t.args])
        return t


class _Substitute(_Rewrite):
    """Type parameters replaced by their arguments; relation names kept."""

    def __init__(self, binding: dict):
        super().__init__(lambda name: name, lambda name: binding.get(name, name))

