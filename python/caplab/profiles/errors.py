"""What goes wrong when the kernel's mechanisms are applied, and the one way tools are run."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence


class ProfileError(RuntimeError):
    """A profile could not be applied or removed; the message names the mechanism and the cause."""


def run_tool(argv: Sequence[str], what: str, *, check: bool = True, timeout: float = 30.0) -> str:
    """Run ``argv`` (ip, tc, losetup, mount …) and return its stdout; a failure raises
    ``ProfileError`` naming ``what`` was being done and the tool's own message."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError as exc:
        raise ProfileError(f"{what}: {argv[0]} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise ProfileError(f"{what}: {' '.join(argv)} did not finish within {timeout:g}s") from exc
    if check and done.returncode != 0:
        message = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
        raise ProfileError(f"{what}: {' '.join(argv)}: {message}")
    return done.stdout
