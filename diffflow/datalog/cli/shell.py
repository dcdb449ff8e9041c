"""Soufflé's provenance command loop, for ``diffflow run prog.dl -t explain``.

Commands, one per line (read from stdin, so a script can be piped in):

* ``explain rel(v1, v2, ...)`` -- the fact's proof, cut at the depth limit: a derived fact
  that deep prints as ``subproof rel(N)``;
* ``subproof rel(N)`` -- the proof of cut-off fact number ``N``;
* ``explainnegation rel(v1, ...)`` -- why the fact is not derived; the next lines give a rule
  number and then a value for each of the rule's body variables, in the order asked
  (Soufflé's dialogue); an empty rule number picks the automatic mode, every rule at once;
* ``query rel(v1, x), rel(x, v2), ...`` -- a conjunction of atoms with constants and
  variables: ``true.``/``false.`` or the variables' bindings, one solution per ``;`` line
  (:mod:`.shell_query`);
* ``setdepth N`` (default 4), ``format json|proof``, ``output FILE`` (``output`` alone goes
  back to the screen), ``rule rel N``, ``exit`` / ``quit`` / ``q``.

Prompts and the list of rules are shown only when a person types (stdin is a terminal);
proofs go to the output, mistakes to stderr, and a mistake never ends the loop.

>>> import io
>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl e(x: number, y: number)
... .decl p(x: number, y: number)
... p(x, y) :- e(x, y).
... p(x, z) :- e(x, y), p(y, z).''', provenance=True)
>>> _ = p.insert("e", [(1, 2), (2, 3), (3, 4)]); p.commit()
>>> ExplainShell(p).run(io.StringIO("setdepth 2\\nexplain p(1, 4)\\nsubproof p(0)\\nexit\\n"))
e(1, 2) subproof p(0) 
------------------(R2)
       p(1, 4)        
e(2, 3) subproof p(1) 
------------------(R2)
       p(2, 4)        
"""
from __future__ import annotations

import sys

from diffflow.datalog.explain.proof import GroupNode, Leaf, ProofTree, proof_json
from diffflow.datalog.syntax import ast

HELP = """Commands:
  setdepth <depth>                 limit the printed proof's height (default 4)
  explain <relation>(<v1>, ...)    print the fact's proof
  explainnegation <relation>(...)  why the fact is not derived (asks for a rule and values)
  subproof <relation>(<label>)     print a proof cut off at the depth limit
  rule <relation> <number>         print a rule
  query <relation>(<v1>, x), ...   the bindings of x, ... that make every atom hold
                                   (; for the next solution, . to stop)
  output [<file>]                  write proofs to a file (no file: back to the screen)
  format <json|proof>              JSON or proof trees
  exit                             leave (also quit, q)"""


class ExplainShell:
    """The command loop over a program compiled with provenance (see module doc)."""

    def __init__(self, program, out=None, err=None, interactive: bool = False):
        self.program = program
        self.screen = out or sys.stdout
        self.out = self.screen
        self.err = err or sys.stderr
        self.interactive = interactive
        self.depth = 4
        self.json = False
        self.subproofs: list = []   # (relation, fact) of every cut-off fact, by label

    def run(self, lines) -> None:
        """Read and run commands until ``exit`` or the end of input."""
        lines = iter(lines)
        while True:
            self._prompt("Enter command > ")
            line = next(lines, None)
            if line is None or not self.command(line.strip(), lines):
                break
        if self.out is not self.screen:
            self.out.close()

    def command(self, line: str, lines=None) -> bool:
        """Run one command (``lines``: where a dialogue reads its answers); ``False`` means
        leave."""
        lines = iter(()) if lines is None else lines
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        try:
            if not word:
                return True
            if word in ("exit", "quit", "q"):
                self._prompt("Exiting explain\n")
                return False
            handler = getattr(self, "_" + word, None)
            if handler is None:
                self._error(f"unknown command {word!r}\n{HELP}")
            else:
                handler(rest, lines)
        except ValueError as exc:  # ExplainError and bad arguments: say so, keep going
            self._error(str(exc))
        return True

    # -- commands ---------------------------------------------------------------------------
    def _setdepth(self, rest, lines) -> None:
        if not rest.isdigit() or int(rest) < 1:
            raise ValueError(f"setdepth needs a whole number of at least 1, got {rest!r}")
        self.depth = int(rest)
        self._info(f"Depth is now {self.depth}\n")

    def _explain(self, rest, lines) -> None:
        relation, fact = _fact(rest, "explain")
        self._print(self.program.explain(relation, fact).tree)

    def _subproof(self, rest, lines) -> None:
        relation, label = _fact(rest, "subproof")
        if len(label) != 1 or not isinstance(label[0], int) or \
                not 0 <= label[0] < len(self.subproofs) or \
                self.subproofs[label[0]][0] != relation:
            raise ValueError(f"no subproof {rest}: labels come from a cut-off proof, "
                             f"'subproof {relation}(N)' as printed")
        self._print(self.program.explain(*self.subproofs[label[0]]).tree)

    def _explainnegation(self, rest, lines) -> None:
        relation, fact = _fact(rest, "explainnegation")
        rules = self.program.rules().get(relation, {})
        if relation not in self.program.relations and not rules:
            raise ValueError(f"unknown relation {relation!r}; the program's relations are "
                             f"{', '.join(sorted(self.program.relations))}")
        if relation in self.program.relations and not rules:
            self._error("The tuple would be an input fact!")
            return
        listed = "".join(f"{n}: {text}\n\n" for n, text in sorted(rules.items()))
        self._info(listed)
        self._prompt("Pick a rule number: ")
        answer = next(lines, "").strip()
        if not answer:
            self._print(self.program.explain_absent(relation, fact))
            return
        if not answer.isdigit() or int(answer) not in rules:
            raise ValueError(f"{answer!r} is not a rule of {relation}; its rules are "
                             f"{', '.join(str(n) for n in sorted(rules))}")
        number = int(answer)
        bindings = {}
        for name in _body_variables(self.program, relation, number):
            self._prompt(f"Pick a value for {name}: ")
            value = next(lines, None)
            if value is None:   # (the script ended while a value was asked)
                return
            bindings[name] = value.strip()
        absence = self.program.explain_absent(relation, fact, rule=number, bindings=bindings)
        self._print(absence.checks[0])

    def _query(self, rest, lines) -> None:
        from diffflow.datalog.cli.shell_query import query

        def write(text):   # (answers go to the screen, as Soufflé's do: output is for proofs)
            self.screen.write(text + "\n")
            self.screen.flush()

        query(self.program, rest, lines, write)

    def _rule(self, rest, lines) -> None:
        parts = rest.split()
        if len(parts) != 2:
            raise ValueError("usage: rule <relation name> <rule number>")
        rules = self.program.rules().get(parts[0], {})
        if not rules:
            raise ValueError(f"{parts[0]!r} has no rules (an input, or no relation of the "
                             f"program); rule <relation name> <rule number>")
        if not parts[1].isdigit() or int(parts[1]) not in rules:
            raise ValueError(f"{parts[0]} has rules {', '.join(str(n) for n in sorted(rules))}; "
                             f"rule {parts[0]} <rule number>")
        self._write(rules[int(parts[1])] + "\n")

    def _output(self, rest, lines) -> None:
        try:   # a file that cannot be written leaves the output where it was
            opened = open(rest, "w", encoding="utf-8") if rest else self.screen
        except OSError as exc:
            raise ValueError(f"cannot write proofs to {rest}: {exc.strerror}; the output "
                             f"stays where it was") from None
        if self.out is not self.screen:
            self.out.close()
        self.out = opened

    def _format(self, rest, lines) -> None:
        if rest not in ("json", "proof"):
            raise ValueError("usage: format <json|proof>")
        self.json = rest == "json"

    # -- printing ---------------------------------------------------------------------------
    def _print(self, tree) -> None:
        if isinstance(tree, ProofTree):
            tree = self._cut(tree, self.depth)
        if self.json:
            text = proof_json(tree, self.program.rules())
        else:   # a proof cut at its root is one leaf: its text, as Soufflé prints it
            text = tree.text if isinstance(tree, Leaf) else str(tree)
        self._write(text + "\n")

    def _cut(self, node, depth):
        """A copy of the proof with derived facts at the depth limit as subproof leaves."""
        if isinstance(node, Leaf) or isinstance(node, ProofTree) and node.rule is None:
            return node
        if isinstance(node, ProofTree) and depth <= 1:
            key = (node.relation, node.fact)
            if key not in self.subproofs:
                self.subproofs.append(key)
            return Leaf(f"subproof {node.relation}({self.subproofs.index(key)})")
        children = [self._cut(c, depth - 1) for c in node.children]
        if isinstance(node, GroupNode):
            return GroupNode(node.function, node.text, children, node.patterns)
        return ProofTree(node.relation, node.fact, node.height, node.rule, children)

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def _prompt(self, text: str) -> None:
        if self.interactive:
            self.screen.write(text)
            self.screen.flush()

    _info = _prompt

    def _error(self, text: str) -> None:
        self.err.write(text.rstrip("\n") + "\n")
        self.err.flush()


def _fact(text: str, command: str) -> tuple:
    from diffflow.datalog.cli.explain import parse_fact

    if not text:
        raise ValueError(f'usage: {command} <relation>(<value>, ...), e.g. path("a", "d")')
    return parse_fact(text)


def _body_variables(program, relation: str, number: int) -> list:
    """The variables Soufflé asks values for: a rule's body variables not in its head, in
    order of appearance."""
    from diffflow.datalog.lower.provenance import rule_numbers

    rel = program.relations[relation]
    numbers = rule_numbers(rel)
    (clause,) = [c for c in rel.clauses if numbers[id(c)] == number]
    head = {v.name for v in ast.term_variables(*clause.head.args)}
    names = [v.name for lit in clause.literals
             for v in ast.term_variables(*ast.literal_terms(lit))]
    return list(dict.fromkeys(n for n in names if n not in head and not n.startswith("#")))
