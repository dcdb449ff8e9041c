"""The ``diffflow`` command: run Datalog programs like Soufflé, then keep them up to date.

    diffflow run prog.dl -F facts -D out            # Soufflé-style batch run
    diffflow run prog.dl -F facts -D - --updates steps   # ... then incremental steps
    diffflow explain-plan prog.dl                   # strata, join orders, shared indexes
    diffflow pag cp TRACE                           # what was critical in an execution

``run`` reads ``facts/<r>.facts`` for every ``.input r`` (TAB-separated, no
header, gzip-compressed or not; a file that cannot be opened is an error unless
``-w``, which reads it as an empty relation) and writes ``out/<r>.csv`` for
every ``.output r``; ``-D -`` (or ``IO=stdout``) prints outputs to stdout in
Soufflé's format; ``.printsize r`` prints ``r<TAB>count``.  Every input is read
and checked before anything is computed or written.  With ``--updates DIR``, every
numbered sub-folder of ``DIR`` (``1/``, ``2/``, ...) is a step holding
``<r>.insert.facts`` and ``<r>.remove.facts``; after each step the changes of
every output relation are written to ``out/<r>.step-<N>.csv`` with a last
column ``+1`` or ``-1``.  ``--trace FILE`` records what every worker did (the
initial run is epoch 1, step ``N`` epoch ``N + 1``) as JSON lines of raw events
(:mod:`diffflow.runtime.tracing`).

As in Soufflé, the program goes through the C preprocessor when it has ``#``
directives (``-I DIR`` adds include folders, ``-M 'NAME=VALUE'`` defines
macros), ``.pragma "fact-dir"``, ``"output-dir"``, ``"jobs"`` and ``"no-warn"``
stand for ``-F``, ``-D``, ``-j`` and ``-w`` when those are not given, and
warnings go to stderr as ``file:line:col: warning: ...`` unless ``-w``.

>>> main(["--version"])
diffflow 0.1.0
0
"""
from __future__ import annotations

import _thread
import argparse
import contextlib
import os
import signal
import sys
import threading
import time

_SLOW_SECONDS = 2.0


def main(argv=None) -> int:
    """Entry point of the ``diffflow`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with _interrupts_noticed() as interrupts:
            return _dispatch(parser, args, interrupts)
    except BrokenPipeError:
        # the reader left (`diffflow run ... -D - | head`): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the exit-time flush cannot complain
        return 128 + 13  # what a shell reports for a tool ended by SIGPIPE
    except KeyboardInterrupt:  # Ctrl-C: stop quietly, as Unix tools do
        print("diffflow: interrupted", file=sys.stderr)
        return 128 + 2


@contextlib.contextmanager
def _interrupts_noticed():
    """Yield a list that records each SIGINT (which still raises KeyboardInterrupt).

    A library may swallow the KeyboardInterrupt (llvmlite does while numba
    compiles), so after the first Ctrl-C the interrupt is re-raised in the
    main thread every half second until the command has stopped.
    """
    received = []
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield received  # someone else handles Ctrl-C (an embedding program)
        return
    stopped = threading.Event()

    def repeat():
        while not stopped.wait(0.5):
            _thread.interrupt_main()

    repeater = threading.Thread(target=repeat, name="diffflow-interrupt", daemon=True)

    def on_interrupt(signum, frame):
        if stopped.is_set():
            return  # a repeat that arrives while the command is already stopping
        received.append(signum)
        if len(received) == 1:
            repeater.start()
        raise KeyboardInterrupt

    previous_hook = sys.unraisablehook

    def unraisable(info):
        # llvmlite reports an interrupt it swallowed in a ctypes callback; we re-raise it
        if not (received and isinstance(info.exc_value, KeyboardInterrupt)):
            previous_hook(info)

    sys.unraisablehook = unraisable
    signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield received
    finally:
        stopped.set()
        if repeater.is_alive():
            repeater.join()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = previous_hook


def _dispatch(parser, args, interrupts=()) -> int:
    if args.version:
        from diffflow import __version__
        print(f"diffflow {__version__}", flush=True)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    from diffflow.datalog.syntax.errors import DatalogError
    from diffflow.common.errors import NonConvergenceError

    try:
        try:
            return args.handler(args)
        except Exception:
            # Ctrl-C inside a numba kernel or its compiler comes back as another error
            # (a SystemError, or a RuntimeError once llvmlite swallowed the interrupt)
            if interrupts:
                raise KeyboardInterrupt from None
            raise
    except BrokenPipeError:
        raise  # handled by main
    except DatalogError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except NonConvergenceError as exc:
        located = exc.scope is not None and str(exc).startswith(exc.scope.location)
        print(str(exc) if located else f"diffflow: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"diffflow: error: {message}", file=sys.stderr)
        return 1


def build_parser() -> argparse.ArgumentParser:
    """The `diffflow` command's argument parser, with every sub-command.

    >>> build_parser().parse_args(["run", "prog.dl", "-j", "2"]).jobs
    2
    """
    parser = argparse.ArgumentParser(prog="diffflow",
                                     description="Incremental Datalog (Soufflé-compatible).")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command")
    run = commands.add_parser("run", help="evaluate a Datalog program on fact files")
    run.add_argument("program", help="the .dl file")
    run.add_argument("-F", "--fact-dir", default=None,
                     help="folder of <relation>.facts files (default: .pragma \"fact-dir\", "
                          "else the current folder)")
    run.add_argument("-D", "--output-dir", default=None,
                     help="folder for <relation>.csv outputs; '-' prints them to stdout "
                          "(default: .pragma \"output-dir\", else the current folder)")
    run.add_argument("-j", "--jobs", type=_jobs, default=None,
                     help="number of partitions (workers), or 'auto' for one per core; "
                          "default .pragma \"jobs\", else 1 (2 with --spark)")
    run.add_argument("--spark", metavar="MASTER",
                     help="run on Spark with this master URL (e.g. local[2], spark://host:7077); "
                          "needs Java 17/21")
    run.add_argument("--updates", metavar="DIR",
                     help="apply the numbered steps in DIR incrementally after the initial run")
    run.add_argument("-w", "--no-warn", action="store_true",
                     help="no warnings, and a missing fact file is an empty relation "
                          "(Soufflé's -w; also .pragma \"no-warn\")")
    _preprocessor_options(run)
    run.add_argument("--max-rounds", type=int, default=None, metavar="N",
                     help="stop a recursive stratum still changing after N rounds with an error "
                          "(default: no limit, as in Soufflé)")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="report loading and computing times on stderr")
    run.add_argument("--trace", metavar="FILE",
                     help="record what every worker does (operator steps, messages, waits) as "
                          "JSON lines of raw events in FILE (see diffflow.runtime.tracing)")
    run.add_argument("-t", "--provenance", choices=["explain"], default=None,
                     help="after the run, open Soufflé's provenance command loop on stdin "
                          "(explain, explainnegation, subproof, setdepth, format, output, exit)")
    run.set_defaults(handler=_run)
    plan = commands.add_parser("explain-plan", help="print the compiled plan of a program")
    plan.add_argument("program", help="the .dl file")
    plan.add_argument("-w", "--no-warn", action="store_true", help="no warnings")
    _preprocessor_options(plan)
    plan.set_defaults(handler=_explain)
    from diffflow.datalog.cli.explain import add_commands as add_explain
    from diffflow.pag.cli import add_commands

    add_explain(commands)
    add_commands(commands)
    return parser


def _preprocessor_options(command):
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


def _jobs(text: str):
    if text == "auto":
        return os.cpu_count() or 1
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'auto', got {text!r}") from None


def _program_options(args) -> dict:
    from diffflow.datalog.syntax.preprocess import macros_from_option

    macros = {}
    for option in args.macro:
        macros.update(macros_from_option(option))
    options = dict(include_dirs=args.include_dir or None, macros=macros or None)
    if args.functors:
        options["functors"] = _functor_bindings(args, options)
    return options


def _functor_bindings(args, options) -> dict:
    """``--functors FILE.py``: the files' functions named by the program's ``.functor``
    declarations (a file that cannot be run is an error naming it)."""
    import runpy

    from diffflow.datalog.syntax.parser import parse
    from diffflow.datalog.syntax.preprocess import preprocess
    from diffflow.datalog.program import read_program_text

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


def _read_pragmas(args, options) -> dict:
    """The program's pragmas, read and checked before anything slow starts."""
    from diffflow.datalog.syntax.parser import parse
    from diffflow.datalog.analysis.pragmas import read_pragmas
    from diffflow.datalog.syntax.preprocess import preprocess
    from diffflow.datalog.program import read_program_text

    source = read_program_text(args.program)
    text = preprocess(source, args.program, options["include_dirs"], options["macros"])
    pragmas, _warnings, _notes = read_pragmas(parse(text, args.program).pragmas, text,
                                              args.program)
    return pragmas


def _option(given, pragmas: dict, key: str) -> str:
    """A folder option: as given on the command line, else from ``.pragma key``, else ``.``."""
    return given if given is not None else pragmas.get(key, ".")


def _check_output_dir(path) -> None:
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


def _compile(args, **options):
    """``Program.from_file`` with its Datalog warnings printed (unless -w or no-warn)."""
    import warnings

    from diffflow.datalog.syntax.errors import DatalogWarning
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


def _explain(args) -> int:
    print(_compile(args, **_program_options(args)).plan())
    return 0


class _Reporter:
    def __init__(self, verbose):
        self.verbose = verbose

    def __call__(self, message):
        print(f"diffflow: {message}", file=sys.stderr, flush=True)

    def timed(self, what, seconds):
        if self.verbose or seconds > _SLOW_SECONDS:
            self(f"{what} in {seconds:.2f} s")


def _run(args) -> int:
    from diffflow.datalog.analysis.pragmas import jobs_value

    report = _Reporter(args.verbose)
    options = _program_options(args)
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"-j must be at least 1, got {args.jobs}")
    if args.max_rounds is not None and args.max_rounds < 1:
        raise ValueError(f"--max-rounds must be at least 1, got {args.max_rounds}")
    jobs = args.jobs  # None: .pragma "jobs", else 1 (Program decides)
    if args.trace is not None:
        from diffflow.runtime.trace_sink import open_trace

        # an unwritable --trace fails before anything slow starts
        options["trace"] = open_trace(args.trace, option="--trace ")
    started = time.perf_counter()
    if args.spark:
        # the program's mistakes and pragmas first: Spark takes seconds to start
        pragmas = _read_pragmas(args, options)
        _check_output_dir(_option(args.output_dir, pragmas, "output-dir"))
        if jobs is None:
            jobs = jobs_value(pragmas.get("jobs")) or 2
        from diffflow.runtime.spark import local_session  # the only module that imports pyspark

        options.update(runtime="spark", spark=local_session(args.spark))
        report.timed(f"started Spark ({args.spark})", time.perf_counter() - started)
        started = time.perf_counter()
    if args.provenance:
        options["provenance"] = True
    program = _compile(args, partitions=jobs, outputs="directives", max_rounds=args.max_rounds,
                       **options)
    # the command line wins over a pragma
    args.no_warn = args.no_warn or "no-warn" in program.pragmas
    fact_dir = _option(args.fact_dir, program.pragmas, "fact-dir")
    output_dir = _option(args.output_dir, program.pragmas, "output-dir")
    try:
        _check_output_dir(output_dir)
        # every input is read and checked before anything is computed or written
        steps = [(number, _read_step(program, folder))
                 for number, folder in (_steps(args.updates) if args.updates else [])]
        counts = program.load_facts(fact_dir, progress=report, missing_ok=args.no_warn)
        if args.verbose or sum(counts.values()) >= 100_000:
            report.timed(f"loaded {sum(counts.values()):,} facts", time.perf_counter() - started)
        started = time.perf_counter()
        program.commit()
        report.timed("computed the program", time.perf_counter() - started)
        if output_dir != "-":
            os.makedirs(output_dir, exist_ok=True)
        _write_outputs(program, output_dir)
        _print_sizes(program)
        for relation in program.relations.values():
            if relation.outputs:
                program.changes(relation.name)  # steps report changes from here on
        for number, batches in steps:
            started = time.perf_counter()
            applied = _apply_step(program, batches)
            program.commit()
            report.timed(f"step {number}: {applied:,} fact changes applied and propagated",
                         time.perf_counter() - started)
            _write_changes(program, output_dir, number)
            _print_sizes(program)
        if args.provenance:
            from diffflow.datalog.cli.shell import ExplainShell

            ExplainShell(program, interactive=sys.stdin.isatty()).run(sys.stdin)
    finally:
        program.close()
    return 0


def _steps(folder):
    if not os.path.isdir(folder):
        what = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise ValueError(f"--updates {folder}: {what}; it should hold numbered step folders "
                         f"1/, 2/, ... of <relation>.insert.facts and <relation>.remove.facts")
    steps = []
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            if not entry.isdigit():
                raise ValueError(f"update step folder {path!r} is not numbered; name steps "
                                 f"1, 2, 3, ...")
            steps.append((int(entry), path))
    if not steps:
        raise ValueError(f"{folder!r} holds no numbered step folders (1/, 2/, ...)")
    return sorted(steps)


def _read_step(program, folder) -> list:
    """``[(sign, relation, encoded rows)]`` of one update step, removals first."""
    from diffflow.datalog.values.facts import read_facts

    suffixes = {".insert.facts": +1, ".remove.facts": -1}
    batches = []
    for entry in sorted(os.listdir(folder)):
        for suffix, sign in suffixes.items():
            if entry.endswith(suffix):
                name = entry[: -len(suffix)]
                path = os.path.join(folder, entry)
                try:
                    relation = program._relation(name)
                    program._input(name)
                except (KeyError, ValueError) as exc:
                    message = exc.args[0] if exc.args else exc
                    raise ValueError(f"{path}: {message}") from None
                rows = read_facts(path, relation, structures=program.analysed.structures)
                batches.append((sign, name, program.encode(name, rows)))
                break
        else:
            raise ValueError(f"unexpected file {os.path.join(folder, entry)!r} in an update "
                             f"step; expected <relation>.insert.facts or .remove.facts")
    # removals first, so a step may replace a fact by removing and inserting it
    return sorted(batches, key=lambda b: b[0] > 0)


def _apply_step(program, batches) -> int:
    return sum(program._change(name, encoded, sign) for sign, name, encoded in batches)


def _output_lines(program, relation, rows, delimiter, extra=None, rfc4180=False):
    from diffflow.datalog.values.facts import format_rows

    lines = format_rows(rows, relation.types, delimiter, rfc4180,
                        program.analysed.structures)
    if extra is not None:
        lines = [f"{line}{delimiter}{tag}" for line, tag in zip(lines, extra)]
    return lines


def _write_outputs(program, out_dir):
    from diffflow.datalog.values.facts import io_options
    from diffflow.datalog.values.structures import row_order

    for relation in program.relations.values():
        for d in relation.outputs:
            rows = sorted(program.relation(relation.name), key=row_order)
            delimiter, headers, rfc4180, compress = io_options(d.params)
            lines = _output_lines(program, relation, rows, delimiter, rfc4180=rfc4180)
            # Soufflé's -D - prints every output to stdout with its attribute names
            header = delimiter.join(relation.attributes) if headers or out_dir == "-" else None
            if out_dir == "-" or d.params.get("IO") == "stdout":
                _print_stdout(relation.name, header, lines)
            else:
                filename = d.params.get("filename", f"{relation.name}.csv")
                _write_file(os.path.join(out_dir, filename), header, lines, compress)


def _write_changes(program, out_dir, number):
    from diffflow.datalog.values.facts import io_options

    for relation in program.relations.values():
        if not relation.outputs:
            continue
        changes = program.changes(relation.name)
        delimiter, _headers, rfc4180, _compress = io_options(relation.outputs[0].params)
        lines = _output_lines(program, relation, [row for row, _ in changes], delimiter,
                              extra=["+1" if d > 0 else "-1" for _, d in changes],
                              rfc4180=rfc4180)
        if relation.arity == 0:
            lines = [f"(){delimiter}{'+1' if d > 0 else '-1'}" for _, d in changes]
        if out_dir == "-":
            _print_stdout(f"{relation.name} step {number}", None, lines)
        else:
            _write_file(os.path.join(out_dir, f"{relation.name}.step-{number}.csv"), None, lines)


def _write_file(path, header, lines, compress=False):
    import gzip

    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)  # filename="sub/out.csv"
    opener = gzip.open if compress else open  # Soufflé's compress=true writes gzip
    with opener(path, "wt", encoding="utf-8", newline="\n") as f:
        if header is not None:
            f.write(header + "\n")
        if lines:
            f.write("\n".join(lines) + "\n")


def _print_stdout(name, header, lines):
    out = sys.stdout
    out.write("---------------\n" + name + "\n")
    if header is not None:
        out.write(header + "\n")
    out.write("===============\n")
    if lines:
        out.write("\n".join(lines) + "\n")
    out.write("===============\n")
    out.flush()


def _print_sizes(program):
    for relation in program.relations.values():
        if relation.printsize:
            print(f"{relation.name}\t{program.size(relation.name)}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
