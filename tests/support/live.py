"""Watching a run's live page (``--web 0``) as a browser would: the command started with its
stderr read line by line (the page's address is its first line), and the page's event stream read
with a plain HTTP client."""

from __future__ import annotations

import http.client
import json
import queue
import re
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.servers import default_sigint

LIVE_LINE = re.compile(r"^live: (http://127\.0\.0\.1:(\d+)/)$")


@dataclass
class LiveRun:
    """A caplab command run with ``--web 0``: its process, its stderr as it comes, its page's address."""

    process: subprocess.Popen[str]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)
    stderr: list[str] = field(default_factory=list)
    url: str = ""
    port: int = 0

    def wait_for_page(self, timeout_s: float = 30.0) -> str:
        """The address caplab printed, waiting for the line."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    break
                continue
            if found := LIVE_LINE.match(line.rstrip("\n")):
                self.url, self.port = found.group(1), int(found.group(2))
                return self.url
        raise AssertionError(f"no `live:` line within {timeout_s:g}s; stderr: {''.join(self.stderr)[-3000:]}")

    def finish(self, timeout_s: float = 60.0) -> tuple[str, str]:
        """Waits for the command; its stdout and the whole stderr."""
        out = self.process.stdout.read() if self.process.stdout else ""
        self.process.wait(timeout=timeout_s)
        time.sleep(0.1)  # the reader thread takes stderr's last lines
        return out, "".join(self.stderr)


def start(command: Sequence[str | Path], cwd: Path | None = None) -> LiveRun:
    process = subprocess.Popen(
        [str(c) for c in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        preexec_fn=default_sigint,
    )
    run = LiveRun(process)

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            run.stderr.append(line)
            run.lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return run


@dataclass(frozen=True)
class Event:
    name: str
    data: dict[str, Any]


def events(port: int, timeout_s: float = 60.0) -> Iterator[Event]:
    """The page's server-sent events, as they come, until the server ends the stream."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        connection.request("GET", "/events", headers={"Accept": "text/event-stream"})
        reply = connection.getresponse()
        assert reply.status == 200 and reply.getheader("Content-Type") == "text/event-stream"
        name, data = "message", ""
        for raw in reply:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data += line.removeprefix("data: ")
            elif not line and data:
                yield Event(name, json.loads(data))
                name, data = "message", ""
    finally:
        connection.close()


def until_done(port: int, timeout_s: float = 60.0) -> list[Event]:
    """Every event up to and with the ``done`` one."""
    seen: list[Event] = []
    for event in events(port, timeout_s):
        seen.append(event)
        if event.name == "done":
            break
    return seen


def measured_throughputs(seen: list[Event]) -> list[float]:
    """Each measured (not warm-up) interval's throughput of a one-trial run: those in the first
    event (the state when the page connected), then those that came as events."""
    first, *rest = seen
    points: list[dict[str, Any]] = list(first.data["trial"]["intervals"]) if first.data.get("trial") else []
    points += [e.data["interval"] for e in rest if e.name == "interval"]
    return [float(p["throughput"]) for p in points if not p["warmup"]]
