"""A failover study's Summary, from a hand-made results document: it leads with each action's
recovery, counts the outage's errors as the outage (not as anomalies), judges consistency on each
side of the outage, and rates nothing for a load — while a study without ``failover`` keeps the
capacity study's Summary."""

from __future__ import annotations

from typing import Any, cast

from caplab.report.layout.blocks import Bullets, KeyFigures, Para
from caplab.report.layout.sections import summary
from caplab.report.model.types import ActionRecovery, CellOutage, FailoverSummary, Measured, Results
from caplab.report.text.observations import anomaly_observations
from caplab.report.text.recommend import recommend
from caplab.report.text.recovery import action_sentence


def action(name: str, **kw: Any) -> ActionRecovery:
    found: dict[str, Any] = {
        "action": name,
        "trials": 2,
        "databases": [20],
        "group_p50_s": 1.5,
        "group_p95_s": 1.9,
        "group_max_s": 1.9,
        "database_p50_s": 1.7,
        "database_p95_s": 2.4,
        "database_max_s": 2.6,
        "not_recovered": 0,
        "resolution_s": 0.1,
        "acknowledged": 4116,
        "lost": 0,
        "successes": 2,
        "judged": 2,
        "after_p50": 0.98,
        "after_min": 0.95,
        "failed": 407,
    }
    return cast(ActionRecovery, found | kw)


def outage(**kw: Any) -> CellOutage:
    found: dict[str, Any] = {
        "cell": 0,
        "label": "traffic=0%",
        "sent": 5000,
        "errors_inside": 407,
        "errors_outside": 0,
        "dropped_inside": 120,
        "dropped_outside": 0,
        "before_cv": 0.03,
        "after_cv": 0.04,
        "consistency_before": "good",
        "consistency_after": "good",
    }
    return cast(CellOutage, found | kw)


def cell(errors: int, consistency: str) -> dict[str, Any]:
    """A complete fixed-load cell whose whole-trial figures read as a capacity study's would."""
    return {
        "index": 0,
        "label": "traffic=0%",
        "factors": {"traffic": "0%"},
        "status": "complete",
        "cost": None,
        "ratings": {},
        "searched": False,
        "limit": None,
        "metrics": {
            "consistency": consistency,
            "throughput_cv": 0.97,
            "littles_law": {"checked": True, "holds": False, "in_flight": 96.6, "expected": 45.3},
            "steady": False,
            "steady_notes": ["throughput trends +54% across the window"],
            "error_ratio": errors / 5000,
            "errors": errors,
            "dropped": 120,
        },
    }


def document(failover: FailoverSummary | None) -> dict[str, Any]:
    return {
        "cells": [cell(407, "poor")],
        "capacity": [],
        "scaling": [],
        "failover": failover,
        "matrix": {"cells": 1, "by_status": {"complete": 1}, "factors": {}, "naming": []},
        "findings": [],
    }


def test_a_failover_summary_leads_with_each_actions_recovery() -> None:
    doc = document(
        {"actions": [action("switchover"), action("kill-primary", lost=None)], "cells": [outage()]}
    )
    doc["observations"] = anomaly_observations(cast(Measured, doc))
    section = summary(cast(Results, doc))
    lead, sentences, figures = section.blocks[:3]
    assert isinstance(lead, Para) and lead.lead == "Recovery."
    assert isinstance(sentences, Bullets)
    switchover, kill = (p.text for p in sentences.items)
    assert switchover.startswith("switchover (2 trials, 20 databases): a primary writable again after ")
    assert "p50 1.50 s, p95 1.90 s, max 1.90 s" in switchover
    assert "first commit after p50 1.70 s, p95 2.40 s, max 2.60 s (± 0.1 s" in switchover
    assert "0 of 4,116 acknowledged transactions lost; 2/2 met the recovery SLO" in switchover
    assert "throughput after 98% of before (lowest 95%)" in switchover
    assert "not checked (no ledger)" in kill
    assert isinstance(figures, KeyFigures)
    assert {f.label: f.value for f in figures.items}["failovers succeeded"] == "4/4"
    texts = [p.text for b in section.blocks if isinstance(b, Bullets) for p in b.items]
    assert not any("Recommendation" in t or "rate it for" in t for t in [lead.text, *texts])


def test_the_outages_errors_are_the_outage_not_anomalies() -> None:
    doc = document({"actions": [action("switchover")], "cells": [outage()]})
    found = anomaly_observations(cast(Measured, doc))
    assert [o["topic"] for o in found] == ["outage"], found
    assert "407 requests failed and 120 were not sent" in found[0]["text"]
    assert found[0]["severity"] == "info"
    assert not any("of requests failed" in o["text"] or "Little's law" in o["text"] for o in found)


def test_what_fails_outside_an_outage_and_an_unsteady_side_are_still_anomalies() -> None:
    shaky = outage(errors_outside=18, dropped_outside=953, consistency_before="poor", before_cv=0.4)
    found = anomaly_observations(cast(Measured, document({"actions": [], "cells": [shaky]})))
    by_topic = {o["topic"]: o for o in found}
    consistency = by_topic["consistency"]
    assert consistency["severity"] == "warning"
    assert "before the outage poor (40%), after it good (4.0%)" in consistency["text"]
    anomalies = [o["text"] for o in found if o["topic"] == "anomaly"]
    assert anomalies == [
        "traffic=0%: outside the outages 0.4% of requests failed (18).",
        "traffic=0%: outside the outages 953 requests were not sent (the in-flight cap was reached): the "
        "SUT fell behind.",
    ]


def test_a_study_without_failovers_keeps_the_capacity_summary_and_its_anomalies() -> None:
    doc = document(None)
    found = anomaly_observations(cast(Measured, doc))
    assert "traffic=0%: 8.1% of requests failed (407)." in [o["text"] for o in found]
    doc["observations"] = found
    doc["recommendation"] = {"text": "Choose …", "ratings": [], "headroom": 0.25}
    doc["goal"] = None
    lead = summary(cast(Results, doc)).blocks[0]
    assert isinstance(lead, Para) and lead.lead == "Recommendation."


def test_a_failover_study_is_rated_for_no_load() -> None:
    doc = document({"actions": [action("switchover")], "cells": [outage()]})
    doc |= {"goal": None, "jobs": None, "capacity": [_throughput_entry()]}
    rec = recommend(cast(Measured, doc), [])
    assert rec["ratings"] == [] and rec["text"].startswith("No capacity was searched")
    doc["failover"] = None
    assert recommend(cast(Measured, doc), [])["ratings"], "the same figures without failovers are rated"


def _throughput_entry() -> dict[str, Any]:
    return {
        "cell": 0,
        "label": "traffic=0%",
        "factors": {},
        "basis": "throughput",
        "value": 339.0,
        "unit": "req/s",
        "ci95": [None, None],
        "interval": None,
        "rate": 339.0,
        "rated_unit": "req/s",
        "indistinguishable": [],
    }


def test_an_action_with_its_managers_phases_says_which_step_dominates() -> None:
    phases = [
        {"name": n, "p50_s": p50, "p95_s": most, "max_s": most, "share": None, "set_by": None}
        for n, p50, most in (("detected", 4.30, 4.99), ("writable", 4.54, 5.19), ("first_commit", 4.60, 5.2))
    ]
    steps = [
        {
            "name": "detection",
            "p50_s": 4.3,
            "p95_s": 5.0,
            "max_s": 5.0,
            "share": 0.93,
            "set_by": "Patroni's ttl (5 s)",
        },
        {"name": "election", "p50_s": 0.07, "p95_s": 0.1, "max_s": 0.1, "share": 0.02, "set_by": None},
    ]
    sentence = action_sentence(action("kill-primary", phases=phases, steps=steps))
    assert "phases after the fault, p50 (max): detected 4.30 s (4.99 s), writable 4.54 s (5.19 s)" in sentence
    assert "first commit 4.60 s (5.20 s)" in sentence
    assert "detection is 93% of the recovery to the first commit: Patroni's ttl (5 s)" in sentence
    assert "phases" not in action_sentence(action("switchover")), "no phases reported, none shown"
    doc = document({"actions": [action("kill-primary", phases=phases, steps=steps)], "cells": [outage()]})
    doc["observations"] = anomaly_observations(cast(Measured, doc))
    [key] = [b for b in summary(cast(Results, doc)).blocks if isinstance(b, KeyFigures)]
    assert {f.label: f.value for f in key.items}["kill-primary: detection"] == "93%", key
