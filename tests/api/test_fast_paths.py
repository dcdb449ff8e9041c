"""The reduce and join fast paths through the public API, against from-scratch oracles."""
from __future__ import annotations

import math
import random
from collections import Counter, defaultdict

import pytest

import diffflow as dd
from tests.algorithms.test_graphs import reach_oracle, sssp_oracle
from tests.support.both_tactics import tactic  # noqa: F401  (autouse: small tactics and kernels)
from tests.support.helpers import check_traces, clean, new_flow

PARTS = [1, 3]


def drive2(inputs, build, oracle, *, seed, parts, epochs=10, gen=None, batch=8,
           allow_negative=False, domain=5, batched_runs=False, removal=0.4):
    """Like helpers.drive, with custom row generators and several epochs per run.

    ``inputs`` maps names to column specs (``flow.input`` style); ``gen[name](rng)``
    makes a row.  With ``batched_runs``, epochs are closed with ``advance(run=False)``
    a random number of times before one ``run()`` computes them together.
    """
    rng = random.Random(seed)
    flow = new_flow(parts)
    handles = {n: flow.input(n, cols) for n, cols in inputs.items()}
    out = build(flow, handles)
    outs = out if isinstance(out, (list, tuple)) else [out]
    oracles = oracle if isinstance(oracle, (list, tuple)) else [oracle]
    outputs = [o.output() for o in outs]
    state = {n: Counter() for n in inputs}
    acc = [Counter() for _ in outputs]
    ncols = {n: len(c) for n, c in inputs.items()}
    gen = gen or {}
    unchecked = 0
    for epoch in range(epochs):
        for name in inputs:
            rows, diffs = [], []
            present = [r for r, m in state[name].items() if m > 0]
            for _ in range(rng.randrange(batch + 1)):
                if present and rng.random() < removal:
                    rows.append(rng.choice(present)); diffs.append(-1)
                else:
                    row = gen[name](rng) if name in gen else tuple(
                        rng.randrange(domain) for _ in range(ncols[name]))
                    d = rng.choice([-2, -1, 2, 1]) if allow_negative and rng.random() < 0.15 else 1
                    rows.append(row); diffs.append(d)
            if not allow_negative:
                tally = Counter(state[name]); ok_r, ok_d = [], []
                for r, d in zip(rows, diffs):
                    if tally[r] + d >= 0:
                        tally[r] += d; ok_r.append(r); ok_d.append(d)
                rows, diffs = ok_r, ok_d
            if rows:
                handles[name].update(rows, diffs)
            for r, d in zip(rows, diffs):
                state[name][r] += d
        last = epoch == epochs - 1
        if batched_runs and not last and rng.random() < 0.5:
            flow.advance(run=False)
            unchecked += 1
            continue
        if batched_runs and unchecked:
            flow.advance(run=False)
            flow.run()
        else:
            flow.advance()
        unchecked = 0
        snapshot_state = {k: clean(v) for k, v in state.items()}
        for i, (o, orc) in enumerate(zip(outputs, oracles)):
            expected = clean(orc(snapshot_state))
            got = o.snapshot()
            assert got == expected, f"seed {seed} epoch {epoch} output {i}: got {got}, expected {expected}"
            for row, e, d in o.changes():
                acc[i][row] += d
            assert clean(acc[i]) == got
        check_traces(flow)
    flow.close()


def extremum_oracle(name, key_idx, val_idx, pick):
    def oracle(s):
        groups = defaultdict(list)
        for row, m in s[name].items():
            if m > 0:
                groups[tuple(row[i] for i in key_idx)].append(row[val_idx])
        return Counter({k + (pick(vs),): 1 for k, vs in groups.items()})
    return oracle


FLOATS = [-math.inf, -3.5, -1.0, -0.5, 0.0, 0.25, 1.0, 2.5, 1e300, math.inf]


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("seed", range(4))
def test_float_extremum(kind, seed, parts):
    agg, pick = (dd.min, min) if kind == "min" else (dd.max, max)
    drive2({"a": ["k", ("v", float)]},
           lambda f, i: i["a"].aggregate(by=["k"], best=agg("v")),
           extremum_oracle("a", [0], 1, pick), seed=seed, parts=parts, epochs=12, batch=14,
           gen={"a": lambda r: (r.randrange(3), r.choice(FLOATS))},
           allow_negative=seed % 2 == 1, batched_runs=seed % 3 == 0)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("kind", ["min", "max"])
@pytest.mark.parametrize("seed", range(4))
def test_extremum_extra_columns_and_wide_keys(kind, seed, parts):
    agg, pick = (dd.min, min) if kind == "min" else (dd.max, max)
    o1 = extremum_oracle("a", [0], 3, pick)
    o2 = extremum_oracle("a", [1, 0], 3, pick)
    o3 = extremum_oracle("a", [], 3, pick)
    o4 = extremum_oracle("a", [2], 0, pick)
    drive2({"a": ["k", "j", "x", "v"]},
           lambda f, i: [i["a"].aggregate(by=["k"], best=agg("v")),
                         i["a"].aggregate(by=["j", "k"], best=agg("v")),
                         i["a"].aggregate(best=agg("v")),
                         i["a"].arrange(by=["x"]).aggregate(best=agg("k"))],
           [o1, o2, o3, o4], seed=seed, parts=parts, epochs=12, batch=12,
           gen={"a": lambda r: (r.randrange(3), r.randrange(2), r.randrange(3), r.randrange(-4, 5))},
           allow_negative=seed % 2 == 1, batched_runs=seed % 3 == 0)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(4))
def test_distinct_threshold_batched(seed, parts):
    fns = [lambda m: m % 3, lambda m: m // 2, lambda m: -m, lambda m: (m > 1).astype("int64")]

    def oracle_for(fn):
        import numpy as np

        def oracle(s):
            out = Counter()
            for row, m in s["a"].items():
                v = int(fn(np.array([m]))[0])
                if v:
                    out[row] = v
            return out
        return oracle
    drive2({"a": ["x", "y"]},
           lambda f, i: [i["a"].distinct()] + [i["a"].threshold(fn) for fn in fns],
           [lambda s: Counter({r: 1 for r, m in s["a"].items() if m > 0})] + [oracle_for(fn) for fn in fns],
           seed=seed, parts=parts, epochs=12, batch=10, domain=3,
           allow_negative=True, batched_runs=seed % 2 == 0)


# -- nested loops ------------------------------------------------------------------------------

def nested_min_label(edges, nodes):
    """label[n] = min node that reaches n, with an inner loop inside an outer one."""
    init = nodes.select("node", label="node")

    def outer(o):
        def inner(i):
            step = i.join(edges, left_on="node", right_on="src").select(node="dst", label="label")
            return o.concat(i).concat(step).aggregate(by=["node"], label=dd.min("label"))
        return init.concat(o.iterate(inner)).aggregate(by=["node"], label=dd.min("label"))
    return init.iterate(outer)


def min_label_oracle(s):
    succ = defaultdict(set)
    for (a, b), m in s["edges"].items():
        if m > 0:
            succ[a].add(b)
    nodes = {n for (n,), m in s["nodes"].items() if m > 0}
    label = {}
    for src in sorted(nodes):
        stack, seen = [src], {src}
        while stack:
            x = stack.pop()
            for y in succ[x]:
                if y not in seen:
                    seen.add(y); stack.append(y)
        for y in seen:
            if y not in label:
                label[y] = src
    return Counter({(n, l): 1 for n, l in label.items()})


@pytest.mark.slow
@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(3))
def test_nested_min_labels(seed, parts):
    drive2({"edges": ["src", "dst"], "nodes": ["node"]},
           lambda f, i: nested_min_label(i["edges"], i["nodes"]),
           min_label_oracle, seed=seed, parts=parts, epochs=10, batch=6, domain=8,
           batched_runs=seed % 2 == 1)


def nested_reach(edges, roots):
    def outer(o):
        def inner(i):
            return o.concat(i.join(edges, left_on="node", right_on="src").select(node="dst")).distinct()
        return roots.concat(o.iterate(inner)).distinct()
    return roots.iterate(outer)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(3))
def test_nested_reach(seed, parts):
    drive2({"edges": ["src", "dst"], "roots": ["node"]},
           lambda f, i: nested_reach(i["edges"], i["roots"]),
           reach_oracle, seed=seed, parts=parts, epochs=10, batch=6, domain=8,
           batched_runs=seed % 2 == 1)


def sssp_loop(edges, roots):
    start = roots.select("node", d=dd.lit(0))

    def body(x):
        step = x.join(edges, left_on="node", right_on="src").select(node="dst", d=dd.col("d") + dd.col("w"))
        return start.concat(step).aggregate(by=["node"], d=dd.min("d"))
    return start.iterate(body)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(4))
def test_sssp_uneven_rounds(seed, parts):
    # long chains early (many rounds), short fixes later: history above the new rounds
    drive2({"edges": ["src", "dst", "w"], "roots": ["node"]},
           lambda f, i: sssp_loop(i["edges"], i["roots"]),
           sssp_oracle, seed=seed, parts=parts, epochs=14, batch=7,
           gen={"edges": lambda r: (r.randrange(10), r.randrange(10), r.randrange(1, 6)),
                "roots": lambda r: (r.randrange(3),)},
           batched_runs=seed % 2 == 0, removal=0.5)


# -- joins and projections ---------------------------------------------------------------------

def jn(a, b):
    out = Counter()
    for (k, x), ma in a.items():
        for (k2, y), mb in b.items():
            if k == k2:
                out[(k, x, y)] += ma * mb
    return out


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(4))
def test_join_projection_shapes(seed, parts):
    def build(f, i):
        j = i["a"].join(i["b"], on="k")  # k, x, y
        j2 = i["a"].join(i["b"], on="k")
        j3 = i["a"].join(i["b"], on="k")
        j4 = i["a"].join(i["b"], on="k")
        return [
            j.select(y="y", k="k"),             # read by a projection ...
            j.filter(dd.col("x") > dd.col("y")),  # ... and by a filter
            j2.select(p="y", q="x", r="k", s="x"),  # only reader: fused, reordered, repeated
            j3.select("k", "x", "y"),           # identity after a join
            j4.select(z="x").join(i["b"].select(z="k", w="y"), on="z"),  # projection into a join
            i["a"].join(i["b"], on="k").filter(dd.col("y") % 2 == 0).select("x"),
            j.select("k", "x", "y").select(y2="y"),
        ]

    def o(fn):
        return lambda s: fn(jn(s["a"], s["b"]), s)

    def proj(c, f):
        out = Counter()
        for r, m in c.items():
            out[f(r)] += m
        return out

    def o4(j, s):
        left = proj(j, lambda r: (r[1],))
        out = Counter()
        for (z,), m in left.items():
            for (k, y), mb in s["b"].items():
                if k == z:
                    out[(z, y)] += m * mb
        return out
    oracles = [
        o(lambda j, s: proj(j, lambda r: (r[2], r[0]))),
        o(lambda j, s: Counter({r: m for r, m in j.items() if r[1] > r[2]})),
        o(lambda j, s: proj(j, lambda r: (r[2], r[1], r[0], r[1]))),
        o(lambda j, s: j),
        o(o4),
        o(lambda j, s: proj({r: m for r, m in j.items() if r[2] % 2 == 0}, lambda r: (r[1],))),
        o(lambda j, s: proj(j, lambda r: (r[2],))),
    ]
    drive2({"a": ["k", "x"], "b": ["k", "y"]}, build, oracles, seed=seed, parts=parts,
           epochs=10, batch=40 if seed % 2 else 8, domain=4 if seed % 2 else 6,
           allow_negative=True, batched_runs=seed % 3 == 0)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(3))
def test_big_join_kernel_path(seed, parts):
    # enough matched pairs to take the numba emit_pairs path
    def build(f, i):
        return [i["a"].join(i["b"], on="k").select(y="y", x="x"),
                i["a"].join(i["b"], left_on="x", right_on="y", rename={"k": "k2"})]

    def o1(s):
        out = Counter()
        for (k, x, y), m in jn(s["a"], s["b"]).items():
            out[(y, x)] += m
        return out

    def o2(s):
        out = Counter()
        for (k, x), ma in s["a"].items():
            for (k2, y), mb in s["b"].items():
                if x == y:
                    out[(k, x, k2)] += ma * mb
        return out
    drive2({"a": ["k", "x"], "b": ["k", "y"]}, build, [o1, o2], seed=seed, parts=parts,
           epochs=6, batch=400, domain=30, allow_negative=True, batched_runs=seed % 2 == 0,
           removal=0.2)


# -- shared arrangements, self joins, joins with several readers, inside loops -----------------

def _labels_shared(edges, nodes):
    """Min-label propagation where one arrangement of the labels serves a join and an aggregate."""
    init = nodes.select("node", label="node")

    def body(x):
        arranged = x.arrange(by=["node"])
        best = arranged.aggregate(label=dd.min("label"))
        hop = arranged.join(edges, left_on="node", right_on="src").select(node="dst", label="label")
        # the join is read by the projection only; its projection feeds a concat and an antijoin
        nxt = init.concat(best).concat(hop)
        return nxt.aggregate(by=["node"], label=dd.min("label"))
    return init.iterate(body)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(3))
def test_shared_arrangement_in_loop(seed, parts):
    drive2({"edges": ["src", "dst"], "nodes": ["node"]},
           lambda f, i: _labels_shared(i["edges"], i["nodes"]),
           min_label_oracle, seed=seed, parts=parts, epochs=10, batch=6, domain=8,
           batched_runs=seed % 2 == 1)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(4))
def test_self_join_and_double_readers(seed, parts):
    def build(f, i):
        a = i["a"]
        sj = a.join(a, on="k", rename={"x": "x2"})            # k, x, x2
        p = sj.select(u="x2", v="x")                           # fused
        two = a.join(i["b"], on="k")                            # read twice below
        c1 = two.select("y", "k")
        c2 = two.concat(two.filter(dd.col("y") > 1)).select(q="x")
        anti = a.antijoin(i["b"], on="k").select(z="x", k="k")
        semi = a.semijoin(i["b"], on="k").filter(dd.col("x") != 2)
        return [p, c1, c2, anti, semi, two.aggregate(by=["k"], lo=dd.min("y")),
                p.distinct(), p.threshold(lambda m: m // 2)]

    def proj(c, f):
        out = Counter()
        for r, m in c.items():
            out[f(r)] += m
        return out

    def o_p(s):
        out = Counter()
        for (k, x), m in s["a"].items():
            for (k2, x2), m2 in s["a"].items():
                if k == k2:
                    out[(x2, x)] += m * m2
        return out

    def o_c1(s):
        return proj(jn(s["a"], s["b"]), lambda r: (r[2], r[0]))

    def o_c2(s):
        j = jn(s["a"], s["b"])
        out = proj(j, lambda r: (r[1],))
        out.update(proj({r: m for r, m in j.items() if r[2] > 1}, lambda r: (r[1],)))
        return out

    def o_anti(s):
        keys = Counter()
        for (k, y), m in s["b"].items():
            keys[k] += m
        present = {k for k, m in keys.items() if m > 0}
        # semijoin multiplies by the distinct key (1) : antijoin = a - a|present
        return proj({r: m for r, m in s["a"].items() if r[0] not in present}, lambda r: (r[1], r[0]))

    def o_semi(s):
        keys = Counter()
        for (k, y), m in s["b"].items():
            keys[k] += m
        present = {k for k, m in keys.items() if m > 0}
        return Counter({r: m for r, m in s["a"].items() if r[0] in present and r[1] != 2})

    def o_agg(s):
        groups = defaultdict(list)
        for (k, x, y), m in jn(s["a"], s["b"]).items():
            if m > 0:
                groups[k].append(y)
        return Counter({(k, min(v)): 1 for k, v in groups.items()})

    def o_dist(s):
        return Counter({r: 1 for r, m in o_p(s).items() if m > 0})

    def o_thr(s):
        return Counter({r: m // 2 for r, m in o_p(s).items() if m // 2})
    drive2({"a": ["k", "x"], "b": ["k", "y"]}, build,
           [o_p, o_c1, o_c2, o_anti, o_semi, o_agg, o_dist, o_thr], seed=seed, parts=parts,
           epochs=10, batch=10, domain=4, allow_negative=False, batched_runs=seed % 3 == 0)


def _reach_with_filters(edges, roots):
    def body(r):
        step = r.join(edges, left_on="node", right_on="src")       # node, dst, w
        light = step.filter(dd.col("w") < 3).select(node="dst")     # join -> filter -> select
        return roots.concat(light).distinct()
    return roots.iterate(body)


def _reach_light_oracle(s):
    light = Counter({(a, b): m for (a, b, w), m in s["edges"].items() if m > 0 and w < 3})
    return reach_oracle({"edges": light, "roots": s["roots"]})


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(3))
def test_join_filter_in_loop(seed, parts):
    # note: edges with multiplicity > 1 give the join multiplicity > 1: distinct keeps it a set
    drive2({"edges": ["src", "dst", "w"], "roots": ["node"]},
           lambda f, i: _reach_with_filters(i["edges"], i["roots"]),
           _reach_light_oracle, seed=seed, parts=parts, epochs=12, batch=8,
           gen={"edges": lambda r: (r.randrange(9), r.randrange(9), r.randrange(5)),
                "roots": lambda r: (r.randrange(4),)},
           batched_runs=seed % 2 == 0)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(3))
def test_zero_width_keys(seed, parts):
    def build(f, i):
        a = i["a"]
        nothing = a.select(z=dd.lit(0))  # select needs a column: one constant key
        return [nothing.distinct(), nothing.threshold(lambda m: m // 3),
                a.aggregate(lo=dd.min("x")), a.aggregate(hi=dd.max("y")),
                a.join(i["b"], on="k").select(z=dd.lit(0)).distinct()]

    def total(c):
        return sum(c.values())

    def o_lo(s):
        pos = [r[1] for r, m in s["a"].items() if m > 0]
        return Counter({(min(pos),): 1}) if pos else Counter()

    def o_hi(s):
        pos = [r[2] for r, m in s["a"].items() if m > 0]
        return Counter({(max(pos),): 1}) if pos else Counter()

    def o_jd(s):
        n = 0
        for (k, x, y), m in s["a"].items():
            for (k2, z), m2 in s["b"].items():
                if k == k2:
                    n += m * m2
        return Counter({(0,): 1}) if n > 0 else Counter()
    drive2({"a": ["k", "x", "y"], "b": ["k", "z"]}, build,
           [lambda s: Counter({(0,): 1}) if total(s["a"]) > 0 else Counter(),
            lambda s: Counter({(0,): total(s["a"]) // 3}) if total(s["a"]) // 3 else Counter(),
            o_lo, o_hi, o_jd],
           seed=seed, parts=parts, epochs=12, batch=6, domain=4, allow_negative=seed % 2 == 1,
           batched_runs=seed % 3 == 0, removal=0.6)
