"""``python -m caplab.systems.idsync``: the commands (see cli.py)."""

from caplab.systems.idsync.cli import main

if __name__ == "__main__":
    main()
