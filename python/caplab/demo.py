"""`caplab demo`: the main job on a built-in system.

Until the msgbus reference system and its BizTalk scale-out study exist, the demo measures the
built-in known-capacity server: a closed-model run to see what it sustains, then an open-model
run at 70 % of that, where latency is meaningful.
"""

from __future__ import annotations

from rich.console import Console

from caplab import render
from caplab.engine import ClosedLoad, OpenLoad, Plan, Target, run
from caplab.systems.process import start_module

CPU_US_PER_REQUEST = "200"


def run_demo(duration_s: float) -> int:
    console = Console()
    console.print(
        "[bold]caplab demo[/]: load against the built-in known-capacity server "
        f"({CPU_US_PER_REQUEST} µs CPU per request, one thread).\n"
        "The msgbus system and the BizTalk scale-out study will replace this demo."
    )
    with start_module("caplab.systems.knownserver", "--cpu-us", CPU_US_PER_REQUEST) as server:
        url = f"http://{server.address}/"
        console.rule("closed model: 16 users, no think time — what does it sustain?")
        closed = run(Plan(Target(url), ClosedLoad(16), duration_s=duration_s, warmup_s=1.0))
        render.summary(console, url, closed)
        if closed.interrupted:
            return 130
        rate = max(1.0, round(closed.throughput * 0.7))
        console.rule(f"open model: Poisson arrivals at {rate:.0f}/s (70 % of that)")
        open_run = run(
            Plan(
                Target(url),
                OpenLoad.constant(rate, duration_s, "poisson"),
                duration_s=duration_s,
                warmup_s=1.0,
            )
        )
        render.summary(console, url, open_run)
        return 130 if open_run.interrupted else 0
