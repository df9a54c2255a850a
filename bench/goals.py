"""The load engine's two cost goals, each a ratio against a peer on the same server in one run.

1. **Open model against wrk.** caplab's open model holds 0.8 × wrk's closed-loop rate of one nginx
   worker, on one core, with p99 under 2 ms and no more connections than it needs: Little's law
   (rate × mean latency) plus headroom (`CONNECTION_HEADROOM`).
2. **CPU per request against oha.** At 20,000/s caplab spends at most 0.8 × oha's CPU per request
   (both from wait4, start-up included, as bench/run.py's table B).

Absolute figures move with the machine (nginx's ceiling alone moved from ~165k/s to ~107k/s between
two hosts), so the goals are ratios within one run, repeated and interleaved (wrk, caplab, oha,
caplab; then again) so that a disturbance hits every tool alike. Each run's figures are kept by
machine in bench/goals.json, and the section in bench/RESULTS.md is a table with a row per machine.

Usage: python bench/goals.py [--caplab PATH] [--repeats 3] [--duration 5] [--out bench/RESULTS.md]
`make bench` runs it with the defaults.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import report
import scenarios
import tools
from open_model import PINNING
from procs import SERVER_CPU
from results_file import write_now
from target import nginx_target

SCRIPT = "bench/goals.py"
HISTORY = Path(__file__).with_name("goals.json")
OPEN_SHARE = 0.8  # of wrk's closed-loop rate: the open model's goal
CPU_RATE = 20_000  # offered rate of the CPU-per-request comparison
CPU_GOAL = 0.8  # caplab's CPU per request over oha's, at most
P99_GOAL_MS = 2.0
HELD_SHARE = 0.99  # achieved / offered at or above this holds the rate
CONNECTION_HEADROOM = 2.0  # connections opened within this × Little's law's need (at least 50)
MIN_CONNECTIONS = 50


@dataclass(frozen=True)
class Round:
    """One interleaved round: wrk's ceiling, caplab at 0.8 of it, oha and caplab at 20,000/s."""

    wrk_rps: float
    offered: int
    achieved: float
    p99_ms: float | None
    mean_ms: float | None
    connections: int | None
    caplab_cpu_us: float | None
    oha_cpu_us: float | None
    disturbed: bool

    @property
    def needed_connections(self) -> float | None:
        """Little's law: requests in flight at once = rate × mean latency."""
        return None if self.mean_ms is None else self.achieved * self.mean_ms / 1000.0

    @property
    def held(self) -> bool:
        """The open-model goal: the rate held, p99 under the bound, connections within need."""
        need = self.needed_connections
        lean = (
            self.connections is not None
            and need is not None
            and self.connections <= max(MIN_CONNECTIONS, CONNECTION_HEADROOM * need)
        )
        fast = self.p99_ms is not None and self.p99_ms < P99_GOAL_MS
        return self.achieved >= HELD_SHARE * self.offered and fast and lean

    @property
    def cpu_ratio(self) -> float | None:
        if self.caplab_cpu_us is None or not self.oha_cpu_us:
            return None
        return self.caplab_cpu_us / self.oha_cpu_us


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--caplab", help="caplab executable (default: .venv/bin/caplab, then PATH)")
    p.add_argument("--repeats", type=int, default=3, help="interleaved rounds [3]")
    p.add_argument("--duration", type=int, default=5, help="seconds per run [5]")
    p.add_argument("--out", type=Path, help="write the section into this file (bench/RESULTS.md)")
    return p.parse_args(argv)


def one_round(bench: scenarios.Bench, caplab: str, oha: str, wrk: str, d: int) -> Round:
    """wrk's closed loop, caplab's open model at 0.8 of it, then oha and caplab at 20,000/s."""
    s, url = bench.settings, bench.url
    ceiling = scenarios.measure(bench, "wrk", tools.wrk_closed(wrk, url, s.users, d), d)
    if ceiling.report is None:
        raise RuntimeError(f"wrk's closed loop failed: {ceiling.error}")
    offered = int(round(OPEN_SHARE * ceiling.report.rps, -2))
    held = scenarios.measure(bench, "caplab", tools.caplab_open(caplab, url, offered, d), d)
    theirs = scenarios.measure(bench, "oha", tools.oha_open(oha, url, CPU_RATE, s.oha_connections, d), d)
    ours = scenarios.measure(bench, "caplab", tools.caplab_open(caplab, url, CPU_RATE, d), d)
    raw = held.report.raw if held.report else {}
    generator = raw.get("generator") or {}
    latency = raw.get("latency_ms") or {}
    return Round(
        wrk_rps=ceiling.report.rps,
        offered=offered,
        achieved=held.report.rps if held.report else 0.0,
        p99_ms=held.report.p99_ms if held.report else None,
        mean_ms=latency.get("mean"),
        connections=generator.get("connections_opened"),
        caplab_cpu_us=ours.cpu_us_per_request,
        oha_cpu_us=theirs.cpu_us_per_request,
        disturbed=any(m.observed.disturbed for m in (ceiling, held, theirs, ours)),
    )


def machine_key(machine: dict[str, str]) -> str:
    """A row's machine: its CPU model and count (the date and load change from run to run)."""
    return f"{machine['CPU']}, {machine['CPUs (nproc)']} CPUs"


def summary(rounds: list[Round], machine: dict[str, str], commit: str) -> dict[str, object]:
    """The figures a row shows: medians over the rounds, and how many rounds met each goal."""
    ratios = [r.cpu_ratio for r in rounds if r.cpu_ratio is not None]
    p99s = [r.p99_ms for r in rounds if r.p99_ms is not None]
    return {
        "date": machine["date"],
        "commit": commit,
        "rounds": len(rounds),
        "disturbed": sum(r.disturbed for r in rounds),
        "wrk_rps": statistics.median(r.wrk_rps for r in rounds),
        "held": sum(r.held for r in rounds),
        "held_share": statistics.median(r.achieved / r.offered for r in rounds),
        "p99_ms": statistics.median(p99s) if p99s else None,
        "connections": statistics.median(r.connections or 0 for r in rounds),
        "needed": statistics.median(r.needed_connections or 0.0 for r in rounds),
        "cpu_ratio": statistics.median(ratios) if ratios else None,
        "cpu_ratio_range": [min(ratios), max(ratios)] if ratios else None,
        "caplab_cpu_us": statistics.median(r.caplab_cpu_us or 0.0 for r in rounds),
        "oha_cpu_us": statistics.median(r.oha_cpu_us or 0.0 for r in rounds),
        "runs": [asdict(r) for r in rounds],
    }


def _num(value: object, spec: str) -> str:
    return "—" if not isinstance(value, int | float) else format(value, spec)


def render(history: dict[str, dict[str, object]], invocation: str) -> str:
    """The section: the goals, a row per machine (newest run each), and how it was measured."""
    head = (
        "## Goals: the open model against wrk, CPU per request against oha\n\n"
        f"Produced by `{invocation}` ({PINNING}). Goals: the open model holds "
        f"{OPEN_SHARE:g} × wrk's closed-loop rate with p99 under {P99_GOAL_MS:g} ms and at most "
        f"{CONNECTION_HEADROOM:g} × the connections Little's law needs (at least {MIN_CONNECTIONS}); "
        f"at {CPU_RATE:,}/s caplab's CPU per request is at most {CPU_GOAL:g} × oha's. Medians over "
        "the rounds; each round runs wrk, caplab, oha and caplab back to back.\n\n"
        "| machine | date | commit | rounds (disturbed) | wrk closed/s | open model at 0.8 × wrk: "
        "rounds held, achieved/offered, p99 ms, connections / needed | CPU µs/req caplab / oha "
        "| ratio [range] | goals met |\n"
        "|---|---|---|---|---:|---|---|---|---|"
    )
    rows = []
    for machine, s in sorted(history.items()):
        cpu_ratio = s.get("cpu_ratio")
        held_all = s["held"] == s["rounds"]
        cpu_met = isinstance(cpu_ratio, int | float) and cpu_ratio <= CPU_GOAL
        span = s.get("cpu_ratio_range") or [None, None]
        assert isinstance(span, list)
        met = ", ".join(n for n, ok in (("open model", held_all), ("CPU per request", cpu_met)) if ok)
        rows.append(
            f"| {machine} | {s['date']} | {s['commit']} | {s['rounds']} ({s['disturbed']}) "
            f"| {_num(s['wrk_rps'], ',.0f')} | {s['held']} of {s['rounds']}, "
            f"{_num(s['held_share'], '.3f')}, {_num(s['p99_ms'], '.2f')}, "
            f"{_num(s['connections'], ',.0f')} / {_num(s['needed'], ',.0f')} "
            f"| {_num(s['caplab_cpu_us'], '.1f')} / {_num(s['oha_cpu_us'], '.1f')} "
            f"| {_num(cpu_ratio, '.2f')} [{_num(span[0], '.2f')}, {_num(span[1], '.2f')}] "
            f"| {met or 'neither'} |"
        )
    return "\n".join([head, *rows]) + (
        "\n\nA disturbed round had more than 5 % of a pinned CPU busy with other work; "
        "bench/goals.json keeps every round's figures."
    )


def engine_version() -> str:
    """The checkout's commit, with "+changes" when the engine's source differs from it: the engine
    that was built (a changed doc is not a different engine)."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=HISTORY.parent, capture_output=True, text=True)
        return done.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", "engine")
    return commit + ("+changes" if changed else "")


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when the rounds ran (met or not: the table says), 2 when a tool is missing."""
    raw = sys.argv[1:] if argv is None else argv
    args = parse_args(raw)
    found = tools.find_tools(args.caplab)
    missing = [n for n in ("nginx", "wrk", "oha", "caplab") if getattr(found, n) is None]
    if missing:
        print(f"goals: not found: {', '.join(missing)} (run bench/install.sh)", file=sys.stderr)
        return 2
    assert found.nginx and found.wrk and found.oha and found.caplab
    machine = report.machine_facts()
    settings = scenarios.Settings(duration_s=args.duration, long_duration_s=args.duration)
    with nginx_target(found.nginx, SERVER_CPU) as target:
        bench = scenarios.Bench(found, target, settings)
        rounds = []
        for n in range(1, args.repeats + 1):
            print(f"goals: round {n} of {args.repeats}", file=sys.stderr, flush=True)
            rounds.append(one_round(bench, found.caplab, found.oha, found.wrk, args.duration))
    history = json.loads(HISTORY.read_text()) if HISTORY.exists() else {}
    history[machine_key(machine)] = summary(rounds, machine, engine_version())
    HISTORY.write_text(json.dumps(history, indent=1) + "\n")
    text = render(history, shlex.join(["python", SCRIPT, *raw]))
    print(text)
    if args.out is not None:
        write_now(args.out, text, SCRIPT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
