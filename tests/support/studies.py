"""Helpers for the study tests: the `caplab` command as a child process, study files written from
plain dicts, free loopback ports (one, or a run of them), and the knownserver command line a
study's SUT starts."""

from __future__ import annotations

import json
import random
import shlex
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

CAPLAB = Path(sys.executable).parent / "caplab"
RUN_TIMEOUT_S = 90.0


def free_port() -> int:
    """A loopback port nothing listens on (bound once to learn a free number, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def free_ports(n: int) -> int:
    """The first of ``n`` consecutive loopback ports nothing listens on, for a system that counts up
    from a base port (pgpair: node1 listens on node0's port + 1). Drawn below the kernel's ephemeral
    range, where no outgoing connection is given one, so that a node the system restarts (a killed
    primary rejoining) finds its port still free; each is bound once to check."""
    low, high = max(ephemeral_low() - 10_000, 1024), ephemeral_low() - n
    draw = random.SystemRandom()  # not the seeded module state: two workers would draw alike
    for _ in range(100):
        base = draw.randrange(low, high) if high > low else free_port()
        if base + n > 65535:
            continue
        try:
            for port in range(base, base + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no run of {n} free loopback ports")


def ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range, which outgoing connections are given."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def knownserver(port: int, *args: str) -> str:
    """The shell command that starts knownserver from this venv on `port`."""
    return shlex.join([sys.executable, "-m", "caplab.systems.knownserver", "--port", str(port), *args])


def knownserver_sut(port: int, *args: str, start: str | None = None) -> dict[str, Any]:
    """A study's ``sut:`` running knownserver on ``port`` (``start`` in its place when the test
    wraps it): ready once it listens, its processes the role ``server``."""
    return {
        "start": start if start is not None else f"exec {knownserver(port, *args)}",
        "ready": {"port": port, "timeout": "20s"},
        "roles": {"server": {"match": f"knownserver --port {port}"}},
    }


def write_study(path: Path, study: dict[str, Any]) -> Path:
    """Writes a study dict as YAML (keys in the order given) and returns its path."""
    path.write_text(yaml.safe_dump(study, sort_keys=False))
    return path


def on_free_ports(text: str, fixed: dict[str, tuple[int, ...]]) -> str:
    """A study file's fixed ports moved to free ones: each group (``{"pg": (7610, 7611), "etcd":
    (7630,)}``) to a free run of its own, two ports apart from the others (etcd's peer port is its
    client port + 1)."""
    bases: dict[str, int] = {}
    for name in fixed:
        bases[name] = next(
            b for b in iter(lambda: free_ports(2), None) if all(abs(b - o) > 1 for o in bases.values())
        )
    for name, ports in fixed.items():
        for k, port in enumerate(ports):
            text = text.replace(str(port), str(bases[name] + k))
    return text


def caplab(
    *args: str | Path, timeout: float = RUN_TIMEOUT_S, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs `caplab ARGS…` to completion with stdout and stderr captured, by default in a fresh
    scratch directory, removed after (so what it writes there — `caplab run`'s report — never
    lands in the checkout or stays behind)."""
    if cwd is None:
        with tempfile.TemporaryDirectory(prefix="caplab-cwd-") as scratch:
            return caplab(*args, timeout=timeout, cwd=Path(scratch))
    return subprocess.run(
        [str(CAPLAB), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_study(path: Path, directory: Path, name: str = "r", timeout: float = 600.0) -> dict[str, Any]:
    """`caplab run PATH` into ``directory/NAME.db`` with its report in ``directory/NAME/``: the
    report's results.json, once the run exited 0 (else its stderr's end as the failure)."""
    report = directory / name
    done = caplab("run", path, "--db", f"sqlite:///{directory / name}.db", "-o", report, timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    results: dict[str, Any] = json.loads((report / "results.json").read_text())
    return results


def json_out(done: subprocess.CompletedProcess[str]) -> Any:
    """The JSON document a command printed on stdout (the whole of stdout, nothing else)."""
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise AssertionError(
            f"stdout is not one JSON document: {e}\nstdout: {done.stdout[:2000]}\n"
            f"stderr: {done.stderr[-2000:]}"
        ) from e
