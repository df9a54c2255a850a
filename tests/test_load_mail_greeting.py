"""A mail target that accepts the connection but does not greet: caplab load waits for the greeting
as long as the request timeout (a server still working through the last trial's queue greets late,
and a capacity search must see a slow trial, not a missing server), then stops with exit 1 and the
reason, without a run full of timeouts."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.studies import caplab


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port whose listener accepts connections and never says a word."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for conn in held:
        conn.close()


@pytest.mark.parametrize("scheme", ["smtp", "imaps"])
def test_a_server_that_never_greets_is_waited_for_the_request_timeout_then_named(
    silent_port: int, scheme: str, tmp_path: Path
) -> None:
    """6 s: longer than the 5 s the greeting was once held to whatever the timeout. Over implicit
    TLS (IMAPS: the access proxy) the handshake is awaited as long: a proxy still tearing down the
    last trial's thousands of sessions answered after the 5 + 15 s a TLS target had been given,
    and failed a whole search cell as unreachable."""
    url = f"{scheme}://127.0.0.1:{silent_port}"
    passwords = tmp_path / "passwords"
    passwords.write_text("user1:secret\n")
    login = ["--insecure", "--password-file", str(passwords)] if scheme == "imaps" else []
    done = caplab("load", url, "-n", "1", "--timeout", "6s", *login, timeout=60)
    assert done.returncode == 1, done.stderr
    assert f"127.0.0.1:{silent_port}: no greeting within 6.0 s, the request timeout" in done.stderr
    assert "Traceback" not in done.stderr
