"""Benchmark the capacity search against a server whose ceiling is known (not a test).

The target (from the issue): on a server whose ceiling is known, `caplab find-capacity` lands within
5 % of it in under 4 minutes. The server is knownserver burning a fixed CPU time per request on its
one thread, pinned to one core; its ceiling is measured independently first — a closed-model run
with enough users to keep it busy all the time, whose throughput is the saturated throughput — and
cross-checked against 1 / (the server's CPU per request, from its own counters). Then the search
runs with its default trial settings and an SLO loose enough that the ceiling is the limit.

Usage: python bench/capacity.py [--caplab PATH] [--cpu-us 1000] [--precision 5%]
Prints a markdown snippet (machine, commands, figures) on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from caplab.systems.knownserver import served_requests
from caplab.systems.process import RunningServer, start_module
from results_file import write_now

TARGET_RATIO = 0.95
TARGET_SEARCH_S = 240.0


@dataclass(frozen=True)
class Ceiling:
    command: list[str]
    throughput: float
    """Saturated closed-model throughput: the measured ceiling."""
    cpu_ms_per_request: float
    """The server's CPU per request during that run (user + system, from its own counters)."""
    p50_ms: float | None


@dataclass(frozen=True)
class Search:
    command: list[str]
    doc: dict[str, Any]
    exit_code: int
    wall_s: float


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    default = Path(sys.executable).parent / "caplab"
    p.add_argument("--caplab", type=Path, default=default, help=f"caplab executable [{default}]")
    p.add_argument("--cpu-us", type=float, default=1000.0, help="CPU burned per request [1000]")
    p.add_argument("--slo", default="p99<=500ms", help="SLO for the search [p99<=500ms]")
    p.add_argument("--precision", default="5%", help="search precision [5%%]")
    p.add_argument("--users", type=int, default=8, help="users for the ceiling run [8]")
    p.add_argument("--ceiling-s", type=float, default=5.0, help="ceiling run length, seconds [5]")
    p.add_argument("--server-cpu", type=int, default=1, help="core the server is pinned to [1]")
    p.add_argument("--generator-cpu", type=int, default=0, help="core caplab is pinned to [0]")
    p.add_argument(
        "--out", type=Path, help="write the figures into this file's section for them (else: print them)"
    )
    return p.parse_args(argv)


def pinned(cpu: int, argv: list[str]) -> list[str]:
    return ["taskset", "-c", str(cpu), *argv]


def server_cpu_s(server: RunningServer) -> float:
    t = psutil.Process(server.process.pid).cpu_times()
    return float(t.user + t.system)


def served(server: RunningServer) -> int:
    """Requests the server has answered so far (knownserver's ``/__stats``)."""
    return served_requests(server.host, server.port)


def measure_ceiling(args: argparse.Namespace, server: RunningServer, url: str) -> Ceiling:
    cmd = pinned(
        args.generator_cpu,
        [
            str(args.caplab),
            "load",
            url,
            "--users",
            str(args.users),
            "--duration",
            f"{args.ceiling_s:g}s",
            "--warmup",
            "1s",
            "--json",
        ],
    )
    before, answered = server_cpu_s(server), served(server)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    cpu, answered = server_cpu_s(server) - before, served(server) - answered
    if p.returncode != 0:
        raise SystemExit(f"ceiling run failed ({p.returncode}): {p.stderr[-1000:]}")
    r = json.loads(p.stdout)
    # Every request of the run (warm-up and drain too) used the server's CPU: divide by all of them.
    cpu_ms = 1000.0 * cpu / max(answered, 1)
    return Ceiling(cmd, float(r["throughput"]), cpu_ms, r["latency_ms"]["p50"])


def run_search(args: argparse.Namespace, server: RunningServer, url: str) -> Search:
    cmd = pinned(
        args.generator_cpu,
        [
            str(args.caplab),
            "find-capacity",
            url,
            "--slo",
            args.slo,
            "--precision",
            args.precision,
            "--sut-pid",
            str(server.process.pid),
            "--json",
        ],
    )
    began = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, text=True)  # progress shows live
    out, _ = p.communicate(timeout=900)
    wall = time.monotonic() - began
    return Search(cmd, json.loads(out) if out.strip() else {}, p.returncode, wall)


def machine() -> list[str]:
    models = [
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    ]
    cpu = models[0] if models else platform.processor() or "unknown"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [
        f"- CPU: {cpu}",
        f"- CPUs (nproc): {os.cpu_count()}",
        f"- kernel (uname -r): {platform.release()}",
        f"- date: {now}",
        f"- load average (1/5/15 min) before the run: {load}",
    ]


def report(args: argparse.Namespace, server_cmd: list[str], ceiling: Ceiling, search: Search) -> str:
    doc = search.doc
    capacity = doc.get("capacity_rps")
    ratio = capacity / ceiling.throughput if capacity else None
    limit = doc.get("limit") or {}
    search_s = doc.get("search_s")
    within = ratio is not None and TARGET_RATIO <= ratio <= 1.0 / TARGET_RATIO
    quick = search_s is not None and search_s < TARGET_SEARCH_S
    ci = doc.get("ci95")
    rows = [
        ("ceiling (closed model, saturated throughput)", f"{ceiling.throughput:,.1f}/s"),
        (
            "ceiling cross-check: 1 / server CPU per request",
            f"{1000.0 / ceiling.cpu_ms_per_request:,.1f}/s ({ceiling.cpu_ms_per_request:.3f} ms/request)",
        ),
        ("capacity found", f"{capacity:,.1f}/s" if capacity else f"none: {doc.get('message')}"),
        ("95 % interval", f"{ci[0]:,.1f}–{ci[1]:,.1f}/s" if ci else "–"),
        ("capacity / ceiling", f"{ratio:.3f}" if ratio else "–"),
        ("search time", f"{search_s:.1f} s" if search_s else f"– (wall {search.wall_s:.1f} s)"),
        ("trials", str(doc.get("trial_count", "–"))),
        ("generator saturated", str(doc.get("generator_saturated", "–"))),
        ("limit", f"{limit.get('kind', '–')} ({limit.get('resource')})"),
        ("limit summary", str(limit.get("summary", "–")).replace("|", "/")),
        (
            f"target: within {1 - TARGET_RATIO:.0%} in under {TARGET_SEARCH_S / 60:.0f} min",
            f"{'met' if within and quick else 'NOT met'} (within: {within}, time: {quick})",
        ),
    ]
    lines = [
        "## Capacity search against a known ceiling",
        "",
        "Produced by `python bench/capacity.py` " + shlex.join(sys.argv[1:]),
        "",
        "### Machine",
        "",
        *machine(),
        f"- pinning: server on CPU {args.server_cpu}, caplab on CPU {args.generator_cpu} via taskset",
        "",
        "### Commands",
        "",
        "```",
        shlex.join(server_cmd),
        shlex.join(ceiling.command),
        shlex.join(search.command),
        "```",
        "",
        "### Figures",
        "",
        "| figure | value |",
        "|---|---|",
        *(f"| {a} | {b} |" for a, b in rows),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    available = os.sched_getaffinity(0)
    if not {args.server_cpu, args.generator_cpu} <= available:
        print(
            f"need CPUs {args.server_cpu} and {args.generator_cpu}; have {sorted(available)}", file=sys.stderr
        )
        return 2
    server_args = ("--cpu-us", f"{args.cpu_us:g}")
    prefix = ("taskset", "-c", str(args.server_cpu))
    server_cmd = [*prefix, sys.executable, "-m", "caplab.systems.knownserver", *server_args]
    with start_module("caplab.systems.knownserver", *server_args, prefix=prefix) as server:
        url = f"http://{server.address}/"
        print(f"ceiling: {args.users} users for {args.ceiling_s:g} s", file=sys.stderr, flush=True)
        ceiling = measure_ceiling(args, server, url)
        print(f"ceiling {ceiling.throughput:,.1f}/s; searching", file=sys.stderr, flush=True)
        search = run_search(args, server, url)
    text = report(args, server_cmd, ceiling, search)
    if args.out:
        write_now(args.out, text, "bench/capacity.py")
    print(text)
    return 0 if search.exit_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
