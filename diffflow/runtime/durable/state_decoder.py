"""The reading half of :mod:`.state_format`: a value rebuilt from its skeleton and data
area, objects only of the classes on :data:`.state_types.ALLOWED`, never by a name the
data chooses.

>>> _Decoder(memoryview(b"")).decode(["L", [1, "x"]])
[1, 'x']
"""
from __future__ import annotations

import numpy as np

from diffflow.common.errors import StateFormatError
from diffflow.runtime.durable.state_types import (
    _BY_NAME,
    _JSON_SCALARS,
    _custom,
    _dtype,
    _slot_names,
)


class _Decoder:
    """Rebuilds a value from its skeleton and the data area."""

    def __init__(self, area: memoryview):
        self.area = area
        self.memo: list = []
        self.tags = {"L": self.list_, "D": self.dict_, "T": self.tuple_, "F": self.frozenset_,
                     "S": self.set_, "B": self.bytes_, "A": self.array, "N": self.scalar,
                     "O": self.instance, "P": self.named_tuple, "R": self.ref, "I": self.big}

    def decode(self, node):
        kind = type(node)
        if node is None or kind is bool or kind is int or kind is float or kind is str:
            return node
        if kind is not list or not node or node[0] not in self.tags:
            raise StateFormatError(f"engine state holds an unknown value: {str(node)[:60]}")
        return self.tags[node[0]](*node[1:])

    def items(self, nodes) -> list:
        if type(nodes) is not list:
            raise StateFormatError(f"expected a list of items, found {str(nodes)[:60]}")
        if set(map(type, nodes)) <= _JSON_SCALARS:  # (nothing to rebuild)
            return nodes
        return [self.decode(n) for n in nodes]

    def ref(self, index):
        if type(index) is not int or not 0 <= index < len(self.memo):
            raise StateFormatError(f"engine state refers to value {index!r}, not read yet")
        return self.memo[index]

    def big(self, digits: str):
        return int(digits, 16)

    def list_(self, nodes):
        out: list = []
        self.memo.append(out)
        out.extend(self.items(nodes))
        return out

    def dict_(self, nodes):
        out: dict = {}
        self.memo.append(out)
        items = self.items(nodes)
        if len(items) % 2:
            raise StateFormatError("a dict read with a key and no value")
        for i in range(0, len(items), 2):
            out[items[i]] = items[i + 1]
        return out

    def set_(self, nodes):
        out: set = set()
        self.memo.append(out)
        out.update(self.items(nodes))
        return out

    def tuple_(self, nodes):
        out = tuple(self.items(nodes))
        self.memo.append(out)
        return out

    def frozenset_(self, nodes):
        out = frozenset(self.items(nodes))
        self.memo.append(out)
        return out

    def span(self, at, nbytes: int) -> memoryview:
        if type(at) is not int or not 0 <= at <= len(self.area) - nbytes:
            raise StateFormatError(f"a buffer of {nbytes} bytes at offset {at!r} lies outside "
                                   f"the {len(self.area)} bytes of data")
        return self.area[at:at + nbytes]

    def bytes_(self, at, nbytes):
        if type(nbytes) is not int or nbytes < 0:
            raise StateFormatError(f"a bytes value of length {nbytes!r}")
        out = bytes(self.span(at, nbytes))
        self.memo.append(out)
        return out

    def array(self, descr, shape, at, order, writeable):
        dtype = _dtype(descr)
        if type(shape) is not list or any(type(n) is not int or n < 0 for n in shape) \
                or order not in ("C", "F") or type(writeable) is not bool:
            raise StateFormatError(f"an array described as {shape!r}, {order!r}")
        count = 1
        for n in shape:
            count *= n
        if count * dtype.itemsize:
            raw = np.frombuffer(self.span(at, count * dtype.itemsize), np.uint8)
            out = np.empty(shape, dtype, order=order)
            # byte for byte (a copy by fields would leave a structure's padding unset)
            (out.T if order == "F" else out).reshape(-1).view(np.uint8)[:] = raw
        elif count > 1 << 20:
            raise StateFormatError(f"an empty array of {count} elements of size 0")
        else:
            out = np.empty(shape, dtype, order=order)
        if not writeable:
            out.setflags(write=False)
        self.memo.append(out)
        return out

    def scalar(self, descr, raw):
        dtype = _dtype(descr)
        raw = bytes.fromhex(raw)
        if len(raw) != dtype.itemsize:
            raise StateFormatError(f"a {dtype} scalar of {len(raw)} bytes")
        return np.frombuffer(raw, dtype, 1)[0] if raw else np.zeros((), dtype)[()]

    def allowed(self, name):
        cls = _BY_NAME.get(name) if type(name) is str else None
        if cls is None:
            raise StateFormatError(f"engine state names {str(name)[:80]!r}, which is not a "
                                   f"class this format restores (ALLOWED in "
                                   f"diffflow/runtime/durable/state_types.py)")
        return cls

    def named_tuple(self, name, nodes):
        cls = self.allowed(name)
        items = self.items(nodes)
        if not issubclass(cls, tuple) or len(items) != len(cls._fields):
            raise StateFormatError(f"{name} read with {len(items)} fields")
        out = tuple.__new__(cls, items)
        self.memo.append(out)
        return out

    def instance(self, name, state, slots):
        cls = self.allowed(name)
        if issubclass(cls, tuple):
            raise StateFormatError(f"{name} read as an object, not a named tuple")
        obj = cls.__new__(cls)
        self.memo.append(obj)
        state, slots = self.decode(state), self.decode(slots)
        if _custom(cls, "__setstate__"):
            if slots is not None:
                raise StateFormatError(f"{name} read with slots beside its own state")
            obj.__setstate__(state)
            return obj
        if state is not None:
            if type(state) is not dict or not hasattr(obj, "__dict__") \
                    or any(type(k) is not str for k in state):
                raise StateFormatError(f"{name} read with attributes {str(state)[:60]}")
            obj.__dict__.update(state)
        if slots is not None:
            names = _slot_names(cls)
            if type(slots) is not dict or any(k not in names for k in slots):
                raise StateFormatError(f"{name} read with slots {str(slots)[:60]}")
            for key, value in slots.items():
                setattr(obj, key, value)
        return obj
