"""What a durable :class:`~diffflow.Dataflow` adds at its edges: the options checked, each
closed epoch logged before it runs, and a resume replayed as the epochs first ran.

The machinery (log, checkpoints, fingerprint) is :mod:`diffflow.runtime.durable`; this module
only connects it to the dataflow's inputs and epochs.  See docs/DURABILITY.md.
"""
from __future__ import annotations

from diffflow.common import failpoints


def check_options(checkpoint_dir, durable: bool, resume: bool, runtime: str = "local",
                  checkpoint_every=None) -> None:
    """Refuse durability options that cannot work together, saying what to pass."""
    if runtime == "local" and checkpoint_every is not None and not (durable or resume):
        raise ValueError("checkpoint_every= on the local runtime needs durable=True: there a "
                         "checkpoint serves a resume after a crash, which needs the log of "
                         "the epochs after it, e.g. Dataflow(checkpoint_dir='state', "
                         "durable=True, checkpoint_every=100) (without durable=True, "
                         "checkpoints protect the workers of runtime='processes' or 'spark')")
    if (durable or resume) and checkpoint_dir is None:
        which = "resume=True" if resume else "durable=True"
        raise ValueError(f"{which} needs checkpoint_dir=: the folder (or storage URI) that "
                         f"holds the checkpoints and the write-ahead log, e.g. "
                         f"Dataflow(checkpoint_dir='state', durable=True, resume=True)")


def start(flow, runtime) -> None:
    """Attach a fresh runtime to the dataflow's durable state: restore and replay when
    resuming, then log from the epoch reached.  On failure the runtime is closed."""
    from diffflow.runtime.durable.durability import Durability

    durability = Durability(flow.checkpoint_dir, flow.graph, flow.symbols,
                            flow.checkpoint_every)
    # what the dataflow's owner keeps beside it, saved with each checkpoint (a Program's facts)
    durability.extra_source = lambda: flow._checkpoint_extra() if flow._checkpoint_extra else {}
    try:
        replay = durability.start(runtime, flow._resume)
    except BaseException:
        runtime.close()
        raise
    flow._durability = durability
    flow.epoch = durability.checkpointed
    inputs = [h.node.id for h in flow._inputs]
    for entries, symbols in replay:  # each logged epoch as advance() ran it
        flow.symbols._text.update(symbols)
        for node_id, rows, diffs in entries:
            runtime.stage(node_id, rows, diffs)
        runtime.close_epoch(inputs)
        flow.epoch += 1
        flow._run_checked(runtime)  # (under the memory limit; checkpoints when due)


def log_epoch(flow) -> None:
    """Log the epoch being closed (its staged rows) before anything of it is staged."""
    entries = [(h.node.id, rows, diffs) for h in flow._inputs for rows, diffs in h._staged]
    flow._durability.log_epoch(flow.epoch, entries)
    failpoints.reached("logged")
