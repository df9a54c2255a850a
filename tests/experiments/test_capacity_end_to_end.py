"""`caplab find-capacity` against knownservers whose answer is known: CPU-bound on one thread (the
capacity is bounded by 1 / CPU per request and the limit is that CPU), sleeping while holding its
only thread (capacity ≈ 1 / sleep with the CPU idle: a software limit), and the closed model over
users with no SUT named (the limit is unknown). Searches are kept short: 1.5 s trials, 2 s
confirmations, two repeats, a start near the known answer, a precision no finer than the band
asserted needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.runs import SearchRun, find_capacity

pytestmark = pytest.mark.slow

SHORT = ["--trial", "1.5s", "--confirm", "2s", "--warmup", "0.5s", "--repeats", "2"]
SERIAL_SLEEP_MS = 10.0


@pytest.fixture(scope="module")
def cpu_bound(caplab_path: Path) -> SearchRun:
    # --start 300: the ceiling is ~445/s (2.25 ms of CPU a request), so the bracket is 300 / 600
    # in two trials, not 100 / 200 / 400 / 800 in four; a slower machine's first trial fails and
    # the bracket halves down to it. The bisection from it takes 3 trials (450, 375, 412) against
    # 4 from 400 / 800: three trials fewer, the answer still the search's own within 10 %, and the
    # band asserted (0.70-1.05 of the ceiling) as wide as before.
    return find_capacity(
        ["--cpu-us", "2000"], ["--slo", "p99<=200ms", "--precision", "10%", "--start", "300", *SHORT]
    )


@pytest.fixture(scope="module")
def serial(caplab_path: Path) -> SearchRun:
    # The band asserted is 80-100/s: a capacity above 1 / the sleep (100/s) is wrong. --start 90
    # (1.5 s at 90/s is 135 latencies, enough for a p99: see test_analysis_probe) brackets 90 / 110
    # (--max 110 caps the doubling), then bisects at --precision 10 %: 100, then 95 — four search
    # trials where 80 / 160 took six, two of them far overloaded (160, 120/s), their backlogs then
    # draining. A trial at exactly 100/s may pass, the queue's growth within its own noise (the
    # no-backlog check's tolerance, analysis/backlog.py): the answer is then 100/s, in the band. With
    # --max 100 such a pass ended the search "not found" (it did, once in four rehearsals). A slower
    # server fails at 90 and the bracket halves down to 45 / 90: an answer under 80 fails the band.
    return find_capacity(
        ["--serial-sleep-ms", f"{SERIAL_SLEEP_MS:g}"],
        ["--slo", "p99<=200ms", "--precision", "10%", "--start", "90", "--max", "110", *SHORT],
    )


@pytest.fixture(scope="module")
def closed(caplab_path: Path) -> SearchRun:
    return find_capacity(
        ["--serial-sleep-ms", f"{SERIAL_SLEEP_MS:g}"],
        # --start 4 users, near the answer (3-6): the bracket is 4 / 8 in two trials, not
        # 1 / 2 / 4 / 8 in four; a slower server fails at 4 and the bracket halves down to 2 / 4.
        ["--closed", "--slo", "p99<=60ms", "--precision", "10%", "--start", "4", *SHORT],
        with_pid=False,
    )


def check_document(doc: dict[str, Any], slo: str) -> None:
    for key in ("capacity_rps", "capacity_users", "ci95", "slo", "trials", "search_s", "limit"):
        assert key in doc, key
    assert slo in doc["slo"]
    assert doc["search_s"] > 0
    assert doc["trial_count"] == len(doc["trials"]) > 0
    for t in doc["trials"]:
        assert {"phase", "load", "passed", "reasons"} <= set(t)
        assert t["phase"] in ("bracket", "bisect", "confirm")
        assert t["passed"] == (t["reasons"] == [])
    phases = [t["phase"] for t in doc["trials"]]
    assert phases == sorted(phases, key=["bracket", "bisect", "confirm"].index)
    capacity = doc["capacity_users"] if doc["model"] == "closed" else doc["capacity_rps"]
    confirmed = [t for t in doc["trials"] if t["phase"] == "confirm" and t["load"] == capacity]
    assert len(confirmed) == 2 and all(t["passed"] for t in confirmed)


# --- CPU-bound: one thread burning 2 ms per request -------------------------------------------------


def test_cpu_bound_capacity_is_near_the_cpu_ceiling(cpu_bound: SearchRun) -> None:
    doc = cpu_bound.doc
    assert cpu_bound.returncode == 0, cpu_bound.stderr[-2000:]
    assert doc["found"] is True and doc["generator_saturated"] is False
    assert cpu_bound.cpu_ms_per_request >= 2.0, "each request burns 2 ms of CPU, plus the server's own"
    ceiling = cpu_bound.ceiling_rps
    assert 0.70 * ceiling <= doc["capacity_rps"] <= 1.05 * ceiling, (doc["capacity_rps"], ceiling)


def test_cpu_bound_json_document(cpu_bound: SearchRun) -> None:
    doc = cpu_bound.doc
    check_document(doc, "p99<=200ms")
    assert doc["model"] == "open"
    assert doc["capacity_users"] is None
    low, high = doc["ci95"]
    assert low <= doc["capacity_rps"] <= high
    failed_above = [t for t in doc["trials"] if not t["passed"] and t["load"] > doc["capacity_rps"]]
    assert failed_above, "a capacity is bracketed by a failing load above it"


def test_cpu_bound_limit_is_the_servers_cpu(cpu_bound: SearchRun) -> None:
    limit = cpu_bound.doc["limit"]
    assert limit["kind"] == "hardware", limit["summary"]
    assert limit["resource"] == "cpu:server"
    assert limit["bound_rps"] == pytest.approx(cpu_bound.ceiling_rps, rel=0.25)


# --- software limit: 10 ms sleep holding the only thread ---------------------------------------------


def test_serial_sleep_capacity_is_just_under_one_over_the_sleep(serial: SearchRun) -> None:
    doc = serial.doc
    assert serial.returncode == 0, serial.stderr[-2000:]
    check_document(doc, "p99<=200ms")
    bound = 1000.0 / SERIAL_SLEEP_MS
    assert 0.80 * bound <= doc["capacity_rps"] <= bound, doc["capacity_rps"]


def test_serial_sleep_limit_is_software_with_evidence(serial: SearchRun) -> None:
    limit = serial.doc["limit"]
    assert limit["kind"] == "software", limit["summary"]
    assert limit["resource"] == "software"
    signals = limit["evidence"]["signals"]
    assert signals[0].startswith("no hardware resource near saturation at capacity")
    assert len(signals) >= 2, "the trial just above capacity says why: latency climbing, CPU idle"
    # It says why the first trial above capacity failed, in that trial's own words (an SLO missed, or
    # a queue growing through the window: whichever the trial recorded).
    first_failed = min(
        (t for t in serial.doc["trials"] if not t["passed"] and t["load"] > serial.doc["capacity_rps"]),
        key=lambda t: t["load"],
    )
    why = "; ".join(first_failed["reasons"])
    span = f"from {serial.doc['capacity_rps']:,g}/s"
    assert why and any(s.startswith(span) and why in s for s in signals[1:]), (signals, why)
    server = [d for d in limit["evidence"]["demands"] if d["resource"] == "cpu:server"]
    assert server and server[0]["utilization"] < 0.5, "the server's CPU is mostly idle"


# --- closed model, no SUT named ----------------------------------------------------------------------


def test_closed_model_finds_a_small_number_of_users(closed: SearchRun) -> None:
    doc = closed.doc
    assert closed.returncode == 0, closed.stderr[-2000:]
    check_document(doc, "p99<=60ms")
    assert doc["model"] == "closed"
    assert all(t["load"] == int(t["load"]) >= 1 for t in doc["trials"])
    # N users queue on one thread: each waits about N × 10 ms, so p99 <= 60 ms holds up to ~5.
    assert isinstance(doc["capacity_users"], int)
    assert 3 <= doc["capacity_users"] <= 6
    assert 0.8 * 1000 / SERIAL_SLEEP_MS <= doc["capacity_rps"] <= 1000 / SERIAL_SLEEP_MS
    assert "throughput>=0.99*offered" not in doc["slo"], "no offered rate in the closed model"


def test_without_a_sut_process_the_limit_is_unknown(closed: SearchRun) -> None:
    limit = closed.doc["limit"]
    assert limit["kind"] == "unknown"
    assert limit["resource"] is None
    assert "no SUT process was named" in limit["summary"]
