"""``diffflow bench graphs``: diffflow's graph algorithms on a real or generated graph, from
scratch and then under batches of edge updates, optionally beside peers.

    diffflow bench graphs --graph wiki-Vote                  # shipped with the repository
    diffflow bench graphs --graph rmat --scale 16            # generated, Graph500's R-MAT
    diffflow bench graphs --graph soc-Epinions1 --download   # fetched from SNAP once, cached
    diffflow bench graphs --graph p2p-Gnutella08 --algorithms reach,scc --peers scipy,networkx
    diffflow bench graphs --list                             # the graphs, and which are here

The table goes to stdout (``--json``: the same figures for scripts), progress bars to stderr
(only on a terminal; ``--quiet``: none), a plot to ``--plot FILE.png``.  The exit status is
1 when a peer's answer differs from diffflow's.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from diffflow.bench import datasets
from diffflow.bench.graphs import ALGORITHMS

PEER_NAMES = ("scipy", "networkx", "duckdb")


def add_commands(commands) -> None:
    """Register ``bench`` and its sub-commands on the ``diffflow`` argument parser."""
    bench = commands.add_parser("bench", help="benchmarks: the graph algorithms, from scratch "
                                              "and under updates")
    sub = bench.add_subparsers(dest="bench_command", required=True)
    graphs = sub.add_parser(
        "graphs", help="graph algorithms from scratch, then under batches of edge updates",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
        epilog="graphs: rmat (generated), " + ", ".join(
            f"{g.name} ({g.edges:,} edges)" for g in datasets.CATALOG.values())
        + f". Downloads go to {datasets.cache_dir()} (--data-dir or ${datasets.CACHE_ENV} "
          f"to change it); nothing is downloaded without --download.")
    graphs.add_argument("--graph", default="rmat", metavar="NAME",
                        help="rmat (default), or a SNAP graph: wiki-Vote, p2p-Gnutella08 "
                             "(shipped), email-Enron, soc-Epinions1, ego-Twitter, "
                             "soc-LiveJournal1 (with --download)")
    graphs.add_argument("--scale", type=int, metavar="S",
                        help="rmat: 2**S nodes (default 14)")
    graphs.add_argument("--edges", type=int, metavar="N",
                        help="rmat: N distinct edges (default 8 * 2**S); a real graph: a random "
                             "N of its edges")
    graphs.add_argument("--algorithms", type=_names(ALGORITHMS, "algorithm"), default="reach,wcc",
                        metavar="A,B", help=f"comma-separated, of {', '.join(ALGORITHMS)} "
                                            f"(default reach,wcc)")
    graphs.add_argument("--batches", type=int, default=20, metavar="N",
                        help="update batches after the initial computation (default 20)")
    graphs.add_argument("--batch-size", type=int, default=10, metavar="K",
                        help="edges removed and edges inserted per batch (default 10 + 10)")
    graphs.add_argument("--roots", type=int, default=10, metavar="N",
                        help="reach and bfs: start nodes (default 10)")
    graphs.add_argument("--seed", type=int, default=1, help="of R-MAT, roots and batches")
    graphs.add_argument("--partitions", type=int, default=1, metavar="P",
                        help="the dataflow's partitions (default 1)")
    graphs.add_argument("--peers", type=_names(PEER_NAMES, "peer"), default="", metavar="A,B",
                        help="also compute from scratch with these, when installed: "
                             "scipy, networkx, duckdb (default: none)")
    graphs.add_argument("--download", action="store_true",
                        help="fetch the graph from SNAP when it is not here (verified, cached)")
    graphs.add_argument("--data-dir", metavar="DIR",
                        help=f"where graphs are downloaded and looked for first (default "
                             f"${datasets.CACHE_ENV}, else {datasets.cache_dir()})")
    graphs.add_argument("--json", action="store_true", help="print the figures as JSON")
    graphs.add_argument("--plot", metavar="FILE", help="write a PNG plot of the figures")
    graphs.add_argument("--quiet", action="store_true", help="no progress bars")
    graphs.add_argument("--list", action="store_true", help="list the graphs and where they are")
    graphs.set_defaults(handler=_graphs)


def _names(valid, what):
    """An argparse type: a comma-separated list of names out of ``valid``."""
    def parse(text):
        names = [n.strip() for n in text.split(",") if n.strip()]
        bad = [n for n in names if n not in valid]
        if bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(map(repr, bad))}; choose from {', '.join(valid)} "
                f"(comma-separated)")
        return list(dict.fromkeys(names))
    return parse


def _graphs(args) -> int:
    from diffflow.bench.peers import require
    from diffflow.bench.progress import Progress

    if args.list:
        print(_listing(args.data_dir))
        return 0
    for flag in ("batches", "batch_size", "roots", "partitions"):
        if getattr(args, flag) < (0 if flag == "batches" else 1):
            raise ValueError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: too small")
    require(args.peers)
    with Progress(False if args.quiet else None) as progress:
        result = _run(args, progress)
    print(_report(result, args.json))
    if args.plot:
        from diffflow.bench.report import plot

        plot(result, args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    differ = [f"{p} on {a}" for a, r in result["algorithms"].items()
              for p, v in r["peers"].items() if v is not None and not v["agrees"]]
    if differ:
        print(f"diffflow: error: answers differ from diffflow's: {', '.join(differ)}",
              file=sys.stderr)
        return 1
    return 0


def _report(result, as_json: bool) -> str:
    from diffflow.bench.report import table, to_json

    return to_json(result) if as_json else table(result)


def _run(args, progress) -> dict:
    from diffflow.arrangements.columnar import load_kernels
    from diffflow.bench.graphs import (final_edges, measure, pick_roots, summarize,
                                       update_batches)

    t0 = time.perf_counter()
    edges, graph = _load(args, progress)
    graph["load_s"] = time.perf_counter() - t0
    with progress.task("warming up (the first run on a machine compiles the kernels)"):
        load_kernels()  # time the kernels, not the numpy tactics a fresh process starts on
        _warm_up(args.algorithms, args.partitions)
    roots = pick_roots(edges, args.roots, args.seed)
    batches = update_batches(edges, args.batches, args.batch_size, args.seed)
    final = final_edges(edges, batches) if args.peers else None
    result = {"graph": graph,
              "settings": {"algorithms": args.algorithms, "roots": len(roots),
                           "root_nodes": roots.tolist(),
                           "batches": args.batches, "batch_size": args.batch_size,
                           "partitions": args.partitions, "seed": args.seed,
                           "peers": args.peers},
              "algorithms": {}}
    for name in args.algorithms:
        with progress.task(f"{name}: from scratch, then update batches",
                           total=args.batches) as advance:
            measured = measure(name, edges, roots, batches, args.partitions, advance)
        figures = summarize(measured, len(edges), args.batch_size)
        figures.update(answer_initial=measured["answer_initial"],
                       answer_final=measured["answer_final"], update_ms=measured["update_ms"],
                       peers={p: _peer(p, name, edges, final, roots, measured, progress)
                              for p in args.peers})
        result["algorithms"][name] = figures
    return result


def _warm_up(algorithms, partitions) -> None:
    """Run each algorithm once on a tiny graph, untimed: numba compiles (first run on a
    machine, tens of seconds) or loads from its cache what the timed runs use."""
    from diffflow.bench.graphs import measure, update_batches
    from diffflow.bench.rmat import rmat_edges

    edges = rmat_edges(6, 300, seed=7)
    for name in algorithms:
        measure(name, edges, edges[:3, 0], update_batches(edges, 2, 3), partitions)


def _peer(peer, algorithm, edges, final, roots, measured, progress):
    """A peer's from-scratch times on the edges before and after the batches, and whether
    its answers are diffflow's; None when the peer has no such query here."""
    from diffflow.bench.peers import PEERS

    compute = PEERS[peer].get(algorithm)
    if compute is None:
        return None
    with progress.task(f"{algorithm}: {peer} from scratch"):
        t0 = time.perf_counter()
        before = compute(edges, roots)
        t1 = time.perf_counter()
        after = compute(final, roots)
        t2 = time.perf_counter()
    return {"initial_s": t1 - t0, "final_s": t2 - t1, "answer_final": after,
            "agrees": before == measured["answer_initial"] and after == measured["answer_final"]}


def _load(args, progress) -> tuple:
    """``(edges, graph description)`` of ``--graph``."""
    import numpy as np

    if args.graph.lower() == "rmat":
        from diffflow.bench.rmat import rmat_edges

        scale = 14 if args.scale is None else args.scale
        if not 1 <= scale <= 40:
            raise ValueError(f"--scale {scale}: R-MAT needs 1 <= scale <= 40")
        count = args.edges or 8 << scale
        with progress.task(f"generating R-MAT scale {scale}, {count:,} edges"):
            edges = rmat_edges(scale, count, seed=args.seed)
        return edges, {"name": f"rmat-s{scale}", "nodes": int(len(np.unique(edges))),
                       "edges": len(edges),
                       "source": f"R-MAT a,b,c = 0.57,0.19,0.19, seed {args.seed}"}
    if args.scale is not None:
        raise ValueError("--scale is for --graph rmat; a real graph has its own size")
    graph = datasets.entry(args.graph)
    path = datasets.find(graph, args.data_dir)
    if path is None:
        if not args.download:
            raise ValueError(datasets.missing_message(graph, args.data_dir))
        from diffflow.bench.download import fetch

        path = os.path.join(datasets.cache_dir(args.data_dir), graph.file)
        with progress.task(f"downloading {graph.url}", unit="bytes") as advance:
            fetch(graph.url, path, graph.text_size, graph.text_sha256, progress=advance)
        print(f"downloaded {graph.name} to {path}", file=sys.stderr)
    with progress.task(f"loading {path}"):
        edges = datasets.load_edges(path)
    source = path
    if args.edges and args.edges < len(edges):
        rng = np.random.default_rng(args.seed)
        source = f"a random {args.edges:,} of the {len(edges):,} edges of {path}"
        edges = edges[np.sort(rng.choice(len(edges), args.edges, replace=False))]
    return edges, {"name": graph.name, "nodes": int(len(np.unique(edges))),
                   "edges": len(edges), "source": source}


def _listing(data_dir) -> str:
    rows = [("graph", "nodes", "edges", "download", "here")]
    for g in datasets.CATALOG.values():
        path = datasets.find(g, data_dir)
        rows.append((g.name, f"{g.nodes:,}", f"{g.edges:,}", f"~{g.gz_mib:g} MiB",
                     path or f"no: --download fetches {g.url}"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines + ["rmat: generated (--scale S, --edges N)"])
