"""The supervisor: opens the queue, starts the receiver and a worker per channel, restarts what
dies, serves ``/metrics``.

Start: the database is opened (and its tables made) first, so an unreachable PostgreSQL fails the
start with the reason (exit 1) before any port opens; then the workers, then the receiver: a
message is acknowledged only once everything behind it is up. When ready it prints
``listening 127.0.0.1:<channel 0's port>``, then ``channels``, ``metrics``, ``out`` and ``db``
lines, and writes ``engine.json`` in the data dir (for ``rebuild-index`` and ``stop``).

A worker or the receiver that dies (a SIGKILL, an error) is restarted on the same channel and
ports after the counters of what it owned are re-read from the database. One that dies within a
second of starting is restarted after a pause that doubles from 0.25 s to 5 s (a database being
restarted, a failover); eight such deaths running, about 20 s, stop the engine (exit 1). SIGTERM or SIGINT
stops the receiver, then the workers (each finishes its batch), and exits 0. Every child dies with
the supervisor (child.py), so even a SIGKILLed supervisor leaves no orphans.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

from caplab.systems import counterfile
from caplab.systems.hl7 import counters, metrics
from caplab.systems.hl7.counters import RECEIVER_FIELDS, WORKER_FIELDS, Counters
from caplab.systems.hl7.postgres_queue import DEFAULT_SCHEMA, SCHEMA_ENV
from caplab.systems.hl7.queue import URL_ENV, ChannelCounts, QueueUnavailable, open_queue
from caplab.systems.hl7.settings import Settings, without_password
from caplab.systems.secrets import redact

PACKAGE = "caplab.systems.hl7"
ROLES = {"engine": "caplab.systems.hl7"}
"""Role → a command-line substring matching exactly the engine's processes (the supervisor, the
receiver, the workers). A PostgreSQL queue's processes are the ``db`` role, matched by whoever
runs that server (e.g. ``postgres:`` or pgpair's roles)."""
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
QUICK_DEATH_S = 1.0
QUICK_DEATHS = 8
FIRST_PAUSE_S = 0.25
LONGEST_PAUSE_S = 5.0
ENGINE_FILE = "engine.json"


class StartFailed(RuntimeError):
    """A process did not come up; the reason is in the message (its stderr is the engine's)."""


class Log:
    """The supervisor's messages go to stderr and, given ``--log-dir``, to ``hl7.log`` there,
    where the children's stderr goes too."""

    file: IO[str] | None = None

    @classmethod
    def open(cls, log_dir: Path | None) -> None:
        if log_dir is not None:
            log_dir.mkdir(parents=True, exist_ok=True)
            cls.file = open(log_dir / "hl7.log", "a", buffering=1)  # noqa: SIM115 (open for the run)


def log(message: str) -> None:
    line = f"hl7: {message}"
    print(line, file=sys.stderr, flush=True)
    if Log.file is not None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}", file=Log.file, flush=True)


@dataclass
class Child:
    name: str
    args: list[str]
    channel: int | None
    """The worker's channel; None for the receiver."""
    process: subprocess.Popen[str] | None = None
    started: float = 0.0
    quick_deaths: int = 0
    restart_at: float | None = None
    """When a dead process is to be started again."""
    ready: list[str] = field(default_factory=list)


class Supervisor:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.env = dict(os.environ)
        self.env[URL_ENV] = settings.db_url
        self.counters_path = settings.data_dir / "counters.bin"
        self.children: list[Child] = []
        self.stopping = threading.Event()

    def open(self) -> None:
        """The queue's tables, and the counters seeded from them (QueueUnavailable if it cannot)."""
        s = self.settings
        path = s.db_path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        q = open_queue(s.db_url, create=True)
        try:
            self.description = q.description
            counts = q.counts()
        finally:
            q.close()
        counterfile.create(self.counters_path, s.channels)
        self.counters = Counters(self.counters_path)
        self._seed(counts, range(s.channels), RECEIVER_FIELDS + WORKER_FIELDS)

    def reseed(self, channels: range | list[int], fields: tuple[counters.Field, ...]) -> None:
        """Re-reads what the database holds, on a connection of its own for the occasion (the
        supervisor keeps none open: a database restart or a killed connection cannot take it
        down); if the database is not there right now, the counters stay as they are."""
        try:
            q = open_queue(self.settings.db_url)
            try:
                counts = q.counts()
            finally:
                q.close()
        except Exception as e:  # best effort: the engine itself carries on regardless
            log(f"counters not re-read from the database: {redact(' '.join(str(e).split()))}")
            return
        self._seed(counts, channels, fields)

    def _seed(
        self,
        counts: dict[int, ChannelCounts],
        channels: range | list[int],
        fields: tuple[counters.Field, ...],
    ) -> None:
        for c in channels:
            if c in counts:
                self.counters.seed(c, counts[c], fields)

    def spawn(self, child: Child, lines: int) -> None:
        self.launch(child)
        self.await_ready(child, lines)

    def launch(self, child: Child) -> None:
        """Starts the child's process without waiting for it to be ready (``await_ready``)."""
        child.process = subprocess.Popen(
            [sys.executable, "-m", f"{PACKAGE}.{child.args[0]}", *child.args[1:], *self._common()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=Log.file,
            text=True,
            env=self.env,
        )
        child.started = time.monotonic()

    def await_ready(self, child: Child, lines: int) -> None:
        """Reads the child's ``lines`` ready lines; StartFailed if it exits or hangs first."""
        assert child.process is not None
        child.ready = _read_lines(child.process.stdout, lines, START_TIMEOUT_S)
        if len(child.ready) < lines:
            try:  # its stdout closed: it is exiting
                code: int | None = child.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            raise StartFailed(f"{child.name} " + (f"exited with code {code}" if code is not None else "hung"))

    def _common(self) -> list[str]:
        return ["--parent-pid", str(os.getpid()), "--counters", str(self.counters_path)]

    def start(self) -> list[str]:
        s = self.settings
        out = ["--out-dir", str(s.outputs)] if s.sink is None else ["--sink", s.sink]
        workers = [
            Child(f"worker {c}", ["worker", "--channel", str(c), "--batch", str(s.batch), *out], c)
            for c in range(s.channels)
        ]
        self.children.extend(workers)
        # All at once: each spends most of its start importing Python, and one after the other
        # they took about half a second each (two seconds for four channels) on every start.
        for worker in workers:
            self.launch(worker)
        for worker in workers:
            self.await_ready(worker, 1)
        ports = ",".join(str(p) for p in s.ports())
        drops = ["--drop-dir", str(s.drop_dir)] if s.drop_dir is not None else []
        repeats = ["--repeats", s.repeats]
        receiver = Child("receiver", ["receiver", *drops, *repeats, "--ports", ports], None)
        self.children.append(receiver)
        self.spawn(receiver, 2)
        # A restarted receiver listens on the same ports, even those picked free the first time.
        receiver.args[-1] = ",".join(a.rsplit(":", 1)[1] for a in receiver.ready[1].split()[1].split(","))
        return receiver.ready

    def watch(self) -> int:
        """Restarts what dies until stopped (0) or something keeps dying (1)."""
        while not self.stopping.wait(0.1):
            for child in self.children:
                assert child.process is not None
                code = child.process.poll()
                if code is None or self.stopping.is_set():
                    continue
                now = time.monotonic()
                if child.restart_at is None:
                    quick = now - child.started < QUICK_DEATH_S
                    child.quick_deaths = child.quick_deaths + 1 if quick else 0
                    if child.quick_deaths >= QUICK_DEATHS:
                        log(f"{child.name} keeps dying (exit code {code}); stopping the engine")
                        return 1
                    log(f"{child.name} (pid {child.process.pid}) exited with code {code}; restarting it")
                    pause = FIRST_PAUSE_S * 2 ** (child.quick_deaths - 1) if child.quick_deaths else 0.0
                    child.restart_at = now + min(pause, LONGEST_PAUSE_S)
                if now < child.restart_at:
                    continue
                child.restart_at = None
                if child.channel is None:
                    self.reseed(range(self.settings.channels), RECEIVER_FIELDS)
                else:
                    self.reseed([child.channel], WORKER_FIELDS)
                try:
                    self.spawn(child, 2 if child.channel is None else 1)
                except StartFailed as e:
                    log(f"{e}; will try again")
        return 0

    def shutdown(self) -> None:
        """The receiver first (no new acknowledgements), then the workers."""
        for group in (
            [c for c in self.children if c.channel is None],
            [c for c in self.children if c.channel is not None],
        ):
            live = [c.process for c in group if c.process is not None and c.process.poll() is None]
            for p in live:
                with contextlib.suppress(ProcessLookupError):
                    p.terminate()
            for p in live:
                try:
                    p.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    log(f"pid {p.pid} ignored SIGTERM; killing it")
                    p.kill()
                    p.wait()


def _read_lines(stream: IO[str] | None, n: int, timeout_s: float) -> list[str]:
    """Up to ``n`` lines from a child's stdout, giving up after ``timeout_s``."""
    assert stream is not None
    lines: list[str] = []

    def read() -> None:
        for _ in range(n):
            line = stream.readline()
            if not line:
                return
            lines.append(line.strip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout_s)
    return list(lines)


def run(settings: Settings) -> int:
    """The engine's whole life; the exit code."""
    supervisor = Supervisor(settings)

    def stop(signum: int, frame: FrameType | None) -> None:
        supervisor.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    Log.open(settings.log_dir)
    try:
        supervisor.open()
    except (QueueUnavailable, OSError) as e:
        log(f"cannot open the queue: {redact(str(e))}")
        return 1
    try:
        server = metrics.serve(settings.metrics_port, lambda: metrics.render(supervisor.counters))
    except OSError as e:
        log(f"cannot serve metrics on 127.0.0.1:{settings.metrics_port}: {e.strerror or e}")
        return 1
    engine_file = settings.data_dir / ENGINE_FILE
    try:
        ready = supervisor.start()
        metrics_url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        _announce(settings, supervisor, ready, metrics_url, engine_file)
        return supervisor.watch()
    except StartFailed as e:
        log(f"{e}; stopping")
        return 1
    finally:
        supervisor.shutdown()
        server.shutdown()
        engine_file.unlink(missing_ok=True)


def _announce(
    settings: Settings, sup: Supervisor, ready: list[str], metrics_url: str, engine_file: Path
) -> None:
    channels = ready[1].split()[1].split(",")
    described = redact(sup.description)
    info = {
        "pid": os.getpid(),
        "channels": channels,
        "metrics": metrics_url,
        "db": without_password(settings.db_url),
        "schema": os.environ.get(SCHEMA_ENV, DEFAULT_SCHEMA) if settings.postgres else None,
        "out": str(settings.outputs.resolve()) if settings.sink is None else None,
        "sink": settings.sink,
    }
    partial = engine_file.with_name(engine_file.name + ".partial")
    partial.write_text(json.dumps(info, indent=2) + "\n")
    partial.replace(engine_file)
    where = f"out {info['out']}" if settings.sink is None else f"sink {settings.sink}"
    print("\n".join([ready[0], ready[1], f"metrics {metrics_url}", where, f"db {described}"]), flush=True)
