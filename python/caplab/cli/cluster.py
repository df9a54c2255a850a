"""`caplab load --cluster … --agents N` (one load split across load agents on Ray) and
`caplab cluster start --local` (a Ray head on this machine for trying it)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table

from caplab import engine
from caplab.cli import consoles, exits, render
from caplab.cli.publish import IntervalPublisher
from caplab.cluster.errors import AgentsFailed, ClusterUnreachable
from caplab.engine import OpenLoad, Plan, UsageProblem, run
from caplab.experiments.base import PlanRunner

if TYPE_CHECKING:
    from caplab.cluster.ray_agents import AgentReport

DEFAULT_AGENTS = 2
AGENTS_NEED_CLUSTER = "--agents needs --cluster (ray://HEAD:10001 or local)"
CLIENT_PORT = 10001
"""The Ray client server's port on a head node: what ``ray://HEAD:10001`` reaches."""


def cluster_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--cluster ADDRESS`` and ``--agents N``: the load, or every trial, on Ray load agents."""
    command = click.option(
        "--agents",
        type=click.IntRange(min=1),
        help=f"With --cluster: how many load agents share the load (default {DEFAULT_AGENTS}).",
    )(command)
    return click.option(
        "--cluster",
        metavar="ADDRESS",
        help="Run on load agents of the Ray cluster at ADDRESS (ray://HEAD:10001, or `local`: a Ray "
        "started on this machine for this run).",
    )(command)


@contextlib.contextmanager
def plan_runner(address: str | None, agents: int | None) -> Iterator[PlanRunner]:
    """What runs each trial's plan: the engine here, or (``--cluster``) load agents on Ray for as
    long as the block lasts. Raises UsageProblem for --agents alone, ClusterUnreachable."""
    if address is None:
        if agents is not None:
            raise UsageProblem(AGENTS_NEED_CLUSTER)
        yield run
        return
    from caplab.cluster import ray_agents

    count = agents if agents is not None else DEFAULT_AGENTS
    with ray_agents.connect(address) as cluster:
        shortfall = ray_agents.cpu_shortfall(cluster.cpus, count)
        if shortfall is not None:
            consoles.stderr().print(
                f"caplab: warning: {shortfall}", markup=False, highlight=False, soft_wrap=True
            )
        yield ray_agents.AgentsRunner(cluster, count)


def cmd_load_on_cluster(
    plan: Plan,
    as_json: bool,
    address: str,
    agents: int,
    console: Console | None = None,
    publisher: IntervalPublisher | None = None,
) -> int:
    """Runs the plan on ``agents`` load agents of the Ray cluster at ``address`` and prints the
    merged result; returns the exit code: 1 when the cluster cannot be reached or an agent died
    or could not start (the others' figures printed all the same), 130 on Ctrl-C."""
    from caplab.cluster import ray_agents  # Ray takes a second to import: only when asked for

    err = console or consoles.stderr()
    offered = plan.load.profile[0].rate_start if isinstance(plan.load, OpenLoad) else None
    try:
        with ray_agents.connect(address) as cluster:
            shortfall = ray_agents.cpu_shortfall(cluster.cpus, agents)
            if shortfall is not None:
                err.print(f"caplab: warning: {shortfall}", markup=False, highlight=False, soft_wrap=True)
            live_enabled = not as_json and err.is_terminal
            with Live(console=err, transient=True, auto_refresh=False) as live:

                def on_interval(s: engine.IntervalSnapshot) -> None:
                    if publisher is not None:
                        publisher.update(s, offered)
                    if live_enabled:
                        live.update(render.live_line(s, offered), refresh=True)

                outcome = ray_agents.run_on_agents(cluster, plan, agents, on_interval)
    except (ClusterUnreachable, AgentsFailed) as e:
        err.print(f"caplab: {e}", markup=False, highlight=False, soft_wrap=True)
        return exits.FAILED
    if outcome.result is not None:
        if as_json:
            document: dict[str, Any] = {
                "target": plan.target.url,
                **outcome.result.raw,
                "cluster": {"address": address, "agents": agents},
                "agents": [a.to_json() for a in outcome.agents],
            }
            json.dump(document, sys.stdout)
            sys.stdout.write("\n")
        else:
            out = consoles.stdout()
            render.summary(out, plan.target.url, outcome.result)
            agents_table(out, outcome.agents)
    for failed in outcome.failures:
        err.print(
            f"caplab: {failed.name} failed: {failed.failure}", markup=False, highlight=False, soft_wrap=True
        )
    if outcome.failures:
        kept = len(outcome.agents) - len(outcome.failures)
        err.print(
            f"caplab: the run failed; the figures above are the {kept} other agents'",
            markup=False,
            soft_wrap=True,
        )
        return exits.FAILED
    return exits.INTERRUPTED if outcome.interrupted else exits.OK


def agents_table(console: Console, agents: Sequence[AgentReport]) -> None:
    """Each agent's share: where it ran, its clock against the driver's, what it measured."""
    table = Table(box=None, header_style="bold")
    for col in (
        "agent",
        "node",
        "clock offset",
        "started late",
        "sent",
        "throughput",
        "p50",
        "p99",
        "saturated",
    ):
        table.add_column(col, justify="left" if col in ("agent", "node") else "right")
    for a in agents:
        r = a.result
        table.add_row(
            a.name,
            a.identity.node if a.identity else "–",
            render.fmt_ms(a.clock.offset_s * 1e3) if a.clock else "–",
            render.fmt_ms(a.start_late_s * 1e3) if a.start_late_s is not None else "–",
            str(r.sent) if r else "–",
            f"{r.throughput:,.1f}/s" if r else (a.failure or "–"),
            render.fmt_ms(r.latency_ms.p50) if r else "–",
            render.fmt_ms(r.latency_ms.p99) if r else "–",
            ("yes" if r.generator.saturated else "no") if r else "–",
        )
    console.print(table)


@click.group("cluster")
def cluster_command() -> None:
    """Ray clusters for load agents (`caplab load --cluster ADDRESS --agents N`)."""


@cluster_command.command("start")
@click.option("--local", "local", is_flag=True, required=True, help="A Ray head on this machine.")
@click.option(
    "--agents", type=click.IntRange(min=1), default=DEFAULT_AGENTS, show_default=True, help="CPUs it offers."
)
@click.option("--port", type=click.IntRange(1, 65535), default=CLIENT_PORT, show_default=True)
def start_command(local: bool, agents: int, port: int) -> None:
    """Start a Ray head on this machine with a CPU per agent, to try load agents on one machine."""
    sys.exit(cmd_cluster_start(agents, port))


def cmd_cluster_start(agents: int, port: int) -> int:
    """Runs ``ray start --head`` and says how to use and stop the cluster it started."""
    err = consoles.stderr()
    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if ray_cli is None:
        err.print(
            "caplab: the `ray` command is not installed: pip install 'caplab[cluster]'",
            markup=False,
            soft_wrap=True,
        )
        return exits.FAILED
    command = [ray_cli, "start", "--head", f"--num-cpus={agents}", f"--ray-client-server-port={port}"]
    done = subprocess.run(
        [*command, "--include-dashboard=false"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        err.print(
            f"caplab: ray start failed:\n{done.stderr.strip()}", markup=False, highlight=False, soft_wrap=True
        )
        return exits.FAILED
    consoles.stdout().print(
        f"A local Ray head with {agents} CPUs is running.\n"
        f"  RAY_AUTH_MODE=token caplab load URL --rate R --cluster ray://127.0.0.1:{port} --agents {agents}\n"
        f"(RAY_AUTH_MODE=token: the head requires the token Ray keeps in ~/.ray/auth_token)\n"
        f"Stop it with: {ray_cli} stop",
        markup=False,
        highlight=False,
    )
    return exits.OK
