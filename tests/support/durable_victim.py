"""A durable dataflow run the fault tests kill (tests/runtime/test_durable_faults.py).

``python -m tests.support.durable_victim ROOT SINK RUNTIME PARTITIONS SEED EPOCHS``
resumes the dataflow of tests/support/durable_flow.py under ``ROOT`` (or starts it), feeds
the seeded epochs it does not hold yet, rescales by one partition at epoch 4, and after
every epoch appends the changes it took to ``SINK`` as an exactly-once consumer does:
JSON lines of changes, then a ``done`` line, each flushed to disk; at start it drops what
follows the last ``done`` (an epoch the crash interrupted) and skips changes of epochs it
has.  At the end it appends the outputs' contents.
"""
from __future__ import annotations

import json
import os
import sys

from tests.support.durable_flow import build, epochs, feed


def _taken(sink: str) -> int:
    """The last epoch the sink holds whole (-1: none); what follows it is cut off."""
    if not os.path.exists(sink):
        return -1
    with open(sink, "rb") as fh:
        data = fh.read()
    keep, last = 0, -1
    at = 0
    for line in data.split(b"\n")[:-1]:  # (a last line without its newline is torn)
        at += len(line) + 1
        record = json.loads(line)
        if record[0] == "done":
            keep, last = at, record[1]
    with open(sink, "r+b") as fh:
        fh.truncate(keep)
    return last


def _append(sink: str, lines: list) -> None:
    with open(sink, "a", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))
        fh.flush()
        os.fsync(fh.fileno())


def _take(outputs, after: int) -> list:
    return [["change", i, list(row), epoch, diff] for i, out in enumerate(outputs)
            for row, epoch, diff in out.changes() if epoch > after]


def main(root, sink, runtime, partitions, seed, count) -> None:
    batches = epochs(seed, count)
    flow, inputs, outputs = build(partitions, runtime, checkpoint_dir=root, resume=True,
                                  checkpoint_every=3)
    start = flow.resume()
    taken = _taken(sink)
    if start:
        _append(sink, _take(outputs, taken) + [["done", start - 1]])
    for epoch in range(start, count):
        if epoch == 4:
            flow.rescale(partitions=partitions + 1, strategy="all_at_once")
        feed(flow, inputs, batches[epoch])
        _append(sink, _take(outputs, taken) + [["done", epoch]])
    _append(sink, [["end", [sorted([list(k), v] for k, v in out.snapshot().items())
                            for out in outputs]]])
    flow.close()


if __name__ == "__main__":
    root, sink, runtime, partitions, seed, count = sys.argv[1:]
    main(root, sink, runtime, int(partitions), int(seed), int(count))
