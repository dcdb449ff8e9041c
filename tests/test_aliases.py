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


def test_star_imports_from_old_paths_take_what_they_took():
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec("from diffflow.collection import *", namespace)
    assert namespace["Dataflow"] is dd.Dataflow and namespace["per_group"] is dd.per_group
    assert sorted(_aliases.OLD_ALL["diffflow.collection"]) == sorted(
        n for n in namespace if not n.startswith("__"))


def test_old_submodules_are_attributes_of_their_old_packages():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import diffflow.dsl
        from diffflow import pag
        import diffflow.runtime
        assert diffflow.dsl.ast.Program.__module__ == "diffflow.datalog.syntax.ast"
        assert pag.events.read_events.__module__ == "diffflow.runtime.events"
        assert diffflow.runtime.migrate.extract.__module__ == "diffflow.runtime.rescale.migrate"
        assert dd.memory.release.__module__ == "diffflow.common.memory"
    assert dd.graphs.col is dd.col  # the graph module's old neighbours


def test_dir_of_the_package_trips_no_warning():
    import subprocess

    code = ("import warnings; warnings.simplefilter('error'); import diffflow as dd\n"
            "names = dir(dd); print('flow' in names, 'graphs' in names)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.split() == ["False", "True"], result.stderr


@pytest.mark.slow
def test_an_old_folder_left_behind_does_not_hide_the_alias(tmp_path):
    """A checkout updated in place keeps ignored ``__pycache__`` folders of removed packages;
    Python would import such a folder as an empty namespace package."""
    import shutil
    import subprocess

    from tests.support.paths import REPO

    shutil.copytree(REPO / "diffflow", tmp_path / "diffflow",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "diffflow" / "dsl" / "__pycache__").mkdir(parents=True)
    code = "from diffflow.dsl import Program; print(Program.__module__)"
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                            text=True, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path),
                                                          "PATH": "/usr/bin:/bin"})
    assert result.stdout.strip() == "diffflow.datalog.program", result.stderr


def test_objects_pickled_by_the_old_layout_load_and_explain():
    import pickle

    with open(FIXTURES / "old_layout" / "explained.pkl", "rb") as fh:  # (made at 397f687)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old = pickle.load(fh)
    program = old["program"]
    program.insert("e", [(3, 4)]); program.remove("e", [(1, 2)]); program.commit()
    assert sorted(program.relation("p")) == [(2, 3), (2, 4), (3, 4)]
    assert sorted(program.explain("p", (2, 4)).inputs["e"]) == [(2, 3), (3, 4)]
    flow, a, b, out, live = old["flow"]
    a.insert([4]); b.insert([1]); flow.advance()
    assert sorted(out.snapshot()) == [(3,), (4,)]
    assert out.explain([(3,)]).inputs == {"a": {(3,): 1}}
    assert [(c.input, c.row, c.diff) for c in live.changes()] == [
        ("a", (1,), 1), (None, None, -1), ("a", (1,), -1)]
