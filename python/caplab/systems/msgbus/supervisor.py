"""Supervisor: starts the tiers as child processes in dependency order, watches them, serves /metrics.

Order: the stores (the master installs the subscriptions), the sink, the hosts, then receive: a
document is accepted only once everything behind it is up. When all are ready the supervisor
prints ``listening 127.0.0.1:<tcp port>`` first, then a line per other address. A host that dies
is reported on stderr and the others carry on (its claims expire and are taken over); if a store,
the sink or receive dies, everything is stopped and the supervisor exits 1. SIGTERM or SIGINT
stops receive first, then the hosts, the sink and the stores. Each tier dies with the supervisor
(``PR_SET_PDEATHSIG``, see caplab.systems.child), so not even a SIGKILL leaves orphans.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from caplab.systems import counterfile
from caplab.systems.counterfile import CounterFile
from caplab.systems.msgbus import metrics
from caplab.systems.msgbus.counters import Layout
from caplab.systems.msgbus.messagebox import STORE_URL_ENV

PACKAGE = "caplab.systems.msgbus"
MODULES = {
    "receive": "receive",
    "processing": "processing_host",
    "messagebox": "messagebox_server",
    "sink": "sink",
}
"""Role → the module each of its processes runs (``python -m caplab.systems.msgbus.<module>``)."""
ROLES: dict[str, str] = {role: f"msgbus.{module} " for role, module in MODULES.items()}
"""Role → a command-line substring that matches exactly that tier's processes: the module name
with the space that always follows it, so ``msgbus.receive `` matches no other module's name and
nothing of the supervisor's own ``-m caplab.systems.msgbus --hosts``."""
STOP_ORDER = ("receive", "processing", "sink", "messagebox")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 5.0


class StartFailed(RuntimeError):
    """A tier did not come up; its own message is already on stderr."""


@dataclass(frozen=True)
class Settings:
    hosts: int = 1
    stores: int = 1
    store_url: str | None = None
    data_dir: Path | None = None
    port: int = 7400
    http_port: int = 7401
    metrics_port: int = 7402
    sink_port: int = 7403
    store_port: int = 7410
    sink_log: Path | None = None
    lease_s: float = 5.0

    def check(self) -> None:
        if not 1 <= self.hosts <= 64:
            raise ValueError(f"--hosts must be 1…64, got {self.hosts}")
        if not 1 <= self.stores <= 32:
            raise ValueError(f"--stores must be 1…32, got {self.stores}")
        if not self.lease_s > 0:
            raise ValueError(f"--lease must be positive, got {self.lease_s}")
        if self.store_url is not None and not self.store_url.startswith(("postgresql://", "postgres://")):
            raise ValueError("--store-url must be a postgresql:// URL (SQLite is the default)")
        for name in ("port", "http_port", "metrics_port", "sink_port", "store_port"):
            if not 0 <= getattr(self, name) <= 65535:
                raise ValueError(f"--{name.replace('_', '-')} must be a port number (0: any free port)")


@dataclass
class Tier:
    role: str
    index: int
    process: asyncio.subprocess.Process

    @property
    def name(self) -> str:
        return {"processing": f"host {self.index}", "messagebox": f"store {self.index}"}.get(
            self.role, self.role
        )


def log(message: str) -> None:
    print(f"msgbus: {message}", file=sys.stderr, flush=True)


class Supervisor:
    def __init__(self, settings: Settings, data_dir: Path) -> None:
        self.settings = settings
        self.data_dir = data_dir
        self.layout = Layout(settings.stores, settings.hosts)
        self.counters_path = data_dir / "counters.bin"
        counterfile.create(self.counters_path, self.layout.slots)
        self.counters = CounterFile(self.counters_path)
        self.tiers: list[Tier] = []

    @property
    def hosts_alive(self) -> int:
        return sum(1 for t in self.tiers if t.role == "processing" and t.process.returncode is None)

    def exposition(self) -> str:
        return metrics.render(metrics.families(self.counters, self.layout, self.hosts_alive))

    async def launch(self, role: str, index: int, slot: int, *args: str, lines: int = 1) -> list[str]:
        """Starts one tier process and returns its ready lines (the first is ``listening …``)."""
        env = dict(os.environ)
        if role == "messagebox" and self.settings.store_url:
            env[STORE_URL_ENV] = self.settings.store_url
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            f"{PACKAGE}.{MODULES[role]}",
            *args,
            "--parent-pid",
            str(os.getpid()),
            "--counters",
            str(self.counters_path),
            "--slot",
            str(slot),
            stdout=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL,
            env=env,
        )
        tier = Tier(role, index, process)
        self.tiers.append(tier)
        assert process.stdout is not None
        ready = []
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                for _ in range(lines):
                    line = (await process.stdout.readline()).decode().strip()
                    if not line:
                        code = await process.wait()
                        raise StartFailed(f"{tier.name} exited with code {code} before it was ready")
                    ready.append(line)
        except TimeoutError:
            raise StartFailed(f"{tier.name} was not ready within {START_TIMEOUT_S:.0f} s") from None
        return ready

    async def start(self) -> list[str]:
        """Stores and sink (together), then the hosts, then receive: when receive's port accepts
        connections, everything behind it is up. Returns the ready lines."""
        s = self.settings
        sink_args = ["--port", str(s.sink_port)] + (["--log", str(s.sink_log)] if s.sink_log else [])
        *stores, (sink_line,) = await _all(
            [self._launch_store(i) for i in range(s.stores)]
            + [self.launch("sink", 0, Layout.SINK, *sink_args)]
        )
        store_list = ",".join(_address(lines[0]) for lines in stores)
        sink = _address(sink_line)
        await _all(
            self.launch(
                "processing",
                i,
                self.layout.host(i),
                "--index",
                str(i),
                "--stores",
                store_list,
                "--sink",
                sink,
            )
            for i in range(s.hosts)
        )
        receive_args = ["--port", str(s.port), "--http-port", str(s.http_port), "--stores", store_list]
        listening, http = await self.launch("receive", 0, Layout.RECEIVE, *receive_args, lines=2)
        return [listening, http, f"sink {sink}", f"stores {store_list}", f"hosts {s.hosts}"]

    def _launch_store(self, i: int) -> Coroutine[Any, Any, list[str]]:
        s = self.settings
        args = ["--index", str(i), "--port", str(s.store_port + i if s.store_port else 0)]
        args += ["--data-dir", str(self.data_dir), "--lease", str(s.lease_s)]
        return self.launch("messagebox", i, self.layout.store(i), *args, *(["--master"] if i == 0 else []))

    async def watch(self, stop: asyncio.Event) -> int:
        """Until stopped (0) or a tier other than a host exits (1)."""
        exits = {asyncio.create_task(t.process.wait()): t for t in self.tiers}
        stopping = asyncio.create_task(stop.wait())
        try:
            while True:
                done, _ = await asyncio.wait([stopping, *exits], return_when=asyncio.FIRST_COMPLETED)
                if stopping in done:
                    return 0
                for task in done:
                    tier = exits.pop(task)
                    pid, code = tier.process.pid, task.result()
                    if tier.role == "processing":
                        alive = self.hosts_alive
                        log(
                            f"{tier.name} (pid {pid}) exited with code {code}; carrying on with {alive} hosts"
                        )
                        continue
                    log(f"{tier.name} (pid {pid}) exited with code {code}; stopping msgbus")
                    return 1
        finally:
            stopping.cancel()
            for task in exits:
                task.cancel()

    async def shutdown(self) -> None:
        """SIGTERM, tier by tier in STOP_ORDER; SIGKILL whatever is still there after a while."""
        for role in STOP_ORDER:
            tiers = [t for t in self.tiers if t.role == role and t.process.returncode is None]
            for tier in tiers:
                with contextlib.suppress(ProcessLookupError):
                    tier.process.send_signal(signal.SIGTERM)
            for tier in tiers:
                try:
                    await asyncio.wait_for(tier.process.wait(), STOP_TIMEOUT_S)
                except TimeoutError:
                    log(f"{tier.name} (pid {tier.process.pid}) ignored SIGTERM; killing it")
                    with contextlib.suppress(ProcessLookupError):
                        tier.process.kill()
                    await tier.process.wait()


async def _all(launches: Iterable[Coroutine[Any, Any, list[str]]]) -> list[list[str]]:
    """Runs launches concurrently; raises the first failure once all have finished (so no launch
    is left running unobserved)."""
    results = await asyncio.gather(*launches, return_exceptions=True)
    ready = []
    for r in results:
        if isinstance(r, BaseException):
            raise r
        ready.append(r)
    return ready


def _address(listening_line: str) -> str:
    return listening_line.split()[1]


async def run(settings: Settings) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    supervisor: Supervisor | None = None

    def exposition() -> str:
        return supervisor.exposition() if supervisor is not None else ""

    try:
        server = await loop.create_server(
            lambda: metrics.MetricsConnection(exposition), "127.0.0.1", settings.metrics_port
        )
    except OSError as e:
        reason = "the port is in use" if e.errno == errno.EADDRINUSE else str(e)
        log(f"cannot serve metrics on 127.0.0.1:{settings.metrics_port}: {reason}")
        return 1
    metrics_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/metrics"
    data_dir = settings.data_dir or Path(tempfile.mkdtemp(prefix="msgbus-"))
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        supervisor = Supervisor(settings, data_dir)
        return await _supervise(supervisor, stop, metrics_url)
    finally:
        if supervisor is not None:
            await supervisor.shutdown()
        server.close()
        if settings.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)


async def _supervise(supervisor: Supervisor, stop: asyncio.Event, metrics_url: str) -> int:
    """Starts the tiers (unless stopped first), prints the addresses, watches until the end."""
    starting = asyncio.create_task(supervisor.start())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait([starting, stopping], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not starting.done():
        starting.cancel()
        log("stopped while starting")
        return 1
    try:
        lines = starting.result()
    except StartFailed as e:
        log(f"{e}; stopping")
        return 1
    lines.insert(2, f"metrics {metrics_url}")
    print("\n".join(lines), flush=True)
    return await supervisor.watch(stop)


def parse_args(argv: list[str] | None = None) -> Settings:
    p = argparse.ArgumentParser(
        prog="python -m caplab.systems.msgbus",
        description="msgbus: receive → MessageBox → hosts → sink, a reference messaging system (BizTalk's "
        "shape). Port 0 picks a free port; the first stdout line is 'listening 127.0.0.1:<tcp port>'.",
    )
    p.add_argument("--hosts", type=int, default=1, help="processing host processes")
    p.add_argument("--stores", type=int, default=1, help="MessageBox stores (store 0 is the master)")
    p.add_argument(
        "--store-url",
        default=os.environ.get(STORE_URL_ENV),
        help=f"PostgreSQL for the stores (schemas msgbus_store0…; default ${STORE_URL_ENV}; else SQLite)",
    )
    p.add_argument(
        "--data-dir", type=Path, default=None, help="SQLite files and counters (default: a temporary dir)"
    )
    p.add_argument("--port", type=int, default=7400, help="receive, framed TCP (u32)")
    p.add_argument("--http-port", type=int, default=7401, help="receive, HTTP POST /messages")
    p.add_argument("--metrics-port", type=int, default=7402, help="GET /metrics (Prometheus text)")
    p.add_argument("--sink-port", type=int, default=7403, help="the back-end sink")
    p.add_argument("--store-port", type=int, default=7410, help="first store server's port (then +1 each)")
    p.add_argument(
        "--sink-log", type=Path, default=None, help="the sink appends each new interchange id here"
    )
    p.add_argument("--lease", type=float, default=5.0, help="seconds a host's claim holds a message")
    a = p.parse_args(argv)
    settings = Settings(
        hosts=a.hosts,
        stores=a.stores,
        store_url=a.store_url or None,
        data_dir=a.data_dir,
        port=a.port,
        http_port=a.http_port,
        metrics_port=a.metrics_port,
        sink_port=a.sink_port,
        store_port=a.store_port,
        sink_log=a.sink_log,
        lease_s=a.lease,
    )
    try:
        settings.check()
    except ValueError as e:
        p.error(str(e))
    return settings


def main(argv: list[str] | None = None) -> None:
    settings = parse_args(argv)
    sys.exit(asyncio.run(run(settings)))
