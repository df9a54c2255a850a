"""The report tests' study files and what the session fixture hands them (conftest.py builds it
once per session with `caplab run`, about 35 s):

- study 1, ``report-scaleout``: knownserver processes sharing a port (``workers`` 1, 2, 3), 3 ms
  of CPU per request, a capacity search in every cell — capacities, limits, a scaling fit;
- study 2, ``report-fixed`` (the latest): two fixed-load cells and one whose SUT fails, quoting a
  connection string with a password.

The first report is the one `caplab run` writes at its end; the second is written again with
`caplab report latest`, as a user would.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.studies import caplab, free_port, knownserver, write_study

__all__ = [
    "CPU_US",
    "DSN",
    "PASSWORD",
    "STUDY_TIMEOUT_S",
    "WORKERS",
    "Built",
    "Written",
    "caplab",
    "fixed_study",
    "free_port",
    "scaleout_study",
    "write_report_cli",
    "write_study",
]

PASSWORD = "s3cret-Pw"
DSN = f"postgresql://app:{PASSWORD}@db.example/orders"
WORKERS = [1, 2, 3]
CPU_US = 3000
STUDY_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class Written:
    """One report as `caplab report` wrote it."""

    done: subprocess.CompletedProcess[str]
    directory: Path
    results: dict[str, Any]

    @property
    def html(self) -> str:
        return (self.directory / "index.html").read_text(encoding="utf-8")

    @property
    def markdown(self) -> str:
        return (self.directory / "report.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Built:
    db_url: str
    tmp: Path
    scaleout: Written
    fixed: Written


def scaleout_study(port: int) -> dict[str, Any]:
    server = knownserver(port, "--reuse-port", "--cpu-us", str(CPU_US))
    return {
        "name": "report-scaleout",
        "description": "knownserver processes sharing one port, 3 ms of CPU per request",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {
            "start": f"for i in $(seq {{workers}}); do {server} & done; wait",
            "ready": {"port": port, "timeout": "20s"},
            "roles": {"server": {"match": f"knownserver --port {port} --reuse-port"}},
        },
        "factors": {"workers": WORKERS},
        "load": {"duration": "1s", "warmup": "300ms"},
        "slo": ["p99<=100ms"],
        # The coarsest precision (50 %): a search of four trials (150 passing, 300 failing, 225,
        # the confirmation), where 20 % took five or six; no test reads the capacities' values.
        "search": {"precision": "50%", "trial": "500ms", "repeats": 1, "start": 150},
        # The workers scale over the whole host's cores: not the default placement's one CPU.
        "isolation": "shared",
    }


def fixed_study(port: int) -> dict[str, Any]:
    return {
        "name": "report-fixed",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": {
            "start": "{start}",
            "ready": {"port": port, "timeout": "10s"},
            "roles": {"server": {"match": f"knownserver --port {port} --cpu-us"}},
        },
        "factors": {
            "zip": {
                "case": ["light", "heavy", "broken"],
                "start": [
                    f"exec {knownserver(port, '--cpu-us', '500')}",
                    f"exec {knownserver(port, '--cpu-us', '2500')}",
                    f"echo connecting to {DSN}; exit 3",
                ],
            }
        },
        "load": {"rate": 200, "duration": "1s", "warmup": "300ms", "repeat": 2},
        "slo": ["p99<=100ms"],
    }


def write_report_cli(db_url: str, ref: str, out: Path) -> Written:
    done = caplab("report", ref, "-o", out, "--db", db_url)
    assert done.returncode == 0, done.stderr
    return Written(done, out, json.loads((out / "results.json").read_text(encoding="utf-8")))
