"""The benchmark scenarios, and how one generator run inside them is measured."""

import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import procs
import report
import tools
from procs import GENERATOR_CPU, SERVER_CPU
from report import Measurement, Observed, Scenario
from target import NginxTarget, ServerCounters

TIMEOUT_MARGIN_S = 30  # past the requested duration, a generator run is killed and reported
SETTLE_S = 1.0  # lets sockets close and nginx go idle so runs do not overlap

CommandFor = Callable[[str], list[str]]


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


@dataclass(frozen=True)
class Bench:
    """What every scenario needs: the tools found, the running target and the sizes."""

    found: tools.Tools
    target: NginxTarget
    settings: Settings

    @property
    def url(self) -> str:
        return self.target.url


def measure(bench: Bench, tool: str, argv: list[str], duration_s: int) -> Measurement:
    """Run one generator pinned to its CPU; pair its own report with the kernel's and nginx's."""
    full = procs.pinned(GENERATOR_CPU, argv)
    command = shlex.join(full)
    print(f"  running: {command}", file=sys.stderr, flush=True)
    before = _reading(bench)
    run = procs.run_measured(full, duration_s + TIMEOUT_MARGIN_S)
    time.sleep(SETTLE_S)
    seen = _observed(before, _reading(bench), run.cpu_s)
    problem = _run_problem(run, duration_s + TIMEOUT_MARGIN_S)
    if problem is not None:
        return Measurement(tool, command, run, None, seen, problem)
    try:
        return Measurement(tool, command, run, _parser(tool)(run.stdout), seen)
    except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
        error = f"unreadable output ({exc!r}); {_excerpt(run)}"
        return Measurement(tool, command, run, None, seen, error)


@dataclass(frozen=True)
class _Reading:
    """The machine's counters at one instant, to difference around a run."""

    at: float
    server: ServerCounters
    generator_cpu_busy_s: float
    server_cpu_busy_s: float


def _reading(bench: Bench) -> _Reading:
    return _Reading(
        time.monotonic(),
        bench.target.counters(),
        procs.cpu_busy_s(GENERATOR_CPU),
        procs.cpu_busy_s(SERVER_CPU),
    )


def _observed(before: _Reading, after: _Reading, generator_cpu_s: float) -> Observed:
    """What nginx did, and how much else ran on either pinned CPU, between two readings."""
    span = after.at - before.at
    served = after.server.since(before.server)
    generator_others = after.generator_cpu_busy_s - before.generator_cpu_busy_s - generator_cpu_s
    server_others = after.server_cpu_busy_s - before.server_cpu_busy_s - served.cpu_s
    return Observed(served, max(0.0, generator_others) / span, max(0.0, server_others) / span)


def _parser(label: str) -> tools.Parser:
    """Labels like "caplab 20 s" name the tool first."""
    return tools.PARSERS[label.split()[0]]


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


def add_run(
    bench: Bench, sc: Scenario, tool: str, command_for: CommandFor, duration_s: int, label: str = ""
) -> None:
    """Measure one tool in a scenario, or note that it was skipped because it is not installed."""
    name, exe = label or tool, bench.found.executable(tool)
    if exe is None:
        sc.notes.append(f"{name} skipped: `{tool}` not found ({_install_hint(tool)})")
        return
    sc.measurements.append(measure(bench, name, command_for(exe), duration_s))


def _install_hint(tool: str) -> str:
    return "pass --caplab PATH or run make dev" if tool == "caplab" else "run bench/install.sh"


def closed_model(bench: Bench) -> Scenario:
    """A: how fast each tool can drive a fixed set of connections, and what that costs in CPU."""
    s, url = bench.settings, bench.url
    sc = Scenario(f"A. Closed model: {s.users} connections, {s.duration_s} s, one thread")
    d, u = s.duration_s, s.users
    add_run(bench, sc, "wrk", lambda exe: tools.wrk_closed(exe, url, u, d), d)
    add_run(bench, sc, "oha", lambda exe: tools.oha_closed(exe, url, u, d), d)
    add_run(bench, sc, "caplab", lambda exe: tools.caplab_closed(exe, url, u, d), d)
    sc.ratio_label = "caplab req/s ÷ wrk req/s"
    sc.ratio = report.ratio_of(sc, "caplab", "wrk", lambda m: m.report.rps if m.report else None)
    return sc


def open_model(bench: Bench) -> Scenario:
    """B: at a fixed offered rate, whether each tool keeps up and how much CPU a request costs."""
    s, url = bench.settings, bench.url
    sc = Scenario(f"B. Open model: {s.rate:,}/s offered, {s.duration_s} s", offered_rate=s.rate)
    d, rate, conns = s.duration_s, s.rate, s.oha_connections
    add_run(bench, sc, "oha", lambda exe: tools.oha_open(exe, url, rate, conns, d), d)
    add_run(bench, sc, "caplab", lambda exe: tools.caplab_open(exe, url, rate, d), d)
    sc.ratio_label = "caplab CPU µs/req ÷ oha CPU µs/req (both measured with wait4)"
    sc.ratio = report.ratio_of(sc, "caplab", "oha", lambda m: m.cpu_us_per_request)
    return sc


def memory_vs_length(bench: Bench) -> Scenario:
    """C: caplab keeps histograms, not samples, so peak RSS must not grow with run length."""
    s = bench.settings
    short, long = s.duration_s, s.long_duration_s
    sc = Scenario(f"C. Memory vs run length: caplab open model {s.rate:,}/s, {short} s vs {long} s")
    sc.offered_rate = s.rate
    for d in (short, long):
        command_for = _caplab_open_for(bench.url, s.rate, d)
        add_run(bench, sc, "caplab", command_for, d, label=f"caplab {d} s")
    sc.ratio_label = f"caplab peak RSS {long} s ÷ {short} s"
    sc.ratio = report.ratio_of(sc, f"caplab {long} s", f"caplab {short} s", _peak_rss)
    return sc


def https_keep_alive(bench: Bench) -> Scenario:
    """D: HTTPS with keep-alive: the handshakes are paid once, then each request costs TLS records;
    caplab (rustls) should carry at least 0.9 × wrk's (OpenSSL) requests/s."""
    s, url = bench.settings, bench.target.https_url
    sc = Scenario(f"D. HTTPS, keep-alive: {s.users} connections, {s.duration_s} s, one thread")
    d, u = s.duration_s, s.users
    add_run(bench, sc, "wrk", lambda exe: tools.wrk_closed(exe, url, u, d), d)
    add_run(bench, sc, "oha", lambda exe: tools.oha_closed(exe, url, u, d), d)
    add_run(bench, sc, "caplab", lambda exe: tools.caplab_closed(exe, url, u, d), d)
    sc.ratio_label = "caplab req/s ÷ wrk req/s (HTTPS, keep-alive)"
    sc.ratio = report.ratio_of(sc, "caplab", "wrk", lambda m: m.report.rps if m.report else None)
    return sc


def https_handshakes(bench: Bench) -> Scenario:
    """E: HTTPS without keep-alive: a connection and a handshake per request, resumed from the
    previous connection's session (wrk keeps its session across reconnects too: nginx spends
    about what a resumed handshake costs per wrk connection); then caplab with a full handshake
    every time, to show what resumption saves. caplab's notes give handshakes/s and resumed."""
    s, url = bench.settings, bench.target.https_url
    sc = Scenario(f"E. HTTPS, a connection per request: {s.users} users, {s.duration_s} s, one thread")
    d, u = s.duration_s, s.users
    add_run(bench, sc, "wrk", lambda exe: tools.wrk_closed(exe, url, u, d, keep_alive=False), d)
    add_run(bench, sc, "oha", lambda exe: tools.oha_closed(exe, url, u, d, keep_alive=False), d)
    add_run(bench, sc, "caplab", lambda exe: tools.caplab_closed(exe, url, u, d, keep_alive=False), d)
    add_run(
        bench,
        sc,
        "caplab",
        lambda exe: tools.caplab_closed(exe, url, u, d, keep_alive=False, resume=False),
        d,
        label="caplab full-handshakes",
    )
    sc.ratio_label = "caplab req/s ÷ wrk req/s (HTTPS, Connection: close)"
    sc.ratio = report.ratio_of(sc, "caplab", "wrk", lambda m: m.report.rps if m.report else None)
    return sc


def _caplab_open_for(url: str, rate: int, duration_s: int) -> CommandFor:
    """Binds the duration now; a lambda in the loop would see only the last one."""
    return lambda exe: tools.caplab_open(exe, url, rate, duration_s)


def _peak_rss(m: Measurement) -> float | None:
    return m.run.peak_rss_mb


ALL: tuple[Callable[[Bench], Scenario], ...] = (
    closed_model,
    open_model,
    memory_vs_length,
    https_keep_alive,
    https_handshakes,
)


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
