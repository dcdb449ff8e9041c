"""``diffflow run`` and ``diffflow explain-plan``: run Datalog programs like Soufflé, then keep them
up to date.

    diffflow run prog.dl -F facts -D out            # Soufflé-style batch run
    diffflow run prog.dl -F facts -D - --updates steps   # ... then incremental steps
    diffflow explain-plan prog.dl                   # strata, join orders, shared indexes

``run`` reads ``facts/<r>.facts`` for every ``.input r`` (TAB-separated, no
header, gzip-compressed or not; a file that cannot be opened is an error unless
``-w``, which reads it as an empty relation) and writes ``out/<r>.csv`` for
every ``.output r``; ``-D -`` (or ``IO=stdout``) prints outputs to stdout in
Soufflé's format; ``.printsize r`` prints ``r<TAB>count``.  Every input is read
and checked before anything is computed or written.  With ``--updates DIR``, every
numbered sub-folder of ``DIR`` (``1/``, ``2/``, ...) is a step holding
``<r>.insert.facts`` and ``<r>.remove.facts``; after each step the changes of
every output relation are written to ``out/<r>.step-<N>.csv`` with a last
column ``+1`` or ``-1``, and after the last step ``out/<r>.csv`` gets the final
state (:mod:`.outputs`; ``RUN_EPILOG`` is what ``--help`` says of it).
``--trace FILE`` records what every worker did (the initial run is epoch 0,
step ``N`` epoch ``N``) as JSON lines of raw events
(:mod:`diffflow.runtime.tracing`); ``--profile FILE`` records time, tuples and rounds per
rule and relation from that trace (:mod:`.profile_record`), shown by ``diffflow profile``.

As in Soufflé, the program goes through the C preprocessor when it has ``#``
directives (``-I DIR`` adds include folders, ``-M 'NAME=VALUE'`` defines
macros), ``.pragma "fact-dir"``, ``"output-dir"``, ``"jobs"`` and ``"no-warn"``
stand for ``-F``, ``-D``, ``-j`` and ``-w`` when those are not given,
``.pragma "provenance" "explain"`` for ``-t explain`` (the provenance command loop on stdin
after the run, :mod:`.shell`), and warnings go to stderr as ``file:line:col: warning: ...`` unless ``-w``.

>>> import argparse
>>> commands = argparse.ArgumentParser(prog="diffflow").add_subparsers(dest="command")
>>> add_commands(commands)
>>> commands.choices["run"].parse_args(["prog.dl", "-j", "auto"]).jobs >= 1
True
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from diffflow.datalog.cli.options import (Reporter, add_jobs_option, add_preprocessor_options,
                                          check_output_dir, checked_jobs,
                                          compile_program, folder_option, program_options,
                                          read_pragmas)
from diffflow.datalog.cli.outputs import write_changes, write_states, written_summary

RUN_DESCRIPTION = """\
Evaluate a Datalog program (Soufflé's language) as souffle does: read a TAB-separated
<relation>.facts file from -F for every .input, write <relation>.csv to -D for every
.output.  With --updates, then apply changes to the input facts a step at a time; each
step computes only what changes, and its output changes are written as it ends.
"""
RUN_EPILOG = """\
examples:
  diffflow run reach.dl -F facts -D out        out/reach.csv, as souffle -F facts -D out
  diffflow run reach.dl -F facts -D -          print every output on stdout
  diffflow run reach.dl -F facts -D out --updates steps -j 4

--updates DIR: one numbered folder per step, applied in order after the initial run:
  DIR/1/edge.insert.facts    facts to add to the input relation edge
  DIR/1/edge.remove.facts    facts to remove from it (TAB-separated, as .facts files)
  DIR/2/...
  In a step, removals come before insertions (a step may remove a fact and add it back).
  Every step is read and checked before anything is computed.

what --updates writes in the -D folder OUT, for every output relation <rel>:
  OUT/<rel>.step-N.csv   the changes of step N: the rows that changed, each with a last
                         column +1 (added) or -1 (removed); a header line (the attribute
                         names, then "diff") when the .output has headers=true
  OUT/<rel>.csv          the initial state, replaced by the final state after the last step
                         (the state the last step's changes lead to)
  Each file is written to a temporary file, then renamed: a failed run leaves no
  half-written file (if a step fails, <rel>.csv keeps the initial state and the change
  files of the steps applied follow it).  With -D -, stdout gets each output's initial
  state, each step's changes titled "<rel> step N changes", then the final state titled
  "<rel> after step N", in the blocks souffle prints outputs in.
"""


def add_commands(commands) -> None:
    """Add ``run`` and ``explain-plan`` to the ``diffflow`` command line's subcommands."""
    run = commands.add_parser("run", help="evaluate a Datalog program on fact files",
                              description=RUN_DESCRIPTION, epilog=RUN_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("program", help="the .dl file")
    run.add_argument("-F", "--fact-dir", default=None,
                     help="folder of <relation>.facts files (default: .pragma \"fact-dir\", "
                          "else the current folder)")
    run.add_argument("-D", "--output-dir", default=None,
                     help="folder for <relation>.csv outputs; '-' prints them to stdout "
                          "(default: .pragma \"output-dir\", else the current folder)")
    add_jobs_option(run, 'default .pragma "jobs", else 1 (2 with --spark)')
    run.add_argument("--spark", metavar="MASTER",
                     help="run on Spark with this master URL (e.g. local[2], spark://host:7077); "
                          "needs Java 17/21")
    run.add_argument("--conf", metavar="KEY=VALUE", action="append", default=[],
                     type=spark_setting,
                     help="a Spark setting, passed unchanged (with --spark; repeatable), e.g. "
                          "--conf spark.executor.memory=4g")
    run.add_argument("--ship", action="store_true",
                     help="run Spark's executors on an archive of diffflow and its packages "
                          "(built once and cached; see `diffflow spark-pack`) instead of what "
                          "their hosts have installed")
    run.add_argument("--ship-with", metavar="PACKAGE", action="append", default=[],
                     help="with --ship: another installed package your program needs on the "
                          "executors, e.g. one your user functors import (repeatable)")
    run.add_argument("--updates", metavar="DIR",
                     help="after the initial run, apply the numbered steps of changes in DIR one "
                          "at a time (see below: the steps' files, what is written)")
    run.add_argument("-w", "--no-warn", action="store_true",
                     help="no warnings, and a missing fact file is an empty relation "
                          "(Soufflé's -w; also .pragma \"no-warn\")")
    add_preprocessor_options(run)
    run.add_argument("--max-rounds", type=int, default=None, metavar="N",
                     help="stop a recursive stratum still changing after N rounds with an error "
                          "(default: no limit, as in Soufflé)")
    run.add_argument("--memory-limit", metavar="SIZE", default=None,
                     help="stop a rule about to allocate past SIZE (e.g. 512MiB, 2GB) with an "
                          "error naming it, before the allocation: counts the engine's arrays "
                          "of this process (of each worker with --spark); default: no limit")
    run.add_argument("-v", "--verbose", action="store_true",
                     help="report loading and computing times, and the files written, on stderr "
                          "(the files written are reported at a terminal anyway)")
    run.add_argument("--trace", metavar="FILE",
                     help="record what every worker does (operator steps, messages, waits) as "
                          "JSON lines of raw events in FILE (see diffflow.runtime.tracing)")
    run.add_argument("--checkpoint-dir", metavar="DIR",
                     help="make the run durable: log every step in DIR before computing it and "
                          "write checkpoints there; after a crash, the same command resumes "
                          "where it stopped (README, \"Failures and recovery\")")
    run.add_argument("--checkpoint-every", type=int, default=None, metavar="N",
                     help="with --checkpoint-dir: a checkpoint every N steps (default 100), so "
                          "a resume recomputes at most N")
    run.add_argument("--profile", metavar="FILE",
                     help="record time, tuples and rounds per rule and relation, per update "
                          "step and round, as JSON in FILE; show it with `diffflow profile FILE`")
    run.add_argument("-t", "--provenance", choices=["none", "explain"], default=None,
                     help="explain: after the run, open Soufflé's provenance command loop on "
                          "stdin (explain, explainnegation, subproof, query, setdepth, format, "
                          "output, exit), as .pragma \"provenance\" \"explain\" does; none: "
                          "no loop, even with the pragma")
    run.set_defaults(handler=run_program)
    plan = commands.add_parser("explain-plan", help="print the compiled plan of a program")
    plan.add_argument("program", help="the .dl file")
    plan.add_argument("-F", "--fact-dir", default=None,
                      help="read the input facts first: joins are then ordered by their sizes, "
                           "and each atom shows its estimate as ~rows")
    plan.add_argument("-w", "--no-warn", action="store_true",
                      help="no warnings, and a missing fact file is an empty relation")
    add_jobs_option(plan)
    add_preprocessor_options(plan)
    plan.set_defaults(handler=explain_plan)


def _shipped(args):
    """``local_session``'s ``ship``: ``True`` (it packs, or says a local master needs
    nothing) unless --ship-with names packages for the archive, built here then."""
    if not args.ship_with or args.spark.startswith("local"):
        return args.ship or bool(args.ship_with)
    from diffflow.runtime.spark_pack import pack

    return pack(extra=args.ship_with,
                progress=lambda text: print(f"diffflow: {text}", file=sys.stderr))


def spark_setting(text: str) -> tuple:
    """``--conf KEY=VALUE`` as ``(key, value)``.

    >>> spark_setting("spark.executor.memory=4g")
    ('spark.executor.memory', '4g')
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (a Spark setting such as "
                                         f"spark.executor.memory=4g), got {text!r}")
    return key.strip(), value


def explain_plan(args) -> int:
    """``diffflow explain-plan``: print the compiled plan (of what ``run`` computes: the
    relations the outputs read; every relation when there are no outputs)."""
    partitions = checked_jobs(args)
    program = compile_program(args, outputs="directives", partitions=partitions,
                              **program_options(args))
    if not any(r.outputs or r.printsize for r in program.full_analysed.relations.values()):
        program.close()  # no outputs: show it all
        program = compile_program(args, partitions=partitions, **program_options(args))
    try:
        if args.fact_dir is not None:
            program.load_facts(args.fact_dir, missing_ok=args.no_warn)
            program.plan_by_sizes(always=True)  # (the plan shows every estimate)
        print(program.plan())
    finally:
        program.close()
    return 0


def run_program(args) -> int:
    """``diffflow run``: the initial run, then the ``--updates`` steps."""
    from diffflow.datalog.analysis.pragmas import jobs_value

    report = Reporter(args.verbose)
    options = program_options(args)
    checked_jobs(args)
    if args.max_rounds is not None and args.max_rounds < 1:
        raise ValueError(f"--max-rounds must be at least 1, got {args.max_rounds}")
    jobs = args.jobs  # None: .pragma "jobs", else 1 (Program decides)
    if args.memory_limit is not None:
        from diffflow.common.memory_budget import parse_size

        options["memory_limit"] = parse_size(args.memory_limit)  # (a bad size fails first)
    if args.trace is not None:
        from diffflow.runtime.trace_sink import open_trace

        # an unwritable --trace fails before anything slow starts
        options["trace"] = open_trace(args.trace, option="--trace ")
    profiler = None
    if getattr(args, "profile", None) is not None:
        profiler = _profiler(args, options)
    if args.conf and not args.spark:
        raise ValueError("--conf sets Spark settings: it needs --spark MASTER")
    if (args.ship or args.ship_with) and not args.spark:
        raise ValueError("--ship sends diffflow to Spark's executors: it needs --spark MASTER")
    started = time.perf_counter()
    read = None  # facts read before Spark starts
    if args.spark:
        # the program, its pragmas and its fact files first: Spark takes seconds to start
        pragmas = read_pragmas(args, options)
        check_output_dir(folder_option(args.output_dir, pragmas, "output-dir"))
        if jobs is None:
            jobs = jobs_value(pragmas.get("jobs")) or 2
        from diffflow.runtime.spark import local_cores, local_session  # (imports no pyspark)

        cores = local_cores(args.spark)
        if cores is not None and jobs > cores:  # (each partition worker holds a slot)
            raise ValueError(f"-j {jobs} needs {jobs} task slots, but --spark {args.spark} has "
                             f"{cores}: each partition worker holds one while it runs; use "
                             f"--spark local[{jobs}] or -j {cores}")
        checked = compile_program(args, outputs="directives", **options)  # (this process)
        try:
            read = checked.read_facts(folder_option(args.fact_dir, pragmas, "fact-dir"),
                                      progress=report,
                                      missing_ok=args.no_warn or "no-warn" in pragmas)
        finally:
            checked.close()
        options.update(runtime="spark", spark=local_session(args.spark, conf=dict(args.conf),
                                                           quiet=not args.verbose,
                                                           ship=_shipped(args)))
        report.timed(f"started Spark ({args.spark})", time.perf_counter() - started)
        started = time.perf_counter()
    if args.provenance:
        options["provenance"] = True
    options.update(durable_options(args))
    # change feeds only where steps or a resume read them (a feed holds a copy of each change)
    options["changes"] = bool(args.updates) or bool(options.get("durable"))
    program = compile_program(args, partitions=jobs, outputs="directives", max_rounds=args.max_rounds,
                       **options)
    resumed = program.flow.epoch  # (a durable run resumed: the epochs it holds already)
    if profiler is not None:
        profiler.attach(program)
    # the command line wins over a pragma
    args.no_warn = args.no_warn or "no-warn" in program.pragmas
    fact_dir = folder_option(args.fact_dir, program.pragmas, "fact-dir")
    output_dir = folder_option(args.output_dir, program.pragmas, "output-dir")
    try:
        check_output_dir(output_dir)
        # every input is read and checked before anything is computed or written
        steps = [(number, _read_step(program, folder))
                 for number, folder in (_steps(args.updates) if args.updates else [])]
        last_step = steps[-1][0] if steps else None
        if resumed:
            if output_dir != "-":
                os.makedirs(output_dir, exist_ok=True)
            steps = resume_steps(program, output_dir, steps, resumed, report)
        else:
            counts = program.load_facts(fact_dir, progress=report, missing_ok=args.no_warn) \
                if read is None else program.insert_read(read)
            if args.verbose or sum(counts.values()) >= 100_000:
                report.timed(f"loaded {sum(counts.values()):,} facts",
                             time.perf_counter() - started)
            started = time.perf_counter()
            program.commit()
            report.timed("computed the program", time.perf_counter() - started)
            if profiler is not None:
                profiler.step_done(0, (time.perf_counter() - started) * 1e9)
            if output_dir != "-":
                os.makedirs(output_dir, exist_ok=True)
            written = write_states(program, output_dir)
            _print_sizes(program)
            for relation in program.relations.values():
                if relation.outputs and program.keeps_changes:
                    program.changes(relation.name)  # steps report changes from here on
        for number, batches in steps:
            started = time.perf_counter()
            applied = _apply_step(program, batches)
            program.commit()
            report.timed(f"step {number}: {applied:,} fact changes applied and propagated",
                         time.perf_counter() - started)
            if profiler is not None:
                profiler.step_done(number, (time.perf_counter() - started) * 1e9)
            write_changes(program, output_dir, number)
            _print_sizes(program)
        if steps or resumed:  # the outputs' final state replaces their initial one
            written = write_states(program, output_dir, after_step=last_step)
        if written and (args.verbose or sys.stderr.isatty()):  # (scripts get Soufflé's silence)
            report(written_summary(written, output_dir))
        if profiler is not None:
            from diffflow.datalog.cli.profile_file import write_profile

            profiler.note_sizes(program)  # (after the last step: counting costs a pass)
            write_profile(args.profile, profiler.profile())
            if args.verbose or sys.stderr.isatty():
                report(f"wrote the profile {args.profile}; show it with "
                       f"`diffflow profile {args.profile}`")
        if explain_loop(args.provenance, program.pragmas):
            from diffflow.datalog.cli.shell import ExplainShell

            ExplainShell(program, interactive=sys.stdin.isatty()).run(sys.stdin)
    finally:
        program.close()
    return 0


def durable_options(args) -> dict:
    """``Program`` options of ``--checkpoint-dir`` (durable, and resuming what is there)."""
    if args.checkpoint_dir is None:
        if args.checkpoint_every is not None:
            raise ValueError("--checkpoint-every needs --checkpoint-dir DIR")
        return {}
    if args.checkpoint_every is not None and args.checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every must be at least 1, got {args.checkpoint_every}")
    return dict(checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every,
                durable=True, resume=True)


def resume_steps(program, output_dir, steps: list, resumed: int, report) -> list:
    """A durable run resumed after ``resumed`` epochs (the initial run and ``resumed - 1``
    steps): the change files of those steps written again from the replayed epochs (a
    crash may have come before they were), and the steps still to apply."""
    done = steps[:resumed - 1]
    report(f"resumed after {'the initial run' if resumed == 1 else f'step {done[-1][0]}'} "
           f"from the checkpoint folder; {len(steps) - len(done)} steps to go")
    by_relation = {r.name: program.changes_by_epoch(r.name)
                   for r in program.relations.values() if r.outputs}
    for epoch, (number, _batches) in enumerate(done, start=1):
        if any(epoch in by_epoch for by_epoch in by_relation.values()):
            write_changes(program, output_dir, number,
                          lambda name, e=epoch: by_relation[name].get(e, []))
    return steps[resumed - 1:]


def explain_loop(option, pragmas: dict) -> bool:
    """Whether ``run`` opens the provenance command loop: ``-t explain``, or
    ``.pragma "provenance" "explain"`` when ``-t`` is not given (as in Soufflé, the command
    line wins: ``-t none`` keeps the pragma's instrumentation without the loop).

    >>> explain_loop(None, {"provenance": "explain"}), explain_loop("none", {"provenance": "explain"})
    (True, False)
    """
    return (option or pragmas.get("provenance")) == "explain"


def _profiler(args, options):
    """The recorder of ``--profile`` (checked before anything runs); it is the trace."""
    from diffflow.datalog.cli.profile_file import check_writable
    from diffflow.datalog.cli.profile_record import ProfileRecorder

    check_writable(args.profile)
    if args.trace is not None:
        raise ValueError("--profile records the run through its trace: give either --profile "
                         "or --trace, not both")
    if args.spark:
        raise ValueError("--profile runs on the local runtime: leave out --spark")
    recorder = ProfileRecorder(args.program, args.jobs)
    options["trace"] = recorder.sink()
    return recorder


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
    from diffflow.datalog.values.small_facts import read_fact_rows

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
                rows = read_fact_rows(path, relation,
                                      structures=program.analysed.structures)
                batches.append((sign, name, program.encode(name, rows)))
                break
        else:
            raise ValueError(f"unexpected file {os.path.join(folder, entry)!r} in an update "
                             f"step; expected <relation>.insert.facts or .remove.facts")
    # removals first, so a step may replace a fact by removing and inserting it
    return sorted(batches, key=lambda b: b[0] > 0)


def _apply_step(program, batches) -> int:
    return sum(program._change(name, encoded, sign) for sign, name, encoded in batches)


def _print_sizes(program):
    for relation in program.relations.values():
        if relation.printsize:
            print(f"{relation.name}\t{program.size(relation.name)}", flush=True)
