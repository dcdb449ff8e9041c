"""The Datalog commands of ``diffflow``: ``run`` and ``explain-plan`` (:mod:`.run`), ``query``
(:mod:`.query`), ``explain`` (:mod:`.explain`), ``profile`` (:mod:`.profile_show`; ``run
--profile`` records with :mod:`.profile_record`), and Soufflé's provenance command loop for
``run -t explain`` (:mod:`.shell`); :mod:`.options` holds what they share.
"""
from diffflow.datalog.cli import explain, profile_show, query, run


def add_commands(commands) -> None:
    """Add the Datalog commands to the ``diffflow`` command line's subcommands."""
    run.add_commands(commands)
    query.add_commands(commands)
    explain.add_commands(commands)
    profile_show.add_commands(commands)
