"""The study file's SLO and trigger syntax, on its own: a text parses into a plain term (what it
names, the comparison, the bound in the unit it is judged in), and analysis builds the predicate it
evaluates from that same term, so what the spec accepts at load time is what a trial is held to."""

from __future__ import annotations

import dataclasses

import pytest

from caplab import grammar
from caplab.analysis import slo, trigger


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ("p99<=50ms", grammar.SloTerm("p99<=50ms", "p99", None, "<=", 50.0)),
        ("cpu[web + db]<=75%", grammar.SloTerm("cpu[web + db]<=75%", "cpu", "web+db", "<=", 75.0)),
        (
            "throughput>=0.99*offered",
            grammar.SloTerm("throughput>=0.99*offered", "throughput", None, ">=", 0.99, True),
        ),
    ],
)
def test_an_slo_parses_to_a_term_analysis_evaluates(text: str, term: grammar.SloTerm) -> None:
    assert grammar.parse_slo(text) == term
    evaluated = slo.parse_slo(text)
    assert isinstance(evaluated, slo.Slo)
    assert dataclasses.asdict(evaluated) == dataclasses.asdict(term)


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ("p99 > 1s", grammar.ConditionTerm("p99 > 1s", "p99", None, ">", 1000.0, "ms")),
        ("errors > 1%", grammar.ConditionTerm("errors > 1%", "errors", None, ">", 1.0, "%")),
        (
            "send_lag_mb[pg:a] > 5mb",
            grammar.ConditionTerm("send_lag_mb[pg:a] > 5mb", "send_lag_mb", "pg:a", ">", 5.0, " mb"),
        ),
    ],
)
def test_a_condition_parses_to_a_term_analysis_checks(text: str, term: grammar.ConditionTerm) -> None:
    assert grammar.parse_condition(text) == term
    condition = trigger.parse_condition(text)
    names = [f.name for f in dataclasses.fields(term)]
    assert [getattr(condition, n) for n in names] == [getattr(term, n) for n in names]
    assert not condition.seen


def test_the_errors_are_the_ones_callers_catch() -> None:
    """Code that catches analysis's names keeps catching what the grammar raises."""
    assert slo.SloError is grammar.SloError
    assert trigger.TriggerError is grammar.TriggerError
    with pytest.raises(slo.SloError, match="unknown metric 'latency'"):
        grammar.parse_slo("latency<=5ms")
    with pytest.raises(trigger.TriggerError, match="expected METRIC OP VALUE"):
        grammar.parse_condition("lag is high")


def test_a_term_is_plain_data() -> None:
    term = grammar.parse_slo("errors<=0.1%")
    with pytest.raises(dataclasses.FrozenInstanceError):
        term.value = 1.0  # type: ignore[misc]
