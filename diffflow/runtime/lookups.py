"""Reading a partition's state by key, between runs: what explanations ask of a runtime.

Explanations (:mod:`diffflow.explain`) answer their witness queries from arrangements the
dataflow keeps current, read by key between epochs, and note which keys each epoch changed
(``changed_keys`` nodes).  Those reads run where a partition's engine lives -- in this
process for the local runtime, in a worker for the others -- so they are plain functions of
an engine here, taking and returning int64 arrays: a worker answers them as they are
(:meth:`~diffflow.runtime.worker_commands.WorkerCommands.cmd_lookup`), and
:class:`~diffflow.runtime.base.Runtime` merges the partitions' answers.

>>> import diffflow as dd
>>> flow = dd.Dataflow(partitions=2); a = flow.input("a", ["k", "v"])
>>> arranged = a.arrange(["k"]); out = a.output(); a.insert([(1, 5), (2, 6), (1, 7)])
>>> flow.advance()
>>> [(which, rows, times, diffs)] = flow._runtime.gather([(arranged.node.id, np.array([[1]]), 1)])
>>> sorted(map(tuple, rows.tolist()))
[(1, 5), (1, 7)]
"""
from __future__ import annotations

import numpy as np

CHANGED_KEYS = "changed_keys"


def gather(engine, node_id: int, keys: np.ndarray, width: int) -> tuple:
    """``(key index, rows, times, diffs)`` of the updates of an arrangement whose first
    ``width`` columns equal one of ``keys`` (see ``Spine.gather``)."""
    return engine.ops[node_id].spine.gather(keys, width)


def gather_many(engine, requests: list) -> list:
    """:func:`gather` of each ``(node_id, keys, width)`` request (one message for all),
    each answer packed as one array (:func:`packed`: a worker's reply pickles faster)."""
    return [packed(gather(engine, *request)) for request in requests]


def packed(gathered: tuple) -> np.ndarray:
    """``(key index, rows, times, diffs)`` as one int64 array, a row per update.

    >>> unpacked(packed((np.array([0]), np.array([[7, 8]]), np.array([[1]]), np.array([1]))),
    ...          2)[1].tolist()
    [[7, 8]]
    """
    which, rows, times, diffs = gathered
    return np.concatenate([which[:, None], rows, times, diffs[:, None]], axis=1)


def unpacked(block: np.ndarray, width: int) -> tuple:
    """The ``(key index, rows, times, diffs)`` of a :func:`packed` array (``width``: the
    rows' columns)."""
    return (block[:, 0], block[:, 1:1 + width], block[:, 1 + width:-1], block[:, -1])


def record(engine, node_ids) -> None:
    """Have exactly the ``changed_keys`` nodes ``node_ids`` note the keys reaching them."""
    wanted = set(node_ids)
    for nid, op in engine.ops.items():
        if op.kind == CHANGED_KEYS:
            op.active = nid in wanted


def take_keys(engine, node_ids) -> list:
    """The distinct keys each ``changed_keys`` node noted since the last call (then
    forgotten), one array per node."""
    return [engine.ops[nid].take() for nid in node_ids]


def output_rows(engine, node_id: int, rows: np.ndarray) -> tuple:
    """``(rows, diffs)`` of this partition's part of an output, only the asked ``rows``."""
    held, diffs = engine.contents(node_id)
    keep = matching(held, rows)
    return held[keep], diffs[keep]


def matching(held: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """Which rows of ``held`` equal a row of ``asked`` (both int64, same width).

    >>> matching(np.array([[1, 2], [3, 4], [1, 2]]), np.array([[1, 2], [9, 9]])).tolist()
    [True, False, True]
    """
    if not len(held) or not len(asked):
        return np.zeros(len(held), bool)
    width = held.shape[1]
    as_rows = np.dtype((np.void, 8 * width))   # one opaque item per row: np.isin compares them
    return np.isin(np.ascontiguousarray(held, np.int64).view(as_rows).ravel(),
                   np.ascontiguousarray(asked, np.int64).view(as_rows).ravel())


def merged_gathers(parts: list, width: int, dim: int) -> tuple:
    """One ``(key index, rows, times, diffs)`` of the partitions' :func:`packed` answers."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return (np.zeros(0, np.int64), np.zeros((0, width), np.int64),
                np.zeros((0, dim), np.int64), np.zeros(0, np.int64))
    return unpacked(parts[0] if len(parts) == 1 else np.concatenate(parts), width)


# what a worker may be asked to run (cmd_lookup): nothing else of this module's namespace
COMMANDS = {"gather_many": gather_many, "record": record, "take_keys": take_keys,
            "output_rows": output_rows}
