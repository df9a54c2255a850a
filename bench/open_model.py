"""Open model at high rates: caplab against oha on one nginx worker, rate by rate.

What it answers: does the open model hold the offered rate (and at what CPU per request, p99 and
number of connections), and past the generator's limit does it say `saturated` with the rate it
held instead of spiralling? oha runs beside it at each rate, in the same order, so the noise of a
shared machine hits both alike; compare ratios within one run, not figures across runs.

Usage: python bench/open_model.py [--caplab PATH] [--baseline PATH] [--rates 20000,50000,80000,100000]
                                  [--duration 5] [--repeats 1] [--out FILE]
--baseline runs a second caplab build (say, the one before a change) beside the others, so a
before/after comparison shares one machine state.
Prints the Markdown section on stdout (and appends it to --out); progress goes to stderr.
`bench/run.py` runs it as its last scenario.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import report
import scenarios
import tools
from procs import GENERATOR_CPU, SERVER_CPU
from report import Measurement
from target import nginx_target

DEFAULT_RATES = (20_000, 50_000, 80_000, 100_000)
TITLE = "F. Open model at high rates: caplab vs oha"
HELD_SHARE = 0.99  # achieved / offered at or above this counts as holding the rate
PINNING = f"generator on CPU {GENERATOR_CPU}, nginx (one worker) on CPU {SERVER_CPU} via taskset"


@dataclass(frozen=True)
class OpenRun:
    """One tool at one offered rate: the table's row, taken from a scenarios.measure()."""

    tool: str
    rate: int
    repeat: int
    measurement: Measurement

    @property
    def generator(self) -> dict[str, object]:
        """caplab's own figures about itself (empty for oha, which reports none)."""
        raw = self.measurement.report.raw if self.measurement.report else {}
        gen = raw.get("generator") if self.tool.startswith("caplab") else None
        return gen if isinstance(gen, dict) else {}


BASELINE = "caplab (baseline)"


PRIORITY_NICE = -19
_priority: list[str] = []


def bench_priority() -> list[str]:
    """The `nice` prefix for generator commands when --priority was given, else nothing."""
    return list(_priority)


def raise_priority(server_pid: int) -> None:
    """Let the generators and nginx win their CPUs over other work on a shared machine: nice −19
    for every generator run and for nginx's processes (needs root), and for this session's
    autogroup. With autogroups (kernel.sched_autogroup_enabled), a process's nice weighs it only
    against its own session: against other sessions' work it is the group's nice that counts."""
    _priority[:] = ["nice", "-n", str(PRIORITY_NICE)]
    children = Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()
    for pid in [server_pid, *map(int, children)]:
        os.setpriority(os.PRIO_PROCESS, pid, PRIORITY_NICE)
    with contextlib.suppress(OSError):  # no autogroups here: the processes' nice is what counts
        _autogroup_nice.append(AUTOGROUP.read_text().split()[-1])
        AUTOGROUP.write_text(str(PRIORITY_NICE))


AUTOGROUP = Path("/proc/self/autogroup")
_autogroup_nice: list[str] = []


def restore_priority() -> None:
    """Give the session's autogroup back the nice it had: the session outlives the bench."""
    with contextlib.suppress(OSError):
        for nice in _autogroup_nice[:1]:
            AUTOGROUP.write_text(nice)


def measure_rates(
    bench: scenarios.Bench, rates: tuple[int, ...], repeats: int, baseline: str | None = None
) -> list[OpenRun]:
    """oha, then caplab (and the baseline build) at each rate, repeats innermost, so a
    disturbance hits every tool alike and shows as a spread."""
    s, url = bench.settings, bench.url
    d = s.duration_s
    executables = {"oha": bench.found.oha, "caplab": bench.found.caplab, BASELINE: baseline}
    runs = []
    for rate in rates:
        for repeat in range(1, repeats + 1):
            for tool, exe in executables.items():
                if exe is None:
                    if tool != BASELINE:
                        print(f"  {tool} not found, skipped", file=sys.stderr)
                    continue
                if tool == "oha":
                    argv = tools.oha_open(exe, url, rate, s.oha_connections, d)
                else:
                    argv = tools.caplab_open(exe, url, rate, d)
                argv = [*bench_priority(), *argv]
                m = scenarios.measure(bench, "oha" if tool == "oha" else "caplab", argv, d)
                runs.append(OpenRun(tool, rate, repeat, m))
    return runs


TABLE_HEAD = (
    "| offered/s | tool | run | achieved/s | held | CPU µs/req | p99 ms | connections opened "
    "| saturated | send lateness p99 / max ms | busiest thread | other work CPU0/CPU1 |\n"
    "|---:|---|---:|---:|---|---:|---:|---:|---|---:|---:|---|"
)


def render(title: str, runs: list[OpenRun], commands_note: str) -> str:
    """One Markdown section: the table, what each column means, and the exact commands."""
    rows = "\n".join(_row(r) for r in runs)
    commands = sorted({_command_shape(r) for r in runs})
    failed = [r for r in runs if r.measurement.error]
    failures = [f"- {r.tool} at {r.rate:,}/s FAILED: {r.measurement.error}" for r in failed]
    parts = [
        f"## {title}",
        "",
        TABLE_HEAD,
        rows,
        "",
        *failures,
        "- held: achieved ≥ 99 % of offered. CPU µs/req: the process's user+sys CPU from wait4 "
        "(start-up included) ÷ completed requests. connections opened: nginx's accepted-connections "
        "delta. saturated / lateness / busiest thread: caplab's own report about the generator "
        "(oha reports none).",
        "- Other workers share this 2-core machine: the last column is the share of each pinned CPU "
        "taken by other work during the run; compare the tools within one run, and rows with a high "
        "share with caution.",
        commands_note,
        "",
        "Commands (RATE as in the first column):",
        "",
        "```",
        *commands,
        "```",
    ]
    return "\n".join(parts)


def _row(r: OpenRun) -> str:
    m = r.measurement
    if m.report is None:
        return f"| {r.rate:,} | {r.tool} | {r.repeat} | failed, see below | | | | | | | | |"
    gen = r.generator
    held = m.report.rps >= HELD_SHARE * r.rate
    lateness = "n/a"
    if gen:
        lateness = f"{_num(gen.get('lateness_p99_ms'))} / {_num(gen.get('lateness_max_ms'))}"
    busiest = gen.get("busiest_thread")
    cells = [
        f"{r.rate:,}",
        r.tool,
        str(r.repeat),
        f"{m.report.rps:,.0f}",
        "yes" if held else "**no**",
        _num(m.cpu_us_per_request),
        _num(m.report.p99_ms),
        f"{m.observed.served.accepted_connections:,}",
        str(gen.get("saturated")) if gen else "n/a",
        lateness,
        f"{busiest:.0%}" if isinstance(busiest, float) else "n/a",
        f"{m.observed.generator_cpu_others:.0%} / {m.observed.server_cpu_others:.0%}",
    ]
    return "| " + " | ".join(cells) + " |"


def _num(value: object) -> str:
    """Two decimals, or n/a for a figure the tool did not report."""
    return f"{value:.2f}" if isinstance(value, float) else "n/a"


def _command_shape(r: OpenRun) -> str:
    """The command with the rate replaced by RATE, so one line stands for every row of a tool."""
    argv = shlex.split(r.measurement.command)
    return shlex.join(["RATE" if a == str(r.rate) else a for a in argv])


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--caplab", help="caplab executable (default: .venv/bin/caplab, then PATH)")
    p.add_argument("--baseline", help="another caplab build to run beside --caplab (before/after)")
    rates = ",".join(map(str, DEFAULT_RATES))
    p.add_argument("--rates", default=rates, help=f"offered rates, comma-separated [{rates}]")
    p.add_argument("--duration", type=int, default=5, help="seconds per run [5]")
    p.add_argument("--repeats", type=int, default=1, help="runs per tool and rate [1]")
    p.add_argument("--title", default=TITLE)
    p.add_argument("--out", type=Path, help="append the section to this file")
    p.add_argument(
        "--priority", action="store_true", help="run generators and nginx at nice -19 (root; shared machines)"
    )
    return p.parse_args(argv)


def ceiling_note(bench: scenarios.Bench) -> str:
    """wrk's closed loop on the same target just before: what this machine serves right now, the
    yardstick for the rates above (it moves with the other work on a shared machine)."""
    if bench.found.wrk is None:
        return "- wrk not found: no closed-loop reference for this run"
    s = bench.settings
    argv = [*bench_priority(), *tools.wrk_closed(bench.found.wrk, bench.url, s.users, s.duration_s)]
    m = scenarios.measure(bench, "wrk", argv, s.duration_s)
    if m.report is None:
        return f"- wrk closed-loop reference failed: {m.error}"
    return (
        f"- Reference: wrk's closed loop ({s.users} connections, one thread) reached "
        f"{m.report.rps:,.0f}/s at p99 {_num(m.report.p99_ms)} ms just before these runs "
        f"(other work CPU0/CPU1: {m.observed.generator_cpu_others:.0%} / "
        f"{m.observed.server_cpu_others:.0%})."
    )


def run_section(
    bench: scenarios.Bench,
    rates: tuple[int, ...],
    repeats: int,
    title: str,
    invocation: str,
    baseline: str | None = None,
) -> tuple[str, list[OpenRun]]:
    """Measure, then render with the machine facts taken before the first run."""
    machine = report.machine_facts()
    reference = ceiling_note(bench)
    runs = measure_rates(bench, rates, repeats, baseline)
    facts = "; ".join(f"{k}: {v}" for k, v in machine.items())
    priority = f"; generators, nginx and their autogroup at nice {PRIORITY_NICE}" if _priority else ""
    note = f"{reference}\n- Produced by `{invocation}`; {PINNING}{priority}; {facts}."
    return render(title, runs, note), runs


def main(argv: list[str] | None = None) -> int:
    """Exit 0 when every run completed, 1 when one failed, 2 when nothing could run."""
    raw = sys.argv[1:] if argv is None else argv
    args = parse_args(raw)
    found = tools.find_tools(args.caplab)
    if found.nginx is None:
        print("open_model: nginx not found: run bench/install.sh", file=sys.stderr)
        return 2
    rates = tuple(int(r) for r in args.rates.split(","))
    settings = scenarios.Settings(duration_s=args.duration, long_duration_s=args.duration)
    invocation = shlex.join(["python", "bench/open_model.py", *raw])
    with nginx_target(found.nginx, SERVER_CPU) as target:
        bench = scenarios.Bench(found, target, settings)
        if args.priority:
            raise_priority(target.pid)
        try:
            text, runs = run_section(bench, rates, args.repeats, args.title, invocation, args.baseline)
        finally:
            restore_priority()
    print(text)
    if args.out is not None:
        with args.out.open("a") as out:
            out.write("\n" + text + "\n")
    return 1 if any(r.measurement.error for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
