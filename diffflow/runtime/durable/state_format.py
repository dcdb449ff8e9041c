"""Engine state as bytes, without pickle: :func:`dumps` and :func:`loads`.

A checkpoint holds a partition's engine state (spines of batches, numpy arrays, dicts,
antichains...).  Reading it back must never run code the bytes choose, so the format is
data only:

* a 32-byte header: the magic ``\\x89DFSTATE``, the format version, a CRC-32 of everything
  after the header, and the lengths of the two parts below;
* a *skeleton*: JSON naming every value's kind (``["L", items]`` a list, ``["A", dtype,
  shape, ...]`` an array, ``["O", class, state, slots]`` an object of a class on
  :data:`ALLOWED`, ``["R", n]`` the ``n``-th container seen again...), so shared
  references and cycles stay what they were;
* the arrays' and bytes' raw buffers, each at a 64-byte aligned offset, dtype and byte
  order as they were.

Objects are rebuilt only from the classes on :data:`ALLOWED` -- diffflow's own state
classes, looked up by name in that list, never imported by a name from the data -- with
``cls.__new__`` and their ``__dict__`` / ``__slots__``, or their own ``__setstate__``.
Anything else (functions, user objects, arrays of Python objects) is refused by
:func:`dumps`, naming where it sits: user code is not saved but re-supplied by the dataflow
being resumed.  Bytes that are truncated, corrupted, crafted or from another format version
give a :class:`~diffflow.common.errors.StateFormatError`, never another exception.

>>> import numpy as np
>>> state = {"rows": np.arange(6).reshape(3, 2), "seen": {1, 2}}
>>> state["again"] = state["rows"]
>>> back = loads(dumps(state))
>>> back["rows"].tolist(), back["seen"], back["again"] is back["rows"]
([[0, 1], [2, 3], [4, 5]], {1, 2}, True)
"""
from __future__ import annotations

import functools
import json
import re
import struct
import types
import zlib

import numpy as np

from diffflow.arrangements.batch import Batch
from diffflow.arrangements.spine import Spine
from diffflow.arrangements.updates import Updates
from diffflow.common.errors import StateFormatError
from diffflow.lattice.antichain import Antichain
from diffflow.lattice.frontiers import antichain_of
from diffflow.operators.join import Compacting
from diffflow.operators.output import Accumulator
from diffflow.runtime.routing import Routing

#: the classes whose instances engine state may hold, each with what it is
ALLOWED = (
    (Batch, "a consolidated run of updates with its (lower, upper, since) description"),
    (Spine, "a trace: the batches of an arrangement, merged in the background"),
    (Updates, "rows, times and diffs of a chunk (a named tuple of three arrays)"),
    (Antichain, "a frontier: the minimal times of a set"),
    # (its class is private to diffflow.lattice, so it is named by what makes one)
    (type(antichain_of((), 1)), "a frontier handed to many operators by the cache (frozen)"),
    (Accumulator, "an output's (or a loop cut's) rows summed over epochs"),
    (Compacting, "a join's recent output, consolidated in pieces"),
    (Routing, "the table of which partition owns each bin of keys"),
)

MAGIC = b"\x89DFSTATE"
#: the version of the format :func:`dumps` writes and :func:`loads` reads
VERSION = 1
# magic, version, CRC-32 of what follows the header, skeleton length, data length
_HEADER = struct.Struct("<8sIIQQ")
ALIGN = 64  # every buffer starts at a multiple of this (a cache line; numpy's SIMD loads)

_BY_TYPE = {cls: f"{cls.__module__}.{cls.__qualname__}" for cls, _ in ALLOWED}
_BY_NAME = {name: cls for cls, name in _BY_TYPE.items()}
_USER_CODE = "user code is re-supplied by the dataflow being resumed"


def dumps(value) -> bytes:
    """``value`` as bytes :func:`loads` reads back (shared references and cycles kept).

    Refuses (:class:`~diffflow.common.errors.StateFormatError`, naming the path inside
    ``value``) anything that is not data: functions, classes, objects of classes off
    :data:`ALLOWED`, arrays of Python objects.

    >>> loads(dumps([1, 2.5, "x", b"y", None, (True, 2 ** 70)]))
    [1, 2.5, 'x', b'y', None, (True, 1180591620717411303424)]
    >>> dumps({"ops": [len]})
    Traceback (most recent call last):
    diffflow.common.errors.StateFormatError: ops[0]: a function cannot be saved; user code is re-supplied by the dataflow being resumed
    """
    encoder = _Encoder()
    try:
        skeleton = json.dumps(encoder.encode(value), separators=(",", ":")).encode("ascii")
    except RecursionError:
        raise StateFormatError(f"{_render(encoder.path[:8])}...: the value nests deeper than "
                               f"Python's recursion limit lets it be saved") from None
    gap = b"\0" * (-(_HEADER.size + len(skeleton)) % ALIGN)
    lengths = struct.pack("<QQ", len(skeleton), encoder.size)
    crc = zlib.crc32(lengths)
    for part in (skeleton, gap, *encoder.parts):
        crc = zlib.crc32(part, crc)
    header = _HEADER.pack(MAGIC, VERSION, crc, len(skeleton), encoder.size)
    return b"".join((header, skeleton, gap, *encoder.parts))


def loads(data):
    """The value :func:`dumps` wrote into ``data`` (bytes, or any buffer of bytes).

    Arrays come back as fresh, aligned copies (writeable unless they were read-only when
    saved), so they neither keep ``data`` alive nor share memory with each other.

    >>> loads(b"not a state")
    Traceback (most recent call last):
    diffflow.common.errors.StateFormatError: not diffflow engine state: it starts with b'not a st', not b'\\x89DFSTATE'
    """
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    try:
        skeleton, area = _open(view)
        return _Decoder(area).decode(skeleton)
    except StateFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever crafted data trips on is a bad format
        raise StateFormatError(f"engine state is corrupt and cannot be read: "
                               f"{type(exc).__name__}: {exc}") from exc


def _open(view: memoryview):
    """The header checked: ``(skeleton, data area)``."""
    size = len(view)
    head = bytes(view[:_HEADER.size])
    if head[:len(MAGIC)] != MAGIC[:len(head)]:
        raise StateFormatError(f"not diffflow engine state: it starts with "
                               f"{head[:len(MAGIC)]!r}, not {MAGIC!r}")
    if size < _HEADER.size:
        raise StateFormatError(f"engine state is truncated: {size} bytes, shorter than its "
                               f"{_HEADER.size}-byte header")
    _, version, crc, skeleton_size, data_size = _HEADER.unpack(head)
    if version != VERSION:
        raise StateFormatError(
            f"engine state written by format version {version}; this diffflow reads "
            f"version {VERSION}: resume with the diffflow that wrote it, or start afresh")
    start = _HEADER.size + skeleton_size
    data_start = start + (-start % ALIGN)
    if size != data_start + data_size:
        raise StateFormatError(
            f"engine state is {'truncated' if size < data_start + data_size else 'too long'}:"
            f" {size} bytes where its header says {data_start + data_size}")
    if zlib.crc32(view[_HEADER.size:], zlib.crc32(head[16:])) != crc:
        raise StateFormatError("engine state is corrupt: its checksum does not match "
                               "(a damaged file or a torn write)")
    skeleton = json.loads(bytes(view[_HEADER.size:start]))
    return skeleton, view[data_start:]


def _descr(dtype: np.dtype):
    """``dtype`` as JSON, checked to rebuild exactly: a plain dtype as its string (byte order
    included: ``'>i4'``, ``'<M8[ns]'``), a sub-array as ``["sub", base, shape]``, a structure
    as ``["struct", names, formats, offsets, itemsize, titles, aligned]``."""
    descr = _describe(dtype)
    if _dtype(descr) != dtype:
        raise ValueError("it does not rebuild to itself")
    return descr


def _describe(dtype: np.dtype):
    if dtype.fields is not None:
        names = list(dtype.names)
        fields = [dtype.fields[n] for n in names]
        titles = [f[2] if len(f) > 2 else None for f in fields]
        return ["struct", names, [_describe(f[0]) for f in fields], [f[1] for f in fields],
                dtype.itemsize, titles if any(t is not None for t in titles) else None,
                bool(dtype.isalignedstruct)]
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return ["sub", _describe(base), list(shape)]
    if not _PLAIN.match(dtype.str):
        raise ValueError("numpy gives it no plain description")
    return dtype.str


_PLAIN = re.compile(r"[<>|=][a-zA-Z]\d{0,9}(\[\d{0,9}[a-zA-Z]{1,3}\])?\Z")


def _dtype(descr) -> np.dtype:
    """The dtype of a description read back (only plain strings reach numpy's parser)."""
    if type(descr) is str and _PLAIN.match(descr):
        dtype = np.dtype(descr)
    elif type(descr) is list and len(descr) == 3 and descr[0] == "sub" \
            and type(descr[2]) is list and all(type(n) is int and n >= 0 for n in descr[2]):
        dtype = np.dtype((_dtype(descr[1]), tuple(descr[2])))
    elif type(descr) is list and len(descr) == 7 and descr[0] == "struct":
        _, names, formats, offsets, itemsize, titles, aligned = descr
        spec = {"names": names, "formats": [_dtype(f) for f in formats], "offsets": offsets,
                "itemsize": itemsize}
        if titles is not None:
            spec["titles"] = titles
        if not (type(names) is list and all(type(n) is str for n in names)
                and type(offsets) is list and all(type(n) is int for n in offsets)
                and type(itemsize) is int and type(aligned) is bool
                and (titles is None or type(titles) is list and all(
                    t is None or type(t) is str for t in titles))):
            raise StateFormatError(f"a structured dtype described by {str(descr)[:80]}")
        dtype = np.dtype(spec, align=aligned)
    else:
        raise StateFormatError(f"an array's dtype is described by {str(descr)[:80]}")
    if dtype.hasobject:
        raise StateFormatError("an array of Python objects (dtype object) was read: this "
                               "format never writes one")
    return dtype


def _slot_names(cls) -> tuple:
    names = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__"):
                names.append(name)
    return tuple(names)


def _custom(cls, name: str) -> bool:
    """Whether ``cls`` defines ``__getstate__`` / ``__setstate__`` itself (or a base does)."""
    found = getattr(cls, name, None)
    return found is not None and found is not getattr(object, name, None)


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


_SCALARS = frozenset({str, float, bool, type(None)})


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
                f"state classes (ALLOWED in diffflow/runtime/durable/state_format.py)")
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


_JSON_SCALARS = _SCALARS | {int}


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
                                   f"diffflow/runtime/durable/state_format.py)")
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
