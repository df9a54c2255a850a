"""SLO predicates: every documented form parses, round-trips and is judged against a trial; nonsense
is rejected with a message that names what is wrong (and the CLI turns that into exit 2)."""

from __future__ import annotations

import subprocess

import pytest

from caplab.analysis.slo import Slo, SloError, TrialFigures, as_dict, evaluate, parse_slo, sustainable
from caplab.engine import LatencySummary


def trial(**changes: object) -> TrialFigures:
    """A trial at 100/s offered on a 4-core host: p95 30 ms, p99 40 ms, 1 error in 1000, the host at 75 %."""
    base: dict[str, object] = {
        "offered_rate": 100.0,
        "throughput": 99.5,
        "sent": 1000,
        "errors": 1,
        "latency_ms": {
            "p50": 5.0,
            "p90": 20.0,
            "p95": 30.0,
            "p99": 40.0,
            "p999": 80.0,
            "max": 120.0,
            "mean": 8.0,
        },
        "resources": {
            "host": {"cpu_percent": 300.0, "disk_busy_percent": 50.0},
            "Server": {"cpu_percent": 80.0},
        },
        "cores": 4,
    }
    base.update(changes)
    return TrialFigures(**base)  # type: ignore[arg-type]


# --- parsing: every form in the module docstring ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "metric", "role", "op", "value", "relative"),
    [
        ("p99 <= 50ms", "p99", None, "<=", 50.0, False),
        ("p99<=50ms", "p99", None, "<=", 50.0, False),
        ("p50<1s", "p50", None, "<", 1000.0, False),
        ("p90<=250us", "p90", None, "<=", 0.25, False),
        ("p95<=200ms", "p95", None, "<=", 200.0, False),
        ("p999 <= 2s", "p999", None, "<=", 2000.0, False),
        ("max<2m", "max", None, "<", 120_000.0, False),
        ("mean<=10ms", "mean", None, "<=", 10.0, False),
        ("P99 <= 50MS", "p99", None, "<=", 50.0, False),
        ("errors <= 0.1%", "errors", None, "<=", 0.1, False),
        ("errors<1%", "errors", None, "<", 1.0, False),
        ("throughput >= 0.99*offered", "throughput", None, ">=", 0.99, True),
        ("throughput>=0.95 * offered", "throughput", None, ">=", 0.95, True),
        ("throughput>=500/s", "throughput", None, ">=", 500.0, False),
        ("throughput>500", "throughput", None, ">", 500.0, False),
        ("cpu <= 75%", "cpu", None, "<=", 75.0, False),
        ("cpu[server] <= 75%", "cpu", "server", "<=", 75.0, False),
        ("disk_busy <= 90%", "disk_busy", None, "<=", 90.0, False),
    ],
)
def test_every_documented_form_parses(
    text: str, metric: str, role: str | None, op: str, value: float, relative: bool
) -> None:
    slo = parse_slo(text)
    assert (slo.metric, slo.role, slo.op, slo.relative_to_offered) == (metric, role, op, relative)
    assert slo.value == pytest.approx(value)
    assert slo.text == text, "the text is kept as typed, for reports and verdicts"


@pytest.mark.parametrize(
    "text", ["p99<=50ms", "errors<=0.1%", "throughput>=0.99*offered", "cpu[App]<=75%", "disk_busy<90%"]
)
def test_parsing_round_trips_through_the_text(text: str) -> None:
    slo = parse_slo(text)
    assert parse_slo(slo.text) == slo


def test_a_role_keeps_its_case() -> None:
    """Role names are matched against the study's roles, which are case-sensitive."""
    slo = parse_slo("CPU[WebFront]<=60%")
    assert slo.metric == "cpu"
    assert slo.role == "WebFront"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("p99=50ms", "expected METRIC OP VALUE"),
        ("", "expected METRIC OP VALUE"),
        ("p99 50ms", "expected METRIC OP VALUE"),
        ("cpu[]<=75%", "expected METRIC OP VALUE"),
        ("latency<=50ms", "unknown metric 'latency'"),
        ("p97<=50ms", "unknown metric 'p97'"),
        ("p99<=fast", "'fast' is not a latency"),
        ("p99<=-5ms", "is not a latency"),
        ("p99<=50ms and more", "is not a latency"),
        ("errors<=0.1", "must be a percentage"),
        ("cpu<=75", "must be a percentage"),
        ("errors<=lots%", "is not a percentage"),
        ("p99[server]<=50ms", "only cpu, mem and app take a [name]"),
        ("errors[server]<=1%", "only cpu, mem and app take a [name]"),
        ("throughput[server]>=5/s", "only cpu, mem and app take a [name]"),
        ("throughput>=lots", "the bound must be a rate (500/s) or a share (0.99*offered)"),
    ],
)
def test_nonsense_is_rejected_naming_the_problem(text: str, problem: str) -> None:
    with pytest.raises(SloError) as caught:
        parse_slo(text)
    message = str(caught.value)
    assert problem in message
    assert repr(text) in message, "the message quotes the SLO it rejects"


def test_unknown_metric_message_lists_the_known_ones() -> None:
    with pytest.raises(
        SloError, match=r"known: p50, p90, p95, p99, p999, max, mean, errors, throughput, cpu"
    ):
        parse_slo("latency<=5ms")


@pytest.mark.parametrize("text", ["errors<=nan%", "cpu<=inf%", "throughput>=nan", "errors<=-1%"])
def test_non_finite_or_negative_bounds_are_rejected(text: str) -> None:
    with pytest.raises(SloError):
        parse_slo(text)


@pytest.mark.slow
def test_find_capacity_rejects_a_bad_slo_with_exit_2(caplab_cmd: list[str]) -> None:
    """The SLOs are checked before any load is sent (the URL here is never contacted)."""
    p = subprocess.run(
        [*caplab_cmd, "find-capacity", "http://127.0.0.1:9/", "--slo", "latency<=5ms", "--json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert p.returncode == 2
    assert "unknown metric 'latency'" in p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout == ""


# --- evaluation -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "passed", "observed"),
    [
        ("p99<=50ms", True, 40.0),
        ("p99<=30ms", False, 40.0),
        ("p99<40ms", False, 40.0),
        ("p50<=5ms", True, 5.0),
        ("p95<=30ms", True, 30.0),
        ("p95<25ms", False, 30.0),
        ("p999<=100ms", True, 80.0),
        ("max<=100ms", False, 120.0),
        ("mean<=10ms", True, 8.0),
        ("errors<=0.1%", True, 0.1),
        ("errors<0.1%", False, 0.1),
        ("throughput>=0.99*offered", True, 99.5),
        ("throughput>=0.999*offered", False, 99.5),
        ("throughput>=100/s", False, 99.5),
        ("cpu<=75%", True, 75.0),  # 300 % of a core on 4 cores is 75 % of the host
        ("cpu<75%", False, 75.0),
        ("cpu[Server]<=75%", False, 80.0),  # a role's CPU: 100 % = one core
        ("cpu[Server]<=100%", True, 80.0),
        ("disk_busy<=90%", True, 50.0),
        ("disk_busy<=40%", False, 50.0),
    ],
)
def test_evaluation_observes_the_right_figure(text: str, passed: bool, observed: float) -> None:
    verdict = parse_slo(text).evaluate(trial())
    assert verdict.passed is passed
    assert verdict.observed == pytest.approx(observed)
    assert verdict.slo == text
    assert verdict.reason.startswith(f"{text}: ")
    assert ("meets" if passed else "fails") in verdict.reason


def test_a_p95_slo_is_judged_from_the_engines_measured_p95() -> None:
    """The figures as a search trial hands them over (the engine's summary as a dict): p95 is read
    as p95, not as the p90 or p99 beside it; a summary too small for a p95 falls back on the max."""
    summary = LatencySummary(1000, 1.0, 8.0, 5.0, 20.0, 40.0, 80.0, 120.0, p95=30.0)
    measured = trial(latency_ms=summary.__dict__)
    assert [v.passed for v in evaluate([parse_slo("p95<=35ms"), parse_slo("p95<=25ms")], measured)] == [
        True,
        False,
    ]
    assert parse_slo("p95<=25ms").evaluate(measured).reason == "p95<=25ms: 30ms fails <= 25ms"
    few = LatencySummary(19, 1.0, 3.0, 2.0, 4.0, None, None, 9.0, p95=None)
    assert parse_slo("p95<=10ms").evaluate(trial(latency_ms=few.__dict__)).passed
    assert (
        "too few requests to measure p95"
        in parse_slo("p95<=5ms").evaluate(trial(latency_ms=few.__dict__)).reason
    )


def test_a_failed_latency_verdict_says_observed_and_bound() -> None:
    verdict = parse_slo("p99<=30ms").evaluate(trial())
    assert verdict.reason == "p99<=30ms: 40ms fails <= 30ms"


def test_missing_data_fails_and_says_so() -> None:
    no_p99 = trial(latency_ms={"p50": 5.0, "p99": None})
    verdict = parse_slo("p99<=50ms").evaluate(no_p99)
    assert not verdict.passed
    assert verdict.observed is None
    assert "too few requests to measure p99" in verdict.reason
    # A role that was not measured is missing data, never zero use (and role names are exact).
    assert "no data for cpu" in parse_slo("cpu[server]<=75%").evaluate(trial()).reason
    assert not parse_slo("cpu<=75%").evaluate(trial(resources={})).passed


def test_errors_with_nothing_sent_is_zero_percent() -> None:
    verdict = parse_slo("errors<=0.1%").evaluate(trial(sent=0, errors=0))
    assert verdict.passed
    assert verdict.observed == 0.0


def test_evaluate_judges_each_slo_and_as_dict_has_the_fields() -> None:
    slos: list[Slo] = [parse_slo("p99<=50ms"), parse_slo("errors<0.1%")]
    verdicts = evaluate(slos, trial())
    assert [v.passed for v in verdicts] == [True, False]
    assert as_dict(verdicts[1]) == {
        "slo": "errors<0.1%",
        "passed": False,
        "observed": pytest.approx(0.1),
        "bound": 0.1,
        "reason": verdicts[1].reason,
    }


def test_a_rate_that_fell_short_of_the_offered_load_says_what_load_it_sustains() -> None:
    """trial() offers 100/s. Processing 60/s against >= 0.95*offered sustains 60 / 0.95 offered;
    with two rate SLOs failing, the stricter estimate; latency failures give no estimate."""
    slos = [parse_slo("app[processed_per_s]>=0.95*offered"), parse_slo("throughput>=0.999*offered")]
    behind = trial(resources={"app": {"processed_per_s": 60.0}})
    assert sustainable(100.0, slos, evaluate(slos, behind)) == pytest.approx(60.0 / 0.95)
    keeping_up = trial(resources={"app": {"processed_per_s": 99.0}})
    assert sustainable(100.0, slos, evaluate(slos, keeping_up)) == pytest.approx(99.5 / 0.999)
    latency = [parse_slo("p99<=30ms"), parse_slo("throughput>=100/s")]
    assert sustainable(100.0, latency, evaluate(latency, behind)) is None


# --- the SUT's own figures: app[NAME] ------------------------------------------------------------


def test_app_figure_is_judged_against_a_share_of_the_offered_rate() -> None:
    slo = parse_slo("app[processed_per_s] >= 0.98*offered")
    assert (slo.metric, slo.role, slo.relative_to_offered) == ("app", "processed_per_s", True)
    keeping_up = trial(resources={"app": {"processed_per_s": 99.0}})
    behind = trial(resources={"app": {"processed_per_s": 60.0}})
    assert slo.evaluate(keeping_up).passed
    verdict = slo.evaluate(behind)
    assert not verdict.passed
    assert verdict.observed == 60.0
    assert "fails >= 98" in verdict.reason


def test_app_figure_against_a_plain_number_and_missing_figures_fail() -> None:
    slo = parse_slo("app[queue_depth]<=1000")
    assert slo.evaluate(trial(resources={"app": {"queue_depth": 12.0}})).passed
    assert not slo.evaluate(trial(resources={"app": {"queue_depth": 5000.0}})).passed
    missing = slo.evaluate(trial())
    assert not missing.passed
    assert "no data for app" in missing.reason


@pytest.mark.parametrize("text", ["app<=5", "app[]<=5", "app[bad-name]<=5", "app[x]<=many"])
def test_app_needs_a_figure_name_and_a_number(text: str) -> None:
    with pytest.raises(SloError):
        parse_slo(text)


def roles_on_profiles(**machines: str) -> TrialFigures:
    """Transport at 20 % and access at 30 % of one host core, each with a quota of 0.5 host CPUs
    (``machines`` says which share one: the combined server's single quota)."""
    resources = {
        "transport": {"cpu_percent": 20.0, "quota_cpus": 0.5},
        "access": {"cpu_percent": 30.0, "quota_cpus": 0.5},
    }
    return trial(resources=resources, machines=machines)


def test_several_roles_cpu_is_their_sum_against_the_quota_they_share() -> None:
    slo = parse_slo("cpu[transport + access]<=75%")
    assert slo.role == "transport+access" and slo.text == "cpu[transport + access]<=75%"
    # One combined server: 50 % of a core on a quota of half a core is 100 %: over 75 %, though each
    # role alone (40 % and 60 %) is under it.
    together = slo.evaluate(roles_on_profiles(transport="together", access="together"))
    assert (together.passed, together.observed) == (False, 100.0)
    assert parse_slo("cpu[access]<=75%").evaluate(roles_on_profiles(transport="t", access="t")).passed
    # Apart, each has its own quota: 50 % of one core on a whole core of quota between them.
    apart = slo.evaluate(roles_on_profiles())
    assert (apart.passed, apart.observed) == (True, 50.0)


def test_several_roles_cpu_without_quotas_or_with_one_missing() -> None:
    slo = parse_slo("cpu[transport+access]<=75%")
    bare = {"transport": {"cpu_percent": 20.0}, "access": {"cpu_percent": 30.0}}
    assert slo.evaluate(trial(resources=bare)).observed == 50.0  # 100 % = one core, as for one role
    missing = slo.evaluate(trial(resources={"transport": {"cpu_percent": 20.0}}))
    assert not missing.passed and "no data for cpu" in missing.reason


@pytest.mark.parametrize("text", ["cpu[transport+]<=75%", "cpu[+access]<=75%", "cpu[a++b]<=75%"])
def test_an_empty_role_in_a_sum_is_refused(text: str) -> None:
    with pytest.raises(SloError, match="name the roles to add up"):
        parse_slo(text)
