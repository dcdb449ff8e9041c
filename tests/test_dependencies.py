"""Every import of the package and its tests is declared, so a fresh install can run them.

CI installs into a fresh virtual environment, which catches an undeclared import there; this
test catches it on a developer's machine too, where the package may happen to be installed.
The library may import only its own dependencies; the tests may also import the ``test`` extra.
One module of the library may import the ``bench`` extra: ``diffflow/bench/peers.py``, the
peers ``diffflow bench graphs --peers`` measures, imported only when asked for and installed.
"""
import ast
import importlib.metadata as metadata
import os
import re
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..")


# files that may import an extra besides the dependencies: {path from the root: extras}
OPTIONAL = {os.path.join("diffflow", "bench", "peers.py"): ("bench",)}


def _top_level_imports(folder, skip=()):
    """``{module: first "file:line" importing it}`` for absolute imports under ``folder``
    (a folder or one file), files in ``skip`` (paths from the root) left out."""
    found = {}
    walk = [(os.path.dirname(folder), [], [os.path.basename(folder)])] \
        if os.path.isfile(folder) else os.walk(folder)
    for base, _dirs, files in walk:
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(base, name)
            if os.path.relpath(path, ROOT) in skip:
                continue
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    found.setdefault(top, f"{os.path.relpath(path, ROOT)}:{node.lineno}")
    return found


def _declared_modules(extras=()):
    """Import names provided by diffflow's declared requirements (plus the given extras)."""
    try:
        requirements = metadata.requires("diffflow") or []
    except metadata.PackageNotFoundError:  # pragma: no cover - the README installs it
        pytest.fail("diffflow is not installed; run pip install -e \".[test]\" as the README says")
    wanted = set()
    for requirement in requirements:
        name, _, marker = requirement.partition(";")
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if extra is None or extra.group(1) in extras:
            wanted.add(_normalise(re.split(r"[<>=!~\[ ]", name.strip(), maxsplit=1)[0]))
    provided = set()
    for module, distributions in metadata.packages_distributions().items():
        if any(_normalise(d) in wanted for d in distributions):
            provided.add(module)
    # a requirement not installed here (the bench extra in CI's fresh environment) provides
    # the module of its own name, which is what scipy and duckdb do
    provided |= {name.replace("-", "_") for name in wanted}
    return wanted, provided


def _normalise(distribution):
    return re.sub(r"[-_.]+", "-", distribution).lower()




@pytest.mark.slow
@pytest.mark.parametrize("folder,extras", [("diffflow", ()), ("tests", ("test",))]
                         + [(path, extras) for path, extras in OPTIONAL.items()])
def test_every_import_is_declared(folder, extras):
    wanted, provided = _declared_modules(extras)
    allowed = set(sys.stdlib_module_names) | provided | {"diffflow"}
    allowed.add("tests")  # the tests' own package: helpers in tests/support, shared cases
    skip = () if folder in OPTIONAL else tuple(OPTIONAL)
    imports = _top_level_imports(os.path.join(ROOT, folder), skip)
    undeclared = {m: where for m, where in imports.items() if m not in allowed}
    extra = " or the [test] extra" if extras else ""
    assert not undeclared, (f"imports not provided by the dependencies in pyproject.toml{extra} "
                            f"({', '.join(sorted(wanted))}): {undeclared}")


def test_the_check_sees_an_undeclared_import(tmp_path):
    (tmp_path / "uses_it.py").write_text("def f():\n    import surely_not_a_dependency\n")
    assert _top_level_imports(str(tmp_path)) == {"surely_not_a_dependency": _rel(tmp_path)}
    _wanted, provided = _declared_modules(("test",))
    assert "surely_not_a_dependency" not in provided
    assert {"numpy", "lark", "pytest", "hypothesis", "networkx"} <= provided


def _rel(tmp_path):
    return f"{os.path.relpath(os.path.join(tmp_path, 'uses_it.py'), ROOT)}:2"
