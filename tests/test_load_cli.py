"""`caplab load` as a user runs it: the installed command in a subprocess, against real servers."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from caplab.systems.process import RunningServer, start_module
from support.scrape import scrape_while
from support.servers import KnownServer, RecordingHttpServer, ResponseStyle, default_sigint, served_requests
from support.studies import free_port

SCHEMA = json.loads((Path(__file__).parent / "schema" / "load-result.schema.json").read_text())


def caplab(cmd: list[str], *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout, check=False)


def load_json(cmd: list[str], *args: str) -> dict[str, Any]:
    """Runs `caplab load ARGS --json`, checks it succeeded quietly and printed one valid object."""
    p = caplab(cmd, "load", *args, "--json")
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 1, "--json prints exactly one line: the result object"
    result: dict[str, Any] = json.loads(lines[0])
    jsonschema.validate(result, SCHEMA)
    return result


# --- failures and their exit codes -----------------------------------------------------------------


def test_unreachable_target_exits_1_with_the_reason(caplab_cmd: list[str], closed_port: int) -> None:
    p = caplab(caplab_cmd, "load", f"http://127.0.0.1:{closed_port}/", "--rate", "10", "--duration", "1s")
    assert p.returncode == 1
    assert "connection refused" in p.stderr
    assert f"127.0.0.1:{closed_port}" in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rate", "10", "--users", "2"], "not both"),
        (["--rate", "10", "--duration", "xyz"], "'xyz' is not a duration"),
        (["--rate", "10", "--duration", "0"], "duration_s: must be > 0"),
        (["--rate", "10", "--interval", "0s"], "interval_s: must be > 0"),
        (["--rate", "0"], "--rate"),
        (["--users", "0"], "--users"),
        (["--rate", "10", "--think", "100ms"], "--think applies to the closed model"),
        (["--ramp-to", "100"], "--ramp-to needs --rate"),
        (["--rate", "10", "--steps", "100:1s"], "--rate or --steps, not both"),
        (["--steps", "100"], "RATE:DURATION"),
        (["--steps", "100:soon"], "'soon' is not a duration"),
        (["--rate", "10", "-H", "no colon"], "must look like 'Name: value'"),
        (["--rate", "10", "--body", "x", "--body-file", "/dev/null"], "--body or --body-file, not both"),
        (["--rate", "10", "--body-file", "/nonexistent/body.xml"], "--body-file /nonexistent/body.xml"),
        (["--rate", "10", "--framing", "line"], "--framing applies to tcp:// targets"),
        (["--rate", "10", "--schedule", "bursty"], "--schedule"),
        (["--rate", "10", "--action", "kill it"], "expected AT:COMMAND"),
        (["--rate", "10", "--action", "soon:kill it"], "'soon' is not a duration"),
        (["--rate", "10", "-d", "5s", "--action", "9s:true"], "9s is after the load ends (5s)"),
    ],
)
def test_bad_arguments_exit_2_naming_the_problem(
    caplab_cmd: list[str], closed_port: int, args: list[str], message: str
) -> None:
    # The port is closed: reaching the network would exit 1, so exit 2 proves the check came first.
    p = caplab(caplab_cmd, "load", f"http://127.0.0.1:{closed_port}/", *args)
    assert p.returncode == 2, p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr


def test_tcp_target_without_framing_exits_2(caplab_cmd: list[str], closed_port: int) -> None:
    p = caplab(caplab_cmd, "load", f"tcp://127.0.0.1:{closed_port}", "--rate", "10")
    assert p.returncode == 2
    assert "tcp:// targets need --framing line|u32|mllp" in p.stderr


# --- output ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_json_output_of_an_open_run_matches_the_schema(
    caplab_cmd: list[str], plain_server: RunningServer
) -> None:
    url = f"http://{plain_server.address}/"
    r = load_json(caplab_cmd, url, "--rate", "200", "--duration", "1s", "--connections", "50")
    assert r["target"] == url and r["model"] == "open"
    assert r["offered_rate"] == 200 and r["users"] is None and r["max_in_flight"] == 50
    assert r["sent"] == pytest.approx(200, abs=1) and r["completed"] == r["sent"]
    assert r["errors"] == 0 and r["errors_by_kind"] == {} and r["dropped"] == 0
    assert r["latency_ms"]["count"] == r["completed"] and r["latency_ms"]["p99"] is not None
    assert r["intervals"] and r["intervals"][0]["index"] == 0
    assert r["generator"]["lateness_p99_ms"] is not None and r["interrupted"] is False


@pytest.mark.slow
def test_json_output_of_a_closed_run_has_no_offered_rate(
    caplab_cmd: list[str], plain_server: RunningServer
) -> None:
    r = load_json(caplab_cmd, f"http://{plain_server.address}/", "--users", "2", "--duration", "1s")
    assert r["model"] == "closed" and r["offered_rate"] is None and r["users"] == 2
    assert r["max_in_flight"] is None and r["generator"]["lateness_p99_ms"] is None
    assert r["completed"] > 0 and r["errors"] == 0
    # The schema is only worth committing if it catches a broken result.
    del r["service_time_ms"]["p999"]
    with pytest.raises(jsonschema.ValidationError, match="'p999' is a required property"):
        jsonschema.validate(r, SCHEMA)
    r["service_time_ms"]["p999"] = None
    r["offered_rate"] = 100.0
    with pytest.raises(jsonschema.ValidationError, match=r"100\.0 is not of type 'null'"):
        jsonschema.validate(r, SCHEMA)


@pytest.mark.slow
def test_http_errors_are_reported_by_kind(caplab_cmd: list[str], known_server: KnownServer) -> None:
    server = known_server("--status", "503")
    r = load_json(caplab_cmd, f"http://{server.address}/", "--rate", "50", "--duration", "1s")
    assert r["errors_by_kind"] == {"http_5xx": r["sent"]} and r["completed"] == 0


@pytest.mark.slow
def test_text_summary_states_what_was_offered_and_achieved(
    caplab_cmd: list[str], plain_server: RunningServer
) -> None:
    url = f"http://{plain_server.address}/"
    p = caplab(caplab_cmd, "load", url, "--rate", "100", "--duration", "1s")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert url in out and "100/s offered" in out
    for word in (
        "sent",
        "completed",
        "errors",
        "dropped",
        "throughput",
        "latency",
        "service time",
        "generator:",
    ):
        assert word in out
    assert "saturated" not in out


# --- options reach the engine ------------------------------------------------------------------------


@pytest.mark.slow
def test_steps_become_a_staircase_of_rates(caplab_cmd: list[str], plain_server: RunningServer) -> None:
    r = load_json(caplab_cmd, f"http://{plain_server.address}/", "--steps", "100:1s,300:1s")
    assert r["offered_rate"] == pytest.approx(200)
    assert [i["sent"] for i in r["intervals"] if i["sent"]] == [
        pytest.approx(100, abs=3),
        pytest.approx(300, abs=3),
    ]


@pytest.mark.slow
def test_warmup_is_flagged_and_excluded(caplab_cmd: list[str], plain_server: RunningServer) -> None:
    r = load_json(
        caplab_cmd, f"http://{plain_server.address}/", "--rate", "200", "--warmup", "1s", "--duration", "1s"
    )
    assert r["warmup_s"] == 1.0 and r["sent"] == pytest.approx(200, abs=2)
    assert [i["warmup"] for i in r["intervals"] if i["sent"]] == [True, False]


@pytest.mark.slow
def test_post_with_a_template_body(
    caplab_cmd: list[str], http_recorder: Callable[[ResponseStyle], RecordingHttpServer]
) -> None:
    server = http_recorder("length")
    r = load_json(
        caplab_cmd,
        server.url + "/orders",
        "-m",
        "post",
        "-H",
        "Content-Type: text/xml",
        "--body",
        '<order id="{seq}"/>',
        "--template",
        "--rate",
        "50",
        "--duration",
        "1s",
    )
    assert r["completed"] == len(server.requests) == r["sent"]
    bodies = {req.body for req in server.requests}
    assert len(bodies) == len(server.requests), "each request carries its own sequence number"
    for req in server.requests:
        assert (req.method, req.path, req.headers["Content-Type"]) == ("POST", "/orders", "text/xml")
        assert req.body.startswith(b'<order id="') and req.body[11:-3].isdigit()


@pytest.mark.slow
def test_mllp_payload_from_a_file(caplab_cmd: list[str], known_server: KnownServer, tmp_path: Path) -> None:
    server = known_server("--protocol", "mllp")
    message = tmp_path / "adt.hl7"
    message.write_text("MSH|^~\\&|caplab|lab|||20240101||ADT^A01|{seq}|P|2.5\rPID|1||{seq}\r")
    r = load_json(
        caplab_cmd,
        f"tcp://{server.address}",
        "--framing",
        "mllp",
        "--body-file",
        str(message),
        "--template",
        "--rate",
        "100",
        "--duration",
        "1s",
    )
    assert r["sent"] == pytest.approx(100, abs=1)
    assert r["completed"] == r["sent"] and r["errors"] == 0


@pytest.mark.slow
def test_ctrl_c_stops_the_run_and_keeps_the_results(caplab_cmd: list[str], known_server: KnownServer) -> None:
    server = known_server()
    p = subprocess.Popen(
        [*caplab_cmd, "load", f"http://{server.address}/", "--rate", "100", "--duration", "20s", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        deadline = time.monotonic() + 15
        while served_requests(server) < 50 and time.monotonic() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert "Traceback" not in err
    r = json.loads(out)
    jsonschema.validate(r, SCHEMA)
    assert r["interrupted"] is True
    assert 50 <= r["sent"] < 2000
    assert r["duration_s"] < 15


@pytest.mark.slow
def test_an_action_mid_run_and_the_loads_recovery_from_it(caplab_cmd: list[str]) -> None:
    """The server frozen for half a second at 1 s: about 0.5 s with no completion, nothing failed
    (the requests only waited), and the rate after as before — the answer known by construction."""
    with start_module("caplab.systems.knownserver", "--cpu-us", "0") as server:
        pid = server.process.pid
        freeze = f"1s:kill -STOP {pid}; sleep 0.5; kill -CONT {pid}"
        result = load_json(
            caplab_cmd, f"http://{server.address}/", "--rate", "200", "-d", "3s", "--interval", "100ms",
            "--action", freeze,
        )  # fmt: skip
    [entry] = result["actions"]
    assert entry["action"]["exit_code"] == 0 and entry["action"]["started_s"] == pytest.approx(1.0, abs=0.1)
    load = entry["load"]
    assert load["disrupted"] and load["failed"] == 0 and result["errors"] == 0
    assert load["unavailable_s"] == pytest.approx(0.5, abs=0.25)
    assert load["after_ratio"] == pytest.approx(1.0, abs=0.15)


@pytest.mark.slow
def test_the_live_figures_are_served_in_prometheus_format(
    caplab_cmd: list[str], plain_server: RunningServer
) -> None:
    """Scraped while the load runs: the counters grow with the load and never pass what the run
    reports at its end; the offered rate and a latency percentile are there."""
    port = free_port()
    url = f"http://{plain_server.address}/"
    run = subprocess.Popen(
        [*caplab_cmd, "load", url, "--rate", "200", "-d", "3s", "--metrics-port", str(port), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen = scrape_while(run, port, "caplab_requests_completed_total", 200, timeout=10)
    out, err = run.communicate(timeout=30)
    assert run.returncode == 0, err
    result = json.loads(out)
    assert 200 <= seen["caplab_requests_completed_total"] <= result["completed"]
    assert seen["caplab_offered_rate"] == 200.0
    assert "caplab_latency_ms{quantile=0.99}" in seen


def test_a_metrics_port_in_use_is_a_usage_error(caplab_cmd: list[str], plain_server: RunningServer) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = caplab(
            caplab_cmd, "load", f"http://{plain_server.address}/", "--rate", "10", "--metrics-port", str(port)
        )
    assert p.returncode == 2 and f"--metrics-port {port}" in p.stderr, p.stderr
