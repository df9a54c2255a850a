"""Benchmark one engine against the same load on two Ray agents on this machine (not a test).

What Ray costs a load: at start, the local Ray's start-up and the agents' placement, clock
readings and agreed start (the wall time of a run beyond its measured window); per request, the CPU
of every process involved (the driver, Ray's own processes, the agents) beyond the engine's own
CPU, and the latency the merged result reports against one engine's at the same total rate.
The target is knownserver with no per-request cost, so both runs measure the generator side.

Usage: python bench/cluster.py [--rate 2000] [--duration 10] [--agents 2]
Prints a markdown snippet on stdout; progress goes to stderr. Do not run it beside other work:
the CPU figures are the machine's.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from capacity import machine
from caplab import engine
from caplab.cluster import ray_agents
from caplab.cluster.clock import START_LEAD_S
from caplab.engine import LoadSpec, RunResult
from caplab.systems.process import start_module
from results_file import write_now


@dataclass(frozen=True)
class Measured:
    """One way of running the load: its result, its wall time, and all CPU spent meanwhile."""

    result: RunResult
    wall_s: float
    cpu_s: float


class CpuWatch:
    """Adds up the CPU of this process and all its descendants but one (the target), including
    those that exit before the end (Ray's workers are killed when the run ends): each is sampled
    every 0.2 s."""

    def __init__(self, excluded_pid: int) -> None:
        self._excluded = excluded_pid
        self._me = psutil.Process()
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def __enter__(self) -> CpuWatch:
        self._sample()
        self._first = dict(self._last)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    @property
    def cpu_s(self) -> float:
        return sum(
            cpu - self._first.get(pid, 0.0) for pid, cpu in self._last.items() if pid != self._excluded
        )

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(0.2):
            self._sample()

    def _sample(self) -> None:
        for p in [self._me, *self._me.children(recursive=True)]:
            try:
                t = p.cpu_times()
            except psutil.Error:
                continue
            self._last[p.pid] = t.user + t.system


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--rate", type=float, default=2000.0, help="total requests per second [2000]")
    p.add_argument("--duration", type=float, default=10.0, help="measured seconds [10]")
    p.add_argument("--agents", type=int, default=2, help="Ray agents [2]")
    p.add_argument(
        "--out", type=Path, help="write the figures into this file's section for them (else: print them)"
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with start_module("caplab.systems.knownserver", "--cpu-us", "0") as server:
        plan = engine.build_plan(
            LoadSpec(
                f"http://{server.host}:{server.port}/", rate=args.rate, duration_s=args.duration, warmup_s=1
            )
        )
        print(f"one engine at {args.rate:g}/s for {args.duration:g}s…", file=sys.stderr)
        with CpuWatch(server.process.pid) as watch:
            began = time.monotonic()
            single = engine.run(plan)
            single_wall = time.monotonic() - began
        alone = Measured(single, single_wall, watch.cpu_s)
        print("starting a local Ray…", file=sys.stderr)
        began = time.monotonic()
        with ray_agents.connect(ray_agents.LOCAL) as cluster:
            ray_start_s = time.monotonic() - began
            print(f"{args.agents} agents at {args.rate / args.agents:g}/s each…", file=sys.stderr)
            with CpuWatch(server.process.pid) as watch:
                began = time.monotonic()
                outcome = ray_agents.run_on_agents(cluster, plan, args.agents)
                agents_wall = time.monotonic() - began
        if outcome.result is None or outcome.failures:
            print(f"agents failed: {[a.failure for a in outcome.failures]}", file=sys.stderr)
            return 1
        spread = Measured(outcome.result, agents_wall, watch.cpu_s)
    text = report(args, alone, spread, ray_start_s, outcome)
    if args.out:
        write_now(args.out, text, "bench/cluster.py")
    print(text)
    return 0


def report(
    args: argparse.Namespace,
    alone: Measured,
    spread: Measured,
    ray_start_s: float,
    outcome: ray_agents.ClusterRun,
) -> str:
    measured_s = args.duration + 1.0
    rows = []
    for name, m in (("one engine", alone), (f"{args.agents} Ray agents", spread)):
        r, g = m.result, m.result.generator
        per_request = m.cpu_s * 1e6 / r.sent if r.sent else float("nan")
        rows.append(
            f"| {name} | {r.throughput:,.1f} | {_ms(r.latency_ms.p50)} | {_ms(r.latency_ms.p99)} "
            f"| {g.cpu_us_per_request or float('nan'):.1f} | {per_request:.1f} "
            f"| {m.wall_s - measured_s:.2f} |"
        )
    offsets = ", ".join(
        f"{a.name} {a.clock.offset_s * 1e3:+.2f} ms (round trip {a.clock.round_trip_s * 1e3:.2f} ms, "
        f"started {a.start_late_s * 1e3:.2f} ms late)"
        for a in outcome.agents
        if a.clock is not None and a.start_late_s is not None
    )
    return "\n".join(
        [
            "",
            f"## One engine against {args.agents} Ray agents "
            f"({args.rate:g}/s, {args.duration:g}s + 1s warm-up)",
            "",
            "Command: `python bench/cluster.py "
            f"--rate {args.rate:g} --duration {args.duration:g} --agents {args.agents}`",
            *machine(),
            "",
            "| run | throughput /s | p50 | p99 | engine µs/request | all CPU µs/request "
            "| wall beyond the load s |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"- local Ray start: {ray_start_s:.1f} s (`--cluster local` pays it on every run; a running "
            f"cluster does not); the agents' wall beyond the load includes the {START_LEAD_S:g} s lead "
            "to the agreed start",
            f"- agents' clocks: {offsets}",
            "- all CPU: this process and every descendant but the target (Ray's processes, the agents)",
        ]
    )


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f} ms"


if __name__ == "__main__":
    sys.exit(main())
