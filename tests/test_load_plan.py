"""From a load description to an engine plan (caplab.engine.build_plan, the one plan builder):
mapping and validation; the text forms of steps and headers parsed as the command line does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from caplab.cli.options import parse_header, parse_steps
from caplab.engine import ClosedLoad, LoadSpec, OpenLoad, Segment, Think, UsageProblem, build_plan

URL = "http://127.0.0.1:8080/x"


def options(**kw: Any) -> LoadSpec:
    """A `LoadSpec` from keyword arguments, steps and headers given as on the command line."""
    if isinstance(kw.get("steps"), str):
        kw["steps"] = parse_steps(kw["steps"])
    kw["headers"] = tuple(parse_header(h) for h in kw.get("headers", ()))
    return LoadSpec(url=kw.pop("url", URL), **kw)


# --- rejected combinations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"rate": 10, "users": 2}, "not both"),
        ({"steps": "10:1s", "users": 2}, "not both"),
        ({"rate": 10, "think_s": 0.1}, "--think applies to the closed model"),
        ({"ramp_to": 100}, "--ramp-to needs --rate"),
        ({"ramp_to": 100, "steps": "10:1s"}, "--ramp-to needs --rate"),
        ({"rate": 10, "steps": "10:1s"}, "--rate or --steps, not both"),
        ({"rate": 10, "body": "a", "body_file": Path("/dev/null")}, "--body or --body-file, not both"),
        ({"rate": 10, "body_file": Path("/nonexistent/x")}, "--body-file /nonexistent/x"),
        ({"rate": 10, "url": "tcp://127.0.0.1:9"}, "tcp:// targets need --framing"),
        ({"rate": 10, "framing": "line"}, "--framing applies to tcp:// targets"),
        ({"rate": 10, "headers": ("NoColon",)}, "must look like 'Name: value'"),
        ({"rate": 10, "headers": (": empty name",)}, "must look like 'Name: value'"),
        ({"steps": "10:1s,20"}, "must be RATE:DURATION"),
        ({"steps": "ten:1s"}, "--steps item 'ten:1s'"),
        ({"steps": "10:later"}, "'later' is not a duration"),
    ],
)
def test_bad_combinations_are_usage_problems(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageProblem) as e:
        build_plan(options(**kw))
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)


# --- the plan built ---------------------------------------------------------------------------------


def test_rate_makes_a_constant_open_load() -> None:
    plan = build_plan(
        options(rate=500, duration_s=30, warmup_s=5, connections=64, schedule="poisson", seed=7)
    )
    assert plan.load == OpenLoad((Segment(30, 500, 500),), "poisson")
    assert (plan.duration_s, plan.warmup_s, plan.max_in_flight, plan.seed) == (30, 5, 64, 7)


def test_ramp_runs_from_rate_to_ramp_to() -> None:
    plan = build_plan(options(rate=100, ramp_to=900, duration_s=60))
    assert plan.load == OpenLoad((Segment(60, 100, 900),))
    assert plan.max_in_flight is None, "no --connections: the engine's default cap applies"


def test_steps_set_the_profile_and_the_duration() -> None:
    plan = build_plan(options(steps="100:5s,200:500ms", duration_s=99))
    assert isinstance(plan.load, OpenLoad)
    assert plan.load.profile == (Segment(5, 100, 100), Segment(0.5, 200, 200))
    assert plan.duration_s == 5.5, "--duration is ignored: the steps define the window"


def test_users_make_a_closed_load_without_an_in_flight_cap() -> None:
    plan = build_plan(options(users=8, connections=3, think_s=0.5, think_dist="exponential"))
    assert plan.load == ClosedLoad(8, Think("exponential", 0.5))
    assert plan.max_in_flight is None


def test_closed_is_the_default_model_with_users_from_connections_or_ten() -> None:
    assert build_plan(options()).load == ClosedLoad(10, Think())
    assert build_plan(options(connections=3)).load == ClosedLoad(3, Think())


def test_request_is_built_from_method_headers_and_body() -> None:
    plan = build_plan(
        options(
            rate=1,
            method="post",
            headers=("Content-Type: text/xml", "X-A:  b c "),
            body="<a/>",
            template=True,
        )
    )
    (request,) = plan.requests
    assert request.method == "POST"
    assert request.headers == (("Content-Type", "text/xml"), ("X-A", "b c"))
    assert (request.body, request.template) == ("<a/>", True)


def test_body_file_is_read(tmp_path: Path) -> None:
    body = tmp_path / "order.json"
    body.write_text('{"id": "{seq}"}')
    plan = build_plan(options(rate=1, body_file=body))
    assert plan.requests[0].body == '{"id": "{seq}"}'


def test_tcp_target_carries_its_framing() -> None:
    plan = build_plan(options(url="tcp://127.0.0.1:2575", framing="mllp", rate=1))
    assert (plan.target.url, plan.target.framing) == ("tcp://127.0.0.1:2575", "mllp")


def test_plan_wire_form() -> None:
    open_wire = json.loads(build_plan(options(rate=50, ramp_to=70, schedule="poisson")).to_json())
    assert open_wire["load"] == {
        "model": "open",
        "arrivals": "poisson",
        "profile": [{"duration_s": 10.0, "rate_start": 50, "rate_end": 70}],
    }
    assert open_wire["target"] == {"url": URL}, "an absent framing is left out, not null"
    closed_wire = json.loads(build_plan(options(users=2)).to_json())
    assert closed_wire["load"] == {"model": "closed", "users": 2, "think": {"kind": "none"}}
    think_wire = json.loads(build_plan(options(users=2, think_s=0.1)).to_json())
    assert think_wire["load"]["think"] == {"kind": "constant", "mean_s": 0.1}


def test_parse_steps_and_headers() -> None:
    assert parse_steps("100:5s,250.5:2m") == ((100.0, 5.0), (250.5, 120.0))
    assert parse_header("Authorization: Bearer a:b") == ("Authorization", "Bearer a:b")
