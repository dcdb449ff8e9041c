"""``python -m diffflow``: the same as the ``diffflow`` command."""
import sys

if __name__ == "__main__":
    try:
        from diffflow.cli import main  # Ctrl-C while importing is as quiet as Ctrl-C while running
        status = main()
    except KeyboardInterrupt:
        print("diffflow: interrupted", file=sys.stderr)
        status = 128 + 2
    sys.exit(status)
