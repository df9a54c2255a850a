"""`caplab load`: one trial from command-line options, with live progress and a summary or JSON."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.live import Live

from caplab import engine, render
from caplab.engine import ClosedLoad, OpenLoad, Plan, RequestClass, Segment, Target, Think

EXIT_INTERRUPTED = 130


class UsageProblem(ValueError):
    """A bad combination of options; the CLI reports it with exit code 2."""


@dataclass(frozen=True)
class LoadOptions:
    """The options of `caplab load`, already parsed into numbers (seconds, per second)."""

    url: str
    rate: float | None = None
    ramp_to: float | None = None
    steps: str | None = None
    users: int | None = None
    think_s: float = 0.0
    think_dist: Literal["constant", "exponential"] = "constant"
    schedule: Literal["constant", "poisson"] = "constant"
    duration_s: float = 10.0
    warmup_s: float = 0.0
    threads: int | None = None
    connections: int | None = None
    method: str = "GET"
    headers: tuple[str, ...] = ()
    body: str | None = None
    body_file: Path | None = None
    template: bool = False
    framing: Literal["line", "u32", "mllp"] | None = None
    timeout_s: float = 30.0
    max_requests: int | None = None
    interval_s: float = 1.0
    seed: int = 0


def parse_steps(text: str) -> list[tuple[float, float]]:
    """``100:5s,200:5s`` → [(100.0, 5.0), (200.0, 5.0)]."""
    from caplab.units import parse_duration

    steps = []
    for item in text.split(","):
        rate, sep, dur = item.partition(":")
        if not sep:
            raise UsageProblem(f"--steps item {item!r} must be RATE:DURATION, e.g. 100:5s")
        try:
            steps.append((float(rate), parse_duration(dur)))
        except ValueError as e:
            raise UsageProblem(f"--steps item {item!r}: {e}") from e
    return steps


def parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise UsageProblem(f"header {text!r} must look like 'Name: value'")
    return name.strip(), value.strip()


def build_plan(o: LoadOptions) -> Plan:
    """Turns options into an engine plan, rejecting combinations that make no sense."""
    open_model = o.rate is not None or o.steps is not None
    if open_model and o.users is not None:
        raise UsageProblem("give --rate/--steps (open model) or --users (closed model), not both")
    if o.think_s and open_model:
        raise UsageProblem("--think applies to the closed model (--users)")
    if o.ramp_to is not None and o.rate is None:
        raise UsageProblem("--ramp-to needs --rate (the starting rate)")
    if o.body is not None and o.body_file is not None:
        raise UsageProblem("give --body or --body-file, not both")
    body = o.body or ""
    if o.body_file is not None:
        try:
            body = o.body_file.read_text()
        except OSError as e:
            raise UsageProblem(f"--body-file {o.body_file}: {e.strerror}") from e
    is_tcp = o.url.startswith("tcp://")
    if is_tcp and o.framing is None:
        raise UsageProblem("tcp:// targets need --framing line|u32|mllp")
    if not is_tcp and o.framing is not None:
        raise UsageProblem("--framing applies to tcp:// targets")
    load: OpenLoad | ClosedLoad
    if o.steps is not None:
        if o.rate is not None:
            raise UsageProblem("give --rate or --steps, not both")
        steps = parse_steps(o.steps)
        load = OpenLoad(tuple(Segment(d, r, r) for r, d in steps), o.schedule)
        duration = load.duration_s
    elif o.rate is not None:
        end = o.ramp_to if o.ramp_to is not None else o.rate
        load = OpenLoad((Segment(o.duration_s, o.rate, end),), o.schedule)
        duration = o.duration_s
    else:
        users = o.users if o.users is not None else (o.connections or 10)
        think = Think(o.think_dist, o.think_s) if o.think_s else Think()
        load = ClosedLoad(users, think)
        duration = o.duration_s
    request = RequestClass(
        method=o.method.upper(),
        headers=tuple(parse_header(h) for h in o.headers),
        body=body,
        template=o.template,
    )
    return Plan(
        target=Target(o.url, o.framing),
        load=load,
        duration_s=duration,
        warmup_s=o.warmup_s,
        requests=(request,),
        max_requests=o.max_requests,
        max_in_flight=o.connections if open_model else None,
        interval_s=o.interval_s,
        threads=o.threads,
        timeout_s=o.timeout_s,
        seed=o.seed,
    )


def result_json(url: str, r: engine.RunResult) -> dict[str, Any]:
    """The `--json` object: the engine's result plus the target it was measured against."""
    return {"target": url, **r.raw}


def run_load(plan: Plan, as_json: bool, console: Console | None = None) -> int:
    """Runs the plan, showing progress on a terminal; returns the process exit code."""
    err = console or Console(stderr=True)
    offered = plan.load.profile[0].rate_start if isinstance(plan.load, OpenLoad) else None
    live_enabled = not as_json and err.is_terminal
    with Live(console=err, transient=True, auto_refresh=False) as live:

        def on_interval(s: engine.IntervalSnapshot) -> None:
            if live_enabled:
                live.update(render.live_line(s, offered), refresh=True)

        result = engine.run(plan, on_interval)
    if as_json:
        json.dump(result_json(plan.target.url, result), sys.stdout)
        sys.stdout.write("\n")
    else:
        render.summary(Console(), plan.target.url, result)
    return EXIT_INTERRUPTED if result.interrupted else 0
