"""``python -m diffflow``: the same as the ``diffflow`` command."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
