"""The Datalog commands of ``diffflow``: ``run`` and ``explain-plan`` (:mod:`.run`), ``query``
(:mod:`.query`), ``explain`` (:mod:`.explain`), and Soufflé's provenance command loop for
``run -t explain`` (:mod:`.shell`); :mod:`.options` holds what they share.
"""
from diffflow.datalog.cli import explain, query, run


def add_commands(commands) -> None:
    """Add the Datalog commands to the ``diffflow`` command line's subcommands."""
    run.add_commands(commands)
    query.add_commands(commands)
    explain.add_commands(commands)
