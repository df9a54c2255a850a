"""The process exit codes of every caplab command, in one table.

A script reads them: 0 the work was done, 1 it could not be done or found a problem the message
explains (a target unreachable, cells failed, no capacity), 2 the command line or study file is
wrong, 3 an SLO given as a gate failed (`caplab load --slo`), 130 Ctrl-C (what was measured is
kept).
"""

from __future__ import annotations

OK = 0
FAILED = 1
"""Unreachable target, failed cells, no capacity found, a store that cannot be read."""
USAGE = 2
"""Bad arguments or a bad study file."""
SLO_FAILED = 3
"""The load ran and was measured, and an SLO given on the command line failed (or the generator
fell behind, so nothing was measured of the system): a CI gate's red, apart from an error (1) or a
wrong command (2)."""
INTERRUPTED = 130
"""Ctrl-C: 128 + SIGINT, as a shell reports it."""
