"""``python -m caplab.systems.pgha``: see cli.py."""

from caplab.systems.pgha.cli import main

if __name__ == "__main__":
    main()
