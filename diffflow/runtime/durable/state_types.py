"""What engine state on disk may hold (:mod:`.state_format`): the classes on
:data:`ALLOWED`, the header's constants, and dtypes described as JSON and rebuilt exactly.

>>> _dtype(_descr(np.dtype(">i4"))).str, _BY_NAME["diffflow.lattice.antichain.Antichain"]
('>i4', <class 'diffflow.lattice.antichain.Antichain'>)
"""
from __future__ import annotations

import re
import struct

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
_SCALARS = frozenset({str, float, bool, type(None)})
_JSON_SCALARS = _SCALARS | {int}


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
