"""``python -m caplab.systems.msgbus``: the supervisor (see supervisor.py)."""

from caplab.systems.msgbus.supervisor import main

if __name__ == "__main__":
    main()
