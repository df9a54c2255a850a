"""`caplab load` against HTTPS: handshakes counted (one per connection with keep-alive, one per
request without, most of them resumed), certificates verified unless told otherwise."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support.tls_server import Pki, https_server, make_pki

SCHEMA = json.loads((Path(__file__).parent / "schema" / "load-result.schema.json").read_text())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def url(pki: Pki) -> Iterator[str]:
    with https_server(pki) as served:
        yield served


def caplab_load(cmd: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, "load", *args], capture_output=True, text=True, timeout=60, check=False)


def load_json(cmd: list[str], *args: str) -> dict[str, Any]:
    """Runs `caplab load ARGS --json` for one second on one thread; checks the object it printed."""
    p = caplab_load(cmd, *args, "--duration", "1s", "--threads", "1", "--json")
    assert p.returncode == 0, p.stderr
    result: dict[str, Any] = json.loads(p.stdout)
    jsonschema.validate(result, SCHEMA)
    assert result["errors"] == 0, result["errors_by_kind"]
    return result


@pytest.mark.slow
def test_keep_alive_pays_one_handshake_per_connection(caplab_cmd: list[str], url: str) -> None:
    r = load_json(caplab_cmd, url, "--insecure", "--users", "2")
    g = r["generator"]
    assert r["completed"] > 50
    assert g["connections_opened"] == 2
    assert g["tls_handshakes"] == 2 and g["tls_resumed"] == 0


@pytest.mark.slow
def test_without_keep_alive_handshakes_per_second_follow_requests(caplab_cmd: list[str], url: str) -> None:
    r = load_json(caplab_cmd, url, "--insecure", "--users", "2", "-H", "Connection: close")
    g = r["generator"]
    assert r["completed"] > 20
    assert abs(g["tls_handshakes"] - r["completed"]) <= 2, "one handshake per request"
    assert g["tls_handshakes_per_s"] == pytest.approx(r["throughput"], rel=0.1, abs=2)
    assert g["tls_resumed"] >= g["tls_handshakes"] // 2, "later connections resume the server's session"


@pytest.mark.slow
def test_no_tls_resume_pays_a_full_handshake_every_time(caplab_cmd: list[str], url: str) -> None:
    r = load_json(caplab_cmd, url, "--insecure", "--no-tls-resume", "--users", "1", "-H", "Connection: close")
    g = r["generator"]
    assert r["completed"] > 10 and g["tls_handshakes"] >= r["completed"] - 1
    assert g["tls_resumed"] == 0


def test_an_untrusted_certificate_exits_1_and_says_what_to_do(caplab_cmd: list[str], url: str) -> None:
    p = caplab_load(caplab_cmd, url, "--users", "1", "--duration", "1s")
    assert p.returncode == 1
    assert "invalid peer certificate" in p.stderr and "UnknownIssuer" in p.stderr
    assert "--insecure" in p.stderr and "--cacert" in p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""


@pytest.mark.slow
def test_the_test_ca_given_with_cacert_is_trusted(caplab_cmd: list[str], url: str, pki: Pki) -> None:
    r = load_json(caplab_cmd, url, "--cacert", str(pki.ca_file), "--users", "1")
    assert r["completed"] > 20 and r["generator"]["tls_handshakes"] == 1


@pytest.mark.slow
def test_the_summary_shows_handshakes(caplab_cmd: list[str], url: str) -> None:
    p = caplab_load(caplab_cmd, url, "--insecure", "--users", "1", "--duration", "1s", "-t", "1")
    assert p.returncode == 0, p.stderr
    assert "TLS: 1 handshakes" in p.stdout and "0 resumed" in p.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["http://127.0.0.1:9/", "--insecure"], "apply to https:// and tls:// targets"),
        (["http://127.0.0.1:9/", "--no-tls-resume"], "apply to https:// and tls:// targets"),
        (["https://127.0.0.1:9/", "--insecure", "--cacert", "ca.pem"], "not both"),
        (["https://127.0.0.1:9/", "--cacert", "/nonexistent/ca.pem"], "no such file"),
        (["tls://127.0.0.1:9"], "tls:// targets need --framing"),
    ],
)
def test_tls_options_that_make_no_sense_exit_2(caplab_cmd: list[str], args: list[str], message: str) -> None:
    p = caplab_load(caplab_cmd, *args, "--users", "1")
    assert p.returncode == 2
    assert message in p.stderr
