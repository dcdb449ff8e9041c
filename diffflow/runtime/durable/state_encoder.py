"""The writing half of :mod:`.state_format`: a value walked into a JSON skeleton and raw
buffers, refusing (with the path to it) whatever is not data.

>>> encoder = _Encoder(); encoder.encode({"n": 1}), encoder.size
(['D', ['n', 1]], 0)
"""
from __future__ import annotations

import functools
import types

import numpy as np

from diffflow.common.errors import StateFormatError
from diffflow.runtime.durable.state_types import (
    _BY_TYPE,
    _SCALARS,
    _USER_CODE,
    ALIGN,
    _custom,
    _descr,
    _slot_names,
)


class _Encoder:
    """Walks a value into a JSON skeleton and a list of buffers."""

    def __init__(self):
        self.memo: dict = {}     # id -> index, in the order the decoder meets them
        self.keep: list = []     # the memoised objects, alive till the end (ids stay unique)
        self.building: set = set()  # ids of tuples being walked (a cycle through one is refused)
        self.parts: list = []    # buffers and the padding between them
        self.size = 0
        self.path: list = []     # where the walk is, for errors
        self.descrs: dict = {}

    def remember(self, value) -> None:
        self.memo[id(value)] = len(self.keep)
        self.keep.append(value)

    def buffer(self, raw) -> int:
        """Append a buffer at the next aligned offset; returns that offset."""
        pad = -self.size % ALIGN
        if pad:
            self.parts.append(b"\0" * pad)
        at = self.size + pad
        self.parts.append(raw)
        self.size = at + len(raw) if isinstance(raw, bytes) else at + raw.nbytes
        return at

    def refuse(self, what: str):
        raise StateFormatError(f"{_render(self.path)}: {what}")

    def encode(self, value):
        kind = type(value)
        if value is None or kind is bool or kind is str or kind is float:
            return value
        if kind is int:
            return value if -(1 << 63) <= value < (1 << 63) else ["I", format(value, "x")]
        seen = self.memo.get(id(value))
        if seen is not None:
            return ["R", seen]
        if id(value) in self.building:
            self.refuse("a cycle through a tuple cannot be saved")
        if kind is list:
            self.remember(value)
            return ["L", self.items(value)]
        if kind is dict:
            return self.mapping(value)
        if kind is tuple or kind is frozenset:
            self.building.add(id(value))
            items = self.items(value)
            self.building.discard(id(value))
            self.remember(value)  # after its items: the decoder builds it from them
            return ["T" if kind is tuple else "F", items]
        if kind is set:
            self.remember(value)
            return ["S", self.items(value)]
        if kind is bytes:
            self.remember(value)
            return ["B", self.buffer(value), len(value)]
        if kind is np.ndarray:
            return self.array(value)
        if isinstance(value, np.generic):
            return self.scalar(value)
        name = _BY_TYPE.get(kind)
        if name is not None:
            return self.instance(value, kind, name)
        self.refuse(_refusal(value))

    def mapping(self, value: dict, attrs: bool = False) -> list:
        """A dict; ``attrs``: an object's attributes (named ``.attr`` in errors)."""
        self.remember(value)
        if _plain(value) and _plain(value.values()):  # (a symbol table: no walk per entry)
            return ["D", [x for pair in value.items() for x in pair]]
        out = []
        for key, item in value.items():
            if not attrs:
                self.path.append(("key", key))
                out.append(self.encode(key))
            else:
                self.path.append(None)
                out.append(key)
            self.path[-1] = ("attr" if attrs else "item", key)
            out.append(self.encode(item))
            self.path.pop()
        return ["D", out]

    def items(self, values) -> list:
        if _plain(values):
            return list(values)
        out = []
        for i, item in enumerate(values):
            self.path.append(("index", i))
            out.append(self.encode(item))
            self.path.pop()
        return out

    def dtype(self, dtype: np.dtype):
        descr = self.descrs.get(dtype)
        if descr is None:
            if dtype.hasobject:
                self.refuse(f"an array of Python objects (dtype {dtype}) cannot be saved; "
                            f"engine state holds numbers: {_USER_CODE}")
            try:
                descr = self.descrs[dtype] = _descr(dtype)
            except (ValueError, TypeError) as exc:
                self.refuse(f"dtype {dtype} cannot be saved exactly ({exc})")
        return descr

    def array(self, a: np.ndarray):
        descr = self.dtype(a.dtype)
        self.remember(a)
        fortran = a.ndim > 1 and a.flags.f_contiguous and not a.flags.c_contiguous
        flat = np.ascontiguousarray(a.T if fortran else a).reshape(-1)
        at = self.buffer(flat.view(np.uint8)) if flat.nbytes else 0
        return ["A", descr, list(a.shape), at, "F" if fortran else "C",
                bool(a.flags.writeable)]

    def scalar(self, value: np.generic):
        return ["N", self.dtype(value.dtype), np.asarray(value).tobytes().hex()]

    def instance(self, value, cls, name: str):
        if issubclass(cls, tuple):  # a named tuple: its fields, like a tuple
            self.building.add(id(value))
            items = self.items(value)
            self.building.discard(id(value))
            self.remember(value)
            return ["P", name, items]
        self.remember(value)
        if _custom(cls, "__getstate__"):
            state = value.__getstate__()
            if type(state) is dict and all(type(k) is str for k in state):
                return ["O", name, self.mapping(state, attrs=True), None]
            self.path.append(("state", None))
            encoded = self.encode(state)
            self.path.pop()
            return ["O", name, encoded, None]
        attrs = getattr(value, "__dict__", None)
        slots = {s: getattr(value, s) for s in _slot_names(cls) if hasattr(value, s)}
        return ["O", name, None if attrs is None else self.mapping(attrs, attrs=True),
                self.mapping(slots, attrs=True) if slots else None]


def _plain(values) -> bool:
    """Whether ``values`` are all JSON scalars as they are (ints within 64 bits)."""
    kinds = set(map(type, values))
    if kinds <= _SCALARS:
        return True
    return kinds == {int} and -(1 << 63) <= min(values) and max(values) < (1 << 63)


def _refusal(value) -> str:
    if isinstance(value, type):
        return f"a class ({value.__qualname__}) cannot be saved; {_USER_CODE}"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                          functools.partial)) or callable(value):
        return f"a function cannot be saved; {_USER_CODE}"
    kind = type(value)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if name.startswith("diffflow."):
        return (f"an instance of {name} cannot be saved: it is not on the list of engine "
                f"state classes (ALLOWED in diffflow/runtime/durable/state_types.py)")
    return (f"an instance of {name} cannot be saved: only data and diffflow's own state "
            f"classes are; {_USER_CODE}")


def _render(path: list) -> str:
    """``ops[12]['spine'].batches[3]``: where a walk is, for people."""
    out = ""
    for step, (kind, key) in enumerate(path):
        if kind == "attr":
            out += f".{key}"
        elif kind == "state":
            out += ".__getstate__()"
        elif kind == "index":
            out += f"[{key}]"
        elif step == 0 and isinstance(key, str) and key.isidentifier():
            out += key
        else:
            out += f"[{key!r}]" + (" (a key)" if kind == "key" else "")
    return out or "the value"
