"""`caplab systems`: the catalogue lists what ships, and `start` runs a system in the foreground as
its own process (so a study's role matcher sees the system's command line, not caplab's)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import psutil

from caplab.collect.prometheus import parse_exposition

CAPLAB = Path(sys.executable).parent / "caplab"


def caplab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CAPLAB), *args], capture_output=True, text=True, timeout=30, check=False)


def test_list_names_each_system_and_what_it_stands_in_for() -> None:
    done = caplab("systems", "list", "--json")
    assert done.returncode == 0, done.stderr
    systems = {s["name"]: s for s in json.loads(done.stdout)}
    assert {"msgbus", "pgpair", "knownserver"} <= set(systems)
    assert "BizTalk" in systems["msgbus"]["stands_in_for"]
    assert systems["msgbus"]["module"] == "caplab.systems.msgbus"
    table = caplab("systems", "list")
    assert "msgbus" in table.stdout and "caplab systems start msgbus" in table.stdout


def test_an_unknown_system_is_a_usage_error() -> None:
    done = caplab("systems", "start", "biztalk")
    assert done.returncode == 2
    known = "msgbus, pgpair, knownserver, idsync, hl7, mail, pgha"
    assert f"no reference system 'biztalk' (known: {known})" in done.stderr


def test_start_runs_msgbus_in_the_foreground_until_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            str(CAPLAB),
            "systems",
            "start",
            "msgbus",
            "--hosts",
            "2",
            "--stores",
            "1",
            "--data-dir",
            str(tmp_path),
            "--port",
            "0",
            "--http-port",
            "0",
            "--metrics-port",
            "0",
            "--sink-port",
            "0",
            "--store-port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("listening 127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        metrics_line = next(line for line in iter(proc.stdout.readline, "") if line.startswith("metrics "))
        with urllib.request.urlopen(metrics_line.split()[1], timeout=5) as reply:
            values = parse_exposition(reply.read().decode())
        assert values["msgbus_hosts"] == 2
        # exec: the process caplab started *is* the supervisor, with the tiers as its children.
        me = psutil.Process(proc.pid)
        assert "caplab.systems.msgbus" in " ".join(me.cmdline())
        tiers = me.children(recursive=True)
        assert sum("msgbus.processing_host " in " ".join(c.cmdline()) + " " for c in tiers) == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in tiers)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
