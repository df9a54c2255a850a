"""`caplab load --slo … --junit FILE`: one load as a CI gate. Against a server that sleeps 20 ms
serially per request (its latency known from outside caplab: every reply takes at least 20 ms), a
p99 bound of 15 ms must fail and one of 200 ms pass; the JUnit file, read back by a parser of its
own, carries each verdict; the exit codes tell a failed SLO (3) from an error (1) and a wrong
command (2)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from xml.dom import minidom

import pytest

from caplab.analysis.gate import GENERATOR_CHECK, gate_slos, judge_load
from caplab.engine import RunResult
from caplab.systems.process import RunningServer, start_module

SLEEP_MS = 20


@pytest.fixture(scope="module")
def sleepy() -> Iterator[RunningServer]:
    with start_module("caplab.systems.knownserver", "--cpu-us", "0", "--serial-sleep-ms", str(SLEEP_MS)) as s:
        yield s


def load(cmd: list[str], server: RunningServer, *args: str) -> subprocess.CompletedProcess[str]:
    url = f"http://{server.address}/"
    argv = [*cmd, "load", url, "--rate", "10", "-d", "2s", "--json", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.slow
def test_a_bound_below_the_known_latency_fails_with_exit_3_and_one_above_passes(
    caplab_cmd: list[str], sleepy: RunningServer, tmp_path: Path
) -> None:
    junit = tmp_path / "gate.xml"
    gates = ["--slo", "p99<=15ms", "--slo", "p99<=200ms", "--junit", str(junit)]
    p = load(caplab_cmd, sleepy, "--rate", "30", "-d", "4s", *gates)  # 120 replies: enough for a p99
    assert p.returncode == 3, p.stderr
    result = json.loads(p.stdout)
    measured = result["latency_ms"]["p99"]
    assert SLEEP_MS <= measured < 200
    verdicts = {v["slo"]: v for v in result["slo"]}
    assert not verdicts["p99<=15ms"]["passed"] and verdicts["p99<=15ms"]["observed"] == measured
    assert verdicts["p99<=200ms"]["passed"]
    assert verdicts[GENERATOR_CHECK]["passed"]
    assert "FAIL  p99<=15ms" in p.stderr

    doc = minidom.parse(str(junit))
    suites = doc.getElementsByTagName("testsuites")[0]
    assert (suites.getAttribute("tests"), suites.getAttribute("failures")) == ("3", "1")
    cases = {c.getAttribute("name"): c for c in doc.getElementsByTagName("testcase")}
    assert set(cases) == {"p99<=15ms", "p99<=200ms", GENERATOR_CHECK}
    failure = cases["p99<=15ms"].getElementsByTagName("failure")
    assert failure and f"{measured:.4g}ms fails <= 15ms" in failure[0].getAttribute("message")
    assert not cases["p99<=200ms"].getElementsByTagName("failure")


@pytest.mark.slow
def test_every_slo_met_exits_0(caplab_cmd: list[str], sleepy: RunningServer) -> None:
    p = load(caplab_cmd, sleepy, "--slo", "errors<=0.1%", "--slo", "throughput>=0.95*offered")
    assert p.returncode == 0, p.stderr
    assert all(v["passed"] for v in json.loads(p.stdout)["slo"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--slo", "cpu[db]<=75%"], "a load alone samples no resources; cpu needs the system's processes"),
        (["--slo", "p99<=fast"], "--slo"),
        (["--junit", "x.xml"], "--junit writes the --slo verdicts: give at least one --slo"),
        (["--slo", "p99<=1s", "--cluster", "local"], "--slo judges a load on this machine"),
    ],
)
def test_a_gate_that_cannot_be_judged_exits_2(caplab_cmd: list[str], args: list[str], message: str) -> None:
    p = subprocess.run(
        [*caplab_cmd, "load", "http://127.0.0.1:9/", "--rate", "10", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert message in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_a_generator_that_fell_behind_fails_the_gate_whatever_the_latency(
    caplab_cmd: list[str], sleepy: RunningServer
) -> None:
    p = load(caplab_cmd, sleepy)
    assert p.returncode == 0, p.stderr
    run_result = RunResult.from_json(p.stdout)  # the engine's own result, as `--json` prints it
    late = dataclasses.replace(
        run_result,
        generator=dataclasses.replace(
            run_result.generator, saturated=True, saturation_reason="sends 40 ms late"
        ),
    )
    slos = gate_slos(["p99<=10s"])
    on_time = judge_load(slos, run_result)
    behind = judge_load(slos, late)
    assert [v.passed for v in on_time] == [True, True]
    assert [v.passed for v in behind] == [True, False]
    assert behind[1].reason == f"{GENERATOR_CHECK}: no, sends 40 ms late: not a measurement of the system"
