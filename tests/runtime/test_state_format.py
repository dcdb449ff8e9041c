"""Engine state saved without pickle: diffflow.runtime.durable.state_format.

Round trips of hand-built values (compared field by field with numpy's own equality and
dtypes), shared references and cycles, every kind of value refused with where it sits, a
format version mismatch, crafted skeletons that name code, corruption fuzz, and real engine
states: a dataflow restored from another's saved state continues exactly as the
uninterrupted one does.
"""
from __future__ import annotations

import builtins
import functools
import json
import os
import struct
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import diffflow as dd
from diffflow.arrangements.spine import Spine
from diffflow.common.errors import DiffflowError, StateFormatError
from diffflow.dataflow.graph import Graph
from diffflow.lattice.antichain import Antichain
from diffflow.runtime.durable.state_format import dumps, loads


def same(a, b) -> bool:
    """Deep equality that also compares types, dtypes (byte order included), shapes, memory
    order and floats bit for bit (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return (a.dtype == b.dtype and a.dtype.str == b.dtype.str and a.shape == b.shape
                and a.flags.f_contiguous == b.flags.f_contiguous
                and a.tobytes(order="A") == b.tobytes(order="A"))
    if isinstance(a, np.generic):
        return a.dtype == b.dtype and a.tobytes() == b.tobytes()
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


SCALARS = [None, True, False, 0, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 63, -(2 ** 200) + 7, 1.5,
           -0.0, float("inf"), float("nan"), "", "é\u2603\ud800x", b"", b"\x00\xff\x89",
           np.int64(-5), np.int8(3), np.uint64(2 ** 64 - 1), np.float32(1.25), np.float16(-2),
           np.bool_(True), np.complex128(1 - 2j), np.datetime64("2020-01-02T03:04"),
           np.timedelta64(5, "s"), np.str_("zé"), np.bytes_(b"ab"), np.dtype(">i4").type(7)]


@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_scalars_round_trip(value):
    assert same(loads(dumps(value)), value)


def test_containers_round_trip_with_any_keys():
    value = {"list": [1, [2, (3, "x")], ()], (1, "a"): {None: 1.5, 2.5: b"y", True: 3},
             frozenset({1, 2}): {3, (4, 5)}, np.int64(7): frozenset(), "empty": {}}
    back = loads(dumps(value))
    assert back == value
    assert same(back["list"], value["list"]) and type(back[frozenset({1, 2})]) is set


STRUCTURED = np.dtype([("a", "<i4"), ("b", ">f8", (2,)), ("c", [("d", "u1"), ("e", "S3")])])


@pytest.mark.parametrize("array", [
    np.arange(12, dtype=np.int64).reshape(3, 4),
    np.arange(6, dtype=">i4"),
    np.array(3.5),
    np.zeros((0,), np.int64), np.zeros((0, 3), np.int64), np.zeros((2, 0, 4), np.float32),
    np.arange(20, dtype=np.int64)[::3],
    np.arange(12, dtype=np.int64).reshape(3, 4).T,
    np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4)),
    np.arange(24).reshape(2, 3, 4)[:, ::2, 1:],
    np.array([True, False]), np.array([1 + 2j]), np.array(["ab", "ücd"]), np.array([b"x", b"yz"]),
    np.array(["2020-01-01", "NaT"], dtype="M8[ns]"), np.array([1, -2], dtype="m8[s]"),
    np.array([np.nan, -0.0, np.inf], dtype=np.float16),
    np.zeros(3, STRUCTURED),
    np.array([(1, (2.0, 3.0), (4, b"abc"))], STRUCTURED),
    np.zeros(2, np.dtype([("a", "u1"), ("b", "<i8")], align=True)),
    np.zeros(2, np.dtype({"names": ["x"], "formats": ["<i4"], "titles": ["the x"]})),
    np.zeros(2, np.dtype({"names": ["x", "y"], "formats": ["u1", "<i2"], "offsets": [4, 0],
                          "itemsize": 8})),
], ids=lambda a: f"{a.dtype.str}{a.shape}")
def test_arrays_keep_dtype_shape_byte_order_and_values(array):
    back = loads(dumps(array))
    assert back.dtype == array.dtype and back.dtype.str == array.dtype.str
    assert back.dtype.fields == array.dtype.fields and back.shape == array.shape
    assert back.tobytes() == array.tobytes()  # (C order, whatever either is stored in)
    assert back.flags.writeable and back.flags.aligned and back.flags.owndata
    fortran = array.flags.f_contiguous and not array.flags.c_contiguous
    assert back.flags.f_contiguous if fortran else back.flags.c_contiguous


def test_non_contiguous_views_come_back_as_their_values():
    base = np.arange(40, dtype=np.int64).reshape(5, 8)
    for view in (base[::2, 1::3], base.T[::-1], base[:, 3]):
        back = loads(dumps(view))
        assert back.tolist() == view.tolist() and back.dtype == view.dtype
        assert back.flags.writeable


def test_read_only_arrays_stay_read_only_and_writeable_ones_writeable():
    frozen = np.arange(4)
    frozen.setflags(write=False)
    back = loads(dumps([frozen, np.arange(3)]))
    assert not back[0].flags.writeable and back[1].flags.writeable
    back[1][0] = 9  # (the engine writes into arrays it restored)
    assert back[1].tolist() == [9, 1, 2]


def test_arrays_do_not_share_memory_with_the_bytes_or_each_other():
    data = bytearray(dumps([np.arange(3), np.arange(3)]))
    first, second = loads(data)
    data[:] = bytes(len(data))
    assert first.tolist() == [0, 1, 2] and not np.shares_memory(first, second)


def test_shared_references_stay_shared():
    rows = np.arange(6).reshape(3, 2)
    inner = [1, 2]
    spine = Spine(2, 1, 1)
    value = {"a": rows, "b": [rows, inner], "c": inner, "left": spine, "right": {"s": spine},
             "antichains": [spine.since, spine.since]}
    back = loads(dumps(value))
    assert back["a"] is back["b"][0] and back["b"][1] is back["c"]
    assert back["left"] is back["right"]["s"]
    assert back["antichains"][0] is back["antichains"][1]
    assert back["a"].tolist() == rows.tolist()


def test_cycles_through_lists_dicts_and_objects():
    loop: list = [1]
    loop.append(loop)
    d: dict = {"x": 1}
    d["self"] = d
    spine = Spine(1, 1, 1)
    spine.owner = {"spine": spine}
    back_loop, back_d, back_spine = loads(dumps([loop, d, spine]))
    assert back_loop[1] is back_loop and back_d["self"] is back_d
    assert back_spine.owner["spine"] is back_spine


def test_objects_come_back_with_their_state():
    spine = Spine(2, 1, 1)
    antichain = Antichain([(0, 2), (1, 0)])
    back_spine, back_antichain = loads(dumps([spine, antichain]))
    assert type(back_spine) is Spine and back_spine.width == 2 and back_spine.batches == []
    assert back_antichain == antichain and type(back_antichain) is Antichain


class UserThing:
    pass


@pytest.mark.parametrize("value, where, what", [
    ({"ops": [len]}, "ops[0]", "a function cannot be saved; user code is re-supplied"),
    ({"f": lambda x: x}, "f", "a function cannot be saved"),
    ([1, (2, [UserThing().__init__])], "[1][1][0]", "a function cannot be saved"),
    ({"cls": UserThing}, "cls", "a class (UserThing) cannot be saved"),
    ({"thing": UserThing()}, "thing", "an instance of tests.runtime.test_state_format.UserThing"),
    ({"arr": np.array([1, "a"], dtype=object)}, "arr", "dtype object"),
    ({"arr": np.zeros(2, [("a", "i8"), ("b", "O")])}, "arr", "Python objects"),
    ({"graph": Graph()}, "graph", "diffflow.dataflow.graph.Graph cannot be saved: it is not on "
                                  "the list of engine state classes"),
    ({"masked": np.ma.array([1, 2])}, "masked", "numpy.ma.MaskedArray cannot be saved"),
    ({1: {"k": iter([1])}}, "[1]['k']", "an instance of builtins.list_iterator"),
    ({frozenset({len}): 1}, "[frozenset({<built-in function len>})] (a key)[0]",
     "a function"),
], ids=lambda v: str(v)[:30])
def test_what_is_not_data_is_refused_naming_where(value, where, what):
    with pytest.raises(StateFormatError) as err:
        dumps(value)
    assert str(err.value).startswith(f"{where}: ") and what in str(err.value)
    assert isinstance(err.value, DiffflowError) and isinstance(err.value, ValueError)


def test_a_function_deep_in_a_spine_is_named_by_its_path():
    spine = Spine(2, 1, 1)
    spine.batches.extend([1, 2, 3, lambda: None])
    with pytest.raises(StateFormatError) as err:
        dumps({"ops": {12: {"spine": spine}}})
    assert str(err.value) == ("ops[12]['spine'].batches[3]: a function cannot be saved; user "
                              "code is re-supplied by the dataflow being resumed")


def test_a_cycle_through_a_tuple_is_refused():
    inner: list = []
    outer = (inner,)
    inner.append(outer)
    with pytest.raises(StateFormatError, match="a cycle through a tuple"):
        dumps(outer)


def test_a_value_nested_past_the_recursion_limit_is_refused():
    deep: list = []
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(StateFormatError, match="nests deeper than Python's recursion limit"):
        dumps({"a": deep})


# -- reading what another writer (or an attacker) made ------------------------------------------
def forged(text: bytes, data: bytes = b"") -> bytes:
    """Bytes in the documented layout (32-byte header, JSON skeleton ``text``, data at a
    64-byte boundary) with a valid checksum: what only a deliberate forger makes."""
    gap = b"\0" * (-(32 + len(text)) % 64)
    lengths = struct.pack("<QQ", len(text), len(data))
    crc = zlib.crc32(lengths + text + gap + data)
    return b"\x89DFSTATE" + struct.pack("<II", 1, crc) + lengths + text + gap + data


def crafted(skeleton, data: bytes = b"") -> bytes:
    return forged(json.dumps(skeleton, separators=(",", ":")).encode(), data)


def test_the_documented_layout_is_what_dumps_writes():
    assert crafted(["L", [1, "a", None]]) == dumps([1, "a", None])
    assert loads(crafted(["D", ["k", ["T", [1, 2]]]])) == {"k": (1, 2)}


def test_another_format_version_is_a_clear_error():
    data = bytearray(dumps({"a": 1}))
    data[8:12] = struct.pack("<I", 7)
    with pytest.raises(StateFormatError, match="written by format version 7; this diffflow "
                                               "reads version 1"):
        loads(bytes(data))


@pytest.mark.parametrize("skeleton", [
    ["O", "os.system", ["L", ["echo hacked"]], None],
    ["O", "builtins.eval", ["L", ["1 + 1"]], None],
    ["O", "diffflow.dataflow.graph.Graph", None, None],
    ["O", "posix.system", None, None],
    ["O", ["diffflow.arrangements.spine.Spine"], None, None],
    ["P", "builtins.exec", ["L", ["print(1)"]]],
], ids=lambda s: str(s[1]))
def test_a_skeleton_naming_code_is_refused_without_calling_it(skeleton, monkeypatch):
    called = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    monkeypatch.setattr(builtins, "eval", lambda *a: called.append(a))
    with pytest.raises(StateFormatError, match="not a class this format restores"):
        loads(crafted(skeleton))
    assert called == []


@pytest.mark.parametrize("skeleton, data", [
    (["A", "|O", [2], 0, "C", True], bytes(16)),
    (["A", [["a", "|O"]], [1], 0, "C", True], bytes(8)),
    (["A", "<i8", [4], 0, "C", True], bytes(16)),          # more elements than bytes
    (["A", "<i8", [1 << 40, 1 << 40], 0, "C", True], b""),  # a shape asking for the moon
    (["A", "<i8", [-1], 0, "C", True], b""),
    (["A", "<i8", [1], 64, "C", True], bytes(8)),
    (["A", "<q8", [1], 0, "C", True], bytes(8)),
    (["B", 0, 10], b""),
    (["R", 0], b""),
    (["L", [["R", 5]]], b""),
    (["X", 1], b""),
    ({"a": 1}, b""),
    (["D", [["L", []], 1]], b""),                          # an unhashable key
    (["D", [1]], b""),
    (["N", "<i8", "00"], b""),
    (["I", "xyz"], b""),
    (["O", "diffflow.arrangements.spine.Spine", ["L", [1]], None], b""),
    (["O", "diffflow.lattice.antichain.Antichain", None, ["D", ["nope", 1]]], b""),
    (["P", "diffflow.arrangements.updates.Updates", ["L", [1]]], b""),
    (["L", [1]] * 3, b""),
], ids=lambda s: str(s)[:40])
def test_crafted_skeletons_give_state_format_errors(skeleton, data):
    with pytest.raises(StateFormatError):
        loads(crafted(skeleton, data))


def test_deep_nesting_is_a_state_format_error():
    for depth in (2_000, 200_000):  # past Python's recursion limit, and past json's
        with pytest.raises(StateFormatError):
            loads(forged(b'["L",[' * depth + b"]]" * depth))


def test_an_old_pickled_checkpoint_is_refused_unread(monkeypatch):
    import pickle

    class Boom:
        def __reduce__(self):
            return (os.system, ("echo hacked",))

    called = []
    payload = pickle.dumps({"ops": Boom()})
    monkeypatch.setattr(os, "system", lambda *a: called.append(a))
    with pytest.raises(StateFormatError, match="not diffflow engine state"):
        loads(payload)
    assert called == []


def test_the_format_module_uses_no_pickle():
    from diffflow.runtime.durable import state_decoder, state_encoder, state_format, state_types

    for module in (state_format, state_types, state_encoder, state_decoder):
        with open(module.__file__, encoding="utf-8") as fh:
            source = fh.read()
        assert "import pickle" not in source and "allow_pickle" not in source
        assert "importlib" not in source and "__import__" not in source and \
            "getattr(module" not in source


def test_not_a_state_and_short_inputs():
    for data in (b"", b"\x89DF", b"hello world, no state here", dumps(1)[:31]):
        with pytest.raises(StateFormatError):
            loads(data)


@functools.lru_cache(maxsize=1)
def small_engine_payload() -> tuple:
    """A small engine state (joins, distinct, aggregates, strings) and its bytes."""
    flow = dd.Dataflow(partitions=1)
    a = flow.input("a", ["k", "v"])
    b = flow.input("b", ["k", ("s", str)])
    a.join(b, on="k").distinct().output()
    a.aggregate(by=["k"], n=dd.count(), top=dd.max("v")).output()
    a.insert([(1, 2), (1, 3), (2, 4)])
    b.insert([(1, "x"), (2, "ü")])
    flow.advance()
    a.remove([(1, 2)])
    flow.advance()
    state = {"ops": flow._runtime.engines[0].state(), "symbols": dict(flow.symbols._text)}
    data = dumps(state)
    return state, data


def equal_state(a, b) -> bool:
    """Two loaded engine states equal, compared through their saved bytes (a canonical
    walk of every value and array)."""
    return dumps(a) == dumps(b)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_byte_flips_give_an_error_or_the_same_state(data):
    state, payload = small_engine_payload()
    damaged = bytearray(payload)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(damaged) - 1))
        damaged[at] ^= data.draw(st.integers(1, 255))
    try:
        back = loads(bytes(damaged))
    except StateFormatError:
        return
    assert equal_state(back, state)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_truncations_give_an_error(data):
    _, payload = small_engine_payload()
    cut = data.draw(st.integers(0, len(payload) - 1))
    with pytest.raises(StateFormatError):
        loads(payload[:cut])


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_forged_skeleton_edits_give_an_error_or_a_value_nothing_else(data):
    # a forger fixes the checksum: the decoder itself must hold
    _, payload = small_engine_payload()
    length = struct.unpack("<Q", payload[16:24])[0]
    text = bytearray(payload[32:32 + length])
    area = payload[32 + length + (-(32 + length) % 64):]
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text) - 1))
        text[at] = data.draw(st.sampled_from(b'[]{}",:0123456789-eE.LDTFSBANORPIxnul '))
    try:
        loads(forged(bytes(text), area))
    except StateFormatError:
        pass


# -- real engine states ----------------------------------------------------------------------
def _reach(flow):
    edges = flow.input("edges", ["src", "dst"])
    roots = flow.input("roots", ["node"])
    reach = roots.iterate(lambda r: roots.concat(
        r.join(edges, left_on="node", right_on="src").select(node="dst")).distinct())
    return {"edges": edges, "roots": roots}, [reach.output(),
                                              reach.aggregate(n=dd.count()).output()]


def _keyed(flow):
    a = flow.input("a", ["k", "v"])
    b = flow.input("b", ["k", "w"])

    def spread(starts, cols, mults):  # a custom reducer: max - min per key (user code)
        lo = np.minimum.reduceat(cols[0], starts[:-1])
        hi = np.maximum.reduceat(cols[0], starts[:-1])
        return np.arange(len(lo)), (hi - lo,)

    return {"a": a, "b": b}, [
        a.join(b, on="k").select("v", "w").distinct().output(),
        a.aggregate(by=["k"], n=dd.count(), s=dd.sum("v"), lo=dd.min("v"),
                    hi=dd.max("v")).output(),
        a.reduce(spread, by="k", out={"spread": int}).output(),
        a.select("k").threshold(lambda n: n >= 2).output()]


def _rows(name: str, rng) -> list:
    rows = [tuple(int(x) for x in r) for r in rng.integers(0, 12, size=(8, 2))]
    return [(r[0],) for r in rows[:2]] if name == "roots" else rows


@pytest.mark.slow
@pytest.mark.parametrize("build", [_reach, _keyed], ids=["loop", "keyed"])
@pytest.mark.parametrize("parts", [1, 2])
def test_a_restored_engine_state_continues_like_the_uninterrupted_dataflow(build, parts):
    original, resumed = dd.Dataflow(partitions=parts), dd.Dataflow(partitions=parts)
    (handles, outs), (r_handles, r_outs) = build(original), build(resumed)
    rng, other = np.random.default_rng(5), np.random.default_rng(99)
    history: dict = {name: [] for name in handles}
    for _ in range(3):  # the resumed dataflow meanwhile saw other data
        for name in handles:
            rows = _rows(name, rng)
            handles[name].insert(rows)
            r_handles[name].insert(_rows(name, other))
            history[name] += rows
        original.advance()
        resumed.advance()
    for p in range(parts):
        saved = dumps({"ops": original._runtime.engines[p].state(),
                       "symbols": dict(original.symbols._text)})
        back = loads(saved)
        resumed.symbols._text.update(back["symbols"])
        resumed._runtime.engines[p].restore(back["ops"])
    for out, r_out in zip(outs, r_outs):
        assert r_out.snapshot() == out.snapshot()
    for epoch in range(3, 7):
        for name in handles:  # the same changes to both: inserts, and removes of earlier rows
            rows = _rows(name, rng)
            gone = [history[name].pop(int(rng.integers(len(history[name])))) for _ in range(2)]
            for flow_handles in (handles, r_handles):
                flow_handles[name].insert(rows)
                flow_handles[name].remove(gone)
            history[name] += rows
        original.advance()
        resumed.advance()
        for out, r_out in zip(outs, r_outs):
            assert r_out.snapshot() == out.snapshot(), epoch
            assert sorted(c for c in r_out.changes() if c[1] >= 3) == \
                sorted(c for c in out.changes() if c[1] >= 3), epoch
    assert any(out.snapshot() for out in outs)


@pytest.mark.slow
def test_a_restored_datalog_program_continues_like_the_uninterrupted_one():
    text = """
        .decl edge(x: number, y: number)
        .decl path(x: number, y: number)
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
        .decl reach_count(x: number, n: number)
        reach_count(x, n) :- path(x, _), n = count : { path(x, _) }.
        .decl same(x: number, y: number) eqrel
        same(x, y) :- edge(x, y), x < 3.
        .decl dist(x: number, d: number)
        dist(y, 1) :- edge(0, y).
        dist(z, d + 1) :- dist(y, d), edge(y, z), d < 6.
        dist(x, d1) <= dist(x, d2) :- d2 < d1.
        .decl pick(x: number, y: number) choice-domain x
        pick(x, y) :- edge(x, y).
        .decl named(x: number, s: symbol)
        named(x, cat("n", to_string(x))) :- edge(x, _).
    """
    relations = ["path", "reach_count", "same", "dist", "pick", "named"]
    original, resumed = dd.Program(text, partitions=2), dd.Program(text, partitions=2)
    rng = np.random.default_rng(3)
    for _ in range(2):
        original.insert("edge", [tuple(map(int, e)) for e in rng.integers(0, 8, (6, 2))])
        resumed.insert("edge", [(100 + i, 200 + i) for i in range(3)])
        original.commit()
        resumed.commit()
    for p in range(2):
        back = loads(dumps({"ops": original.flow._runtime.engines[p].state(),
                            "symbols": dict(original.flow.symbols._text)}))
        resumed.flow.symbols._text.update(back["symbols"])
        resumed.flow._runtime.engines[p].restore(back["ops"])
    for name in relations:
        assert resumed.relation(name) == original.relation(name), name
    for _ in range(3):
        edges = [tuple(map(int, e)) for e in rng.integers(0, 8, (4, 2))]
        for program in (original, resumed):
            program.insert("edge", edges)
            program.commit()
        for name in relations:
            assert resumed.relation(name) == original.relation(name), name
    assert original.relation("path") and original.relation("named")
