"""``python -m caplab.systems.hl7``: the engine and its operations (see cli.py)."""

from caplab.systems.hl7.cli import main

if __name__ == "__main__":
    main()
