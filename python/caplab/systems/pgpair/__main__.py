"""``python -m caplab.systems.pgpair``: see cli.py."""

from caplab.systems.pgpair.cli import main

if __name__ == "__main__":
    main()
