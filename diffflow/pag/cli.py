"""``diffflow pag ...``: critical participation, metrics and invariants of an execution trace.

    diffflow pag cp TRACE [--format diffflow|st2|spark] [--window 1s | --epochs] [--json] [--follow]
    diffflow pag metrics TRACE [...] [-o metrics.csv]
    diffflow pag invariants TRACE [--epoch-max MS --operator-max MS --message-max MS --progress-max MS]
    diffflow pag match TRACE pattern.dl [-M 'K=5']
    diffflow pag serve TRACE [--follow] [--port 8765] [--host 127.0.0.1] [the invariants' thresholds]
    diffflow pag report TRACE -o report.html        # the dashboard as one HTML file
    diffflow pag plot TRACE -o cp.png               # critical participation over snapshots

Output is a table per snapshot (most critical first); ``--json`` gives
``cp``'s machine-readable form, one object per snapshot.  ``--follow``
keeps reading a growing trace and reports each snapshot when it closes
(every worker has moved past it); Ctrl-C stops it.  Durations are shown in
the unit that suits each column (``s``, ``ms``, ``us``; the column header
names it: ``duration_ms``); ``--raw`` shows nanoseconds.  Operators are named
``name (id N)`` everywhere (:func:`~diffflow.pag.readable.operator_label`).
"""
from __future__ import annotations

import argparse
import json
import sys

_FORMAT_HELP = ("trace format: diffflow (raw events), st2 (an ST2 PAG export), spark (an event log); "
                "default: told from the first line")


def add_commands(commands) -> None:
    """Register ``pag`` and its sub-commands on the ``diffflow`` argument parser."""
    pag = commands.add_parser("pag", help="analyse an execution trace: critical participation, metrics, "
                                          "invariants (program activity graphs)",
                              description="Analyse an execution trace (Dataflow(trace=...), diffflow run "
                                          "--trace): its program activity graph.",
                              formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=18))
    sub = pag.add_subparsers(dest="pag_command", metavar="COMMAND", title="commands")
    pag.set_defaults(handler=lambda args: _no_command(pag))
    cp = sub.add_parser("cp", help="critical participation per snapshot")
    _common(cp)
    cp.add_argument("--json", action="store_true", help="print a JSON list, one object per snapshot")
    cp.add_argument("--top", type=int, default=8, metavar="K", help="rows per summary in the table (default 8)")
    cp.set_defaults(handler=_cp)
    met = sub.add_parser("metrics", help="count, duration and records per (from worker, to worker, activity)")
    _common(met)
    met.add_argument("-o", "--output", metavar="CSV", help="write the metrics to this CSV file (durations in ns)")
    met.set_defaults(handler=_metrics)
    inv = sub.add_parser("invariants", help="invariant violations, longest first")
    _common(inv)
    _threshold_options(inv)
    inv.set_defaults(handler=_invariants)
    pat = sub.add_parser("match", help="run a Datalog pattern over the PAG's relations (see queries/pag/)")
    _common(pat)
    pat.add_argument("pattern", help="the .dl pattern; it #includes \"pag.dl\" for the PAG's relations")
    pat.add_argument("-M", "--macro", action="append", default=[], metavar="'NAME=VALUE'",
                     help="define a preprocessor macro, e.g. -M 'K=5'")
    pat.add_argument("-j", "--jobs", type=int, default=1, help="partitions of the pattern's dataflow")
    pat.set_defaults(handler=_match)
    srv = sub.add_parser("serve", help="a live dashboard of the trace in the browser (a local web server)")
    _common(srv)
    srv.add_argument("--port", type=int, default=8765, help="the port to listen on (default 8765)")
    srv.add_argument("--host", default="127.0.0.1",
                     help="the address to listen on (default 127.0.0.1: this machine only)")
    srv.add_argument("--retain", type=int, default=None, metavar="N",
                     help="keep the newest N snapshots (default 1000), so following a long "
                          "run holds bounded memory")
    _threshold_options(srv)
    srv.set_defaults(handler=_serve)
    rep = sub.add_parser("report", help="the dashboard of a finished trace as one self-contained HTML file")
    _common(rep)
    rep.add_argument("-o", "--output", required=True, metavar="HTML", help="the HTML file to write")
    _threshold_options(rep)
    rep.set_defaults(handler=_static)
    plot = sub.add_parser("plot", help="critical participation over snapshots as a PNG")
    _common(plot)
    plot.add_argument("-o", "--output", required=True, metavar="PNG", help="the PNG file to write")
    plot.set_defaults(handler=_static)


def _no_command(pag) -> int:
    """``diffflow pag`` alone: the commands, one line each, and what to type (exit status 2)."""
    pag.print_help(sys.stderr)
    print("\ndiffflow pag: say which analysis to run, e.g. `diffflow pag cp run.trace` "
          "(`diffflow pag COMMAND -h` tells more)", file=sys.stderr)
    return 2


def _threshold_options(command) -> None:
    """The invariants' thresholds (``pag invariants``, ``pag serve``, ``pag report``)."""
    for flag, what in (("--epoch-max", "a snapshot longer than"), ("--operator-max", "an operator invocation longer than"),
                       ("--message-max", "a message longer than"), ("--progress-max", "a worker silent (no progress sent) longer than")):
        command.add_argument(flag, type=float, metavar="MS", help=f"report {what} MS milliseconds")
    command.add_argument("--no-progress", action="store_true", help="do not report workers that sent no progress")
    command.add_argument("--no-well-formed", action="store_true",
                         help="do not check the PAG's well-formedness (SnailTrail's Appendix A)")


def _thresholds(args, pag_flow: bool) -> dict:
    """The keyword arguments of :func:`~diffflow.pag.checks.violations` the options ask for
    (``pag_flow``: a followed diffflow trace, whose PAG a PagFlow builds)."""
    ns = lambda ms: None if ms is None else int(ms * 1e6)  # noqa: E731
    thresholds = dict(progress=not args.no_progress, epoch_max_ns=ns(args.epoch_max),
                      operator_max_ns=ns(args.operator_max), message_max_ns=ns(args.message_max))
    if not args.no_well_formed and not pag_flow:
        thresholds["well_formed"] = True
    if args.progress_max is not None:
        if args.follow:
            raise ValueError("--progress-max looks across a whole trace; it cannot be combined with --follow")
        thresholds["progress_max_ns"] = ns(args.progress_max)
    return thresholds


def _common(command) -> None:
    command.add_argument("trace", help="the trace file (.gz is read compressed)")
    command.add_argument("--format", choices=("auto", "diffflow", "st2", "spark"), default="auto", help=_FORMAT_HELP)
    group = command.add_mutually_exclusive_group()
    group.add_argument("--window", metavar="DURATION", help="time-window snapshots of this length (e.g. 1s, 250ms)")
    group.add_argument("--epochs", action="store_true", help="epoch snapshots (the default for diffflow and st2)")
    command.add_argument("--follow", action="store_true",
                         help="keep reading the growing trace, reporting each snapshot as it closes")
    command.add_argument("--until-idle", type=float, metavar="SECONDS", default=None,
                         help="with --follow: stop after the trace has not grown (or, before it "
                              "exists, not appeared) for this long")
    command.add_argument("--raw", action="store_true",
                         help="durations and times in nanoseconds (default: s, ms or us, named in the header)")


def _reports(args, **thresholds):
    """What to report: one PagReport for a finished trace; with --follow, one per batch of closed
    snapshots (a diffflow trace's epochs are maintained by a PagFlow dataflow as events arrive)."""
    from diffflow.pag.api import detect_format, load
    from diffflow.pag.follow import PagReport

    if args.epochs and (args.format == "spark" or (args.format == "auto" and not args.follow
                                                    and detect_format(args.trace) == "spark")):
        raise ValueError("a Spark event log has no epochs: its snapshots are time windows (--window 10s)")
    if not args.follow:
        yield PagReport(load(args.trace, args.format, window=args.window), **thresholds)
        return
    import os

    from diffflow.pag.follow import follow, follow_flow, wait_for_trace

    # a trace being written may not exist yet, or be empty: wait for its first line
    if not wait_for_trace(args.trace, until_idle=args.until_idle):
        what = "stayed empty" if os.path.exists(args.trace) else "did not appear"
        raise ValueError(f"{args.trace} {what} within {args.until_idle:g} s (--until-idle): "
                         "is the traced run writing it? (Dataflow(trace=...), diffflow run --trace)")
    fmt = detect_format(args.trace) if args.format == "auto" else args.format
    if fmt == "diffflow":
        yield from follow_flow(args.trace, window=args.window, until_idle=args.until_idle, **thresholds)
        return
    for pag in follow(args.trace, fmt, window=args.window, until_idle=args.until_idle):
        yield PagReport(pag, **thresholds)


def _nothing(args, seen: int) -> None:
    if not seen and not args.follow:
        print(f"diffflow: {args.trace} holds no activity (no two events of a worker, no message): "
              "nothing to analyse", file=sys.stderr)


def _cp(args) -> int:
    seen = 0
    for report in _reports(args):
        snapshots = report.cp()
        seen += len(snapshots)
        if args.json:
            if args.follow:
                for s in snapshots:
                    print(json.dumps(_public(s)), flush=True)
            else:
                print(json.dumps([_public(s) for s in snapshots], indent=1))
            continue
        for s in snapshots:
            print(_cp_table(s, args.top, args.raw), flush=True)
    _nothing(args, seen)
    return 0


def _public(summary: dict) -> dict:
    keys = ("epoch", "start", "end", "paths", "by_activity", "by_worker", "by_operator", "by_pair")
    return {k: summary[k] for k in keys}


def _cp_table(s: dict, top: int, raw: bool = False) -> str:
    from diffflow.pag.readable import format_duration

    label = f"epoch {s['epoch']}" if s["epoch"] is not None else f"window {s['snapshot']}"
    span = format_duration(s["end"] - s["start"], raw)
    lines = [f"== {label}: {span}, {s['paths']:.4g} critical paths"]
    for kind in ("activity", "operator", "worker", "pair"):
        items = sorted(s[f"by_{kind}"].items(), key=lambda kv: -kv[1])[:top]
        if items:
            width = max(len(k) for k, _ in items)
            lines.append(f"  by {kind}:")
            lines += [f"    {k:<{width}}  {v:7.2%}" for k, v in items]
    return "\n".join(lines)


def _metrics(args) -> int:
    from diffflow.pag.readable import table_text

    first, seen, units = True, 0, {}
    for report in _reports(args):
        frame = report.metrics()
        seen += len(frame)
        if args.output:
            frame.to_csv(args.output, index=False, mode="w" if first else "a", header=first)
        else:
            if len(frame):
                print(table_text(frame, args.raw, header=first, units=units), flush=True)
        first = False
    _nothing(args, seen)
    return 0


def _invariants(args) -> int:
    from diffflow.pag.readable import table_text, with_operator_labels

    thresholds = _thresholds(args, pag_flow=args.follow)   # a followed trace is built by PagFlow
    found, units = 0, {}
    for report in _reports(args, **thresholds):
        frame = report.violations()
        found += len(frame)
        if len(frame):
            print(table_text(with_operator_labels(frame, report.names), args.raw, units=units), flush=True)
    if not found:
        print("no invariant violated", file=sys.stderr)
    return 0


def _match(args) -> int:
    from diffflow.datalog.program import read_program_text
    from diffflow.pag.readable import table_text
    from diffflow.pag.relations import match

    text = read_program_text(args.pattern)
    macros = dict(m.split("=", 1) if "=" in m else (m, "1") for m in args.macro)
    for report in _reports(args):
        for name, frame in match(report.pag, text, filename=args.pattern, partitions=args.jobs, macros=macros).items():
            print(f"== {name} ({len(frame)} rows)")
            if len(frame):
                print(table_text(frame, args.raw), flush=True)
    return 0


def _serve(args) -> int:
    """``pag serve``: check what can be checked, then read (or follow) the trace in a thread
    and serve the dashboard until Ctrl-C."""
    from diffflow.pag.api import load, parse_duration
    from diffflow.pag.dashboard.server import (RETAIN, Dashboard, check_port, read_trace,
                                               serve)

    if args.window is not None:
        parse_duration(args.window)   # a bad duration fails here, before any serving
    if args.retain is not None and args.retain < 1:
        raise ValueError(f"--retain is how many snapshots the dashboard keeps: at least 1, "
                         f"got {args.retain}")
    check_port(args.host, args.port)
    dashboard = Dashboard(live=args.follow, retain=RETAIN if args.retain is None else args.retain,
                          **_thresholds(args, pag_flow=False))
    if args.follow:
        if str(args.trace).endswith(".gz"):
            raise ValueError("--follow reads a plain trace as it grows; a .gz file is read "
                             "whole: drop --follow")
        if args.format == "spark":
            raise ValueError("--follow reads diffflow and st2 traces; a Spark event log is "
                             "analysed once it is written: drop --follow")
        if args.format == "st2" and args.window:
            raise ValueError("an st2 PAG's snapshots are its epochs: drop --window")
        read_trace(dashboard, args.trace, args.format, window=args.window, follow=True,
                   until_idle=args.until_idle)
    else:   # a trace that cannot be read fails here, with its reason
        dashboard.add(load(args.trace, args.format, window=args.window))
    serve(dashboard, host=args.host, port=args.port)
    return 0


def _static(args) -> int:
    """``pag report`` / ``pag plot``: the dashboard's views of a finished trace, to a file."""
    from diffflow.pag.api import load
    from diffflow.pag.dashboard.report import write_plot, write_report

    if args.follow:
        raise ValueError(f"pag {args.pag_command} reads a finished trace: drop --follow "
                         f"(pag serve --follow shows a growing one)")
    pag = load(args.trace, args.format, window=args.window)
    if args.pag_command == "report":
        write_report(pag, args.output, **_thresholds(args, pag_flow=False))
    else:
        write_plot(pag, args.output, title=f"Critical participation per snapshot: {args.trace}")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0
