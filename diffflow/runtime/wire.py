"""Columnar messages between partition workers: update chunks as Arrow IPC streams (small
batches: the arrays themselves, in one message; :func:`send_chunks`).

A chunk of updates (rows ``(n, w)``, times ``(n, d)``, diffs ``(n,)``, all
int64) travels as one Arrow record batch with columns ``r0..``, ``t0..`` and
``diff``; nothing is ever sent one row at a time.

>>> import numpy as np
>>> from diffflow.arrangements.updates import Updates
>>> chunk = Updates(np.array([[1, 2], [3, 4]]), np.array([[0], [1]]), np.array([1, -1]))
>>> back = decode_chunk(encode_chunk(chunk))
>>> back.rows.tolist(), back.times.tolist(), back.diffs.tolist()
([[1, 2], [3, 4]], [[0], [1]], [1, -1])
"""
from __future__ import annotations

import socket

import numpy as np
import pyarrow as pa

from diffflow.arrangements.updates import Updates


def _int64_array(column: np.ndarray) -> pa.Array:
    """An int64 column as an Arrow array over the same memory.  (``pa.array(ndarray)`` would
    do too, but its first call in a process imports pandas, ~0.35 s: a fresh worker paid it
    on its first message, inside an epoch.)"""
    column = np.ascontiguousarray(column, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(column), [None, pa.py_buffer(column)])


def encode_arrays(columns: list) -> pa.Buffer:
    """int64 columns (one ``(n, k)`` array per group) as one Arrow IPC stream buffer."""
    arrays, names = [], []
    for g, block in enumerate(columns):
        for j in range(block.shape[1]):
            arrays.append(_int64_array(block[:, j]))
            names.append(f"g{g}_{j}")
    widths = ",".join(str(block.shape[1]) for block in columns)
    n = columns[0].shape[0] if columns else 0
    schema = pa.schema([pa.field(name, pa.int64()) for name in names],
                       metadata={"widths": widths, "rows": str(n)})
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue()


def decode_arrays(buffer) -> list:
    """The ``(n, k)`` int64 blocks :func:`encode_arrays` wrote."""
    reader = pa.ipc.open_stream(buffer)
    meta = reader.schema.metadata
    widths = [int(w) for w in meta[b"widths"].decode().split(",") if w]
    n = int(meta[b"rows"])
    batch = reader.read_next_batch()
    blocks, col = [], 0
    for width in widths:
        block = np.empty((n, width), np.int64)
        for j in range(width):
            column = batch.column(col)  # (to_numpy's first call imports pandas too)
            if n:
                block[:, j] = np.frombuffer(column.buffers()[1], np.int64, n,
                                            column.offset * 8)
            col += 1
        blocks.append(block)
    return blocks


def encode_chunk(chunk: Updates) -> pa.Buffer:
    return encode_arrays([chunk.rows, chunk.times, chunk.diffs.reshape(-1, 1)])


def decode_chunk(buffer) -> Updates:
    rows, times, diffs = decode_arrays(buffer)
    return Updates(rows, times, diffs[:, 0].copy())


def no_delay(conn):
    """Turn Nagle's algorithm off on a connection's TCP socket; returns the connection.

    ``multiprocessing`` sends a message over 16 KiB as two writes (length,
    then payload); with Nagle on, a payload under one segment (64 KiB on
    loopback) then waits for the ACK of the length, which the receiver
    delays by up to 40 ms.  Other sockets (or platforms) are left as they are.

    >>> from multiprocessing import Pipe
    >>> a, b = Pipe(); no_delay(a) is a
    True
    """
    try:
        sock = socket.socket(fileno=conn.fileno())
    except OSError:
        return conn
    try:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    finally:
        sock.detach()  # the connection keeps its descriptor
    return conn


SMALL_MESSAGE = 64 * 1024  # bytes of arrays: a batch this small is one message (see send_chunks)


def small_batch(pieces: list) -> bool:
    """Whether a batch's arrays (rows, times, diffs of every chunk) take at most
    :data:`SMALL_MESSAGE` bytes: :func:`send_chunks` sends it as one message."""
    return sum(c.rows.nbytes + c.times.nbytes + c.diffs.nbytes
               for _, _, c in pieces) <= SMALL_MESSAGE


def send_chunks(conn, pieces: list, tag=None) -> None:
    """Send ``[(consumer, port, chunk), ...]`` over a connection.

    A batch of at most :data:`SMALL_MESSAGE` bytes (an update's sweep, typically) is one
    message with the arrays in it: it fits the sockets' buffers, so a worker can send it
    before it reads its peers' without either side blocking, and one message wakes the
    reader once.  A larger one is a header, then each chunk as an Arrow IPC stream, sent by
    a thread of the sender while it reads.  ``tag`` rides along in the header (a traced
    sweep's correlators, see :mod:`diffflow.runtime.tracing`).

    >>> from multiprocessing import Pipe
    >>> a, b = Pipe()
    >>> chunk = Updates(np.array([[7, 8]]), np.array([[0]]), np.array([1]))
    >>> send_chunks(a, [(3, 0, chunk)], tag="t")
    >>> header = recv_header(b); header[1], [(c, p, u.rows.tolist()) for c, p, u in
    ...                                       recv_pieces(b, header)]
    ('t', [(3, 0, [[7, 8]])])
    """
    routes = [(consumer, port) for consumer, port, _ in pieces]
    if small_batch(pieces):
        conn.send((routes, tag, [(c.rows, c.times, c.diffs) for _, _, c in pieces]))
        return
    conn.send((routes, tag))
    for _, _, chunk in pieces:
        conn.send_bytes(encode_chunk(chunk))


def recv_header(conn) -> tuple:
    """``(routes, tag[, arrays])`` of the next :func:`send_chunks` batch (blocks until it
    arrives)."""
    return conn.recv()


def recv_pieces(conn, header) -> list:
    """The ``[(consumer, port, chunk), ...]`` of a batch whose header was read."""
    if len(header) == 3:  # a small batch: its arrays came with the header
        return [(consumer, port, Updates(rows, times, diffs))
                for (consumer, port), (rows, times, diffs) in zip(header[0], header[2])]
    return [(consumer, port, decode_chunk(conn.recv_bytes())) for consumer, port in header[0]]


def recv_chunks(conn) -> list:
    """The ``[(consumer, port, chunk), ...]`` :func:`send_chunks` sent."""
    return recv_pieces(conn, recv_header(conn))
