"""The benchmark target: one nginx worker on loopback, plain HTTP and HTTPS (a self-signed ECDSA
P-256 certificate made for the run, TLS sessions resumable), and its request/connection counters."""

import http.client
import re
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from procs import pinned, tree_cpu_s

STARTUP_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
STATUS_PATH = "/nginx_status"

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
        location = {status_path} {{ stub_status; }}
        location / {{ return 200 "ok\\n"; }}
    }}
    server {{
        listen 127.0.0.1:{tls_port} ssl;
        ssl_certificate {tmp}/server.pem;
        ssl_certificate_key {tmp}/server.key;
        ssl_session_cache shared:SSL:10m;
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""


@dataclass(frozen=True)
class ServerCounters:
    """nginx's own totals: a check on a tool's request count, and the connections it opened."""

    accepted_connections: int
    requests: int
    cpu_s: float  # user+sys of the nginx master and worker

    def since(self, before: "ServerCounters") -> "ServerCounters":
        """Traffic between two readings, less the one status request and connection of the later."""
        return ServerCounters(
            self.accepted_connections - before.accepted_connections - 1,
            self.requests - before.requests - 1,
            self.cpu_s - before.cpu_s,
        )


@dataclass(frozen=True)
class NginxTarget:
    """The running benchmark target: where to send traffic and how it was started."""

    url: str
    https_url: str
    command: tuple[str, ...]
    config: str
    port: int
    pid: int

    def counters(self) -> ServerCounters:
        """Read stub_status; its request count includes this request, hence since()'s -1."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5.0)
        try:
            conn.request("GET", STATUS_PATH)
            body = conn.getresponse().read().decode()
        finally:
            conn.close()
        found = re.search(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s*$", body, re.MULTILINE)
        if found is None:
            raise RuntimeError(f"unexpected stub_status output: {body!r}")
        return ServerCounters(int(found.group(1)), int(found.group(3)), tree_cpu_s(self.pid))


@contextmanager
def nginx_target(nginx_bin: str, cpu: int) -> Iterator[NginxTarget]:
    """Serve a fixed "ok" from one nginx worker pinned to one CPU, on a free loopback port."""
    with tempfile.TemporaryDirectory(prefix="caplab-bench-nginx-") as tmp_name:
        tmp = Path(tmp_name)
        port, tls_port = _free_loopback_port(), _free_loopback_port()
        _self_signed_certificate(tmp)
        config = NGINX_CONF.format(tmp=tmp, port=port, tls_port=tls_port, status_path=STATUS_PATH)
        (tmp / "nginx.conf").write_text(config)
        conf_path = tmp / "nginx.conf"
        argv = pinned(cpu, [nginx_bin, "-p", str(tmp), "-c", str(conf_path), "-e", "stderr"])
        log_path = tmp / "nginx.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            try:
                _wait_until_serving(proc, port, log_path)
                url, https_url = f"http://127.0.0.1:{port}/", f"https://127.0.0.1:{tls_port}/"
                yield NginxTarget(url, https_url, tuple(argv), config, port, proc.pid)
            finally:
                _stop(proc)


def _self_signed_certificate(directory: Path) -> None:
    """server.pem and server.key for localhost and 127.0.0.1: the generators take it with
    their --insecure switches, so what is measured is TLS, not certificate paths."""
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    files = ["-keyout", str(directory / "server.key"), "-out", str(directory / "server.pem")]
    names = ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"]
    subprocess.run(
        ["openssl", "req", "-x509", *key, *files, "-days", "2", *names], check=True, capture_output=True
    )


def _free_loopback_port() -> int:
    """Ask the kernel for an unused loopback port, so parallel runs never collide on a fixed one."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_serving(proc: "subprocess.Popen[bytes]", port: int, log_path: Path) -> None:
    """Poll until nginx answers 200, so no generator ever measures a server still starting up."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with {proc.returncode}: {log_path.read_text()}")
        if _answers_ok(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nginx did not answer on port {port} within {STARTUP_TIMEOUT_S} s")


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
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT_S)
