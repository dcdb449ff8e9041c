"""``diffflow explain prog.dl -F facts 'path("a", "d")'``: print a fact's proof and the input
facts it rests on (see :mod:`~diffflow.datalog.explain.derived`)."""
from __future__ import annotations

import sys

from diffflow.datalog.cli.options import (add_jobs_option, add_preprocessor_options, checked_jobs,
                                          compile_program, folder_option, program_options)


def add_commands(commands) -> None:
    """Add ``explain`` to the ``diffflow`` command line's subcommands."""
    explain = commands.add_parser(
        "explain", help="why a fact is derived: its proof of minimal height and input facts")
    explain.add_argument("program", help="the .dl file")
    explain.add_argument("fact", nargs="+",
                         help='facts as in a .dl file, e.g. \'path("a", "d")\' (quote them)')
    explain.add_argument("-F", "--fact-dir", default=None,
                         help="folder of input facts (default: .pragma \"fact-dir\", else .)")
    explain.add_argument("--json", action="store_true", help="Soufflé's JSON proof instead")
    explain.add_argument("-w", "--no-warn", action="store_true", help="no warnings")
    add_jobs_option(explain)
    add_preprocessor_options(explain)
    explain.set_defaults(handler=_explain)


def parse_fact(text: str) -> tuple:
    """``(relation, values)`` of a ground atom written as in a ``.dl`` file.

    >>> parse_fact('path("a", -2)')
    ('path', ('a', -2))
    """
    from diffflow.datalog.syntax import ast
    from diffflow.datalog.syntax.parser import parse_atom

    hint = 'write it as in a .dl file, e.g. path("a", "d")'
    atom = parse_atom(text, "fact", hint)
    values = []
    for arg in atom.args:
        negative = isinstance(arg, ast.Negative) and \
            isinstance(arg.operand, (ast.Number, ast.Float))
        if negative:
            arg = arg.operand
        if not isinstance(arg, (ast.Number, ast.Float, ast.String)):
            raise ValueError(f"cannot read the fact {text!r}: its values must be constants; "
                             f"{hint}")
        values.append(-arg.value if negative else arg.value)
    return atom.relation, tuple(values)


def _explain(args) -> int:
    from diffflow.datalog.explain.derived import format_fact

    targets = [parse_fact(text) for text in args.fact]  # bad facts fail before any work
    program = compile_program(args, provenance=True, partitions=checked_jobs(args),
                              **program_options(args))
    try:
        program.load_facts(folder_option(args.fact_dir, program.pragmas, "fact-dir"),
                           missing_ok=args.no_warn)
        program.commit()
        for number, (relation, values) in enumerate(targets):
            ex = program.explain(relation, values)
            if number:
                print()
            if args.json:
                print(ex.tree.to_json(program.rules()))
                continue
            print(ex.tree)
            print(f"\n{format_fact(relation, ex.fact)} rests on {ex.size} input fact"
                  f"{'' if ex.size == 1 else 's'}:")
            leaves = {(n.relation, n.fact) for n in ex.tree.nodes() if n.rule is None}
            for rel in sorted(ex.inputs):
                for fact in sorted(ex.inputs[rel]):
                    # facts the replay needed beyond the proof's leaves: they keep a
                    # negated fact false, or an aggregate's group as it is
                    note = "" if (rel, fact) in leaves else \
                        "   (keeps a fact the proof negates or aggregates as it is)"
                    print("  " + format_fact(rel, fact) + note)
    finally:
        program.close()
    sys.stdout.flush()
    return 0
