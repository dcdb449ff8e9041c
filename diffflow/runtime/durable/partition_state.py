"""One partition's part of a checkpoint: its engine's state as a file, and back.

Whoever holds a partition writes its file -- the local runtime for all of its partitions,
each worker for its own on the other runtimes -- and the driver commits the checkpoint
with a manifest naming them (:mod:`.checkpoints`).  A file holds the operators' state
(:meth:`~diffflow.runtime.engine.PartitionEngine.state`), the symbol table, the
partition's number, count and routing, and the epoch; it is written in the safe state
format (:mod:`.state_format`: reading it runs no code).  A checkpoint written with
another partition count or routing table is restored re-binned: each partition reads
every file and keeps what it owns now (rescaling by restart).

>>> import tempfile, diffflow as dd
>>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); out = a.distinct().output()
>>> a.insert([1, 1, 2]); flow.advance()
>>> engine = flow._runtime.engines[0]
>>> name, info = write_partition(tempfile.mkdtemp(), engine, {}, epoch=1)
>>> name, info["size"] > 0
('part-0.state', True)
"""
from __future__ import annotations

from diffflow.runtime import storage
from diffflow.runtime.durable import state_format
from diffflow.runtime.durable.checkpoints import CheckpointError, read_file


def file_name(partition: int) -> str:
    return f"part-{partition}.state"


def write_partition(folder: str, engine, symbols: dict, epoch: int) -> tuple:
    """Write ``engine``'s state into ``folder`` durably; ``(file name, manifest entry)``."""
    payload = state_format.dumps({
        "ops": engine.state(), "symbols": dict(symbols), "partition": engine.partition,
        "parts": engine.parts, "routing": engine.routing, "epoch": int(epoch)})
    name = file_name(engine.partition)
    return name, storage.write_durably(storage.join(folder, name), payload)


def read_partition(path: str, info: dict) -> dict:
    """A partition file's contents, checked against its manifest entry."""
    data = read_file(path, info)
    try:
        return state_format.loads(data)
    except state_format.StateFormatError as exc:
        raise CheckpointError(f"{path}: {exc}") from None


def restore_partition(engine, files: list, symbols: dict, loaded: dict | None = None) -> None:
    """Restore ``engine`` from a checkpoint's ``files`` (``(path, manifest entry)`` per
    saved partition); the symbols they hold are added to ``symbols``.  ``loaded``: files
    read already, by path.  Raises :class:`CheckpointError` for a damaged file, before
    changing the engine."""
    from diffflow.runtime.rescale import migrate

    loaded = {} if loaded is None else loaded

    def read(path, info):
        if path not in loaded:
            loaded[path] = read_partition(path, info)
        return loaded[path]

    own = [f for f in files if f[0].replace("\\", "/").rsplit("/", 1)[-1]
           == file_name(engine.partition)]
    if own:
        saved = read(*own[0])
        if saved["routing"] == engine.routing and len(files) == engine.parts:
            symbols.update(saved["symbols"])
            engine.restore(saved["ops"])
            return
    # (decoded afresh: re-binning takes rows out of the saved states it reads)
    states = [read_partition(*f) for f in files]
    for state in states:
        symbols.update(state["symbols"])
    migrate.restore_rebinned(engine, states)
