"""Benchmark caplab's load generator against wrk and oha on a loopback nginx (`make bench`).

Usage: python bench/run.py [--quick] [--caplab PATH] [--out bench/RESULTS.md]
The run's figures replace its own section of the output file (between markers); sections written
there by hand are kept.
Install the reference tools first with bench/install.sh.
"""

import argparse
import datetime
import os
import shlex
import shutil
import sys
from pathlib import Path

import open_model
import report
import scenarios
import tools
from procs import GENERATOR_CPU, SERVER_CPU
from report import Scenario
from results_file import write_results
from target import NginxTarget, nginx_target

PINNING = f"generator on CPU {GENERATOR_CPU}, nginx on CPU {SERVER_CPU} via taskset"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (2 s / 8 s)")
    parser.add_argument("--caplab", help="caplab executable (default: .venv/bin/caplab, then PATH)")
    parser.add_argument("--out", type=Path, default=tools.BENCH_DIR / "RESULTS.md")
    return parser.parse_args(argv)


def check_setup(found: tools.Tools, caplab_arg: str | None) -> str | None:
    """What makes the run pointless: no target, no CPUs to pin to, a wrong --caplab."""
    available = os.sched_getaffinity(0)
    if not {GENERATOR_CPU, SERVER_CPU} <= available:
        return f"need CPUs {GENERATOR_CPU} and {SERVER_CPU}; this process may use {sorted(available)}"
    if found.nginx is None:
        return "nginx not found: run bench/install.sh"
    if shutil.which("openssl") is None:
        return "openssl not found: it makes the HTTPS target's certificate"
    if caplab_arg and found.caplab is None:
        return f"--caplab {caplab_arg}: no such executable"
    return None


def run_all(bench: scenarios.Bench) -> list[Scenario]:
    """Every scenario in order, then the caplab start-up cost noted under each table."""
    done = []
    for build in scenarios.ALL:
        print(f"scenario: {build.__name__}", file=sys.stderr, flush=True)
        done.append(build(bench))
    startup = scenarios.caplab_startup_note(bench.found.caplab)
    for sc in done:
        if startup is not None and any(m.tool.startswith("caplab") for m in sc.measurements):
            sc.notes.append(startup)
    return done


def versions(found: tools.Tools) -> dict[str, str]:
    """One line per tool as it reports itself, since figures change between releases."""
    flags = {"nginx": "-v", "wrk": "-v", "oha": "--version", "caplab": "--version"}
    return {tool: _version(found.executable(tool), flag) for tool, flag in flags.items()}


def _version(exe: str | None, flag: str) -> str:
    return report.tool_version([exe, flag]) if exe else "not found"


def engine_note(engine: Path | None, before: str) -> str:
    """Names the engine build measured, and warns when it was rebuilt mid-run (mixed figures)."""
    after = tools.file_stamp(engine) if engine and engine.is_file() else "not found"
    if after == before:
        return before
    return f"**{before}, REBUILT during the run ({after}): scenarios measured different builds**"


def context_for(
    raw_argv: list[str],
    quick: bool,
    versions: dict[str, str],
    target: NginxTarget,
    machine: dict[str, str],
) -> report.RunContext:
    """The header facts: how this run was invoked, on what, against which target."""
    return report.RunContext(
        invocation=shlex.join(["python", "bench/run.py", *raw_argv]),
        quick=quick,
        pinning=PINNING,
        nginx_command=shlex.join(target.command),
        nginx_config=target.config,
        versions=versions,
        machine=machine,
    )


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when every tool found ran cleanly, 1 if any run failed, 2 if nothing could run."""
    raw_argv = sys.argv[1:] if argv is None else argv
    args = parse_args(raw_argv)
    found = tools.find_tools(args.caplab)
    problem = check_setup(found, args.caplab)
    if problem is not None or found.nginx is None:
        print(f"bench: {problem}", file=sys.stderr)
        return 2
    settings = scenarios.QUICK if args.quick else scenarios.FULL
    machine = report.machine_facts()  # before the run, so the load average shows other work
    engine = tools.caplab_engine_file(found.caplab) if found.caplab else None
    engine_before = tools.file_stamp(engine) if engine else "not found"
    with nginx_target(found.nginx, SERVER_CPU) as target:
        bench = scenarios.Bench(found, target, settings)
        results = run_all(bench)
        print("scenario: open model at high rates", file=sys.stderr, flush=True)
        invocation = shlex.join(["python", "bench/run.py", *raw_argv])
        rates_section, rate_runs = open_model.run_section(
            bench, open_model.DEFAULT_RATES, 1, open_model.TITLE, invocation
        )
    stamps = versions(found)
    stamps["caplab engine"] = engine_note(engine, engine_before)
    text = report.render(context_for(raw_argv, args.quick, stamps, target, machine), results)
    text += "\n" + rates_section + "\n"
    # Only the generated section is rewritten: the hand-written before/after sections stay.
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_results(args.out, text, stamp)
    print(text)
    failed = any(m.error for sc in results for m in sc.measurements)
    failed = failed or any(r.measurement.error for r in rate_runs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
