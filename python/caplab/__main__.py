"""`python -m caplab` runs the CLI."""

from caplab.cli import main

main()
