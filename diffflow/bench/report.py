"""What ``diffflow bench graphs`` shows: a table with units on stdout, the same figures as
JSON (every figure's unit in its key: ``initial_s``, ``update_ms_median``,
``update_edges_per_s``), and a PNG plot.

>>> duration(0.0123), duration(2.5)
('12.3 ms', '2.50 s')
"""
from __future__ import annotations

import json


def duration(seconds: float) -> str:
    """``seconds`` in ms below a second, in s above."""
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _answer(answer: dict) -> str:
    if "components" in answer:
        plural = "" if answer["components"] == 1 else "s"
        return (f"{answer['components']:,} component{plural}, largest "
                f"{answer['largest_component_nodes']:,} nodes")
    text = f"{answer['nodes_reached']:,} nodes reached"
    return text + (f", farthest {answer['max_hops']} hops" if "max_hops" in answer else "")


def _rate(x) -> str:
    return "-" if x is None else f"{x:,.0f}"


def table(result: dict) -> str:
    """The result as text: a header, one row per algorithm, then one per peer measured.

    >>> r = {"graph": {"name": "g", "nodes": 3, "edges": 2, "source": "generated",
    ...                "load_s": 0.001}, "settings": {"roots": 1, "batches": 1, "batch_size": 1},
    ...      "algorithms": {"reach": {"initial_s": 0.5, "initial_edges_per_s": 4.0,
    ...          "update_ms_median": 1.0, "update_ms_p90": 1.0, "update_edges_per_s": 2000.0,
    ...          "answer_final": {"nodes_reached": 2}, "peers": {}}}}
    >>> print(table(r))  # doctest: +NORMALIZE_WHITESPACE
    graph g: 3 nodes, 2 edges (generated, ready in 1.0 ms)
    1 roots; 1 batches of 1 edges removed + 1 inserted
    algorithm  answer after the batches  initial  initial edges/s  update median  update p90  update edges/s
    reach      2 nodes reached           500.0 ms 4                1.00 ms        1.00 ms     2,000
    """
    g, s = result["graph"], result["settings"]
    lines = [f"graph {g['name']}: {g['nodes']:,} nodes, {g['edges']:,} edges ({g['source']}, "
             f"ready in {duration(g['load_s'])})",
             f"{s['roots']} roots; " + (f"{s['batches']} batches of {s['batch_size']} edges "
                                        f"removed + {s['batch_size']} inserted"
                                        if s["batches"] else "no update batches")]
    rows = [("algorithm", "answer after the batches", "initial", "initial edges/s",
             "update median", "update p90", "update edges/s")]
    peers = [("peer", "algorithm", "from scratch", "from scratch / diffflow update", "answers")]
    for name, a in result["algorithms"].items():
        median = a.get("update_ms_median")
        rows.append((name, _answer(a["answer_final"]), duration(a["initial_s"]),
                     _rate(a["initial_edges_per_s"]),
                     "-" if median is None else f"{median:.2f} ms",
                     "-" if median is None else f"{a['update_ms_p90']:.2f} ms",
                     _rate(a.get("update_edges_per_s"))))
        for peer, p in a["peers"].items():
            if p is None:
                peers.append((peer, name, "not measured (no such query here)", "-", "-"))
                continue
            ratio = "-" if not median else f"x{p['final_s'] * 1e3 / median:,.1f}"
            peers.append((peer, name, duration(p["final_s"]), ratio,
                          "agree" if p["agrees"] else "DIFFER"))
    lines += _columns(rows)
    if len(peers) > 1:
        lines += [""] + _columns(peers)
    return "\n".join(lines)


def _columns(rows) -> list:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def to_json(result: dict) -> str:
    """The result as indented JSON (numpy numbers as Python's)."""
    return json.dumps(result, indent=1, default=lambda x: x.item())


def plot(result: dict, path: str) -> None:
    """A PNG at ``path``: each algorithm's update latency per batch, and its initial
    computation beside the peers' (matplotlib's Agg renderer, no display needed)."""
    from matplotlib.figure import Figure

    algorithms = result["algorithms"]
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    lat, init = fig.subplots(1, 2)
    for name, a in algorithms.items():
        lat.plot(range(1, len(a["update_ms"]) + 1), a["update_ms"], marker=".", label=name)
    s = result["settings"]
    lat.set(xlabel="batch", ylabel="update latency (ms)", yscale="log",
            title=f"{s['batch_size']} removed + {s['batch_size']} inserted edges per batch")
    lat.xaxis.get_major_locator().set_params(integer=True)
    lat.legend()
    engines = ["diffflow"] + sorted({p for a in algorithms.values() for p in a["peers"]})
    width = 0.8 / len(engines)
    for i, engine in enumerate(engines):
        values = [a["initial_s"] if engine == "diffflow" else
                  (a["peers"].get(engine) or {}).get("initial_s", 0)
                  for a in algorithms.values()]
        init.bar([j + i * width for j in range(len(algorithms))], values, width, label=engine)
    init.set_xticks([j + 0.4 - width / 2 for j in range(len(algorithms))], list(algorithms))
    init.set(ylabel="from scratch (s)", title=f"{result['graph']['name']}: "
             f"{result['graph']['edges']:,} edges")
    init.legend()
    fig.savefig(path, dpi=110)
