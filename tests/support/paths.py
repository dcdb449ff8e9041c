"""Where the tests' files are: the repository, its fixtures, queries and data.

>>> (FIXTURES / "public_api.json").is_file(), (QUERIES / "README.md").exists() or QUERIES.is_dir()
(True, True)
"""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
QUERIES = REPO / "queries"
DATA = REPO / "data"
