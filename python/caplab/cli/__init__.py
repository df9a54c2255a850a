"""The command line: the only package that talks to the terminal (click, rich).

One module per command group — `load`, `run` (run, demo), `capacity` (find-capacity, fit-usl),
`store` (ls, show, export), `report`, `systems` — each imported when its command runs (see
`app.COMMANDS`); exit codes in `exits`, shared options in `options`, terminal output in
`render` (a load) and `progress` (a study).
"""

from caplab.cli.app import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
