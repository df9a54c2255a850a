"""Child processes for the benchmarks: kernel-measured generator runs and the nginx target."""

import http.client
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

NGINX_STARTUP_TIMEOUT_S = 10.0
NGINX_STOP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ProcessRun:
    """What one tool run printed, and what it cost according to the kernel (wait4 rusage)."""

    argv: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    timed_out: bool


def pinned(cpu: int, argv: Sequence[str]) -> list[str]:
    """Prefix argv with taskset; it execs in place, so wait4 still sees the tool's own pid."""
    return ["taskset", "-c", str(cpu), *argv]


class _Deadline:
    """Kills a child that outlives its time budget, never signalling a pid already reaped."""

    def __init__(self, pid: int, timeout_s: float) -> None:
        self._pid = pid
        self._lock = threading.Lock()
        self._exited = False
        self.fired = False
        self._timer = threading.Timer(timeout_s, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._exited:
                os.kill(self._pid, signal.SIGKILL)
                self.fired = True

    def disarm(self) -> None:
        """Called once the child has exited but before it is reaped, so its pid cannot be reused."""
        with self._lock:
            self._exited = True
        self._timer.cancel()


def run_measured(argv: Sequence[str], timeout_s: float) -> ProcessRun:
    """Run argv to completion and take CPU time and peak RSS from wait4 on its own pid.

    Output goes to temporary files rather than pipes, so the harness does no work (and needs no
    reader threads) while the tool runs.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = _Deadline(proc.pid, timeout_s)
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        deadline.disarm()
        _, status, usage = os.wait4(proc.pid, 0)
        wall_s = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        return ProcessRun(
            argv=tuple(argv),
            exit_code=proc.returncode,
            stdout=_read_all(out),
            stderr=_read_all(err),
            wall_s=wall_s,
            cpu_s=usage.ru_utime + usage.ru_stime,
            peak_rss_mb=usage.ru_maxrss / 1024.0,  # Linux reports ru_maxrss in KiB
            timed_out=deadline.fired,
        )


def _read_all(file: IO[bytes]) -> str:
    """Rewind a temporary output file and decode it leniently (tools may print odd bytes)."""
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


NGINX_CONF = """\
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 16384;
pid {tmp}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""


@dataclass(frozen=True)
class NginxTarget:
    """The running benchmark target: where to send traffic and how it was started."""

    url: str
    command: tuple[str, ...]
    config: str


@contextmanager
def nginx_target(nginx_bin: str, cpu: int) -> Iterator[NginxTarget]:
    """Serve a fixed "ok" from one nginx worker pinned to one CPU, on a free loopback port."""
    with tempfile.TemporaryDirectory(prefix="caplab-bench-nginx-") as tmp_name:
        tmp = Path(tmp_name)
        port = _free_loopback_port()
        config = NGINX_CONF.format(tmp=tmp, port=port)
        (tmp / "nginx.conf").write_text(config)
        conf_path = tmp / "nginx.conf"
        argv = pinned(cpu, [nginx_bin, "-p", str(tmp), "-c", str(conf_path), "-e", "stderr"])
        log_path = tmp / "nginx.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            try:
                _wait_until_serving(proc, port, log_path)
                yield NginxTarget(f"http://127.0.0.1:{port}/", tuple(argv), config)
            finally:
                _stop(proc)


def _free_loopback_port() -> int:
    """Ask the kernel for an unused loopback port, so parallel runs never collide on a fixed one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_serving(proc: "subprocess.Popen[bytes]", port: int, log_path: Path) -> None:
    """Poll until nginx answers 200, so no generator ever measures a server still starting up."""
    deadline = time.monotonic() + NGINX_STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with {proc.returncode}: {log_path.read_text()}")
        if _answers_ok(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nginx did not answer on port {port} within {NGINX_STARTUP_TIMEOUT_S} s")


def _answers_ok(port: int) -> bool:
    """One GET to the target; any connection error just means "not yet"."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
    try:
        conn.request("GET", "/")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _stop(proc: "subprocess.Popen[bytes]") -> None:
    """Fast shutdown (SIGTERM) of the nginx master and its worker; SIGKILL if it hangs."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=NGINX_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=NGINX_STOP_TIMEOUT_S)
