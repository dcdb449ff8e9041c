"""Custom reducers (``Collection.reduce``) against from-scratch oracles: the collection API.

Random insert/remove epochs (helpers.drive) at P = 1 and 3 for reducers with one row,
two rows, a varying number of rows (zero for some groups), float, bool and str columns,
output multiplicities and negative multiplicities; then the errors, which name the
operator, the line that built it and what to do.  Partially ordered times:
test_custom_reducers_times.py; loops and runtimes: test_custom_reducers_loops.py.
"""
import random
import sys
from collections import Counter, defaultdict

import numpy as np
import pytest

import diffflow as dd
from diffflow.common.errors import GraphError, OperatorError
from tests.support import custom_reducer_fns as fns
from tests.support.helpers import drive

SEEDS = range(8)
PARTS = [1, 3]
HERE = __file__


def grouped(rows, key_width, value_of=lambda row: row):
    """``{key: {value tuple: multiplicity}}`` of positive rows, from scratch."""
    groups = defaultdict(Counter)
    for row, m in rows.items():
        groups[row[:key_width]][value_of(row[key_width:])] += m
    return {k: {v: m for v, m in g.items() if m > 0} for k, g in groups.items()}


def apply_oracle(groups, one_group):
    out = Counter()
    for key, group in groups.items():
        if group:
            for row, m in one_group(group).items():
                out[key + row] += m
    return out


# -- the collection API, random epochs ---------------------------------------------------------
ONE_COLUMN = {  # name: (reducer, oracle of one group, output type)
    "median": (fns.seg_median, fns.py_median, int),
    "median_per_group": (dd.per_group(fns.one_median), fns.py_median, int),
    "above_mean": (fns.seg_above_mean, fns.py_above_mean, int),
    "capped": (fns.seg_capped, fns.py_capped, int),
}


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("which", list(ONE_COLUMN))
def test_one_value_column(which, seed, parts):
    fn, one_group, kind = ONE_COLUMN[which]

    def build(flow, i):
        return i["a"].reduce(fn, by=["k"], columns=["v"], out={"r": kind})

    def oracle(s):
        # the reducer sees the projection on (k, v): rows differing in w add up
        projected = Counter()
        for (k, v, w), m in s["a"].items():
            projected[(k, v)] += m
        return apply_oracle(grouped(projected, 1), one_group)

    drive({"a": ["k", "v", "w"]}, build, oracle, seed=seed, parts=parts, domain=5, batch=10)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_top_two_rows_of_two_columns(seed, parts):
    def build(flow, i):  # default columns: every non-key column, in order
        return i["a"].reduce(fns.seg_top2, by="k", out=["v", "w"])

    drive({"a": ["k", "v", "w"]}, build,
          lambda s: apply_oracle(grouped(s["a"], 1), fns.py_top2),
          seed=seed, parts=parts, domain=4, batch=10)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_float_columns_in_and_out(seed, parts):
    def build(flow, i):
        halves = i["a"].select("k", x=dd.col("v") / 2 - 1)
        return halves.reduce(fns.seg_mean, by=["k"], out={"mean": float, "spread": float})

    def oracle(s):
        halves = Counter()
        for (k, v), m in s["a"].items():
            halves[(k, v / 2 - 1)] += m
        return apply_oracle(grouped(halves, 1), fns.py_mean)

    drive({"a": ["k", "v"]}, build, oracle, seed=seed, parts=parts, domain=6, batch=10)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_key_as_value_bool_columns_and_two_keys(seed, parts):
    """A key column passed as a value too; a bool column in and out; two key columns."""
    def count_even(starts, cols, mults):  # (k again, any even?, weighted number of evens)
        k, even = cols
        first = starts[:-1]
        evens = np.add.reduceat(even * mults, first)
        return np.arange(len(first)), (k[first], evens > 0, evens)

    def build(flow, i):
        flagged = i["a"].select("k", "j", even=dd.col("v") % 2 == 0)
        return flagged.reduce(count_even, by=["k", "j"], columns=["k", "even"],
                              out={"k_again": int, "any_even": bool, "n": int})

    def oracle(s):
        groups = defaultdict(Counter)
        for (k, j, v), m in s["a"].items():
            groups[(k, j)][v % 2 == 0] += m
        out = Counter()
        for (k, j), g in groups.items():
            if any(m > 0 for m in g.values()):
                evens = g[True] if g[True] > 0 else 0
                out[(k, j, k, evens > 0, evens)] += 1
        return out

    drive({"a": ["k", "j", "v"]}, build, oracle, seed=seed, parts=parts, domain=3, batch=10)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_global_reduce_over_every_row(seed, parts):
    drive({"a": ["v"]}, lambda flow, i: i["a"].reduce(fns.seg_median, out=["med"]),
          lambda s: apply_oracle(grouped(s["a"], 0), fns.py_median),
          seed=seed, parts=parts, domain=9, batch=8)


@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_negative_multiplicities_dropped_or_kept(seed, parts):
    def build(flow, i):
        a = i["a"]
        dropped = a.reduce(fns.seg_median, by="k", out=["r"]).select("k", "r", mode=0)
        kept = a.reduce(fns.seg_total, by="k", out=["r"], negative="keep")
        return dropped.concat(kept.select("k", "r", mode=1))

    def oracle(s):
        out = Counter()
        for row, m in apply_oracle(grouped(s["a"], 1), fns.py_median).items():
            out[row + (0,)] += m  # rows of negative multiplicity left out
        everything = defaultdict(Counter)
        for (k, v), m in s["a"].items():
            if m:
                everything[(k,)][(v,)] += m
        for row, m in apply_oracle(everything, fns.py_total).items():
            out[row + (1,)] += m  # every non-zero row
        return out

    drive({"a": ["k", "v"]}, build, oracle, seed=seed, parts=parts, domain=4, batch=8,
          allow_negative=True)


NUMBA = fns.numba_kernels()


@pytest.mark.slow
@pytest.mark.parametrize("parts", PARTS)
@pytest.mark.parametrize("seed", range(4))
def test_numba_reducer(seed, parts):
    _, nb_median = NUMBA
    drive({"a": ["k", "v"]},
          lambda flow, i: i["a"].reduce(nb_median, by="k", out=["med"]),
          lambda s: apply_oracle(grouped(s["a"], 1), fns.py_median),
          seed=seed, parts=parts, domain=6, batch=10)


@pytest.mark.parametrize("parts", PARTS)
def test_str_columns_pass_symbol_ids_through(parts):
    """Every name tied at its team's best score: str in, str out, several rows per group."""
    def best(starts, cols, mults):
        score, name = cols
        top = score[starts[1:] - 1]
        group = np.repeat(np.arange(len(top)), np.diff(starts))
        keep = score == top[group]
        return group[keep], (name[keep], score[keep])

    rng = random.Random(parts)
    flow = dd.Dataflow(partitions=parts)
    players = flow.input("players", [("team", int), ("name", str), ("score", int)])
    out = players.reduce(best, by="team", columns=["score", "name"],
                         out={"name": str, "score": int}).output()
    state = Counter()
    names = ["ann", "bo", "cy", "dee", "ed"]
    for _ in range(10):
        rows = [(rng.randrange(3), rng.choice(names), rng.randrange(4)) for _ in range(5)]
        gone = [r for r in state if state[r] > 0 and rng.random() < 0.3]
        players.insert(rows)
        players.remove(gone)
        state.update(rows)
        state.subtract(gone)
        flow.advance()
        expected = Counter()
        for team in {r[0] for r, m in state.items() if m > 0}:
            rows = [r for r, m in state.items() if m > 0 and r[0] == team]
            top = max(r[2] for r in rows)
            expected.update({(team, r[1], top): 1 for r in rows if r[2] == top})
        assert out.snapshot() == dict(expected)
    flow.close()


# -- errors ---------------------------------------------------------------------------------------
def _flow():
    flow = dd.Dataflow()
    return flow, flow.input("a", ["k", "v", ("x", float)])


@pytest.mark.parametrize("call,message", [
    (lambda a: a.reduce(fns.seg_median, by="nope", out=["r"]),
     r"unknown column 'nope' in reduce\(by=...\); available columns: \['k', 'v', 'x'\]"),
    (lambda a: a.reduce(fns.seg_median, by="k", columns=["v", "y"], out=["r"]),
     r"unknown column 'y' in reduce\(columns=...\); available columns: \['k', 'v', 'x'\]"),
    (lambda a: a.reduce(fns.seg_median, by="k", columns=["v", "v"], out=["r"]),
     r"reduce\(columns=\['v', 'v'\]\) repeats a column"),
    (lambda a: a.reduce(fns.seg_median, by="k"), r"reduce needs out=\.\.\."),
    (lambda a: a.reduce(fns.seg_median, columns=[], out=["r"]),
     r"reduce with no by columns needs at least one value column"),
    (lambda a: a.reduce(fns.seg_median, by="k", out={"k": int}),
     r"output column 'k' clashes with a group column"),
    (lambda a: a.reduce(fns.seg_median, by="k", out={"r": list}),
     r"reduce\(out=.*unsupported column type"),
    (lambda a: a.reduce(fns.seg_median, by="k", out={"r": int}, negative="ignore"),
     r"negative='ignore'.*drop, error, keep"),
])
def test_building_errors(call, message):
    flow, a = _flow()
    with pytest.raises(GraphError, match=message):
        call(a)


def test_a_function_is_required():
    flow, a = _flow()
    with pytest.raises(TypeError, match=r"reduce needs a function fn\(starts, cols, mults\)"):
        a.reduce("median", by="k", out=["r"])
    with pytest.raises(TypeError, match="per_group needs a function"):
        dd.per_group(3)


@pytest.mark.parametrize("fn,kind,message", [
    (fns.bad_not_a_tuple, int, r"returned an array of int64 with shape \(\d+,\). It must "
                               r"return \(group_index, out_cols\)"),
    (fns.bad_group_index, int, r"IndexError: reduce function 'bad_group_index' returned "
                               r"group_index 2 for a call with 2 groups"),
    (fns.bad_length, int, r"output column 'r' of an array of int64 with shape \(3,\), but "
                          r"group_index has 2 rows"),
    (fns.bad_float_for_int, int, r"output column 'r' \(declared int\) as an array of float64; "
                                 r"cast it with .astype\(np.int64\) or declare the column float"),
    (dd.per_group(lambda cols, mults: (cols[0], cols[0][:1])), int,
     r"per_group\(<lambda>\) returned columns of shapes \[\(\d,\), \(1,\)\]"),
])
def test_running_errors_name_the_operator_line_and_fix(fn, kind, message):
    flow, a = _flow()
    a.reduce(fn, by="k", columns=["v"], out={"r": kind}).output()
    line = sys._getframe().f_lineno - 1
    a.insert([(1, 5, 0.5), (1, 6, 0.5), (2, 7, 1.0)])
    with pytest.raises(OperatorError, match=message) as info:
        flow.advance()
    assert f"built at {HERE}:{line}" in str(info.value)
    assert "reduce " in str(info.value)


def test_negative_error_names_the_row_and_the_choices():
    flow, a = _flow()
    a.reduce(fns.seg_median, by="k", columns=["x", "v"], out={"r": float},
             negative="error").output()
    line = sys._getframe().f_lineno - 2
    a.insert([(1, 5, 0.5)])
    flow.advance()
    a.remove([(1, 6, 2.5)])
    with pytest.raises(OperatorError, match=r"row \(x=2.5, v=6\) has accumulated multiplicity "
                                            r"-1.*negative='drop'.*negative='keep'") as info:
        flow.advance()
    assert f"built at {HERE}:{line}" in str(info.value)


def test_arranged_reduce_shares_the_index_and_projects_when_needed():
    flow = dd.Dataflow()
    a = flow.input("a", ["k", "v", "w"])
    by_k = a.arrange(by=["k"])
    shared = by_k.reduce(fns.seg_top2, out=["v", "w"])
    projected = by_k.reduce(fns.seg_median, columns=["w"], out=["med"])
    assert shared.node.inputs == [by_k.node.id]
    assert projected.node.inputs != [by_k.node.id]
    assert projected.columns == ["k", "med"]
    top, med = shared.output(), projected.output()
    a.insert([(1, 1, 9), (1, 2, 8), (1, 3, 0), (2, 4, 4)])
    flow.advance()
    assert top.snapshot() == {(1, 2, 8): 1, (1, 3, 0): 1, (2, 4, 4): 1}
    assert med.snapshot() == {(1, 8): 1, (2, 4): 1}


def test_equal_output_rows_add_up_and_zero_totals_vanish():
    def echo(starts, cols, mults):  # each group: its first value twice, and (0 rows net) -1, +1
        g = np.arange(len(starts) - 1)
        first = cols[0][starts[:-1]]
        return (np.concatenate([g, g, g, g]), (np.concatenate([first, first, first - 1,
                                                                first - 1]),),
                np.concatenate([np.ones_like(g), np.ones_like(g), -np.ones_like(g),
                                np.ones_like(g)]))

    flow = dd.Dataflow()
    a = flow.input("a", ["k", "v"])
    out = a.reduce(echo, by="k", out=["r"]).output()
    a.insert([(1, 4), (1, 6), (2, 3)])
    flow.advance()
    assert out.snapshot() == {(1, 4): 2, (2, 3): 2}
