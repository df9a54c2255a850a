"""``python -m caplab.systems.mail``: see cli.py."""

from caplab.systems.mail.cli import main

if __name__ == "__main__":
    main()
