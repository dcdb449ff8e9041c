"""The package is a downward stack of layers (docs/ARCHITECTURE.md), and stays one.

``pyproject.toml`` declares the layers as import-linter contracts; :func:`test_layers` runs
them.  What a layers contract cannot see is checked here from the source, every ``import``
read (inside functions and under ``if TYPE_CHECKING:`` too: a type from a layer above is named
in a string annotation, not imported):

* no import circle anywhere, inside one package included;
* no private name (``_x``) and no private module imported (or read off an imported module)
  from another package;
* nothing imports the ``diffflow`` package itself, which imports everything: it is the face
  on top (``dd.cli`` loads the command's module on first use).
"""
import ast
import os
import subprocess
import sys

import networkx
import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PACKAGE = os.path.join(ROOT, "diffflow")


def _module_name(path: str, root: str = ROOT) -> str:
    name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _modules(folder: str = PACKAGE) -> dict:
    """``{module name: path}`` of every module under ``folder``."""
    found = {}
    for base, _dirs, files in os.walk(folder):
        for file in files:
            if file.endswith(".py"):
                path = os.path.join(base, file)
                found[_module_name(path, os.path.dirname(folder))] = path
    return found


class Import:
    """One imported name: ``source`` imports ``target`` (a module), taking ``name`` from it."""

    def __init__(self, source, target, name, line):
        self.source, self.target, self.name, self.line = source, target, name, line

    def __repr__(self):
        what = f"{self.target}.{self.name}" if self.name else self.target
        return f"{self.source}:{self.line} imports {what}"


def imports_of(module: str, path: str, modules: dict) -> list:
    """Every import of ``diffflow`` modules by ``module``, resolved to module names."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
    found = []

    def target_of(name):
        while name not in modules and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "diffflow":
                        found.append(Import(module, target_of(alias.name), None, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - child.level + 1])
                    origin = base + ("." + child.module if child.module else "")
                else:
                    origin = child.module or ""
                if origin.split(".")[0] != "diffflow":
                    continue
                for alias in child.names:
                    full = f"{origin}.{alias.name}"
                    if full in modules:
                        found.append(Import(module, full, None, child.lineno))
                    else:
                        found.append(Import(module, target_of(origin), alias.name,
                                            child.lineno))
            visit(child)

    visit(tree)
    return found


def module_attribute_reads(module: str, path: str, modules: dict) -> list:
    """``module.name`` reads in ``module`` of names of diffflow modules it imported (as
    :class:`Import` s: ``from diffflow.arrangements import columnar; columnar._trim``)."""
    bound = {}  # local name -> diffflow module it names
    for imp in imports_of(module, path, modules):
        if imp.name is None:
            bound[imp.target.rsplit(".", 1)[-1]] = imp.target
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    for node in ast.walk(tree):  # `import diffflow.x.y as z` binds z
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname and f"{node.module}.{alias.name}" in modules:
                    bound[alias.asname] = f"{node.module}.{alias.name}"
    return [Import(module, bound[node.value.id], node.attr, node.lineno)
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in bound]


def _all_attribute_reads() -> list:
    modules = _modules()
    return [read for module, path in sorted(modules.items())
            for read in module_attribute_reads(module, path, modules)]


def _all_imports() -> list:
    modules = _modules()
    return [imp for module, path in sorted(modules.items())
            for imp in imports_of(module, path, modules) if imp.target != imp.source]


def circles(imports) -> list:
    """The import circles: strongly connected components of more than one module."""
    graph = networkx.DiGraph((imp.source, imp.target) for imp in imports)
    return sorted(sorted(c) for c in networkx.strongly_connected_components(graph) if len(c) > 1)


def _package(module: str) -> str:
    return module.rsplit(".", 1)[0]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_crossings(imports) -> list:
    """Imports of a private name or module from outside the package that owns it."""
    bad = []
    for imp in imports:
        owner = _package(imp.target)
        inside = imp.source == owner or imp.source.startswith(owner + ".")
        private_module = any(_private(p) for p in imp.target.split(".")[1:])
        if not inside and (private_module or imp.name is not None and _private(imp.name)):
            bad.append(imp)
    return bad


@pytest.mark.slow
def test_no_import_circle():
    found = circles(_all_imports())
    assert not found, "import circles (docs/ARCHITECTURE.md says how to break one):\n" + \
        "\n".join(" -> ".join(c) for c in found)


@pytest.mark.slow
def test_no_private_name_crosses_a_package():
    bad = private_crossings(_all_imports() + _all_attribute_reads())
    assert not bad, "private names imported from another package (make them public there, " \
                    "or move the code that needs them):\n" + "\n".join(map(repr, bad))


@pytest.mark.slow
def test_nothing_imports_the_package_itself():
    bad = [imp for imp in _all_imports() if imp.target == "diffflow"]
    assert not bad, "`diffflow` imports every layer; import the module you need instead:\n" + \
        "\n".join(map(repr, bad))


def test_layers():
    linter = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    result = subprocess.run([linter, "--no-logo", "--no-cache", "pyproject.toml"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_the_checks_see_a_circle_a_private_name_and_a_deferred_import(tmp_path):
    package = tmp_path / "diffflow"
    (package / "low").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "low" / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text("from diffflow.low.b import f\n_x = 1\n")
    (package / "low" / "b.py").write_text("def f():\n    from diffflow.low import a\n")
    (package / "high.py").write_text("from diffflow.low.a import _x\n")
    (package / "side.py").write_text("from diffflow.low import a\n\ndef f():\n    return a._x\n")
    modules = _modules(str(package))
    imports = [imp for m, p in modules.items() for imp in imports_of(m, p, modules)]
    reads = [r for m, p in modules.items() for r in module_attribute_reads(m, p, modules)]
    assert circles(imports) == [["diffflow.low.a", "diffflow.low.b"]]
    assert [(i.source, i.name) for i in private_crossings(imports + reads)] == [
        ("diffflow.high", "_x"), ("diffflow.side", "_x")]


def test_an_annotations_only_import_counts_too(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("if TYPE_CHECKING:\n    from diffflow.high import X\n")
    found = imports_of("diffflow.m", str(path), {"diffflow.high": "", "diffflow.m": ""})
    assert [(i.target, i.name) for i in found] == [("diffflow.high", "X")]
