"""Load agents as Ray actors: connect to a cluster (or start a local one for one run), place one
`Agent` per share of the plan, start them at one agreed instant, relay their merged progress,
and collect what each measured — naming any agent that died or could not start. The agents of a
search or a study (`AgentsRunner`) serve all its trials; after a trial that lost one, or Ctrl-C,
they are replaced.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import GetTimeoutError, RayError

import caplab
from caplab import engine
from caplab.cluster.agent import Agent, AgentIdentity, AgentRun
from caplab.cluster.clock import ClockReading, agreed_start
from caplab.cluster.errors import AgentsFailed, ClusterUnreachable
from caplab.cluster.merge import merge_intervals, merge_results
from caplab.cluster.split import agent_name, split_plan
from caplab.engine import IntervalSnapshot, Plan, RunResult

__all__ = [
    "AgentsFailed",
    "AgentsRunner",
    "Cluster",
    "ClusterRun",
    "ClusterUnreachable",
    "connect",
    "run_on_agents",
]

LOCAL = "local"
"""The cluster address that means: start Ray on this machine for this run, stop it after."""
AGENT_START_TIMEOUT_S = 60.0
"""How long an agent may take to be placed and answer before the run fails naming it."""
CONNECT_TIMEOUT_S = 5.0
QUIET: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
"""Ray without its dashboard, its workers' logs on our terminal, or its advice at warning level."""
AUTH_HINT = (
    " (a cluster started with token authentication, Ray's default, answers only a driver run with "
    "RAY_AUTH_MODE=token and its token: `ray get-auth-token` on the head)"
)
CLOCK_READINGS = 5
"""Clock readings per agent; the one with the shortest round trip is kept (NTP's filter)."""
POLL_S = 0.25
FINAL_POLL_S = 30.0
"""How long the last progress poll, after every run has ended, may wait for an agent's tail (not
after Ctrl-C, which reaches Ray's processes too: a dead agent's poll would only time out)."""
IntervalSink = Callable[[IntervalSnapshot], bool | None]
"""Sees each merged interval; returning False stops every agent, as `engine.run`'s callback does."""
STOP_GRACE_S = 10.0
"""After Ctrl-C, how long agents get (beyond one interval) to return what they measured."""


@dataclass(frozen=True)
class AgentReport:
    """One agent's part of a run: where it ran, its clock against the driver's, how late it
    started against the agreed instant, and its result or why it has none."""

    name: str
    identity: AgentIdentity | None
    clock: ClockReading | None
    start_late_s: float | None
    result: RunResult | None
    failure: str | None

    def to_json(self) -> dict[str, Any]:
        """The agent's entry in `caplab load --json`'s ``agents``."""
        r = self.result
        return {
            "name": self.name,
            "node": self.identity.node if self.identity else None,
            "pid": self.identity.pid if self.identity else None,
            "clock_offset_ms": self.clock.offset_s * 1e3 if self.clock else None,
            "clock_round_trip_ms": self.clock.round_trip_s * 1e3 if self.clock else None,
            "start_late_ms": self.start_late_s * 1e3 if self.start_late_s is not None else None,
            "failure": self.failure,
            "offered_rate": r.offered_rate if r else None,
            "users": r.users if r else None,
            "sent": r.sent if r else None,
            "completed": r.completed if r else None,
            "errors": r.errors if r else None,
            "throughput": r.throughput if r else None,
            "latency_ms": r.raw["latency_ms"] if r else None,
            "generator": r.raw["generator"] if r else None,
        }


@dataclass(frozen=True)
class ClusterRun:
    """A load run on agents: each agent's report and, over those that measured, the merged
    result (None when none did)."""

    agents: tuple[AgentReport, ...]
    result: RunResult | None
    interrupted: bool = False
    failures: tuple[AgentReport, ...] = field(default=())


@dataclass(frozen=True)
class Cluster:
    """A connected Ray cluster: its address as given and the CPUs it offers."""

    address: str
    cpus: float


def cpu_shortfall(cpus: float, agents: int) -> str | None:
    """The warning when agents outnumber the cluster's CPUs (they then share them)."""
    if cpus >= agents:
        return None
    return f"{agents} agents on a cluster with {cpus:g} CPUs: agents share CPUs and may saturate"


@contextlib.contextmanager
def connect(address: str) -> Iterator[Cluster]:
    """Connects to the Ray cluster at ``address`` (``ray://host:10001``, ``host:6379``, ``auto``)
    or, for ``local``, starts one on this machine offering its CPUs; disconnects (and stops a
    local one) afterwards. Raises ClusterUnreachable with Ray's reason."""
    if address != LOCAL:
        _check_reachable(address)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Ray's own advice on ports; the message below says it all
            if address == LOCAL:
                # "local": always a new Ray, never one already running here
                ray.init(address=LOCAL, num_cpus=os.cpu_count() or 1, include_dashboard=False, **QUIET)
            else:
                ray.init(address=address, **QUIET)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError, RayError) as e:
        hint = AUTH_HINT if "RAY_AUTH_MODE" not in os.environ and "timeout" in str(e) else ""
        raise ClusterUnreachable(f"cannot reach the Ray cluster at {address}: {_first_line(e)}{hint}") from e
    try:
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        yield Cluster(address, float(resources.get("CPU", 0.0)))
    finally:
        ray.shutdown()


class AgentPool:
    """The actors of a run, or of every run of a search or a study: placed when first needed and
    kept while they serve. Ray ends them with the connection (``connect``) if nothing else does."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._actors: list[Any] = []

    def actors(self, agents: int) -> list[Any]:
        if len(self._actors) != agents:
            self.discard()
            cpu_share = min(1.0, self.cluster.cpus / agents) if self.cluster.cpus else 1.0
            remote: Any = ray.remote(Agent)
            self._actors = [
                remote.options(
                    num_cpus=cpu_share, max_concurrency=4, max_restarts=0, scheduling_strategy="SPREAD"
                ).remote(agent_name(i))
                for i in range(agents)
            ]
        return self._actors

    def discard(self) -> None:
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []


class AgentsRunner:
    """Runs a plan on load agents the way `engine.run` runs it here, for a capacity search or a
    study: the merged result, or AgentsFailed naming the agents that died or could not run (a
    trial that lost an agent cannot be judged). The same agents run every trial."""

    def __init__(self, cluster: Cluster, agents: int) -> None:
        self.cluster = cluster
        self.agents = agents
        self.pool = AgentPool(cluster)

    def __call__(self, plan: Plan, on_interval: IntervalSink | None = None) -> RunResult:
        outcome = run_on_agents(self.cluster, plan, self.agents, on_interval, self.pool)
        if outcome.failures or outcome.result is None:
            named = "; ".join(f"{a.name} {a.failure}" for a in outcome.failures)
            raise AgentsFailed(f"the trial lost load agents: {named or 'none returned a result'}")
        return outcome.result


def _check_reachable(address: str) -> None:
    """Fails at once, with the socket's reason, when nothing listens at a ``host:port`` address
    (Ray's own client would retry for half a minute before saying only "timeout")."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        reason = e.strerror or str(e) or type(e).__name__
        raise ClusterUnreachable(f"cannot reach the Ray cluster at {address}: {reason.lower()}") from e


def run_on_agents(
    cluster: Cluster,
    plan: Plan,
    agents: int,
    on_interval: IntervalSink | None = None,
    pool: AgentPool | None = None,
) -> ClusterRun:
    """Runs ``plan`` split across ``agents`` actors on the connected cluster and merges their
    results. Ctrl-C stops every agent and returns what they measured, ``interrupted`` set. The
    actors come from ``pool`` and stay there for the next run unless this one lost one or was
    interrupted; without a pool they are this run's alone."""
    plans = split_plan(plan, agents)
    keep = pool is not None
    pool = pool or AgentPool(cluster)
    actors = pool.actors(agents)
    try:
        identities, readings = _meet(actors)
        start = agreed_start(time.time(), readings)
        runs = {
            actor.run.remote(p, reading.to_agent(start)): i
            for i, (actor, p, reading) in enumerate(zip(actors, plans, readings, strict=True))
        }
        finished, interrupted = _watch(actors, runs, plan.interval_s, on_interval)
    except BaseException:
        pool.discard()
        raise
    if not keep or interrupted or any(r.failure for r in finished.values()):
        pool.discard()
    reports = tuple(
        _report(
            i, identities[i], readings[i], finished.get(i, AgentRun(agent_name(i), None, "no answer", None))
        )
        for i in range(agents)
    )
    measured = [(r.name, r.result) for r in reports if r.result is not None]
    merged = merge_results(measured) if measured else None
    return ClusterRun(reports, merged, interrupted, tuple(r for r in reports if r.failure is not None))


def _meet(actors: list[Any]) -> tuple[list[AgentIdentity], list[ClockReading]]:
    """Each agent's identity (its caplab must be the driver's) and clock reading; an agent that
    cannot be placed or does not answer fails the run, named."""
    identities: list[AgentIdentity] = []
    readings: list[ClockReading] = []
    for i, actor in enumerate(actors):
        try:
            ray.get(actor.reset.remote(), timeout=AGENT_START_TIMEOUT_S)
            identity: AgentIdentity = ray.get(actor.identity.remote(), timeout=AGENT_START_TIMEOUT_S)
            reading = _read_clock(actor)
        except (GetTimeoutError, RayError) as e:
            raise AgentsFailed(f"{agent_name(i)} could not start: {_first_line(e)}") from e
        if (identity.caplab_version, identity.engine_version) != (caplab.__version__, engine.ENGINE_VERSION):
            raise AgentsFailed(
                f"{identity.name} on {identity.node} runs caplab {identity.caplab_version} (engine "
                f"{identity.engine_version}); this driver runs {caplab.__version__} "
                f"(engine {engine.ENGINE_VERSION}): install the same version on every node"
            )
        identities.append(identity)
        readings.append(reading)
    return identities, readings


def _read_clock(actor: Any) -> ClockReading:
    """The agent's clock against the driver's, from the quickest of a few round trips."""
    readings = []
    for _ in range(CLOCK_READINGS):
        sent_at = time.time()
        agent_time: float = ray.get(actor.clock.remote(), timeout=AGENT_START_TIMEOUT_S)
        readings.append(ClockReading.measure(sent_at, agent_time, time.time()))
    return min(readings, key=lambda r: r.round_trip_s)


def _watch(
    actors: list[Any],
    runs: dict[Any, int],
    interval_s: float,
    on_interval: IntervalSink | None,
) -> tuple[dict[int, AgentRun], bool]:
    """Waits for every agent's run, relaying merged intervals as all live agents report them;
    on Ctrl-C tells every agent to stop and waits a little for what they measured."""
    finished: dict[int, AgentRun] = {}
    snapshots: list[list[dict[str, Any]]] = [[] for _ in actors]
    relayed = 0
    interrupted = False
    deadline: float | None = None
    pending = dict(runs)
    while pending:
        try:
            ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=POLL_S)
            for ref in ready:
                i = pending.pop(ref)
                finished[i] = _answer(i, ref)
            if on_interval is not None:
                relayed, wanted = _relay(
                    actors, _measuring(len(actors), finished), snapshots, relayed, on_interval
                )
                if not wanted and deadline is None:
                    deadline = _stop_all(actors, pending.values(), interval_s)
            if deadline is not None and time.time() > deadline:
                for i in pending.values():
                    finished[i] = AgentRun(agent_name(i), None, "did not stop when told", None)
                break
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
            deadline = _stop_all(actors, pending.values(), interval_s)
    if on_interval is not None:  # every run has ended: the tail, waited for unless Ctrl-C was pressed
        wait_s = POLL_S * 4 if interrupted else FINAL_POLL_S
        _relay(actors, _measuring(len(actors), finished), snapshots, relayed, on_interval, wait_s)
    return finished, interrupted


def _stop_all(actors: list[Any], running: Iterable[int], interval_s: float) -> float:
    """Tells the running agents to stop; returns how long (on this clock) they have to answer."""
    for i in running:
        actors[i].stop.remote()
    return time.time() + interval_s + STOP_GRACE_S


def _measuring(agents: int, finished: dict[int, AgentRun]) -> list[int]:
    """The agents whose intervals count: those still running and those that returned a result."""
    return [i for i in range(agents) if i not in finished or finished[i].raw is not None]


def _answer(i: int, ref: Any) -> AgentRun:
    """An agent's run as it ended: its answer, or its death named."""
    try:
        answer: AgentRun = ray.get(ref)
    except RayError as e:
        return AgentRun(agent_name(i), None, f"died: {_first_line(e)}", None)
    return answer


def _relay(
    actors: list[Any],
    measuring: list[int],
    snapshots: list[list[dict[str, Any]]],
    relayed: int,
    on_interval: IntervalSink,
    final_wait_s: float | None = None,
) -> tuple[int, bool]:
    """Polls the measuring agents for new intervals and passes on, merged, each index all of them
    have reported; returns the next index to relay, and False when the callback wants the run
    stopped. A poll that times out is retried at the next call, so while the run goes on the wait
    is short. The final call, after every run has ended, waits up to ``final_wait_s`` and passes
    on the tail too: an index only some agents reached (one ended an interval later), merged
    from those, as the result's intervals are (``merge_intervals``)."""
    for i in measuring:
        with contextlib.suppress(GetTimeoutError, RayError):
            since = len(snapshots[i])
            got = ray.get(actors[i].progress.remote(since), timeout=final_wait_s or POLL_S * 4)
            snapshots[i].extend(got)
    counts = [len(snapshots[i]) for i in measuring]
    reached = (min if final_wait_s is None else max)(counts, default=0)
    wanted = True
    for index in range(relayed, reached):
        merged = merge_intervals([snapshots[i][index : index + 1] for i in measuring])[0]
        wanted = on_interval(IntervalSnapshot.from_dict(merged)) is not False and wanted
    return max(relayed, reached), wanted


def _report(i: int, identity: AgentIdentity, clock: ClockReading, run: AgentRun) -> AgentReport:
    result = RunResult.from_json(run.raw) if run.raw is not None else None
    return AgentReport(agent_name(i), identity, clock, run.start_late_s, result, run.failure)


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]
