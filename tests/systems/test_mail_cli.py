"""The mail system as a user meets it: `caplab systems start mail` in the foreground until SIGTERM,
`status` and `stop` from other processes, and nothing left behind — no process, no listener, no
socket or pid file."""

from __future__ import annotations

import json
import os
import shutil
import signal
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

CAPLAB = Path(sys.executable).parent / "caplab"
MODULE = [sys.executable, "-m", "caplab.systems.mail"]

pytestmark = pytest.mark.usefixtures("mail_packages")


@pytest.fixture
def home() -> Iterator[Path]:
    """A directory the servers' unprivileged user may enter (pytest's tmp_path is 0700)."""
    directory = Path(tempfile.mkdtemp(prefix="caplab-test-mail-cli-"))
    directory.chmod(0o755)
    yield directory
    subprocess.run([*MODULE, "stop", "--data-dir", str(directory / "work")], capture_output=True, check=False)
    shutil.rmtree(directory, ignore_errors=True)


def mail(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MODULE, *args], capture_output=True, text=True, timeout=120, check=False)


def started(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    listening = proc.stdout.readline()
    line = proc.stdout.readline()
    if not line.startswith("mail "):
        proc.kill()
        raise AssertionError(f"did not start: {listening}{line}{proc.communicate()[1]}")
    status: dict[str, Any] = json.loads(line.removeprefix("mail "))
    assert listening == f"listening 127.0.0.1:{status['ports']['smtp']}\n"
    return status


def assert_nothing_left(status: dict[str, Any], work: Path) -> None:
    pids = [pid for role in status["roles"].values() for pid in role["pids"]]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    assert not [pid for pid in pids if _alive(pid)]
    assert not [
        p.pid for p in psutil.process_iter(["cmdline"]) if str(work) in " ".join(p.info["cmdline"] or [])
    ]
    for port in status["ports"].values():
        if port:
            with socket.socket() as s:
                assert s.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still answers"
    assert not (work / "mailbox" / "run").exists() and not (work / "access" / "run").exists()
    assert not (work / "transport" / "queue" / "pid").exists()
    assert not (work / "transport" / "server.pid").exists()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.mark.slow
def test_start_runs_in_the_foreground_until_sigterm_and_leaves_nothing_running(home: Path) -> None:
    work, mail_dir = home / "work", home / "volume" / "mail"
    proc = subprocess.Popen(
        [
            str(CAPLAB),
            "systems",
            "start",
            "mail",
            "--users",
            "3",
            "--data-dir",
            str(work),
            "--mail-dir",
            str(mail_dir),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    status = started(proc)
    assert status["running"] == {"mailbox": True, "access": True, "transport": True}
    assert status["mail_dir"] == str(mail_dir) and status["users"] == 3
    passwords = Path(status["passwords_file"])
    assert passwords.stat().st_mode & 0o777 == 0o600
    assert not any(line.split(":", 1)[1] in json.dumps(status) for line in passwords.read_text().splitlines())
    with smtplib.SMTP("127.0.0.1", status["ports"]["smtp"], timeout=30) as smtp:
        smtp.sendmail("a@caplab.test", ["user3@caplab.test"], b"Subject: one\r\n\r\nbody\r\n")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list((mail_dir / "user3" / "new").glob("*")):
        time.sleep(0.1)
    assert len(list((mail_dir / "user3" / "new").iterdir())) == 1
    seen = json.loads(mail("status", "--data-dir", str(work), "--json").stdout)
    assert seen["messages_delivered"] == 1 and seen["ports"] == status["ports"]
    assert (
        "caplab_mail_messages_delivered 1\n" in mail("status", "--data-dir", str(work), "--prometheus").stdout
    )
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    assert_nothing_left(status, work)
    assert len(list((mail_dir / "user3" / "new").iterdir())) == 1  # mailboxes outlive a stop


@pytest.mark.slow
def test_a_detached_system_is_stopped_and_removed_from_another_process(home: Path) -> None:
    work = home / "work"
    proc = subprocess.Popen(
        [*MODULE, "start", "--users", "2", "--data-dir", str(work), "--no-tls", "--detach"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    status = started(proc)
    assert proc.wait(timeout=60) == 0
    assert status["ports"]["submission"] is None and status["ports"]["proxy_imaps"] is None
    assert all(status["running"].values())
    done = mail("stop", "--data-dir", str(work), "--remove")
    assert done.returncode == 0, done.stderr
    assert_nothing_left(status, work)
    assert not work.exists()


@pytest.mark.slow
def test_a_role_that_dies_stops_the_others_and_start_says_which(home: Path) -> None:
    work = home / "work"
    proc = subprocess.Popen(
        [*MODULE, "start", "--users", "1", "--data-dir", str(work)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    status = started(proc)
    os.kill(status["roles"]["access"]["pids"][0], signal.SIGKILL)  # the proxy's master, as in a crash
    assert proc.wait(timeout=60) == 1
    assert proc.stderr is not None
    assert proc.stderr.read() == f"mail: the access role stopped on its own (see its log under {work})\n"
    assert_nothing_left(status, work)


def test_bad_input_is_one_clear_line(home: Path) -> None:
    done = mail("status", "--data-dir", str(home / "nothing"))
    assert done.returncode == 1
    assert (
        done.stderr
        == f"mail: no mail system in {home / 'nothing'} (start one with --data-dir {home / 'nothing'})\n"
    )
    done = mail("start", "--users", "0", "--data-dir", str(home / "work"))
    assert done.returncode == 2 and "--users: must be at least 1 (got 0)" in done.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = mail("start", "--users", "1", "--data-dir", str(home / "work"), "--smtp-port", str(port))
    assert done.returncode == 1
    assert done.stderr == f"mail: port {port} (--smtp-port) is not free: Address already in use\n"
    private = home / "private"
    private.mkdir(mode=0o700)
    done = mail("start", "--users", "1", "--data-dir", str(home / "work"), "--mail-dir", str(private / "m"))
    assert done.returncode == 1
    assert done.stderr.startswith(f"mail: the mail servers' user cannot enter {private};")
