"""What the Datalog commands share: the program's options, compiling it, and reporting.

``run``, ``explain-plan`` (:mod:`.run`) and ``explain`` (:mod:`.explain`) read a program the
same way: the C preprocessor's ``-I`` and ``-M``, user functors from ``-l FILE.py``, warnings
printed as ``file:line:col: warning: ...`` unless ``-w``, folders from the command line or
else from ``.pragma``.

>>> import argparse
>>> parser = argparse.ArgumentParser(); add_preprocessor_options(parser)
>>> program_options(parser.parse_args(["-M", "N=3"]))
{'include_dirs': None, 'macros': {'N': '3'}}
"""
from __future__ import annotations

import argparse
import os
import sys

SLOW_SECONDS = 2.0  # a step slower than this is reported even without -v


def add_preprocessor_options(command) -> None:
    """Add ``-I``, ``-M`` and ``-l`` (Soufflé's preprocessor and functor options)."""
    command.add_argument("-I", "--include-dir", action="append", default=[], metavar="DIR",
                         help="where #include looks after the program's own folder "
                              "(repeatable; as Soufflé's -I)")
    command.add_argument("-M", "--macro", action="append", default=[], metavar="'NAME=VALUE'",
                         help="define macros for the C preprocessor, e.g. -M 'SIZE=10 DEBUG' "
                              "(as Soufflé's -M)")
    command.add_argument("-l", "--functors", action="append", default=[], metavar="FILE.py",
                         help="a Python file whose functions of the names the program's "
                              ".functor declarations give are their bindings (repeatable; "
                              "Soufflé's -l names a C++ library)")


def jobs(text: str) -> int:
    """``-j``: a number, or ``auto`` for one partition per core."""
    if text == "auto":
        return os.cpu_count() or 1
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None


def add_jobs_option(command, default_help: str = 'default .pragma "jobs", else 1') -> None:
    """``-j N``: the program's partitions, the same option on every command that builds one."""
    command.add_argument("-j", "--jobs", type=jobs, default=None,
                         help=f"number of partitions (workers), or 'auto' for one per core; "
                              f"{default_help}")


def checked_jobs(args):
    """``args.jobs`` (``None`` when not given), refused below 1."""
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"-j must be at least 1, got {args.jobs}")
    return args.jobs


def program_options(args) -> dict:
    """``Program`` options from ``-I``, ``-M`` and ``-l``."""
    from diffflow.datalog.syntax.preprocess import macros_from_option

    macros = {}
    for option in args.macro:
        macros.update(macros_from_option(option))
    options = dict(include_dirs=args.include_dir or None, macros=macros or None)
    if args.functors:
        options["functors"] = functor_bindings(args, options)
    return options


def functor_bindings(args, options) -> dict:
    """``--functors FILE.py``: the files' functions named by the program's ``.functor``
    declarations (a file that cannot be run is an error naming it)."""
    import runpy

    from diffflow.datalog.passes import parse_program as parse
    from diffflow.datalog.program import read_program_text
    from diffflow.datalog.syntax.preprocess import preprocess

    text = preprocess(read_program_text(args.program), args.program, options["include_dirs"],
                      options["macros"])
    declared = {f.name for f in parse(text, args.program).functors}
    found: dict = {}
    for path in args.functors:
        try:
            namespace = runpy.run_path(path, run_name="diffflow_functors")
        except OSError as exc:
            raise ValueError(f"--functors {path}: {exc.strerror or exc}") from None
        except Exception as exc:
            raise ValueError(f"--functors {path}: running it failed: {type(exc).__name__}: "
                             f"{exc}") from None
        found.update({name: namespace[name] for name in declared if name in namespace})
    return found


def read_pragmas(args, options) -> dict:
    """The program's pragmas, read and checked before anything slow starts."""
    from diffflow.datalog.analysis import pragmas as pragma_reader
    from diffflow.datalog.passes import parse_program as parse
    from diffflow.datalog.program import read_program_text
    from diffflow.datalog.syntax.preprocess import preprocess

    source = read_program_text(args.program)
    text = preprocess(source, args.program, options["include_dirs"], options["macros"])
    pragmas, _warnings, _notes = pragma_reader.read_pragmas(parse(text, args.program).pragmas,
                                                            text, args.program)
    return pragmas


def folder_option(given, pragmas: dict, key: str) -> str:
    """A folder option: as given on the command line, else from ``.pragma key``, else ``.``."""
    return given if given is not None else pragmas.get(key, ".")


def check_output_dir(path) -> None:
    """``-D``: a folder that exists or can be made; checked before anything is computed."""
    if path == "-":
        return
    if not path:
        raise ValueError("-D needs a folder name (or '-' for stdout)")
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise ValueError(f"-D {path}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK):
        raise ValueError(f"-D {path}: cannot write in {probe} (permission denied)")


def compile_program(args, **options):
    """``Program.from_file`` with its Datalog warnings printed (unless -w or no-warn)."""
    import warnings

    from diffflow.common.errors import DatalogWarning
    from diffflow.datalog.program import Program

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = Program.from_file(args.program, **options)
    for w in caught:
        if not issubclass(w.category, DatalogWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        elif not args.no_warn:
            print(str(w.message), file=sys.stderr)
    return program


class Reporter:
    """Progress on stderr: ``timed`` reports a step with ``-v`` or when it was slow."""

    def __init__(self, verbose):
        self.verbose = verbose

    def __call__(self, message):
        print(f"diffflow: {message}", file=sys.stderr, flush=True)

    def timed(self, what, seconds):
        if self.verbose or seconds > SLOW_SECONDS:
            self(f"{what} in {seconds:.2f} s")

