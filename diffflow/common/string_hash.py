"""Symbol ids: a 64-bit hash of a string's UTF-8 bytes, the same in every process.

The id of a string is SipHash-2-4 of its UTF-8 bytes under the fixed key ``0123456789123456``,
then spread by the splitmix64 finaliser -- exactly ``pandas.util.hash_array(values,
categorize=False)``, which computed every symbol id before this module and still computes
them for large batches (its C loop is the faster one there).  Ids are stored in checkpoints
and shipped between workers, so both ways must agree bit for bit; the tests compare them on
arbitrary text.

This module hashes small batches with numpy alone: a fresh process that inserts a few strings
does not pay pandas' import (~0.3 s), which used to be most of a durable or command-line run's
cold start.  The strings are laid out as little-endian 64-bit words, one row per string, and
the rows are sorted longest first, so SipHash's compression of word ``j`` runs, vectorised,
over the prefix of rows that still have a word ``j``.
"""
from __future__ import annotations

import numpy as np

# pandas' default key, "0123456789123456", as SipHash's two little-endian 64-bit halves
_KEY = b"0123456789123456"
_K0 = int.from_bytes(_KEY[:8], "little")
_K1 = int.from_bytes(_KEY[8:], "little")
_INIT = (_K0 ^ 0x736F6D6570736575, _K1 ^ 0x646F72616E646F6D,
         _K0 ^ 0x6C7967656E657261, _K1 ^ 0x7465646279746573)

# Above these, pandas' C loop is faster than the numpy layout (one row per string, as wide
# as the longest): ``hash_strings`` hands the batch over.
NUMPY_MAX_STRINGS = 20_000
NUMPY_MAX_CELLS = 4_000_000   # rows x the longest string's bytes
MAX_BYTES = 1024              # one step per 8 bytes of the longest string, however few share it
PYTHON_MAX_STRINGS = 24       # below, plain Python integers beat numpy's per-call costs


def _rotl(x: np.ndarray, bits: int) -> np.ndarray:
    return (x << np.uint64(bits)) | (x >> np.uint64(64 - bits))


def _sip_rounds(v0, v1, v2, v3, rounds: int):
    for _ in range(rounds):
        v0 += v1
        v1 = _rotl(v1, 13)
        v1 ^= v0
        v0 = _rotl(v0, 32)
        v2 += v3
        v3 = _rotl(v3, 16)
        v3 ^= v2
        v0 += v3
        v3 = _rotl(v3, 21)
        v3 ^= v0
        v2 += v1
        v1 = _rotl(v1, 17)
        v1 ^= v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


_MASK = (1 << 64) - 1


def _sip_rounds_int(v0: int, v1: int, v2: int, v3: int, rounds: int) -> tuple:
    for _ in range(rounds):
        v0 = (v0 + v1) & _MASK
        v1 = ((v1 << 13) | (v1 >> 51)) & _MASK ^ v0
        v0 = ((v0 << 32) | (v0 >> 32)) & _MASK
        v2 = (v2 + v3) & _MASK
        v3 = ((v3 << 16) | (v3 >> 48)) & _MASK ^ v2
        v0 = (v0 + v3) & _MASK
        v3 = ((v3 << 21) | (v3 >> 43)) & _MASK ^ v0
        v2 = (v2 + v1) & _MASK
        v1 = ((v1 << 17) | (v1 >> 47)) & _MASK ^ v2
        v2 = ((v2 << 32) | (v2 >> 32)) & _MASK
    return v0, v1, v2, v3


def _siphash_bytes(data: bytes) -> int:
    """One string's id in plain Python: cheaper than numpy's fixed costs for a few strings."""
    v0, v1, v2, v3 = _INIT
    tail = len(data) & ~7
    for at in range(0, tail, 8):
        m = int.from_bytes(data[at:at + 8], "little")
        v0, v1, v2, v3 = _sip_rounds_int(v0, v1, v2, v3 ^ m, 2)
        v0 ^= m
    m = int.from_bytes(data[tail:], "little") | ((len(data) & 0xFF) << 56)
    v0, v1, v2, v3 = _sip_rounds_int(v0, v1, v2, v3 ^ m, 2)
    v0 ^= m
    v0, v1, v2, v3 = _sip_rounds_int(v0, v1, v2 ^ 0xFF, v3, 4)
    h = v0 ^ v1 ^ v2 ^ v3
    h ^= h >> 30
    h = (h * 0xBF58476D1CE4E5B9) & _MASK
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & _MASK
    return h ^ (h >> 31)


def _words(encoded: list) -> tuple:
    """The strings as rows of little-endian words, SipHash's last word (the length in the
    top byte) included: ``(words[n, w], words per row)``."""
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    count = lengths // 8 + 1                       # (the last word always exists)
    width = int(count.max()) * 8
    grid = np.zeros((len(encoded), width), dtype=np.uint8)
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    if len(data):
        rows = np.repeat(np.arange(len(encoded)), lengths)
        starts = np.cumsum(lengths) - lengths
        grid[rows, np.arange(len(data)) - np.repeat(starts, lengths)] = data
    grid[np.arange(len(encoded)), count * 8 - 1] = (lengths & 0xFF).astype(np.uint8)
    return grid.view("<u8").astype(np.uint64, copy=False), count


def hash_small_batch(values) -> np.ndarray | None:
    """Each string's id as ``uint64`` (SipHash-2-4 of its UTF-8 bytes, then splitmix64),
    for a batch of ``str`` small enough for numpy; ``None`` for any other batch (too many
    strings, a string over :data:`MAX_BYTES` of UTF-8, or other objects), which pandas then
    hashes.  Text UTF-8 cannot encode raises ``UnicodeEncodeError``, as pandas does.

    >>> hash_small_batch(["", "a"]).tolist(), hash_small_batch([b"a"])
    ([1760245841805064774, 13950350942979735504], None)
    """
    if len(values) > NUMPY_MAX_STRINGS:
        return None
    try:
        encoded = [value.encode("utf-8") for value in values]
    except AttributeError:  # (not a str: pandas knows what to make of it)
        return None
    longest = max(map(len, encoded), default=0)
    if longest > MAX_BYTES or len(encoded) * (longest + 8) > NUMPY_MAX_CELLS:
        return None
    return _hash_encoded(encoded)


def _hash_encoded(encoded: list) -> np.ndarray:
    if len(encoded) <= PYTHON_MAX_STRINGS:
        return np.array([_siphash_bytes(data) for data in encoded], dtype=np.uint64)
    words, count = _words(encoded)
    order = np.argsort(-count, kind="stable")     # longest first: word j's rows are a prefix
    words, count = words[order], count[order]
    v = [np.full(len(encoded), part, dtype=np.uint64) for part in _INIT]
    for j in range(words.shape[1]):
        live = int(np.searchsorted(-count, -j, side="left"))  # rows with more than j words
        m = words[:live, j]
        v0, v1, v2, v3 = (part[:live] for part in v)
        v3 ^= m
        v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
        v0 ^= m
        for part, new in zip(v, (v0, v1, v2, v3)):
            part[:live] = new
    v0, v1, v2, v3 = v
    v2 ^= np.uint64(0xFF)
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 4)
    h = v0 ^ v1 ^ v2 ^ v3
    # splitmix64's finaliser, as pandas spreads its hashes
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    out = np.empty_like(h)
    out[order] = h
    return out
