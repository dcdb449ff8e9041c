"""The public surface is pinned: a change to it is made on purpose, by updating the snapshot.

The surface is what users write: the names ``diffflow``, ``diffflow.graphs`` and
``diffflow.pag`` export, every public method and property of their classes with its
signature, the exception hierarchy, and every ``diffflow`` command, sub-command and flag.
Where it moves inside the package, the snapshot stays the same.

To change the surface on purpose, regenerate the snapshot and commit it with the change::

    python tests/test_public_api.py --update
"""
import argparse
import inspect
import json
import os
import re
import sys

SNAPSHOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                        "public_api.json")


def _signature(obj) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(?)"
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def _members(cls) -> dict:
    members = {}
    for name in sorted(dir(cls)):
        if name.startswith("_") and name not in ("__init__", "__call__", "__iter__",
                                                  "__len__", "__getitem__", "__contains__",
                                                  "__enter__", "__exit__"):
            continue
        try:
            value = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if name in ("__init__",) and value is object.__init__:
            continue
        if isinstance(value, property):
            members[name] = "property"
        elif isinstance(value, (staticmethod, classmethod)):
            members[name] = f"{type(value).__name__}{_signature(value.__func__)}"
        elif inspect.isfunction(value):
            members[name] = f"method{_signature(value)}"
        elif inspect.isclass(value):
            members[name] = "class"
        elif callable(value):
            members[name] = "callable"
        else:
            members[name] = "attribute"
    return members


def _describe(obj):
    if inspect.isclass(obj):
        described = {"kind": "class", "signature": _signature(obj),
                     "bases": [b.__name__ for b in obj.__mro__[1:] if b is not object]}
        described["members"] = _members(obj)
        return described
    if inspect.ismodule(obj):
        return {"kind": "module"}
    if callable(obj):
        return {"kind": "function", "signature": _signature(obj)}
    return {"kind": type(obj).__name__}


def _module_surface(module, names) -> dict:
    return {name: _describe(getattr(module, name)) for name in sorted(names)}


def _commands(parser: argparse.ArgumentParser) -> dict:
    """Every flag of ``parser`` and, recursively, of its sub-commands."""
    flags, subcommands = {}, {}
    for action in parser._actions:  # argparse offers no public walk of its actions
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                subcommands[name] = _commands(sub)
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        key = "/".join(action.option_strings) or action.dest
        flags[key] = {"dest": action.dest, "nargs": action.nargs, "required": action.required,
                      "choices": list(action.choices) if action.choices else None,
                      "default": repr(action.default), "metavar": action.metavar,
                      "action": type(action).__name__}
    return {"flags": flags, "commands": subcommands}


def _cli_parser():
    import diffflow.cli as cli

    return cli.build_parser()


def surface() -> dict:
    import diffflow as dd
    from diffflow import graphs, pag

    graph_functions = getattr(graphs, "__all__", None) or [
        n for n, v in vars(graphs).items()
        if not n.startswith("_") and inspect.isfunction(v) and v.__module__ == graphs.__name__]
    return {
        "diffflow": {"__all__": sorted(dd.__all__), "__version__": dd.__version__,
                     "names": _module_surface(dd, dd.__all__)},
        "diffflow.graphs": _module_surface(graphs, graph_functions),
        "diffflow.pag": {"__all__": sorted(pag.__all__),
                         "names": _module_surface(pag, pag.__all__)},
        "cli": _commands(_cli_parser()),
    }


def _differences(old, new, path="") -> list:
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(set(old) | set(new)):
            where = f"{path}.{key}" if path else key
            if key not in new:
                found.append(f"removed: {where}")
            elif key not in old:
                found.append(f"added: {where}")
            else:
                found += _differences(old[key], new[key], where)
        return found
    return [] if old == new else [f"changed: {path}: {old!r} -> {new!r}"]


def test_public_surface_matches_the_snapshot():
    with open(SNAPSHOT, encoding="utf-8") as fh:
        pinned = json.load(fh)
    now = json.loads(json.dumps(surface()))  # tuples as lists, as in the file
    differences = _differences(pinned, now)
    assert not differences, (
        "the public API changed; if on purpose, run `python tests/test_public_api.py "
        "--update` and commit the snapshot:\n  " + "\n  ".join(differences[:40]))


def test_the_comparison_sees_a_removed_method():
    pinned = {"diffflow": {"names": {"Dataflow": {"members": {"advance": "method(self)"}}}}}
    assert _differences(pinned, {"diffflow": {"names": {"Dataflow": {"members": {}}}}}) == [
        "removed: diffflow.names.Dataflow.members.advance"]


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_public_api.py --update")
    with open(SNAPSHOT, "w", encoding="utf-8") as fh:
        json.dump(surface(), fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"wrote {SNAPSHOT}")
