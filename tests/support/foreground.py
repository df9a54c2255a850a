"""What a reference system's foreground ``start`` prints first (caplab.systems.foreground):
``listening 127.0.0.1:PORT``, then ``NAME {status json}``. Read here once, so a test that starts
pgpair or pgha as a process fails with the system's own stderr when the first line is not there."""

from __future__ import annotations

import json
import subprocess
from typing import Any


def read_started(proc: subprocess.Popen[str], name: str) -> tuple[int, dict[str, Any]]:
    """The port of the ``listening`` line and the status that followed it."""
    assert proc.stdout is not None
    listening = proc.stdout.readline()
    assert listening.startswith("listening "), proc.stderr.read() if proc.stderr else ""
    status: dict[str, Any] = json.loads(proc.stdout.readline().removeprefix(f"{name} "))
    return int(listening.strip().rsplit(":", 1)[1]), status
