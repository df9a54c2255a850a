"""One load judged against SLOs, as a CI gate judges it (`caplab load --slo … --junit FILE`): each
predicate's verdict, and one more that a pipeline must not miss — whether the generator kept its
schedule. A generator that fell behind measured itself, not the system, so its trial fails the gate
whatever the latency said (measurement rule 2)."""

from __future__ import annotations

from caplab.analysis.backlog import backlog
from caplab.analysis.slo import Slo, SloError, TrialFigures, Verdict, evaluate, parse_slo
from caplab.engine.result import RunResult

GATED_METRICS = ("p50", "p90", "p95", "p99", "p999", "max", "mean", "errors", "throughput")
"""What one load measures without sampling the system: latency, errors and the rate it carried.
A resource's ceiling (``cpu[db]<=75%``) needs the system's processes: `find-capacity` or a study."""

GENERATOR_CHECK = "generator kept its schedule"


def gate_slos(texts: list[str]) -> list[Slo]:
    """Parses each predicate and refuses one that a single load cannot observe."""
    slos = [parse_slo(t) for t in texts]
    for s in slos:
        if s.metric not in GATED_METRICS:
            raise SloError(
                f"{s.text}: a load alone samples no resources; {s.metric} needs the system's "
                f"processes (find-capacity --sut-match, or a study's roles)"
            )
    return slos


def judge_load(slos: list[Slo], result: RunResult) -> list[Verdict]:
    """Each SLO's verdict on this load's measured window, then the generator's."""
    carried = backlog(result)
    figures = TrialFigures(
        result.offered_rate,
        result.throughput,
        result.sent,
        result.errors,
        result.latency_ms.__dict__,
        {},
        1,
        carried=carried.carried_rate if carried else None,
    )
    g = result.generator
    late = f"no, {g.saturation_reason or 'it fell behind'}: not a measurement of the system"
    reason = f"{GENERATOR_CHECK}: {late if g.saturated else 'yes'}"
    on_time = Verdict(GENERATOR_CHECK, not g.saturated, None, reason)
    return [*evaluate(slos, figures), on_time]
