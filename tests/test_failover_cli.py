"""`caplab failover` as a user runs it, against a real HTTP server: Ctrl-C keeps what was measured
(exit 130) and kills the action it interrupted, and a command line that cannot say when to act or
what to measure is refused before any load (exit 2). The PostgreSQL pair's failovers are in
tests/systems/test_pgpair_failover_cli.py."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from support.servers import KnownServer, default_sigint


@pytest.mark.slow
def test_ctrl_c_keeps_the_results_and_kills_the_running_action(
    caplab_cmd: list[str], known_server: KnownServer, tmp_path: Path
) -> None:
    server = known_server()
    command = [
        *caplab_cmd, "failover", f"http://{server.address}/", "--rate", "100", "-d", "30s",
        "--action", "touch started; sleep 60; touch finished", "--at", "500ms", "--json",
    ]  # fmt: skip
    p = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 15
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    result = json.loads(out)
    assert result["interrupted"] is True and result["completed"] > 0
    action = result["failover"]["action"]
    assert action["started_s"] is not None and action["exit_code"] == -9, action
    assert not (tmp_path / "finished").exists()
    assert result["failover"]["errors"] == {"by_kind": {}, "first_words": {}}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--action", "true"], "say when to run the action: --at TIME, --when CONDITION or --after steady"),
        (["--action", "true", "--at", "1s", "--after", "steady"], "say when to run the action"),
        (["--action", "true", "--when", "p99 > soon"], "'soon' is not a latency with a unit"),
        (
            ["--action", "true", "--at", "12s", "-d", "10s"],
            "Invalid value for --at: 12s is after the load ends (10s)",
        ),
        (["--action", "true", "--at", "1s", "--ledger"], "--ledger applies to postgresql:// targets"),
    ],
)
def test_a_command_line_that_cannot_run_is_refused_before_any_load(
    caplab_cmd: list[str], args: list[str], expected: str
) -> None:
    # Nothing listens on port 9 (discard): any load would fail to connect, exit 1, not 2.
    p = subprocess.run(
        [*caplab_cmd, "failover", "http://127.0.0.1:9/", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert p.returncode == 2, p.stderr
    assert expected in " ".join(p.stderr.split()), p.stderr
