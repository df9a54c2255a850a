"""The no-backlog check and what the search keeps (issue 28): a small trial at a low rate whose
replies straddle the window's end is judged on what the system did; a system that cannot keep up
fails by its growing queue; a stall is recorded as a stall; and a search whose confirmations fail
above a load that passed reports that load, unstable above it — not "no capacity".

The servers are knownservers with a known service time, so the expected counts are hand figures:
at 40/s with 95 ms replies, λ·W = 3.8 requests are on their way at any instant (Little's law).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from caplab.analysis.backlog import backlog, longest_stall
from caplab.analysis.slo import parse_slo
from caplab.engine import LoadSpec
from caplab.experiments.capacity.search import CapacitySearch, Phase, Probe, SearchSettings
from caplab.experiments.capacity.trial import TrialLength, TrialProber
from support.capacity_probes import ThresholdProbe, interval, run_result
from support.servers import KnownServer


def details(p: Probe) -> dict[str, Any]:
    """A trial's record beside its verdict, as the tests read it (their JSON values as set)."""
    return p.details


TRIAL = TrialLength(3.0, 0.5)


def prober(url: str, *slos: str) -> TrialProber:
    return TrialProber(LoadSpec(url=url), [parse_slo(s) for s in slos], [], TRIAL, TRIAL, closed=False)


@pytest.mark.slow
def test_replies_straddling_the_windows_end_at_a_low_rate_pass_the_backlog_check(
    known_server: KnownServer,
) -> None:
    """40/s for 3 s: 120 requests, each answered after 95 ms. About 3.8 are in flight when the
    window closes, so only ~116 replies land inside it: 38.7/s, short of 0.99 × 40 = 39.6/s — the
    old check failed this trial by those few messages. The system kept up (its queue did not grow),
    and the check now says so."""
    server = known_server("--sleep-ms", "95")
    p = prober(f"http://{server.address}/", "p99<=500ms")(40.0, "confirm")
    assert p.throughput < 0.99 * 40.0, f"replies inside the window: {p.throughput:.2f}/s"
    assert p.passed, (p.reasons, details(p)["backlog"])
    assert details(p)["carried_rate"] == pytest.approx(40.0)
    found = re.match(r"(\d+) arrived, in flight (\d+) → (\d+)", details(p)["backlog"])
    assert found, details(p)["backlog"]
    arrived, start, end = (int(x) for x in found.groups())
    assert 118 <= arrived <= 122 and 2 <= start <= 6 and 2 <= end <= 6, details(p)["backlog"]


@pytest.mark.slow
def test_a_system_that_cannot_keep_up_fails_by_its_growing_queue(known_server: KnownServer) -> None:
    """One thread holding each request 40 ms serves 25/s; offered 40/s for 3 s, its queue grows by
    about 15 a second — 45 over the window, far past the noise of its level — and the carried rate
    is about what it served (25/s), which the search then steps down to."""
    server = known_server("--serial-sleep-ms", "40")
    p = prober(f"http://{server.address}/", "p99<=60s")(40.0, "confirm")
    assert not p.passed
    assert any(r.startswith("throughput>=0.99*offered") for r in p.reasons), p.reasons
    assert 20.0 <= details(p)["carried_rate"] <= 32.0, details(p)["backlog"]
    assert p.sustainable is not None and 20.0 <= p.sustainable <= 33.0


@pytest.mark.slow
def test_a_stall_is_recorded_as_a_stall_with_where_it_happened(known_server: KnownServer) -> None:
    """A server that freezes once for 1.5 s after 140 requests (about 1 s into the window at 100/s):
    the trial fails and says it stalled, for how long and when, from its interval series."""
    server = known_server("--freeze-after", "140", "--freeze-s", "1.5")
    p = prober(f"http://{server.address}/", "p99<=100ms")(100.0, "confirm")
    assert not p.passed
    stall = details(p)["stall"]
    assert stall is not None and stall in p.reasons, p.reasons
    seconds = float(stall.split("stalled ")[1].split(" s")[0])
    assert 1.0 <= seconds <= 2.0, stall
    assert p.sustainable is None, "a pause is not a rate to step down to"


# --- the analysis on hand-made interval series ------------------------------------------------------


def test_a_queue_that_holds_its_level_is_not_a_backlog() -> None:
    """Four measured seconds at 40/s, 4 in flight at both ends: nothing left behind."""
    series = [interval(0, 40, warmup=True, in_flight=4)] + [interval(i, 40, in_flight=4) for i in range(1, 5)]
    b = backlog(run_result(40.0, series, duration_s=4.0, warmup_s=1.0))
    assert b is not None
    assert (b.arrived, b.growth, b.left_behind) == (160, 0, 0.0)
    assert b.carried_rate == 40.0


def test_a_growing_queue_is_left_behind_beyond_its_noise() -> None:
    """Served 30/s of 40/s offered: 10 more in flight each second, 4 → 44 over four seconds. The
    noise of a level around 24 is 2·√(2·25) ≈ 14, so 26 of 160 arrivals were left behind."""
    series = [interval(0, 40, warmup=True, in_flight=4)] + [
        interval(i, 30, in_flight=4 + 10 * i, sent_rate=40) for i in range(1, 5)
    ]
    b = backlog(run_result(40.0, series, duration_s=4.0, warmup_s=1.0))
    assert b is not None
    assert b.arrived == 4 * 30 + 40 and b.growth == 40
    assert b.noise == pytest.approx(2 * (2 * (sum([4, 14, 24, 34, 44]) / 5 + 1)) ** 0.5)
    assert b.carried_rate == pytest.approx(40 * (1 - (40 - b.noise) / 160))
    assert b.carried_rate < 0.99 * 40


def test_the_drains_intervals_are_not_the_windows_end() -> None:
    """After the window the engine drains, in intervals of its own: the window's end is read at the
    last interval inside it (4 in flight), not after the drain (0)."""
    series = [interval(i, 40, in_flight=4) for i in range(4)] + [interval(4, 4, in_flight=0)]
    b = backlog(run_result(40.0, series, duration_s=4.0, warmup_s=0.0))
    assert b is not None and b.in_flight_end == 4


def test_a_stall_is_found_in_the_interval_series_and_a_slow_interval_is_not() -> None:
    busy = [interval(i, 100, in_flight=5) for i in range(2)]
    quiet = [interval(i, 2, in_flight=60, length=0.5, start=2 + 0.5 * (i - 2)) for i in range(2, 5)]
    back = [interval(5, 180, in_flight=5, start=3.5)]
    stall = longest_stall(run_result(100.0, busy + quiet + back, duration_s=4.5, warmup_s=0.0))
    assert stall is not None and (stall.start_s, stall.end_s, stall.in_flight) == (2.0, 3.5, 60)
    slow = [interval(i, 40, in_flight=5) for i in range(4)]  # slow, but answering
    assert longest_stall(run_result(100.0, slow, duration_s=4.0, warmup_s=0.0)) is None


# --- the search keeps what it measured ---------------------------------------------------------------


def test_confirmations_failing_above_a_passing_load_report_it_as_the_capacity_unstable_above() -> None:
    """Short trials pass up to 45/s, but full-length ones only up to 25/s (the system stalls in
    longer runs): every round near the bisection's answer fails. 20/s had passed in the bracket,
    so the search confirms there and reports it, unstable above — not "no capacity"."""
    probe = ThresholdProbe(45.0, confirm_limit=25.0)
    s = CapacitySearch(SearchSettings(start=20.0, precision=0.05, confirm_repeats=2), probe)
    outcome = s.run()
    assert outcome.found, outcome.message
    assert outcome.capacity == 20.0
    assert outcome.unstable is not None and "p99<=50ms" in outcome.unstable
    assert "unstable above it" in outcome.message
    confirm = [p for p in outcome.probes if p.phase == "confirm"]
    assert [p.passed for p in confirm[-2:]] == [True, True] and confirm[-1].load == 20.0
    assert outcome.ci95 is not None and outcome.ci95[1] > 20.0


def test_a_system_that_stalls_above_a_passing_load_finds_a_capacity_unstable_above_it() -> None:
    """The issue's search, trial by trial: 20/s and 40/s pass their short trials, 80/s fails; the
    full-length trials at 40/s and just under fail one message short (a backlog), and those under
    30/s stall. The search steps on down and confirms a capacity — not "no capacity" — and says it is
    unstable above it, naming the stall."""

    def probe(load: float, phase: Phase) -> Probe:
        if phase != "confirm":
            ok = load <= 40
            return Probe(phase, load, ok, [] if ok else ["throughput>=0.99*offered: short"], load, 90.0)
        if load <= 20:
            return Probe(phase, load, True, [], load, 9.0)
        stall = "stalled 1.5 s (1.0–2.5 s into the trial): almost no replies while 40 requests were in flight"
        if load < 30:
            return Probe(
                phase, load, False, ["p99<=500ms: 2480ms fails", stall], 16.4, 2480.0, {"stall": stall}
            )
        return Probe(phase, load, False, ["throughput>=0.99*offered: short"], load * 0.98, 95.0)

    outcome = CapacitySearch(SearchSettings(start=20.0, precision=0.3, confirm_repeats=1), probe).run()
    assert outcome.found and outcome.capacity == pytest.approx(17.748, abs=0.01), outcome.message
    assert outcome.unstable is not None and outcome.unstable.startswith("at 40: throughput"), outcome.unstable
    assert "stalled 1.5 s (1.0–2.5 s into the trial)" in outcome.unstable
    # Half a precision step (15 %) a round.
    failed = [p.load for p in outcome.probes if not p.passed and p.phase == "confirm"]
    assert failed == pytest.approx([40.0, 34.0, 28.9, 24.565, 20.88025])


def test_no_capacity_means_the_lowest_passing_load_failed_its_confirmation_too() -> None:
    probe = ThresholdProbe(45.0, confirm_limit=5.0)
    outcome = CapacitySearch(SearchSettings(start=20.0, precision=0.05, confirm_repeats=2), probe).run()
    assert not outcome.found and outcome.capacity is None
    assert "down to 20 that had passed a short trial" in outcome.message
    assert [p.load for p in outcome.probes if p.phase == "confirm"][-1] == 20.0
