"""A durable :class:`~diffflow.datalog.program.Program`: its facts saved with each checkpoint,
and found again when it resumes.

A program keeps the facts of its input relations (so that inserting a fact twice counts
once); its dataflow's checkpoints hold them too (as the owner's state, see
:mod:`diffflow.runtime.durable.durability`), and a resume rebuilds them from the newest
checkpoint plus the logged epochs replayed after it.  See docs/DURABILITY.md.
"""
from __future__ import annotations

import numpy as np

from diffflow.arrangements import columnar


def attach(program) -> bool:
    """Have the program's checkpoints hold its facts; when resuming, restore them (the
    dataflow resumes now).  Returns whether any epoch was restored."""
    flow = program.flow
    flow._checkpoint_extra = lambda: {"present": program._present}
    if not flow._resume or flow.resume() == 0:
        return False
    durability = flow._durability
    present = dict(program._present)
    present.update(durability.extra.get("present", {}))
    names = {inp.node.id: name for name, inp in program._compiled.inputs.items()}
    for entries, _symbols in durability.replayed:
        for node_id, rows, diffs in entries:
            name = names.get(node_id)
            if name is None:  # (the unit relation of rules without atoms)
                continue
            width = present[name].shape[1]
            merged = columnar.merge_consolidated(
                present[name], np.zeros((len(present[name]), 1), np.int64),
                np.ones(len(present[name]), np.int64),
                rows, np.zeros((len(rows), 1), np.int64), diffs)
            present[name] = merged[0].reshape(-1, width)
    program._present = present
    program._committed = dict(present)
    return True
