"""Benchmark results and their rendering as bench/RESULTS.md (the same text goes to stdout)."""

import datetime
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from procs import GENERATOR_CPU, SERVER_CPU, ProcessRun
from target import ServerCounters
from tools import ToolReport

VERSION_TIMEOUT_S = 10.0
DISTURBED_SHARE = 0.05  # other work on the generator CPU above this marks a run as disturbed


@dataclass(frozen=True)
class Observed:
    """What the harness saw around a run besides the tool itself."""

    served: ServerCounters  # nginx's requests, new connections and CPU during the run
    generator_cpu_others: float  # share of the run the generator's CPU spent on other work
    server_cpu_others: float  # share of the run the server's CPU spent on other work than nginx

    @property
    def disturbed(self) -> bool:
        return max(self.generator_cpu_others, self.server_cpu_others) > DISTURBED_SHARE


@dataclass(frozen=True)
class Measurement:
    """One generator run in one scenario: its own report beside the kernel's account of its cost."""

    tool: str
    command: str
    run: ProcessRun
    report: ToolReport | None
    observed: Observed
    error: str | None = None

    @property
    def cpu_us_per_request(self) -> float | None:
        """External CPU (user+sys from wait4) per completed request, start-up included."""
        if self.report is None or self.report.completed == 0:
            return None
        return self.run.cpu_s * 1e6 / self.report.completed


@dataclass
class Scenario:
    """A table's worth of runs under the same offered load, plus the one ratio it exists for."""

    title: str
    offered_rate: int | None = None
    measurements: list[Measurement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ratio_label: str = ""
    ratio: float | None = None

    def find(self, tool: str) -> Measurement | None:
        return next((m for m in self.measurements if m.tool == tool and m.report), None)


Metric = Callable[[Measurement], float | None]


def ratio_of(scenario: Scenario, numerator: str, denominator: str, metric: Metric) -> float | None:
    """metric(numerator) ÷ metric(denominator), or None when either run is missing or failed."""
    top, bottom = scenario.find(numerator), scenario.find(denominator)
    if top is None or bottom is None:
        return None
    a, b = metric(top), metric(bottom)
    return None if a is None or not b else a / b


@dataclass(frozen=True)
class RunContext:
    """Everything a reader needs to reproduce the figures: machine, versions, target, invocation."""

    invocation: str
    quick: bool
    pinning: str
    nginx_command: str
    nginx_config: str
    versions: dict[str, str]
    machine: dict[str, str]


def machine_facts() -> dict[str, str]:
    """The facts that decide whether two RESULTS.md files are comparable at all."""
    return {
        "CPU": _lscpu_model(),
        "CPUs (nproc)": _first_line(["nproc"]),
        "kernel (uname -r)": _first_line(["uname", "-r"]),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load average (1/5/15 min) before the run": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def _lscpu_model() -> str:
    for line in _output(["lscpu"]).splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def tool_version(argv: list[str]) -> str:
    """First line a tool prints about itself (wrk and nginx use stderr, wrk exits 1)."""
    return _first_line(argv) or "unknown"


def _first_line(argv: list[str]) -> str:
    lines = [line.strip() for line in _output(argv).splitlines() if line.strip()]
    return lines[0] if lines else ""


def _output(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr


# --- rendering --------------------------------------------------------------------------------

TABLE_HEAD = (
    "| tool | requests | req/s | CPU s | CPU µs/req | p50 ms | p99 ms | peak RSS MB |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|"
)


def render(context: RunContext, scenarios: list[Scenario]) -> str:
    """The whole RESULTS.md: a header to reproduce the run, then one section per scenario."""
    parts = [_header(context), *(_section(s) for s in scenarios), _method_notes()]
    return "\n\n".join(parts) + "\n"


def _header(ctx: RunContext) -> str:
    machine = "\n".join(f"- {key}: {value}" for key, value in ctx.machine.items())
    versions = "\n".join(f"- {tool}: {value}" for tool, value in ctx.versions.items())
    mode = "quick smoke run (--quick): durations shortened" if ctx.quick else "full run"
    return (
        "# caplab load generator benchmarks\n\n"
        f"Produced by `{ctx.invocation}` ({mode}).\n\n"
        f"## Machine\n\n{machine}\n- pinning: {ctx.pinning}\n\n"
        f"## Tools\n\n{versions}\n\n"
        f"## Target\n\nOne nginx worker on 127.0.0.1, started as `{ctx.nginx_command}` with:\n\n"
        f"```nginx\n{ctx.nginx_config.rstrip()}\n```"
    )


def _section(scenario: Scenario) -> str:
    rows = "\n".join(_row(m) for m in scenario.measurements)
    lines = [f"## {scenario.title}", "", TABLE_HEAD, rows, ""]
    if scenario.ratio_label:
        lines.append(f"**{scenario.ratio_label} = {_fmt(scenario.ratio, '.3f')}**\n")
    lines += _disturbance_warning(scenario)
    lines += [f"- {note}" for note in _all_notes(scenario)]
    lines += ["", "Commands:", "", "```", *(m.command for m in scenario.measurements), "```"]
    return "\n".join(lines)


def _row(m: Measurement) -> str:
    if m.report is None:
        return f"| {m.tool} | failed, see notes | | | | | | {_rss(m.run)} |"
    r = m.report
    cells = [
        m.tool,
        f"{r.completed:,}",
        f"{r.rps:,.0f}",
        f"{m.run.cpu_s:.2f}",
        _fmt(m.cpu_us_per_request, ".2f"),
        _fmt(r.p50_ms, ".3f"),
        _fmt(r.p99_ms, ".3f"),
        _rss(m.run),
    ]
    return "| " + " | ".join(cells) + " |"


def _disturbance_warning(scenario: Scenario) -> list[str]:
    """Flags runs that shared the generator CPU with other work: their CPU figures are suspect."""
    disturbed = [m.tool for m in scenario.measurements if m.observed.disturbed]
    if not disturbed:
        return []
    return [
        f"**Disturbed: CPU {GENERATOR_CPU} or {SERVER_CPU} was more than {DISTURBED_SHARE:.0%} "
        f"busy with other work during {', '.join(disturbed)}; rerun on a quiet machine.**\n"
    ]


def _all_notes(scenario: Scenario) -> list[str]:
    """Scenario notes, then per tool: achieved vs offered rate, errors, and the tool's own notes."""
    notes = list(scenario.notes)
    for m in scenario.measurements:
        if m.error is not None:
            notes.append(f"{m.tool} FAILED: {m.error}")
        notes.append(f"{m.tool}: ran {m.run.wall_s:.1f} s wall; {_observed_note(m.observed)}")
        if m.report is None:
            continue
        if scenario.offered_rate:
            share = 100.0 * m.report.rps / scenario.offered_rate
            notes.append(
                f"{m.tool}: achieved {m.report.rps:,.0f}/s of {scenario.offered_rate:,}/s offered "
                f"({share:.1f} %)"
            )
        notes += [f"{m.tool}: {note}" for note in m.report.notes]
    return notes


def _observed_note(seen: Observed) -> str:
    served = seen.served
    return (
        f"nginx served {served.requests:,} requests on {served.accepted_connections:,} new "
        f"connections using {served.cpu_s:.2f} s CPU; other work on CPU {GENERATOR_CPU}: "
        f"{seen.generator_cpu_others:.1%}, on CPU {SERVER_CPU}: {seen.server_cpu_others:.1%}"
    )


def _method_notes() -> str:
    return (
        "## How the figures are taken\n\n"
        "- requests: responses the tool counted as completed (oha: sum of its status-code counts; "
        "requests cut off by the deadline are listed as oha errors).\n"
        "- req/s: the tool's own figure (wrk `Requests/sec`, oha `summary.requestsPerSec`, "
        "caplab `throughput`).\n"
        "- CPU s: user+sys of the generator process from `wait4(2)` rusage, measured outside the "
        "tool, so it includes process start-up (for caplab: the Python interpreter and imports).\n"
        "- CPU µs/req = CPU s * 10^6 / requests.\n"
        "- peak RSS: `ru_maxrss` from `wait4(2)`.\n"
        "- nginx served / new connections: deltas of nginx's `stub_status` around each run, an "
        "independent check of the tool's request count and of connection reuse.\n"
        "- other work on a CPU: its busy time in `/proc/stat` over the run (and the 1 s settle "
        "after it), less the generator's (CPU 0) or nginx's (CPU 1) own CPU time, as a share of "
        "that time. Above 5 % the section is marked disturbed.\n"
        "- p50/p99: the tool's own latency percentiles. wrk and the closed-model runs measure from "
        "the actual send; oha `--latency-correction` and caplab's open model measure from the "
        "intended start (coordinated omission corrected)."
    )


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _rss(run: ProcessRun) -> str:
    return f"{run.peak_rss_mb:.1f}"
