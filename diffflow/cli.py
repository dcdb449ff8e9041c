"""The ``diffflow`` command: run Datalog programs like Soufflé, keep them up to date, explain
their facts, and analyse execution traces.

    diffflow run prog.dl -F facts -D out            # Soufflé-style batch run
    diffflow run prog.dl -F facts -D - --updates steps   # ... then incremental steps
    diffflow explain-plan prog.dl                   # strata, join orders, shared indexes
    diffflow query prog.dl -F facts 'path(1, y)'    # point queries, computed on demand
    diffflow explain prog.dl -F facts 'path(1, 4)'  # why a fact is derived
    diffflow profile prof.json                      # time per rule (run --profile prof.json)
    diffflow pag cp TRACE                           # what was critical in an execution
    diffflow spark-pack                             # diffflow for Spark executors, packed
    diffflow bench graphs --graph wiki-Vote         # graph algorithms, from scratch and updated

This module is the command's face: the sub-commands live with what they drive
(:mod:`diffflow.datalog.cli`, :mod:`diffflow.pag.cli`, :mod:`diffflow.bench.cli`); here are the parser, the
dispatch, and what every command shares (errors as one line on stderr, Ctrl-C and a
closed pipe ending quietly).

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
        from diffflow.common import VERSION
        print(f"diffflow {VERSION}", flush=True)
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    from diffflow.common.errors import DatalogError, NonConvergenceError

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
    from diffflow.bench.cli import add_commands as add_bench
    from diffflow.datalog.cli import add_commands as add_datalog
    from diffflow.pag.cli import add_commands as add_pag

    add_datalog(commands)
    add_pag(commands)
    add_bench(commands)
    pack = commands.add_parser(
        "spark-pack", help="build the archive that ships diffflow to Spark executors",
        description="Build (or reuse, when nothing changed) a .tar.gz of diffflow, its compiled "
                    "kernels and the packages it needs on executors, and print the Spark "
                    "settings that use it. `diffflow run --spark MASTER --ship` does this by "
                    "itself.")
    pack.add_argument("output", nargs="?", help="also copy the archive here")
    pack.add_argument("--with", dest="extra", metavar="PACKAGE", action="append", default=[],
                      help="another installed package your code needs on executors "
                           "(repeatable)")
    pack.set_defaults(handler=_spark_pack)
    return parser


def _spark_pack(args) -> int:
    from diffflow.runtime.spark_pack import pack, shipping_settings

    archive = pack(args.output, extra=args.extra,
                   progress=lambda text: print(text, file=sys.stderr))
    print(archive)
    print("use it with:", " ".join(f"--conf {key}={value}"
                                   for key, value in shipping_settings(archive).items()),
          file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
