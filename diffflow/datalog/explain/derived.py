"""Why is this fact derived: proof trees of minimal height and the input facts they rest on.

A :class:`Program` compiled with provenance (``Program(..., provenance=True)`` or
``.pragma "provenance" "explain"``) keeps every fact's minimal proof height and a witness
query per clause (:mod:`~diffflow.datalog.lower.provenance`).  :func:`explain` takes one witness of the target fact
(the smallest rule number, then the lowest body heights -- a witness row's variables sort
the ``#h`` heights first -- then the smallest values), then of each of its body facts, level
by level.  Witnesses are read from indexes between commits (:mod:`.witness`); where that
evaluator cannot go (a body atom read with nothing bound), the engine's witness queries
answer, one commit per level, as they do for :mod:`.watch`'s live proofs.
The tree's input leaves are the explanation: running the program on them alone derives the
fact again (:meth:`Explanation.check` does exactly that).

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl edge(x: symbol, y: symbol)
... .decl path(x: symbol, y: symbol)
... path(x, y) :- edge(x, y).
... path(x, z) :- edge(x, y), path(y, z).''', provenance=True)
>>> _ = p.insert("edge", [("a", "b"), ("b", "c"), ("c", "d"), ("a", "c")]); p.commit()
>>> ex = p.explain("path", ("a", "d"))
>>> sorted(ex.inputs["edge"])
[('a', 'c'), ('c', 'd')]
>>> print(ex.tree)
               edge("c", "d")  
               -----------(R1) 
edge("a", "c") path("c", "d")  
---------------------------(R2)
        path("a", "d")         
>>> ex.check()
"""
from __future__ import annotations

from dataclasses import dataclass, field

from diffflow.api.features import FlowAccess
from diffflow.api.inputs import restage
from diffflow.common.errors import ExplainError
from diffflow.datalog.explain.correct import correct, needs_correction, replay
from diffflow.datalog.explain.proof import (GroupNode, Leaf, ProofTree, format_fact, format_value,
                                            show)
from diffflow.datalog.explain.witness import (Evaluator, Unsupported, group_rows, witness_rows)
from diffflow.datalog.lower.provenance import HEIGHTS
from diffflow.datalog.lower.rows import check_python_rows
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.intrinsics import CONSTRAINTS

# -- explanations ---------------------------------------------------------------------------

@dataclass
class Explanation:
    """Why ``relation(fact)`` holds: the proof ``tree`` and the input facts under it
    (``inputs``: relation -> set of facts, a subset of the program's current input)."""
    relation: str
    fact: tuple
    tree: ProofTree
    inputs: dict
    program: object = field(repr=False)
    commits: int = 0   # engine commits the search took (0 when read from indexes)
    rounds: int = 0    # replays of the correction loop (0: the program needs none)

    @property
    def size(self) -> int:
        """Input facts in the explanation."""
        return sum(len(facts) for facts in self.inputs.values())

    def check(self) -> None:
        """Run the program from scratch on :attr:`inputs` alone; raise
        :class:`ExplainError` unless it derives the fact (facts written in the program text
        count as input: those not in the explanation are left out)."""
        if self.fact not in replay(self.program, self.inputs).relation(self.relation):
            raise ExplainError(f"the explanation of {format_fact(self.relation, self.fact)} "
                               f"does not reproduce it: the program on its "
                               f"{self.size} input facts alone does not derive it")


def explain(program, relation: str, fact) -> Explanation:
    """The explanation of one fact of ``program`` as of its last commit (see module doc)."""
    require_provenance(program)
    fact = target_fact(program, relation, fact)
    root, commits = _prove(program, relation, fact)
    if root is None:
        raise ExplainError(f"{format_fact(relation, fact)} is not in {relation} as of the last "
                           f"commit: check its values and that its inputs were committed "
                           f"(explain_absent says why it is not derived)")
    inputs = input_leaves(root)
    rounds = 0
    if needs_correction(program.analysed) and rests_on_negation(root):
        inputs, rounds = correct(program, prove, relation, fact, root, inputs)
    return Explanation(relation, fact, root, inputs, program, commits, rounds)


def prove(program, relation: str, fact: tuple) -> ProofTree:
    """A minimal-height proof of a fact the program derives (no checks)."""
    return _prove(program, relation, fact)[0]


def _prove(program, relation, fact):
    compiled = program._compiled
    if compiled.lookups is not None and FlowAccess(program.flow).runtime is not None:
        try:   # from indexes, without a commit; the engine's queries when it cannot
            return IndexedProofSearch(program, compiled).run(relation, fact), 0
        except Unsupported:
            pass
    search = ProofSearch(program, compiled)
    try:
        root = search.run(relation, fact)
    finally:
        search.finish()
    return root, search.commits


def rests_on_negation(root) -> bool:
    """Whether the proof rests on a negation or an aggregate (else its leaves suffice)."""
    for node in root.nodes():
        for child in node.children:
            if isinstance(child, GroupNode) or isinstance(child, Leaf) and child.negated:
                return True
    return False


def input_leaves(root) -> dict:
    inputs: dict = {}
    for node in root.nodes():
        if node.rule is None:
            inputs.setdefault(node.relation, set()).add(node.fact)
    return inputs


def require_provenance(program):
    compiled = program._compiled
    if not hasattr(compiled, "witnesses"):
        raise ExplainError("this program was compiled without provenance: build it with "
                           "Program(..., provenance=True) or add .pragma \"provenance\" "
                           "\"explain\" to its text")
    changed = {id(inp) for inp in FlowAccess(program.flow).staged()}
    staged = [name for name, inp in compiled.inputs.items() if id(inp) in changed]
    if staged:
        raise ExplainError(f"{', '.join(sorted(staged))} changed since the last commit; "
                           f"explanations are of committed facts: commit() first")
    return compiled


def target_fact(program, relation: str, fact) -> tuple:
    try:
        rel = program._relation(relation)
    except KeyError as exc:
        raise ExplainError(exc.args[0]) from None
    except ValueError as exc:
        raise ExplainError(str(exc)) from None
    fact = tuple(fact) if isinstance(fact, (tuple, list)) else (fact,)
    try:
        check_python_rows(rel, [fact])
    except ValueError as exc:
        raise ExplainError(str(exc)) from None
    return tuple(float(v) if t == "float" else v for v, t in zip(fact, rel.types))


class ProofSearch:
    """Breadth-first over proof levels: each commit asks for every fact and every aggregate
    group of one level.  An item is ``(relation, fact)`` or ``(group, key)``.

    With ``held`` (a dict, :mod:`.watch`'s), requests stay in the flow after the search and
    a level whose items are all held already needs no commit: the witness queries keep
    their answers current as facts change, so a proof that did not change is read again
    without any work."""

    def __init__(self, program, compiled, held: dict | None = None):
        self.program, self.compiled = program, compiled
        self.flow = program.flow
        self.asked: dict = {}   # request input -> rows asked in the flow
        self.held = held
        self.nodes: dict = {}   # item -> ProofTree | GroupNode
        self.by_key: dict = {}  # id(output) -> {key: rows}, read once per commit
        self.done: set = set()  # the items of the proof
        self.commits = 0

    def run(self, relation, fact):
        level, done = [(relation, fact)], set()
        self.nodes = {}
        while level:
            self._ask(level)
            found = self._present([k for k in level if isinstance(k[0], str)])
            if (relation, fact) not in self.nodes and (relation, fact) not in found:
                return None
            following = []
            for key in level:
                done.add(key)
                if isinstance(key[0], str):
                    node = self.nodes[key] = ProofTree(key[0], key[1], found[key])
                    if node.height > 0:
                        following.extend(self._derive(node))
                else:
                    following.extend(self._members(*key))
            level = list(dict.fromkeys(k for k in following if k not in done))
        self.done |= done
        for node in self.nodes.values():  # children were keys until every node existed
            node.children = [self.nodes[c] if isinstance(c, tuple) else c
                             for c in node.children]
        return self.nodes[(relation, fact)]

    def finish(self) -> None:
        """Take the last requests back (the program is as before, one epoch later)."""
        if self.asked:
            self._ask([])

    def _ask(self, level) -> None:
        if self.held is not None:
            self._hold(level)
            return
        wanted: dict = {}
        for item in level:
            request, row = request_of(self.compiled, item)
            wanted.setdefault(request, []).append(row)
        self.asked = restage(self.asked, wanted)
        self._advance()

    def _hold(self, level) -> None:
        """Add the requests not held yet (kept after the search)."""
        added: dict = {}
        for item in level:
            if item not in self.held:
                self.held[item] = True
                request, row = request_of(self.compiled, item)
                added.setdefault(request, []).append(row)
        for request, rows in added.items():
            request.insert(rows)
        if added:
            self._advance()

    def _advance(self) -> None:
        self.flow.advance()
        self.commits += 1
        self.by_key = {}

    def _present(self, level) -> dict:
        """``(relation, fact) -> height`` of the asked facts that hold."""
        found = {}
        for rel in {r for r, _ in level}:
            key = ("asked", rel)
            if key not in self.by_key:
                arity = self.program.relations[rel].arity
                self.by_key[key] = {(rel, () if arity == 0 else tuple(row[:arity])):
                                    int(row[-1])
                                    for row in self.compiled.asked[rel].snapshot()}
            found.update(self.by_key[key])
        return found

    def _rows(self, query, key_of) -> dict:
        """``key -> sorted rows`` of a witness or group output (read once per level)."""
        rows = self.by_key.get(id(query))
        if rows is None:
            rows = self.by_key[id(query)] = {}
            for row in query.output.snapshot():
                rows.setdefault(key_of(dict(zip(query.variables, row))), []).append(row)
            for listed in rows.values():
                listed.sort()
        return rows

    def _witness_rows(self, witness, node) -> list:
        """The sorted rows of ``witness`` deriving ``node``'s fact."""
        rows = self._rows(witness, lambda v, w=witness: tuple(v[x] for x in w.head))
        return rows.get(node.fact, [])

    def _group_rows(self, group, key) -> list:
        return self._rows(group, lambda v: tuple(v[x] for x in group.key)).get(key, [])

    def _derive(self, node):
        """Pick the node's witness (smallest rule number, then smallest row: the ``#h``
        heights sort first); return the items still to explain."""
        for witness in self.compiled.witnesses[node.relation]:
            rows = self._witness_rows(witness, node)
            if rows:
                break
        else:
            raise AssertionError(f"no witness for {node.text} of height {node.height}")
        node.rule = witness.rule
        values = dict(zip(witness.variables, rows[0]))
        return self._children(node, witness.body, witness.groups, values, witness.types)

    def _members(self, group, key):
        """Fill a group node: every member for count and sum, the smallest winner for min
        and max; return the items still to explain."""
        node = self.nodes[(group, key)]
        rows = self._group_rows(group, key)
        if group.aggregate.function in ("min", "max"):
            rows = rows[:1]
        wanted = []
        for row in rows:
            wanted += self._children(node, group.body, group.groups,
                                     dict(zip(group.variables, row)), group.types)
        seen, children = set(), []
        for child in node.children:  # members share facts and constraints: list each once
            mark = child if isinstance(child, tuple) else child.text
            if mark not in seen:
                seen.add(mark)
                children.append(child)
        node.children = children
        return wanted

    def _children(self, node, literals, groups, values, types):
        """Append a body instance's children to ``node`` -- atoms, negations and aggregates
        in body order, then the constraints, as Soufflé lists them; return the items to
        explain."""
        wanted, constraints = [], []
        grounded = {a.name for lit in literals if isinstance(lit, ast.Atom)
                    for a in lit.args if isinstance(a, ast.Var)}
        for lit in literals:
            if isinstance(lit, ast.Atom):
                rel, args = lit.relation, lit.args
                if rel.startswith(HEIGHTS):
                    rel, args = rel.removeprefix(HEIGHTS), args[:-1]
                key = (rel, tuple(_arg(a, values) for a in args))
                node.children.append(key)
                wanted.append(key)
            elif isinstance(lit, ast.Negation):
                node.children.append(Leaf("!" + show(lit.atom, values),
                                          _pattern(lit.atom, values)))
            elif isinstance(lit, ast.Comparison):
                for group in groups.get(id(lit), []):
                    key = (group, tuple(values[v] for v in group.key))
                    if key not in self.nodes:
                        text = f"{show(group.aggregate, values)} = " \
                               f"{format_value(values[group.value])}"
                        atoms = [lit.atom if isinstance(lit, ast.Negation) else lit
                                 for lit in group.aggregate.body]
                        self.nodes[key] = GroupNode(
                            group.aggregate.function, text,
                            patterns=[_pattern(a, values) for a in atoms
                                      if isinstance(a, ast.Atom)])
                    node.children.append(key)
                    wanted.append(key)
                if not _synthetic(lit) and not _alias(lit, grounded):
                    constraints.append(Leaf(constraint_text(self.program, lit, values,
                                                            types)))
        node.children.extend(constraints)
        return wanted


class IndexedProofSearch(ProofSearch):
    """The same search with every level read from indexes (:mod:`.witness`): no commit."""

    def __init__(self, program, compiled):
        super().__init__(program, compiled)
        self.evaluator = Evaluator(compiled.lookups)

    def _ask(self, level) -> None:
        pass

    def finish(self) -> None:
        pass

    def _present(self, level) -> dict:
        found = {}
        for relation, fact in level:
            height = self.compiled.lookups.height(relation, fact)
            if height is not None:
                found[(relation, fact)] = height
        return found

    def _witness_rows(self, witness, node) -> list:
        return witness_rows(self.evaluator, witness, node.fact, node.height)

    def _group_rows(self, group, key) -> list:
        return group_rows(self.evaluator, group, key)


def request_of(compiled, item) -> tuple:
    """The request input and row that ask for an item."""
    first, rest = item
    request = compiled.requests[first] if isinstance(first, str) else first.request
    return request, rest or (0,)


def _pattern(atom, values) -> tuple:
    """``(relation, values)`` of an atom, ``None`` where a value is not bound."""
    def value(arg):
        if isinstance(arg, ast.Var):
            return values.get(arg.name)
        return getattr(arg, "value", None)
    return atom.relation, tuple(value(a) for a in atom.args)


def _arg(arg, values):
    if isinstance(arg, ast.Var):
        return values[arg.name]
    return arg.value


def _alias(lit, grounded: set) -> bool:
    """Whether Soufflé folds the equality away before it runs (its alias resolution): ``x =
    y`` between two variables, or ``x = term`` naming a value no positive atom binds
    (``x = y + 1``: ``x`` becomes ``y + 1`` wherever it is used)."""
    if lit.op != "=" or ast.term_aggregates(lit.left, lit.right):
        return False
    left, right = lit.left, lit.right
    if isinstance(left, ast.Var) and isinstance(right, ast.Var):
        return True
    for var, other in ((left, right), (right, left)):
        if isinstance(var, ast.Var) and var.name not in grounded and \
                var.name not in {v.name for v in ast.term_variables(other)}:
            return True
    return False


def constraint_text(program, lit, values: dict, types: dict) -> str:
    """A constraint as Soufflé's proofs show it: the values of its two sides, ``2 = 2`` for
    ``x + 1 = y``; ``match("a.*", "ab")`` for the string constraints.

    >>> from diffflow.datalog.syntax.parser import parse
    >>> (rule,) = parse("r(y) :- e(x), e(y), x + 1 = y, !match(p, s).").rules
    >>> _, _, plus, match = rule.body[0].literals
    >>> constraint_text(None, plus, {"x": 1, "y": 2}, {})
    '2 = 2'
    >>> print(constraint_text(None, match, {"p": "a.*", "s": "b"}, {}))
    not_match("a.*", "b")
    """
    from types import SimpleNamespace

    from diffflow.datalog.explain.evaluate import NONE, BodyEvaluator

    scope = SimpleNamespace(term_types=types)
    try:
        sides = [BodyEvaluator(program).term(side, values, scope)
                 for side in (lit.left, lit.right)]
    except (KeyError, TypeError, ValueError, ArithmeticError):
        return show(lit, values)
    if any(side is NONE for side in sides):
        return show(lit, values)
    if lit.op.lstrip("!") in CONSTRAINTS:
        name = "not_" + lit.op[1:] if lit.op.startswith("!") else lit.op
        return f'{name}("{sides[0]}", "{sides[1]}")'
    return f"{format_value(sides[0])} {lit.op} {format_value(sides[1])}"


def _synthetic(lit) -> bool:
    """Not the user's: analysis names an atom's expressions ``#e..`` with an equality, a
    head's expressions are ``#a..``; ``n = #g1`` only restates an aggregate's value."""
    names = [v.name for v in ast.term_variables(lit.left, lit.right)]
    if any(n.startswith("#") and not n.startswith("#g") for n in names):
        return True
    return lit.op == "=" and all(isinstance(t, ast.Var) for t in (lit.left, lit.right)) \
        and any(n.startswith("#g") for n in names)
