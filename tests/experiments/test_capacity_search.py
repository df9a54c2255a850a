"""The capacity search against probe functions whose answer is known (pass iff load <= a threshold):
bracket, bisect, confirm; stepping down when confirmation fails; no capacity when the SLO fails at
the minimum or the generator saturates; the closed model's search over whole users; and the shape
of `find_capacity`'s answer."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from caplab.analysis.limit import Limit
from caplab.analysis.slo import Slo
from caplab.engine import LoadSpec
from caplab.experiments.capacity import answer as find
from caplab.experiments.capacity.answer import FindSettings, find_capacity
from caplab.experiments.capacity.search import (
    MAX_CONFIRM_ROUNDS,
    CapacitySearch,
    GeneratorSaturated,
    Phase,
    Probe,
    SearchOutcome,
    SearchSettings,
)
from caplab.experiments.capacity.trial import LimitAnalysis
from support.capacity_probes import ThresholdProbe


def search(probe: ThresholdProbe, **settings: Any) -> tuple[CapacitySearch, SearchOutcome]:
    s = CapacitySearch(SearchSettings(**settings), probe)
    return s, s.run()


def phases(outcome: SearchOutcome) -> list[Phase]:
    return [p.phase for p in outcome.probes]


# --- open model ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("threshold", "precision", "start"),
    [
        (1234.0, 0.05, 100.0),
        (1234.0, 0.01, 100.0),
        (57.5, 0.10, 100.0),
        (99_999.0, 0.02, 100.0),
        (3.3, 0.05, 8.0),
    ],
)
def test_capacity_is_the_threshold_within_the_precision(
    threshold: float, precision: float, start: float
) -> None:
    probe = ThresholdProbe(threshold)
    _, outcome = search(probe, start=start, precision=precision, confirm_repeats=3)
    assert outcome.found, outcome.message
    assert outcome.capacity is not None
    assert threshold / (1 + precision) <= outcome.capacity <= threshold
    assert outcome.ci95 is not None
    low, high = outcome.ci95
    assert low <= outcome.capacity <= high
    assert low <= threshold < high, "the interval lies between the passing load and the failing one"
    assert outcome.message == f"SLO held in 3 of 3 confirmation trials at {outcome.capacity:g}"
    assert outcome.capacity_throughput == pytest.approx(outcome.capacity)
    assert outcome.search_s >= 0
    assert [(p.load, p.phase) for p in outcome.probes] == probe.calls, "every trial is kept, in order"


def test_phases_come_in_order_bracket_bisect_confirm() -> None:
    _, outcome = search(ThresholdProbe(1234.0), start=100.0, precision=0.05, confirm_repeats=3)
    seen = phases(outcome)
    assert seen == sorted(seen, key=["bracket", "bisect", "confirm"].index)
    assert {"bracket", "bisect", "confirm"} <= set(seen)
    bracket = [p.load for p in outcome.probes if p.phase == "bracket"]
    assert bracket == [100.0, 200.0, 400.0, 800.0, 1600.0], "the bracket doubles until a trial fails"
    confirm = [p for p in outcome.probes if p.phase == "confirm"]
    assert len(confirm) == 3
    assert all(p.passed and p.load == outcome.capacity for p in confirm)
    assert outcome.confirmations == confirm


def test_bisection_narrows_between_the_last_pass_and_the_first_fail() -> None:
    _, outcome = search(ThresholdProbe(1234.0), start=100.0, precision=0.01)
    lo, hi = 800.0, 1600.0
    for p in (p for p in outcome.probes if p.phase == "bisect"):
        assert lo < p.load < hi
        assert p.load == pytest.approx((lo + hi) / 2)
        lo, hi = (p.load, hi) if p.passed else (lo, p.load)
    assert (hi - lo) / lo <= 0.01
    assert outcome.capacity == lo


def test_bracket_halves_when_the_start_fails() -> None:
    _, outcome = search(ThresholdProbe(30.0), start=100.0, precision=0.05)
    bracket = [p.load for p in outcome.probes if p.phase == "bracket"]
    assert bracket == [100.0, 50.0, 25.0]
    assert outcome.found
    assert outcome.capacity is not None
    assert 30 / 1.05 <= outcome.capacity <= 30


def test_a_failing_confirmation_steps_down() -> None:
    """Short trials pass up to 1234 but full-length ones only up to 1100: the search must settle
    below 1100, on a load where all confirmation trials passed."""
    probe = ThresholdProbe(1234.0, confirm_limit=1100.0)
    _, outcome = search(probe, start=100.0, precision=0.05, confirm_repeats=2)
    assert outcome.found, outcome.message
    assert outcome.capacity is not None
    assert 1100 * (1 - 0.05) ** 2 <= outcome.capacity <= 1100
    confirm = [p for p in outcome.probes if p.phase == "confirm"]
    assert any(not p.passed for p in confirm)
    loads = [p.load for p in confirm]
    assert loads == sorted(loads, reverse=True), "each failed round steps the load down"
    assert [p.passed for p in confirm[-2:]] == [True, True]
    assert confirm[-1].load == outcome.capacity
    assert outcome.ci95 is not None
    assert outcome.ci95[1] > 1100, "the upper end is the load whose confirmation failed"


def test_confirmation_failing_every_round_gives_no_capacity() -> None:
    probe = ThresholdProbe(1234.0, confirm_limit=500.0)
    _, outcome = search(probe, start=100.0, precision=0.05, confirm_repeats=2)
    assert not outcome.found
    assert outcome.capacity is None
    assert outcome.ci95 is None
    assert "confirmation trials kept failing, down to 800 that had passed a short trial" in outcome.message
    # The rounds stepping down from the bisection's answer, then one at the highest load below
    # them that had passed (800, in the bracket): it fails too, so there is no capacity.
    confirm = [p.load for p in outcome.probes if p.phase == "confirm"]
    assert len(set(confirm)) == MAX_CONFIRM_ROUNDS + 1 and confirm[-1] == 800.0


def test_a_failed_confirmation_that_measured_its_shortfall_steps_straight_to_it() -> None:
    """The same system as above, but its failing trials say how much they sustained (a rate SLO
    such as processed >= 0.95*offered): the next round goes there instead of 2.5 % lower."""
    probe = ThresholdProbe(1234.0, confirm_limit=700.0, measures_shortfall=True)
    _, outcome = search(probe, start=100.0, precision=0.05, confirm_repeats=2)
    assert outcome.found, outcome.message
    assert outcome.capacity == 700.0
    rounds = sorted({p.load for p in outcome.probes if p.phase == "confirm"}, reverse=True)
    assert rounds[-1] == 700.0 and len(rounds) == 2


def test_a_shortfall_steps_down_at_most_half_way_in_one_round() -> None:
    """One trial that fell far short (a pause: it sustained 500 of ~1,200) is one measurement: the
    next round goes half-way down (to ~600), and only the round after that to 500."""
    probe = ThresholdProbe(1234.0, confirm_limit=500.0, measures_shortfall=True)
    _, outcome = search(probe, start=100.0, precision=0.05, confirm_repeats=2)
    assert outcome.found and outcome.capacity == 500.0
    rounds = sorted({p.load for p in outcome.probes if p.phase == "confirm"}, reverse=True)
    assert len(rounds) == 3 and rounds[1] == pytest.approx(rounds[0] / 2, abs=1)


def test_slo_failing_at_the_minimum_is_not_found_with_the_reason() -> None:
    _, outcome = search(ThresholdProbe(0.5), start=100.0, minimum=1.0)
    assert not outcome.found
    assert outcome.capacity is None
    assert outcome.ci95 is None
    assert outcome.message.startswith("the SLO fails even at the minimum load (1): ")
    assert "p99<=50ms: 80ms fails <= 50ms" in outcome.message
    assert set(phases(outcome)) == {"bracket"}
    assert outcome.probes[-1].load == 1.0


def test_slo_holding_at_the_maximum_is_not_found_and_says_capacity_is_higher() -> None:
    _, outcome = search(ThresholdProbe(math.inf), start=100.0, maximum=1000.0)
    assert not outcome.found
    assert outcome.capacity is None
    assert "still holds at the maximum load searched (1000)" in outcome.message
    assert [p.load for p in outcome.probes] == [100.0, 200.0, 400.0, 800.0, 1000.0]


def test_generator_saturation_stops_the_search() -> None:
    probe = ThresholdProbe(1234.0, saturate_at=800.0)
    s = CapacitySearch(SearchSettings(start=100.0), probe)
    with pytest.raises(GeneratorSaturated, match="generator saturated at 800"):
        s.run()
    assert [p.load for p in s.probes] == [100.0, 200.0, 400.0]
    assert probe.calls[-1] == (800.0, "bracket"), "no trial runs after the saturated one"


def test_the_interval_reflects_the_confirmation_spread() -> None:
    probe = ThresholdProbe(1234.0, throughputs=[1190.0, 1210.0, 1200.0])
    _, outcome = search(probe, start=100.0, precision=0.05, confirm_repeats=3)
    assert outcome.ci95 is not None
    assert outcome.capacity == 1200.0
    confirmed = [p.throughput for p in outcome.confirmations]
    assert outcome.capacity_throughput == pytest.approx(sum(confirmed) / len(confirmed))
    assert outcome.ci95[0] < outcome.capacity, "spread between repeats widens the interval downwards"


# --- closed model ----------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [1, 2, 7, 23, 100])
def test_closed_model_searches_whole_users(threshold: int) -> None:
    probe = ThresholdProbe(threshold + 0.5)
    _, outcome = search(probe, closed=True, start=1.0, precision=0.05, maximum=10_000.0)
    assert outcome.found, outcome.message
    assert outcome.capacity == threshold, "whole users: the search ends exactly at the threshold"
    assert all(p.load == int(p.load) and p.load >= 1 for p in outcome.probes)


def test_closed_model_confirmation_steps_down_one_user_at_a_time_among_a_few() -> None:
    probe = ThresholdProbe(7.5, confirm_limit=5.5)
    _, outcome = search(probe, closed=True, start=1.0, confirm_repeats=2)
    assert outcome.capacity == 5
    # A failed round stops at its first failure.
    assert [p.load for p in outcome.probes if p.phase == "confirm"] == [7, 6, 5, 5]


def test_closed_model_confirmation_steps_down_half_a_precision_step_among_thousands() -> None:
    """3,500 users passed the search's trials but not the confirmation: the next round is 7.5 %
    fewer (precision 15 %), not 3,499 — six rounds of one user each once ended a real search."""
    probe = ThresholdProbe(3600.5, confirm_limit=3000.5)
    _, outcome = search(probe, closed=True, start=2000.0, precision=0.15, maximum=100_000.0)
    confirms = [p.load for p in outcome.probes if p.phase == "confirm"]
    assert confirms[1] == math.floor(confirms[0] * (1 - 0.075)), confirms
    assert outcome.found and outcome.capacity is not None and 2800 <= outcome.capacity <= 3000, confirms


def test_closed_model_fails_at_one_user() -> None:
    _, outcome = search(ThresholdProbe(0.5), closed=True, start=4.0)
    assert not outcome.found
    assert outcome.message.startswith("the SLO fails even at the minimum load (1)")


def test_closed_model_interval_is_in_users() -> None:
    probe = ThresholdProbe(7.5, throughputs=[93.0, 95.0])
    _, outcome = search(probe, closed=True, start=1.0, confirm_repeats=2)
    assert outcome.capacity == 7
    assert outcome.ci95 is not None
    assert 1 <= outcome.ci95[0] <= 7 <= outcome.ci95[1]


# --- find_capacity: the JSON answer, around a synthetic prober ---------------------------------


UNKNOWN: Limit = {
    "resource": None,
    "kind": "unknown",
    "utilization": None,
    "bound_rps": None,
    "evidence": {},
    "summary": "unknown",
}


class FakeProber:
    """Stands in for TrialProber (same constructor) with a ThresholdProbe; no load is sent."""

    probe = ThresholdProbe(1234.0)

    def __init__(self, base: LoadSpec, slos: list[Slo], *args: Any) -> None:
        self.slos = slos

    def __call__(self, load: float, phase: Phase) -> Probe:
        return self.probe(load, phase)

    def analyse(self, outcome: SearchOutcome) -> LimitAnalysis:
        return LimitAnalysis(UNKNOWN, "good", {"checked": False})


def fake_find(monkeypatch: pytest.MonkeyPatch, probe: ThresholdProbe, **settings: Any) -> dict[str, Any]:
    monkeypatch.setattr(FakeProber, "probe", probe)
    monkeypatch.setattr(find, "TrialProber", FakeProber)
    doc = find_capacity(
        LoadSpec(url="http://127.0.0.1:9/"),
        FindSettings(slos=("p99<=50ms",), **settings),
        roles=[],
    ).to_dict()
    json.dumps(doc)  # the document is plain JSON
    return doc


def test_find_capacity_document(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = fake_find(monkeypatch, ThresholdProbe(1234.0), precision=0.05, repeats=2)
    assert doc["found"] is True
    assert doc["generator_saturated"] is False
    assert doc["model"] == "open"
    assert 1234 / 1.05 <= doc["capacity_rps"] <= 1234
    assert doc["capacity_users"] is None
    low, high = doc["ci95"]
    assert low <= doc["capacity_rps"] <= high
    assert doc["slo"] == ["p99<=50ms"]
    assert doc["search_s"] >= 0
    assert doc["trial_count"] == len(doc["trials"])
    for t in doc["trials"]:
        assert {"phase", "load", "passed", "reasons", "throughput", "p99_ms"} <= set(t)
    assert doc["limit"] == UNKNOWN


def test_find_capacity_closed_reports_users_and_their_throughput(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = fake_find(monkeypatch, ThresholdProbe(7.5, throughputs=[90.0]), closed=True, start=1.0)
    assert doc["model"] == "closed"
    assert doc["capacity_users"] == 7
    assert isinstance(doc["capacity_users"], int)
    assert doc["capacity_rps"] == pytest.approx(90.0), "the throughput the confirmed users achieved"


def test_find_capacity_generator_saturated_is_never_a_capacity(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = fake_find(monkeypatch, ThresholdProbe(1234.0, saturate_at=800.0))
    assert doc["found"] is False
    assert doc["generator_saturated"] is True
    assert doc["capacity_rps"] is None
    assert doc["capacity_users"] is None
    assert doc["ci95"] is None
    # What passed below it is a floor, and the limit named is the generator's, never the system's.
    assert doc["capacity_at_least"] == 400.0
    assert doc["message"].startswith("capacity ≥ 400/s (the generator's limit here)")
    assert doc["limit"]["kind"] == "generator" and doc["limit"]["resource"] == "generator"
    assert "generator saturated at 800" in doc["message"]
    assert [t["load"] for t in doc["trials"]] == [100.0, 200.0, 400.0]


def test_find_capacity_not_found_keeps_the_message(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = fake_find(monkeypatch, ThresholdProbe(0.5))
    assert doc["found"] is False
    assert doc["generator_saturated"] is False
    assert doc["capacity_rps"] is None
    assert doc["message"].startswith("the SLO fails even at the minimum load")


def test_a_confirmation_round_stops_at_its_first_failure() -> None:
    probe = ThresholdProbe(1234.0, confirm_limit=1100.0)
    _, outcome = search(probe, start=100.0, precision=0.05, confirm_repeats=3)
    confirm = [p for p in outcome.probes if p.phase == "confirm"]
    rounds: dict[float, list[bool]] = {}
    for p in confirm:
        rounds.setdefault(p.load, []).append(p.passed)
    for load, passed in rounds.items():
        # A failed round is its passes then one failure; a passing round is all three.
        assert passed in ([False], [True, False], [True, True, False], [True, True, True]), (load, passed)
    assert outcome.capacity is not None
    assert rounds[outcome.capacity] == [True, True, True]
