"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
no port, no websocket library): open a page, wait for a condition, collect console errors and
uncaught exceptions, take screenshots, print to PDF.

Chromium reads commands on its fd 3 and writes replies and events on fd 4, each message one JSON
object ended by a NUL byte.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--remote-debugging-pipe",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
]
REPLY_TIMEOUT_S = 30.0


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _high(*fds: int) -> tuple[int, ...]:
    """The fds moved to 10 and up: dup2 onto 3 and 4 then always copies (a dup2 of an fd onto
    itself would keep its close-on-exec flag, and Chromium would find the pipe closed)."""
    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)
    for fd in fds:
        os.close(fd)
    return moved


class ChromiumError(RuntimeError):
    pass


@dataclass
class PageErrors:
    """What the page reported as errors: console.error calls, uncaught exceptions, error log entries."""

    console: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return [*self.console, *self.exceptions, *self.log]


class Chromium:
    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="caplab-chromium-")
        to_child_r, self._to_child = _high(*os.pipe())
        self._from_child, from_child_w = _high(*os.pipe())

        def plumb() -> None:  # runs in the child before exec: the pipes become its fds 3 and 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=plumb,
            close_fds=False,  # fds Python opens are not inheritable (PEP 446); 3 and 4 are the pipes
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self._pending: list[dict[str, Any]] = []
        """Events taken off the queue while waiting for another one, kept for ``errors``."""
        self._lock = threading.Lock()
        self._stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.session = ""

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        box = self._replies.get(message["id"])
                    if box is not None:
                        box.put(message)
                else:
                    self.events.put(message)

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = True) -> dict[str, Any]:
        """Sends a command (to the page's session unless ``session`` is False) and waits for its reply."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            box: queue.Queue[dict[str, Any]] = queue.Queue()
            self._replies[ident] = box
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        try:
            reply = box.get(timeout=REPLY_TIMEOUT_S)
        except queue.Empty:
            raise ChromiumError(
                f"no reply to {method} in {REPLY_TIMEOUT_S:g}s; stderr: {self.stderr()[-2000:]}"
            ) from None
        if "error" in reply:
            raise ChromiumError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def stderr(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    def open_page(self, width: int, height: int) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        attached = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        self.viewport(width, height)

    def viewport(self, width: int, height: int) -> None:
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        self.send("Emulation.setDeviceMetricsOverride", metrics)

    def navigate(self, url: str, timeout_s: float = 30.0) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", timeout_s)

    def wait_event(self, method: str, timeout_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        seen: list[dict[str, Any]] = []
        try:
            while time.monotonic() < deadline:
                try:
                    event = self.events.get(timeout=max(deadline - time.monotonic(), 0.01))
                except queue.Empty:
                    break
                seen.append(event)
                if event.get("method") == method:
                    return event
            raise ChromiumError(f"no {method} within {timeout_s:g}s")
        finally:
            for event in seen:  # keep the others for errors()
                if event.get("method") != method:
                    self._pending.append(event)

    def evaluate(self, expression: str) -> Any:
        reply = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in reply:
            raise ChromiumError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 30.0) -> Any:
        """Polls a JavaScript expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.1)
        raise ChromiumError(f"{expression} still false after {timeout_s:g}s")

    def errors(self) -> PageErrors:
        found = PageErrors()
        events = list(self._pending)
        self._pending.clear()
        while not self.events.empty():
            events.append(self.events.get_nowait())
        for e in events:
            params = e.get("params", {})
            if e.get("method") == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.console.append(
                    " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                )
            elif e.get("method") == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.exceptions.append(
                    str(details.get("exception", {}).get("description") or details.get("text"))
                )
            elif e.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                found.log.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}")
        return found

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.send("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def print_media(self, on: bool) -> None:
        self.send("Emulation.setEmulatedMedia", {"media": "print" if on else ""})

    def pdf(self, path: Path) -> Path:
        data = self.send("Page.printToPDF", {"printBackground": True, "preferCSSPageSize": True})["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        with contextlib.suppress(ChromiumError, OSError):
            self.send("Browser.close", session=False)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def browser_page(width: int, height: int) -> Iterator[Chromium]:
    """A headless Chromium with one page open at ``width`` × ``height``, for a test module's
    fixture to yield from; the test is skipped where Chromium is not installed, and fails
    instead under ``CAPLAB_REQUIRE_CHROMIUM=1`` (CI), where a missing browser is a broken setup."""
    binary = chromium_path()
    if binary is None:
        if os.environ.get("CAPLAB_REQUIRE_CHROMIUM") == "1":
            pytest.fail("chromium is not installed and CAPLAB_REQUIRE_CHROMIUM=1")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with Chromium(binary) as chromium:
        chromium.open_page(width, height)
        yield chromium
