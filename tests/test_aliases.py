"""Module paths from before the layered layout still import, with a DeprecationWarning.

``tests/fixtures/old_module_names.json`` lists every old module path and the public names it
had (read from the last commit of the old layout: its top-level definitions and the names
it imported from its own package); each must still resolve there.
"""
import importlib
import json
import sys
import warnings

import pytest

import diffflow as dd
from diffflow import _aliases
from tests.support.paths import FIXTURES

with open(FIXTURES / "old_module_names.json", encoding="utf-8") as _fh:
    OLD = json.load(_fh)


def _import_fresh(name: str):
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(name)
    return module, [w for w in caught if issubclass(w.category, DeprecationWarning)]


def test_every_old_module_is_covered():
    assert sorted(OLD) == sorted(_aliases.MOVED)


@pytest.mark.parametrize("old", sorted(OLD))
def test_an_old_path_imports_with_a_warning_and_keeps_its_names(old):
    module, caught = _import_fresh(old)
    new = _aliases.MOVED[old][0]
    assert any(f"{old} moved to {new}" in str(w.message) for w in caught), caught
    missing = [name for name in OLD[old] if not hasattr(module, name)]
    assert not missing, f"{old} lost {missing}"


def test_old_names_are_the_same_objects():
    collection, _ = _import_fresh("diffflow.collection")
    assert collection.Dataflow is dd.Dataflow
    assert collection.InputCollection is dd.InputCollection
    assert collection.count is dd.count
    parser, _ = _import_fresh("diffflow.dsl.parser")
    from diffflow.datalog.passes import parse_program
    assert parser.parse is parse_program  # the old parse expanded components too
    program = parser.parse(".comp C { .decl e(x: number) }\n.init c = C")
    assert [d.relation for d in program.declarations] == ["c.e"]


def test_the_warning_points_at_the_importing_line(tmp_path):
    import subprocess

    script = tmp_path / "user_code.py"
    script.write_text("import warnings\n"
                      "with warnings.catch_warnings(record=True) as caught:\n"
                      "    warnings.simplefilter('always')\n"
                      "    from diffflow.flow import Dataflow\n"
                      "moved = [w for w in caught if 'moved to' in str(w.message)]\n"
                      "print(moved[0].filename, moved[0].lineno, moved[0].message)\n")
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{script} 4 diffflow.flow moved to diffflow.api.flow")


def test_an_unknown_name_on_an_old_path_is_an_attribute_error():
    module, _ = _import_fresh("diffflow.flow")
    with pytest.raises(AttributeError, match="now 'diffflow.api.flow'"):
        module.no_such_name  # noqa: B018
