"""`caplab demo`: the main job on a built-in system.

Until the msgbus reference system and its BizTalk scale-out study exist, the demo measures the
built-in known-capacity server (a fixed CPU cost per request on one thread): an open-model run
at a modest rate to show correct measurement, then a capacity search under an SLO that finds how
much it takes and names what limits it — checkable by hand, since the cost per request is known.
"""

from __future__ import annotations

from rich.console import Console

from caplab import render
from caplab.analysis.commands import print_capacity
from caplab.analysis.find import FindSettings, find_capacity
from caplab.analysis.probe import TrialShape
from caplab.collect import RoleSpec
from caplab.engine import OpenLoad, Plan, Target, run
from caplab.load import LoadOptions
from caplab.render import fmt_ms
from caplab.systems.process import start_module

CPU_US_PER_REQUEST = 1000
SLO = ("p99<=100ms",)


def run_demo(duration_s: float) -> int:
    console = Console()
    console.print(
        "[bold]caplab demo[/]: the built-in known-capacity server burns "
        f"{CPU_US_PER_REQUEST} µs of CPU per request on one thread, so it cannot exceed "
        f"~{1e6 / CPU_US_PER_REQUEST:,.0f} requests/s (less its Python overhead).\n"
        "(The msgbus system and the BizTalk scale-out study will replace this demo.)"
    )
    with start_module("caplab.systems.knownserver", "--cpu-us", str(CPU_US_PER_REQUEST)) as server:
        url = f"http://{server.address}/"
        console.rule("1. open model: Poisson arrivals at 200/s")
        result = run(
            Plan(Target(url), OpenLoad.constant(200, duration_s, "poisson"), duration_s, warmup_s=1.0)
        )
        render.summary(console, url, result)
        if result.interrupted:
            return 130
        console.rule(f"2. capacity search under {', '.join(SLO)}, naming the limit")
        settings = FindSettings(
            slos=SLO,
            precision=0.05,
            trial=TrialShape(2.0, 0.5),
            confirm=TrialShape(duration_s, 1.0),
            repeats=2,
        )

        def show(p: object) -> None:
            from caplab.analysis.capacity import Probe

            assert isinstance(p, Probe)
            verdict = "[green]pass[/]" if p.passed else "[red]fail[/]"
            why = f"  ({p.reasons[0]})" if p.reasons else ""
            console.print(f"  {p.phase:8} {p.load:>8,.0f}/s {verdict} p99 {fmt_ms(p.p99_ms)}{why}")

        try:
            doc = find_capacity(
                LoadOptions(url=url), settings, [RoleSpec("server", pid=server.process.pid)], on_verdict=show
            )
        except KeyboardInterrupt:
            return 130
        print_capacity(console, doc)
    return 0 if doc["found"] else 1
