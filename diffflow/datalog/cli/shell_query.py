"""The ``query`` command of Soufflé's provenance loop: a conjunction of atoms with constants
and variables, ``query path("a", x), path(x, "d")``.

Answers as Soufflé gives them: ``true.`` when every atom is ground and holds; ``false.`` and
``Tuple rel(...) does not exist`` for a ground atom that does not hold; else the bindings
of the variables (by name: ``x = b, y = d``), one solution at a time: from the second
solution on, the loop reads the next input line -- ``;`` for the next solution, ``.`` to
stop (the solution found last is then not shown) -- and the last solution ends with a
``.`` (``false.`` when there is none).  Each atom is answered by
:meth:`Program.query <diffflow.datalog.program.Program.query>`; solutions come in Soufflé's
order, the first atom's facts outermost: numbers by value, symbols in the order they first
appear in the program text (Soufflé's symbol table; others after them, alphabetically).
``_`` is a wildcard (Soufflé reads it as a variable named ``_`` and prints its values).

>>> from diffflow.datalog.program import Program
>>> p = Program('''.decl e(x: number, y: number)
... e(1, 2). e(2, 3). e(2, 4).''')
>>> p.commit()
>>> query(p, "e(1, x), e(x, y)", iter([";"]), print)
x = 2, y = 3
x = 2, y = 4.
>>> query(p, "e(1, 2), e(2, 3)", iter([]), print)
true.
>>> query(p, "e(1, 2), e(3, 1)", iter([]), print)
false.
Tuple e(3, 1) does not exist
>>> query(p, "e(_, 4)", iter([]), print)
true.
"""
from __future__ import annotations

import re

from diffflow.datalog.syntax import ast

HINT = 'e.g. query path("a", x), path(x, "d")'
USAGE = "use ; to find next solution, use . to break from current query"


def query(program, text: str, lines, write) -> None:
    """Answer the conjunction ``text`` (see module doc): ``write`` takes each line of the
    answer, ``lines`` (an iterator of input lines) gives the ``;`` and ``.`` between
    solutions.  A mistake raises ``ValueError`` before anything is written."""
    atoms = [_atom(part) for part in split_atoms(text)]
    if not atoms:
        raise ValueError(f"query needs atoms; {HINT}")
    answers = []
    for atom, written in atoms:
        try:
            answers.append(program.query(written))
        except KeyError as exc:   # (an unknown relation)
            raise ValueError(exc.args[0]) from None
    relations = program.full_analysed.relations
    rank = symbol_ranks(program)
    joined = []
    for (atom, written), rows in zip(atoms, answers):
        if all(not isinstance(a, (ast.Var, ast.Wildcard)) for a in atom.args):
            if not rows:
                write("false.")
                write(f"Tuple {atom.relation}({', '.join(_shown(a) for a in atom.args)}) "
                      f"does not exist")
                return
            continue
        types = relations[atom.relation].types
        rows = sorted(rows, key=lambda row, t=types: tuple(
            _order(v, kind, rank) for v, kind in zip(row, t)))
        joined.append((atom, rows, types))
    if not joined:
        write("true.")
        return
    _solutions(joined, lines, write)


def _solutions(joined, lines, write) -> None:
    kinds = {}
    for atom, _rows, types in joined:
        for arg, kind in zip(atom.args, types):
            if isinstance(arg, ast.Var):
                kinds.setdefault(arg.name, kind)
    names = sorted(kinds)
    if not names:  # only wildcards: whether some facts match
        write("true." if _bindings(joined) else "false.")
        return
    found, shown = None, set()
    for binding in _bindings(joined):
        values = tuple(binding[n] for n in names)
        if values in shown:   # (only wildcards differ)
            continue
        shown.add(values)
        text = ", ".join(f"{n} = {_answer_value(v, kinds[n])}" for n, v in zip(names, values))
        if found is not None:
            write(found)
        found = text
        if len(shown) > 1:
            for line in lines:
                line = line.strip()
                if line == ";":
                    break
                if line == ".":
                    return
                write(USAGE)
    write("false." if found is None else found + ".")


def _bindings(joined):
    """Every binding of the variables, the first atom's facts outermost."""
    partial = [{}]
    for atom, rows, _types in joined:
        extended = []
        for binding in partial:
            for row in rows:
                new = dict(binding)
                for arg, value in zip(atom.args, row):
                    if isinstance(arg, ast.Var) and new.setdefault(arg.name, value) != value:
                        break
                else:
                    extended.append(new)
        partial = extended
    return partial


def split_atoms(text: str) -> list:
    """The atoms of a conjunction, split at the commas between them.

    >>> split_atoms('p("a,b", x), q(x)')
    ['p("a,b", x)', 'q(x)']
    """
    parts, depth, start, quoted = [], 0, 0, False
    for i, ch in enumerate(text):
        if ch == '"' and (i == 0 or text[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        elif not quoted and ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    if len(parts) > 1 and not all(parts):
        raise ValueError(f"cannot read the query {text.strip()!r}: an atom is missing between "
                         f"its commas; {HINT}")
    return [p for p in parts if p]


def _atom(written: str):
    from diffflow.datalog.syntax.parser import parse_atom

    atom = parse_atom(written, "query", HINT)
    for arg in atom.args:
        negative = isinstance(arg, ast.Negative) and isinstance(arg.operand,
                                                                (ast.Number, ast.Float))
        if not (negative or isinstance(arg, (ast.Var, ast.Wildcard, ast.Number, ast.Float,
                                             ast.String))):
            raise ValueError(f"cannot read the query {written!r}: its arguments must be "
                             f"constants, variables or _; {HINT}")
    return atom, written


def _shown(arg) -> str:
    if isinstance(arg, ast.Negative):
        return "-" + _shown(arg.operand)
    return f'"{arg.value}"' if isinstance(arg, ast.String) else str(arg.value)


def _answer_value(value, kind) -> str:
    """A value as Soufflé's query prints it: symbols bare, floats as C++ streams them."""
    if kind == "float":
        return f"{value:g}"
    return str(value)


def symbol_ranks(program) -> dict:
    """Soufflé's symbol order, as far as the program text tells: ``{symbol: rank}`` in order
    of first appearance.

    >>> class P: source = 'r("b"). r("a"). r("b").'
    >>> symbol_ranks(P())
    {'b': 0, 'a': 1}
    """
    ranks: dict = {}
    for found in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', getattr(program, "source", "") or ""):
        ranks.setdefault(found.group(1), len(ranks))
    return ranks


def _order(value, kind, rank):
    if kind == "symbol" and isinstance(value, str):
        return (rank.get(value, len(rank)), value)
    return (0, value)
