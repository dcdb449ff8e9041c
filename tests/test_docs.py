"""The documents the code relies on live in the repository, and what cites them resolves.

Every mention of a Markdown document (``EXPLAIN.md §5``, ``docs/PAG.md``, ``README.md``) in
the package, the tests, the benchmarks, the README and the docs must name a file of the
repository, and a cited section must be a numbered heading of it.  ``docs/ARCHITECTURE.md``
must describe every package and list the layers in the order ``pyproject.toml`` enforces.
(The documents' examples run as doctests: ``--doctest-glob`` in ``pyproject.toml``.)
"""
import os
import re
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ["diffflow", "tests", "bench", "queries", "examples", "README.md", "docs", ".ci"]
# a document: a name ending in .md, maybe after a folder; a section: § and a number
CITATION = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)(?:`{0,2}\)?,? ?§ ?(\d+(?:\.\d+)*))?")


def _files():
    for entry in SCANNED:
        path = os.path.join(ROOT, entry)
        if os.path.isfile(path):
            yield path
            continue
        for base, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "venv", ".pytest_cache")]
            for name in files:
                if name.endswith((".py", ".md", ".dl", ".toml", ".txt")) or name == "run":
                    yield os.path.join(base, name)


def citations(text: str) -> list:
    """``[(document, section or None)]`` cited in ``text``.

    >>> citations("see EXPLAIN.md §5 and docs/PAG.md, or ``RESCALE.md`` §6.3")
    [('EXPLAIN.md', '5'), ('docs/PAG.md', None), ('RESCALE.md', '6.3')]
    """
    return [(m.group(1), m.group(2)) for m in CITATION.finditer(text)]


def _resolve(document: str, citing: str):
    """The repository file a citation names: relative to the citing file, the repository
    root, or ``docs/``."""
    for base in (os.path.dirname(citing), ROOT, os.path.join(ROOT, "docs")):
        path = os.path.normpath(os.path.join(base, document))
        if os.path.isfile(path) and path.startswith(ROOT):
            return path
    return None


def _sections(path: str) -> set:
    with open(path, encoding="utf-8") as fh:
        return {m.group(1) for m in re.finditer(r"^#+\s+(\d+(?:\.\d+)*)[.\s]", fh.read(), re.M)}


def dangling() -> list:
    found = []
    for path in _files():
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for number, line in enumerate(text.splitlines(), 1):
            for document, section in citations(line):
                where = f"{os.path.relpath(path, ROOT)}:{number}"
                target = _resolve(document, path)
                if target is None:
                    found.append(f"{where}: {document} is not a file of the repository")
                elif section is not None and section not in _sections(target):
                    found.append(f"{where}: {os.path.relpath(target, ROOT)} has no section "
                                 f"{section}")
    return found


@pytest.mark.slow
def test_every_cited_document_and_section_exists():
    found = dangling()
    assert not found, "citations that do not resolve:\n" + "\n".join(found)


# a path of the repository named in text: a folder of ours, then more of the path
PATH = re.compile(r"(?<![\w./-])((?:diffflow|tests|bench|queries|docs|data|examples)/[\w./-]*\w)")
GENERATED = ("bench/out",)  # written by the benchmarks, git-ignored


def missing_paths() -> list:
    """Paths of the repository named in the scanned files that do not exist (a path after
    "Soufflé" names a file of Soufflé's repository, not ours)."""
    found = []
    for path in _files():
        if os.path.relpath(path, ROOT).startswith(os.path.join("tests", "fixtures")):
            continue
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        for number, line in enumerate(lines, 1):
            for m in PATH.finditer(line):
                ref = m.group(1)
                if ref.startswith(GENERATED) or "Soufflé" in line[:m.start()]:
                    continue
                if any(c in ref for c in "*<>{}") or os.path.exists(os.path.join(ROOT, ref)):
                    continue
                found.append(f"{os.path.relpath(path, ROOT)}:{number}: {ref}")
    return found


def test_every_path_named_exists():
    found = missing_paths()
    assert not found, "paths of the repository that are not there:\n" + "\n".join(found)


def test_the_check_sees_a_dangling_citation(tmp_path):
    assert _resolve("NOWHERE" + ".md", str(tmp_path / "x.py")) is None
    assert _resolve("ARCHITECTURE.md", os.path.join(ROOT, "diffflow", "x.py")) is not None
    assert "4" in _sections(os.path.join(ROOT, "docs", "ARCHITECTURE.md"))
    assert "99" not in _sections(os.path.join(ROOT, "docs", "ARCHITECTURE.md"))


def _architecture() -> str:
    with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md"), encoding="utf-8") as fh:
        return fh.read()


def test_the_architecture_describes_every_package():
    packages = sorted(os.path.relpath(base, ROOT).replace(os.sep, ".")
                      for base, _dirs, files in os.walk(os.path.join(ROOT, "diffflow"))
                      if "__init__.py" in files)
    text = _architecture()
    missing = [p for p in packages if p != "diffflow" and
               f"`{p.removeprefix('diffflow.')}`" not in text and
               f"{p.rsplit('.', 1)[-1]}/" not in text]
    assert not missing, f"docs/ARCHITECTURE.md does not describe {missing}"


def _enforced_layers() -> list:
    """The package-wide layers contract of ``pyproject.toml``, top first, names flattened."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
        text = fh.read()
    contract = text[text.index('id = "layers"'):]
    block = contract[contract.index("layers = ["):contract.index("]")]
    return [name.strip().removeprefix("diffflow.") for layer in re.findall(r'"([^"]+)"', block)
            for name in layer.split("|")]


def test_the_architecture_lists_the_enforced_layers_in_order():
    enforced = _enforced_layers()
    diagram = _architecture().split("```")[1]
    shown = []
    for line in diagram.splitlines():
        names = re.split(r"\s{2,}", line.strip())[0]
        shown += [n.strip().removesuffix(".py").removesuffix("/") for n in names.split("|")]
    shown = [s for s in shown if s in enforced]
    assert shown == enforced, f"the diagram's order {shown} is not the contract's {enforced}"
