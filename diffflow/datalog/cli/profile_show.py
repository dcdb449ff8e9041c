"""``diffflow profile FILE``: a profile written by ``diffflow run --profile`` as tables.

    diffflow profile prof.json                  # run, top rules, relations, strata
    diffflow profile prof.json --rule 3         # rule R3 per step and round
    diffflow profile prof.json --relation path  # relation path per step and round
    diffflow profile prof.json --html prof.html # the same tables as a page

At a terminal the tables are drawn with ``rich``; piped, they are plain text columns.

>>> import os, tempfile
>>> from diffflow.datalog.cli.profile_file import new_profile, write_profile
>>> path = os.path.join(tempfile.mkdtemp(), "p.json")
>>> write_profile(path, new_profile("a.dl", 1, [{"step": 0, "wall_ns": 10, "sizes": {}}],
...     [{"id": 1, "location": "a.dl:3", "text": "r(x) :- e(x).", "relation": "r",
...       "stratum": None}], [], [[0, "rule", 1, -1, 7, 2, 2, 1]], []))
>>> import argparse
>>> commands = argparse.ArgumentParser(prog="diffflow").add_subparsers(dest="command")
>>> add_commands(commands)
>>> show_profile(commands.choices["profile"].parse_args([path, "--top", "5"]))  # doctest: +ELLIPSIS
Run
...
Rules by time (1 rules)
...
R1  7 ns  100.0       2       -  a.dl:3     r(x) :- e(x).
...
0
"""
from __future__ import annotations

import os
import sys

from diffflow.datalog.cli.profile_file import ProfileError, read_profile
from diffflow.datalog.cli.profile_tables import relation_tables, rule_tables, summary_tables

DESCRIPTION = """\
Show a profile written by `diffflow run PROGRAM.dl --profile FILE`, as souffleprof shows
Soufflé's: the run, the rules by time (time, share, tuples derived, rounds, file:line, text),
the relations by size, the rounds of each recursive stratum and the loops that ran in
compiled rounds.  --rule N and --relation R show one rule or relation per update step and
round; --html writes the tables as one self-contained page.
"""


def add_commands(commands) -> None:
    """Add ``profile`` to the ``diffflow`` command line's subcommands."""
    cmd = commands.add_parser("profile", help="show a profile written by `diffflow run --profile`",
                              description=DESCRIPTION)
    cmd.add_argument("file", help="the profile (JSON) `diffflow run --profile FILE` wrote")
    which = cmd.add_mutually_exclusive_group()
    which.add_argument("--rule", type=_rule_number, metavar="N",
                       help="one rule's detail per step and round (N or RN, as the summary "
                            "numbers rules)")
    which.add_argument("--relation", metavar="R", help="one relation's detail")
    cmd.add_argument("--top", type=int, default=20, metavar="N",
                     help="rules in the summary's table (default 20)")
    cmd.add_argument("--html", metavar="OUT.html",
                     help="also write the tables as a self-contained HTML page")
    cmd.set_defaults(handler=show_profile)


def _rule_number(text: str) -> int:
    """``3`` or ``R3`` as a rule number.

    >>> _rule_number("R3"), _rule_number("4")
    (3, 4)
    """
    digits = text[1:] if text[:1] in "Rr" else text
    if not digits.isdigit():
        import argparse

        raise argparse.ArgumentTypeError(f"{text!r} is not a rule number; give one of the "
                                         f"summary's numbers, e.g. 3 or R3")
    return int(digits)


def show_profile(args) -> int:
    """``diffflow profile``: print the tables (and write ``--html``)."""
    if args.top < 1:
        raise ValueError(f"--top must be at least 1, got {args.top}")
    if args.html and os.path.exists(args.html) and os.path.samefile(args.html, args.file):
        raise ValueError(f"--html {args.html} is the profile being read; give the page "
                         f"another name, e.g. --html {os.path.splitext(args.file)[0]}.html")
    profile = read_profile(args.file)
    try:
        if args.rule is not None:
            tables = rule_tables(profile, args.rule)
            title = f"rule R{args.rule}"
        elif args.relation is not None:
            tables = relation_tables(profile, args.relation)
            title = f"relation {args.relation}"
        else:
            tables = summary_tables(profile, args.top)
            title = "summary"
    except (KeyError, TypeError, IndexError, AttributeError) as exc:  # (edited by hand?)
        raise ProfileError(f"{args.file}: the profile is damaged ({type(exc).__name__}: "
                           f"{exc}); write it again with `diffflow run PROGRAM.dl --profile "
                           f"{args.file}`") from None
    print_tables(tables, sys.stdout)
    if args.html:
        from diffflow.datalog.cli.outputs import write_file
        from diffflow.datalog.cli.profile_html import page

        write_file(args.html, None, [page(profile, tables, title, args.file)])
        print(f"diffflow: wrote {args.html}", file=sys.stderr)
    return 0


def print_tables(tables, out) -> None:
    """The tables drawn by ``rich`` at a terminal, else as plain text columns.

    >>> import io
    >>> from diffflow.datalog.cli.profile_tables import Table
    >>> out = io.StringIO(); print_tables([Table("T", ["a"], [["1"]])], out); out.getvalue()
    'T\\na\\n1\\n\\n'
    """
    if getattr(out, "isatty", lambda: False)():
        from rich.console import Console
        from rich.table import Table as RichTable

        console = Console(file=out)
        for table in tables:
            shown = RichTable(title=table.title, caption=table.note or None, title_justify="left",
                              caption_justify="left")
            for header, align in zip(table.headers, table.align):
                shown.add_column(header, justify="right" if align == "r" else "left",
                                 overflow="fold")
            for row in table.rows:
                shown.add_row(*row)
            console.print(shown)
        return
    for table in tables:
        out.write(plain_table(table) + "\n\n")


def plain_table(table) -> str:
    """A table as text: its title, aligned columns, its note.

    >>> from diffflow.datalog.cli.profile_tables import Table
    >>> print(plain_table(Table("T", ["a", "bb"], [["1", "x"]], align="rl")))
    T
    a  bb
    1  x
    """
    widths = [max([len(h)] + [len(row[j]) for row in table.rows])
              for j, h in enumerate(table.headers)]

    def line(cells):
        return "  ".join(c.rjust(w) if a == "r" else c.ljust(w)
                         for c, w, a in zip(cells, widths, table.align)).rstrip()

    lines = [table.title, line(table.headers)] + [line(row) for row in table.rows]
    if table.note:
        lines.append(f"({table.note})")
    return "\n".join(lines)
