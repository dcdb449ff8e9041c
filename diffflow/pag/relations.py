"""The PAG as Datalog relations (declared in ``pag/datalog/pag.dl``) and pattern matching over them.

A pattern is a Datalog program that ``#include "pag.dl"`` and derives its own
``.output`` relations from ``edge``, ``snapshot``, ``cp``... :func:`match`
compiles it, loads a PAG's relations and returns the outputs as pandas
frames.  The pattern library is in ``queries/pag/``.

>>> from diffflow.pag.edges import Edges
>>> from diffflow.pag.api import PAG
>>> pag = PAG(Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Waiting"), (1, 1, 2, 0, 0, 5, 0, "DataMessage", -1, 10)]), epochs=True)
>>> pattern = '''#include "pag.dl"
... .decl woken(w: number, by: number, records: number)
... .output woken
... woken(w, s, n) :- edge(_, e, w, _, w, t, "Waiting", _, _), edge(_, e, s, _, w, t, "DataMessage", _, n).'''
>>> match(pag, pattern)["woken"].values.tolist()
[[0, 1, 10]]
"""
from __future__ import annotations

import os

import numpy as np

from diffflow.pag.edges import Edges
from diffflow.runtime.events import ACTIVITIES

PRELUDE_DIR = os.path.join(os.path.dirname(__file__), "datalog")


def relations(pag) -> dict:
    """Every relation of ``pag.dl`` for a :class:`~diffflow.pag.api.PAG`, as lists of tuples.

    Edge ids are the row numbers of the PAG (``cp`` holds the padded
    boundary edges of epoch snapshots too, with ids after the PAG's own).
    Times are floats: ns since the PAG's earliest instant (Datalog numbers are 32-bit).

    >>> from diffflow.pag.api import PAG
    >>> r = relations(PAG(Edges.from_rows([(1, 0, 0, 0, 0, 5, 0, "Busy")]), epochs=True))
    >>> r["edge"], r["snapshot"], r["cp"][0]
    ([(0, 1, 0, 0.0, 0, 5.0, 'Busy', -1, -1)], [(1, 0.0, 5.0)], (0, 1.0))
    """
    from diffflow.pag.activity_metrics import metrics
    from diffflow.pag.checks import invocations
    from diffflow.pag.critical import critical_participation

    e: Edges = pag.edges
    origin = int(min(e.src_t.min(), e.dst_t.min())) if len(e) else 0
    rel = lambda t: (np.asarray(t, np.int64) - origin).astype(np.float64).tolist()  # noqa: E731
    types = [ACTIVITIES[c] for c in e.type.tolist()]
    ids = range(len(e))
    out = {"edge": list(zip(ids, e.snap.tolist(), e.src_w.tolist(), rel(e.src_t), e.dst_w.tolist(),
                            rel(e.dst_t), types, e.op.tolist(), e.n.tolist()))}
    out["blocked"] = [(int(i),) for i in np.flatnonzero(e.block)]
    out["operator"] = sorted((int(k), str(v)) for k, v in e.names.items())
    # rows of invocations(): ("operator", snap, worker, None, op, start, end, duration, records)
    out["invocation"] = [(r[1], r[2], r[4], float(r[5] - origin), float(r[6] - origin), r[8])
                         for r in invocations(e)]
    m = metrics(e, epochs=pag.epochs)
    out["metric"] = [(s, f, t, a, c, float(d), float(n)) for s, f, t, a, c, d, n in m.itertuples(index=False, name=None)]
    result = critical_participation(e, pad=pag.epochs, epochs=pag.epochs, windows=pag.windows())
    # critical_participation keeps the PAG's rows first, then adds the padding edges
    out["cp"] = list(zip(range(len(result.cp)), result.cp.tolist()))
    out["snapshot"] = [(s["snapshot"], float(s["start"] - origin), float(s["end"] - origin)) for s in result.summaries]
    out["cp_activity"], out["cp_worker"], out["cp_operator"], out["cp_pair"] = [], [], [], []
    for s in result.summaries:
        snap = s["snapshot"]
        out["cp_activity"] += [(snap, k, v) for k, v in s["by_activity"].items()]
        out["cp_worker"] += [(snap, int(k), v) for k, v in s["by_worker"].items()]
        out["cp_operator"] += [(snap, k, v) for k, v in s["by_operator"].items()]
        out["cp_pair"] += [(snap, *map(int, k.split("->")), v) for k, v in s["by_pair"].items()]
    return out


def match(pag, pattern: str, *, filename: str = "<pattern>", partitions: int = 1, macros=None) -> dict:
    """Run a pattern program over ``pag`` (a PAG, an edge table, or a trace path); returns ``{output relation: pandas DataFrame}``.

    >>> from diffflow.pag.api import PAG
    >>> match(PAG(Edges.empty(), epochs=True), '#include "pag.dl"\\n.decl n(x: number)\\n.output n\\n'
    ...       'n(c) :- c = count : { edge(_, _, _, _, _, _, _, _, _) }.')["n"].values.tolist()
    [[0]]
    """
    import pandas as pd

    from diffflow.datalog.program import Program
    from diffflow.pag.api import as_pag

    pag = as_pag(pag)
    program = Program(pattern, filename=filename, partitions=partitions,
                      include_dirs=[PRELUDE_DIR, os.path.dirname(os.path.abspath(filename))], macros=macros)
    try:
        for name, rows in relations(pag).items():
            if name in program.relations and rows:
                program.insert(name, rows)
        program.commit()
        frames = {}
        dtypes = {"number": "int64", "unsigned": "uint64", "float": "float64", "symbol": "object"}
        for rel in program.relations.values():
            if rel.outputs:
                rows = sorted(program.relation(rel.name))
                columns = {a: pd.Series([r[i] for r in rows], dtype=dtypes.get(kind, "object"))
                           for i, (a, kind) in enumerate(zip(rel.attributes, rel.types))}
                frames[rel.name] = pd.DataFrame(columns)
        return frames
    finally:
        program.close()
