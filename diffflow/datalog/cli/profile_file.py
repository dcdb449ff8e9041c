"""The profile file ``diffflow run --profile FILE`` writes and ``diffflow profile FILE`` reads.

One JSON object, version :data:`VERSION`::

    {"format": "diffflow-profile", "version": 1,
     "program": "tc.dl", "partitions": 1,
     "steps":     [{"step": 0, "wall_ns": 5100000, "sizes": {"path": 15}}, ...],
     "rules":     [{"id": 1, "location": "tc.dl:5", "text": "path(x, y) :- edge(x, y).",
                    "relation": "path", "stratum": null}, ...],
     "relations": [{"name": "path", "location": "tc.dl:3", "stratum": "path"}, ...],
     "activity":  {"columns": ["step", "kind", "key", "round", "time_ns", "tuples",
                               "rows_in", "calls"], "rows": [[0, "rule", 2, 3, 41000, 2, 3, 4], ...]},
     "compiled":  {"columns": ["step", "stratum", "first_round", "last_round", "time_ns",
                               "work", "updates"], "rows": [...]}}

``steps``: the initial run is step 0, ``--updates`` steps keep their folder numbers;
``wall_ns`` is the commit's wall-clock time, ``sizes`` the facts of every observed
relation (``.output``, ``.printsize``) after it, counted after the last step only (``{}``
before: counting costs a pass over each relation).  ``stratum``: the recursive stratum (a
loop) a rule or relation is computed in, ``null`` outside loops.  An ``activity`` row sums
one rule's (``kind`` ``"rule"``, ``key`` its id), one relation's own operators'
(``"relation"``, its name) or one other operator's (``"other"``, its name) steps in one
update step and one round of its loop (``round`` ``-1`` outside loops): ``time_ns``
(summed over partitions), ``tuples`` (a rule's derivations towards its relation; a
relation's new or retracted facts), ``rows_in`` and ``calls`` (operator steps).  A
``compiled`` row is one run of a loop's rounds in a compiled kernel (no per-rule split
exists for it): its rounds, time, rows of ``work`` it started with and ``updates`` it
added to the loop's state.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "prof.json")
>>> write_profile(path, new_profile("tc.dl", 1, [], [], [], [], []))
>>> read_profile(path)["version"]
1
"""
from __future__ import annotations

import json
import os

from diffflow.datalog.cli.outputs import write_file

FORMAT = "diffflow-profile"
VERSION = 1
ACTIVITY_COLUMNS = ("step", "kind", "key", "round", "time_ns", "tuples", "rows_in", "calls")
COMPILED_COLUMNS = ("step", "stratum", "first_round", "last_round", "time_ns", "work",
                    "updates")


class ProfileError(ValueError):
    """A profile file that cannot be read; the message names the file and what to do."""


def new_profile(program, partitions, steps, rules, relations, activity, compiled) -> dict:
    """A profile object (the module docstring's layout) from its parts.

    >>> new_profile("a.dl", 2, [], [], [], [], [])["activity"]["columns"][:3]
    ['step', 'kind', 'key']
    """
    return {"format": FORMAT, "version": VERSION, "program": program,
            "partitions": partitions, "steps": steps, "rules": rules,
            "relations": relations,
            "activity": {"columns": list(ACTIVITY_COLUMNS), "rows": activity},
            "compiled": {"columns": list(COMPILED_COLUMNS), "rows": compiled}}


def write_profile(path: str, profile: dict) -> None:
    """Write ``profile`` as JSON through a temporary file renamed over ``path``.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "p.json"); write_profile(path, {"a": 1})
    >>> open(path).read()
    '{"a": 1}\\n'
    """
    write_file(path, None, [json.dumps(profile, separators=(", ", ": "))])


def check_writable(path: str) -> None:
    """Fail now, before the program runs, when ``path``'s folder cannot take the profile.

    >>> check_writable("/no/such/folder/prof.json")
    Traceback (most recent call last):
    ...
    diffflow.datalog.cli.profile_file.ProfileError: --profile /no/such/folder/prof.json: the folder /no/such/folder does not exist; create it or give a path in an existing folder
    """
    if path in ("", "-"):
        raise ProfileError(f"--profile {path!r}: give a file name for the profile (it is JSON "
                           f"for `diffflow profile`, not printed), e.g. --profile prof.json")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ProfileError(f"--profile {path}: is a folder; give a file name, e.g. "
                           f"{os.path.join(path, 'profile.json')}")
    if not os.path.isdir(folder):
        raise ProfileError(f"--profile {path}: the folder {os.path.dirname(path) or folder} does "
                           f"not exist; create it or give a path in an existing folder")
    if not os.access(folder, os.W_OK):
        raise ProfileError(f"--profile {path}: cannot write in {folder}; give a path in a "
                           f"folder you can write to")
    if os.path.exists(path) and not _is_profile(path):
        # (the program, a fact file or an output given by mistake: never overwritten)
        raise ProfileError(f"--profile {path}: the file exists and is not a diffflow profile; "
                           f"give a new file name (an existing profile is replaced)")
    try:  # (a folder that looks writable may still refuse a file: /proc, a full disk)
        with open(os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.probe"),
                  "w") as probe:
            name = probe.name
        os.remove(name)
    except OSError as exc:
        raise ProfileError(f"--profile {path}: cannot write in {folder} "
                           f"({exc.strerror or exc}); give a path in a folder you can "
                           f"write to") from None


def _is_profile(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            head = fh.read(200)
    except (OSError, UnicodeDecodeError):
        return False
    return head.lstrip().startswith("{") and f'"format": "{FORMAT}"' in head


def read_profile(path: str) -> dict:
    """The profile in ``path``, checked; a :class:`ProfileError` names the file and the fix.

    >>> read_profile("/no/such/prof.json")
    Traceback (most recent call last):
    ...
    diffflow.datalog.cli.profile_file.ProfileError: /no/such/prof.json: no such file; write one with `diffflow run PROGRAM.dl --profile /no/such/prof.json`
    """
    how = f"write one with `diffflow run PROGRAM.dl --profile {path}`"
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such file; {how}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc}); "
                           f"{how}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg}); a profile "
                           f"is the JSON file `diffflow run --profile` writes; {how}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ProfileError(f"{path}: not a diffflow profile (no \"format\": \"{FORMAT}\"); "
                           f"{how}")
    version = data.get("version")
    if version != VERSION:
        raise ProfileError(f"{path}: profile version {version!r}, but this diffflow reads "
                           f"version {VERSION}; {how} with this diffflow")
    for key, kind in (("steps", list), ("rules", list), ("relations", list),
                      ("activity", dict), ("compiled", dict)):
        if not isinstance(data.get(key), kind):
            raise ProfileError(f"{path}: the profile's {key!r} is missing or not a "
                               f"{'list' if kind is list else 'table'}; the file is damaged: "
                               f"{how}")
    for key, columns in (("activity", ACTIVITY_COLUMNS), ("compiled", COMPILED_COLUMNS)):
        table = data[key]
        if table.get("columns") != list(columns) or not isinstance(table.get("rows"), list) \
                or any(not isinstance(row, list) or len(row) != len(columns)
                       for row in table["rows"]):
            raise ProfileError(f"{path}: the profile's {key!r} table does not have the columns "
                               f"{', '.join(columns)} on every row; the file is damaged: {how}")
    return data
