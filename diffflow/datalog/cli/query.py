"""``diffflow query prog.dl -F facts 'tc(30, y)'``: answer point queries on a program.

The program's relations are computed only as far as the queries ask (magic sets, see
:meth:`Program.query <diffflow.datalog.program.Program.query>`); outputs are not
computed unless asked.  Each answer is printed as the facts of the relation, one per line,
tab-separated as Soufflé writes them, after a line naming the query and the number of
facts.  ``-`` as the query reads one query per line from stdin and answers each as it
comes (an interactive session: the program is loaded once).
"""
from __future__ import annotations

import sys
import time

from diffflow.datalog.cli.options import (Reporter, add_jobs_option, add_preprocessor_options,
                                          checked_jobs, compile_program,
                                          folder_option, program_options)


def add_commands(commands) -> None:
    """Add ``query`` to the ``diffflow`` command line's subcommands."""
    query = commands.add_parser(
        "query", help="answer point queries such as 'tc(30, y)', computing only what they ask")
    query.add_argument("program", help="the .dl file")
    query.add_argument("query", nargs="+",
                       help="an atom with constants, variables and _, e.g. 'tc(30, y)' "
                            "(quote it); '-' reads one query per line from stdin")
    query.add_argument("-F", "--fact-dir", default=None,
                       help="folder of input facts (default: .pragma \"fact-dir\", else .)")
    add_jobs_option(query)
    query.add_argument("-w", "--no-warn", action="store_true",
                       help="no warnings, and a missing fact file is an empty relation")
    query.add_argument("-v", "--verbose", action="store_true",
                       help="report loading and each query's time on stderr")
    add_preprocessor_options(query)
    query.set_defaults(handler=run_queries)


def run_queries(args) -> int:
    """``diffflow query``: load the facts once, then answer each query."""
    from diffflow.datalog.query import parse_pattern

    checked_jobs(args)
    report = Reporter(args.verbose)
    started = time.perf_counter()
    program = compile_program(args, partitions=args.jobs, outputs=[], **program_options(args))
    try:
        texts = [q for q in args.query if q != "-"]
        for text in texts:  # a mistyped query fails before the facts are read
            parse_pattern(text, program.full_analysed.relations, program.analysed.structures)
        program.load_facts(folder_option(args.fact_dir, program.pragmas, "fact-dir"),
                           missing_ok=args.no_warn)
        program.commit()
        report.timed("loaded the facts", time.perf_counter() - started)
        for text in args.query:
            if text == "-":
                for line in sys.stdin:
                    if line.strip():
                        _answer(program, line.strip(), report, interactive=True)
            else:
                _answer(program, text, report)
    finally:
        program.close()
    return 0


def _answer(program, text, report, interactive: bool = False) -> None:
    from diffflow.datalog.query import parse_pattern
    from diffflow.datalog.values.facts import format_rows

    started = time.perf_counter()
    try:
        facts = program.query(text)
    except (KeyError, ValueError) as exc:
        if not interactive:
            raise
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr, flush=True)
        return
    seconds = time.perf_counter() - started
    pattern = parse_pattern(text, program.full_analysed.relations, program.analysed.structures)
    relation = program.full_analysed.relations[pattern.relation]
    print(f"{text.strip().removesuffix('.')}: {len(facts)} fact{'' if len(facts) == 1 else 's'}")
    for line in format_rows(facts, relation.types, "\t", False, program.analysed.structures):
        print(line)
    sys.stdout.flush()
    if report.verbose:
        report(f"answered {text.strip()!r} in {seconds * 1000:.1f} ms")
