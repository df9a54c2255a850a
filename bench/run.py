"""Benchmark caplab's load generator against wrk and oha on a loopback nginx (`make bench`).

Usage: python bench/run.py [--quick] [--caplab PATH] [--out bench/RESULTS.md]
Install the reference tools first with bench/install.sh.
"""

import argparse
import os
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import procs
import report
import tools
from report import Measurement, Scenario

GENERATOR_CPU = 0
SERVER_CPU = 1
PINNING = f"generator on CPU {GENERATOR_CPU}, nginx on CPU {SERVER_CPU} via taskset"
TIMEOUT_MARGIN_S = 30  # past the requested duration, a generator run is killed and reported
SETTLE_S = 1.0  # lets sockets close and nginx go idle so runs do not overlap


@dataclass(frozen=True)
class Settings:
    """Scenario sizes; --quick shortens only the durations, so the commands stay comparable."""

    duration_s: int
    long_duration_s: int
    users: int = 50
    rate: int = 20_000
    oha_connections: int = 200


FULL = Settings(duration_s=5, long_duration_s=20)
QUICK = Settings(duration_s=2, long_duration_s=8)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (2 s / 8 s)")
    parser.add_argument("--caplab", help="caplab executable (default: .venv/bin/caplab, then PATH)")
    parser.add_argument("--out", type=Path, default=tools.BENCH_DIR / "RESULTS.md")
    return parser.parse_args(argv)


def measure(tool: str, argv: list[str], parse: tools.Parser, duration_s: int) -> Measurement:
    """Run one generator pinned to its CPU; pair its own report with the kernel's accounting."""
    full = procs.pinned(GENERATOR_CPU, argv)
    command = shlex.join(full)
    print(f"  running: {command}", file=sys.stderr, flush=True)
    run = procs.run_measured(full, duration_s + TIMEOUT_MARGIN_S)
    time.sleep(SETTLE_S)
    problem = _run_problem(run, duration_s + TIMEOUT_MARGIN_S)
    if problem is not None:
        return Measurement(tool, command, run, None, problem)
    try:
        return Measurement(tool, command, run, parse(run.stdout))
    except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
        error = f"unreadable output ({exc!r}); {_excerpt(run)}"
        return Measurement(tool, command, run, None, error)


def _run_problem(run: procs.ProcessRun, timeout_s: int) -> str | None:
    """A run that was killed or failed is reported with what it printed, never parsed."""
    if run.timed_out:
        return f"killed after {timeout_s} s; {_excerpt(run)}"
    if run.exit_code != 0:
        return f"exit code {run.exit_code}; {_excerpt(run)}"
    return None


def _excerpt(run: procs.ProcessRun) -> str:
    def clip(text: str) -> str:
        text = text.strip()
        return text if len(text) <= 800 else text[:800] + " …"

    return f"stdout: `{clip(run.stdout)!r}` stderr: `{clip(run.stderr)!r}`"


CommandFor = Callable[[str], list[str]]


def add_run(
    scenario: Scenario,
    found: tools.Tools,
    tool: str,
    command_for: CommandFor,
    duration_s: int,
    label: str | None = None,
) -> None:
    """Measure one tool in a scenario, or note that it was skipped because it is not installed."""
    name, exe = label or tool, found.executable(tool)
    if exe is None:
        scenario.notes.append(f"{name} skipped: `{tool}` not found ({_install_hint(tool)})")
        return
    scenario.measurements.append(measure(name, command_for(exe), tools.PARSERS[tool], duration_s))


def _install_hint(tool: str) -> str:
    return "pass --caplab PATH or run make dev" if tool == "caplab" else "run bench/install.sh"


def scenario_closed(found: tools.Tools, url: str, s: Settings) -> Scenario:
    """A: how fast each tool can drive a fixed set of connections, and what that costs in CPU."""
    sc = Scenario(f"A. Closed model: {s.users} connections, {s.duration_s} s, one thread")
    d, u = s.duration_s, s.users
    add_run(sc, found, "wrk", lambda exe: tools.wrk_closed(exe, url, u, d), d)
    add_run(sc, found, "oha", lambda exe: tools.oha_closed(exe, url, u, d), d)
    add_run(sc, found, "caplab", lambda exe: tools.caplab_closed(exe, url, u, d), d)
    sc.ratio_label = "caplab req/s ÷ wrk req/s"
    sc.ratio = report.ratio_of(sc, "caplab", "wrk", lambda m: m.report.rps if m.report else None)
    return sc


def scenario_open(found: tools.Tools, url: str, s: Settings) -> Scenario:
    """B: at a fixed offered rate, whether each tool keeps up and how much CPU a request costs."""
    sc = Scenario(f"B. Open model: {s.rate:,}/s offered, {s.duration_s} s", offered_rate=s.rate)
    d, rate, conns = s.duration_s, s.rate, s.oha_connections
    add_run(sc, found, "oha", lambda exe: tools.oha_open(exe, url, rate, conns, d), d)
    add_run(sc, found, "caplab", lambda exe: tools.caplab_open(exe, url, rate, d), d)
    sc.ratio_label = "caplab CPU µs/req ÷ oha CPU µs/req (both measured with wait4)"
    sc.ratio = report.ratio_of(sc, "caplab", "oha", lambda m: m.cpu_us_per_request)
    return sc


def scenario_memory(found: tools.Tools, url: str, s: Settings) -> Scenario:
    """C: caplab keeps histograms, not samples, so peak RSS must not grow with run length."""
    short, long = s.duration_s, s.long_duration_s
    sc = Scenario(f"C. Memory vs run length: caplab open model {s.rate:,}/s, {short} s vs {long} s")
    sc.offered_rate = s.rate
    for d in (short, long):
        add_run(sc, found, "caplab", _caplab_open_for(url, s.rate, d), d, label=f"caplab {d} s")
    sc.ratio_label = f"caplab peak RSS {long} s ÷ {short} s"
    sc.ratio = report.ratio_of(sc, f"caplab {long} s", f"caplab {short} s", _peak_rss)
    return sc


def _caplab_open_for(url: str, rate: int, duration_s: int) -> CommandFor:
    """Binds the duration now; a lambda in the loop would see only the last one."""
    return lambda exe: tools.caplab_open(exe, url, rate, duration_s)


def _peak_rss(m: Measurement) -> float | None:
    return m.run.peak_rss_mb if m.run else None


def caplab_startup_note(caplab: str | None) -> str | None:
    """What the Python entry point costs before any load, to read caplab's external CPU/RSS by."""
    if caplab is None:
        return None
    run = procs.run_measured(procs.pinned(GENERATOR_CPU, [caplab, "--help"]), TIMEOUT_MARGIN_S)
    if run.exit_code != 0:
        return f"`caplab --help` failed (exit {run.exit_code}); start-up cost not measured"
    return (
        f"caplab start-up alone (`caplab --help`): {run.cpu_s * 1e3:.0f} ms CPU, "
        f"{run.peak_rss_mb:.1f} MB peak RSS; both are included in caplab's figures above"
    )


def versions(found: tools.Tools) -> dict[str, str]:
    """One line per tool as it reports itself, since figures change between releases."""
    flags = {"nginx": "-v", "wrk": "-v", "oha": "--version", "caplab": "--version"}
    return {tool: _version(found.executable(tool), flag) for tool, flag in flags.items()}


def _version(exe: str | None, flag: str) -> str:
    return report.tool_version([exe, flag]) if exe else "not found"


def check_cpus() -> str | None:
    """Pinning needs both CPUs; without them the comparison would measure contention instead."""
    available = os.sched_getaffinity(0)
    if {GENERATOR_CPU, SERVER_CPU} <= available:
        return None
    return f"need CPUs {GENERATOR_CPU} and {SERVER_CPU}; this process may use {sorted(available)}"


def run_scenarios(found: tools.Tools, url: str, settings: Settings) -> list[Scenario]:
    scenarios = []
    for build in (scenario_closed, scenario_open, scenario_memory):
        print(f"scenario {build.__name__}", file=sys.stderr, flush=True)
        scenarios.append(build(found, url, settings))
    startup = caplab_startup_note(found.caplab)
    if startup is not None:
        for sc in scenarios:
            sc.notes.append(startup)
    return scenarios


def _invocation(argv: list[str] | None) -> str:
    return shlex.join(["python", "bench/run.py", *(sys.argv[1:] if argv is None else argv)])


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when every tool found ran cleanly, 1 if any run failed, 2 if nothing could run."""
    args = parse_args(argv)
    found = tools.find_tools(args.caplab)
    problem = check_cpus() or (None if found.nginx else "nginx not found: run bench/install.sh")
    if problem is None and args.caplab and found.caplab is None:
        problem = f"--caplab {args.caplab}: no such executable"
    if problem is not None:
        print(f"bench: {problem}", file=sys.stderr)
        return 2
    assert found.nginx is not None
    settings = QUICK if args.quick else FULL
    with procs.nginx_target(found.nginx, SERVER_CPU) as target:
        scenarios = run_scenarios(found, target.url, settings)
    context = report.RunContext(
        invocation=_invocation(argv),
        quick=args.quick,
        pinning=PINNING,
        nginx_command=shlex.join(target.command),
        nginx_config=target.config,
        versions=versions(found),
        machine=report.machine_facts(),
    )
    text = report.render(context, scenarios)
    args.out.write_text(text)
    print(text)
    failed = any(m.error for sc in scenarios for m in sc.measurements)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
