"""Terminal output for a load run: a live line per interval and the summary table at the end."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from caplab.engine import IntervalSnapshot, LatencySummary, RunResult
from caplab.units import ms as fmt_ms

__all__ = ["fmt_ms", "live_line", "summary"]


def live_line(s: IntervalSnapshot, offered: float | None) -> Text:
    """One line per interval: achieved rate against offered, latency, errors, drops."""
    phase = "warm-up " if s.warmup else ""
    rate = f"{s.throughput:,.0f}/s" + (f" of {offered:,.0f}/s" if offered else "")
    t = Text(f"{phase}{s.end_s:6.1f}s  {rate}  ")
    t.append(f"p50 {fmt_ms(s.latency_ms.p50)}  p99 {fmt_ms(s.latency_ms.p99 or s.latency_ms.max)}  ")
    t.append(f"errors {s.errors}", style="red" if s.errors else "")
    t.append("  ")
    t.append(f"dropped {s.dropped}", style="red" if s.dropped else "")
    t.append(f"  in flight {s.in_flight}")
    return t


def _latency_row(name: str, s: LatencySummary) -> list[str]:
    return [name, *(fmt_ms(v) for v in (s.min, s.mean, s.p50, s.p90, s.p95, s.p99, s.p999, s.max))]


def _classes(console: Console, r: RunResult) -> None:
    """A mix's (a usage profile's) figures per action: rate, errors and latency of each."""
    t = Table(box=None, header_style="bold")
    for col in ("action", "completed", "per s", "errors", "p50", "p90", "p95", "p99", "max"):
        t.add_column(col, justify="left" if col == "action" else "right")
    for c in r.classes:
        per_s = c.completed / r.duration_s if r.duration_s else 0.0
        s = c.latency_ms
        t.add_row(
            c.name,
            str(c.completed),
            f"{per_s:,.2f}",
            str(c.errors),
            *(fmt_ms(v) for v in (s.p50, s.p90, s.p95, s.p99, s.max)),
        )
    console.print(t)
    if r.users:
        console.print(f"per user: {r.throughput / r.users * 3600:,.1f} actions/h reached", highlight=False)


def summary(console: Console, url: str, r: RunResult) -> None:
    """The end-of-run report: what was offered, what was achieved, how long it took, what it cost."""
    load = f"{r.offered_rate:,.0f}/s offered" if r.offered_rate is not None else f"{r.users} users (closed)"
    console.print(f"[bold]{url}[/] — {load}, {r.duration_s:.1f}s measured after {r.warmup_s:g}s warm-up")
    counts = Table(box=None, show_header=True, header_style="bold")
    for col in ("sent", "completed", "errors", "dropped", "throughput"):
        counts.add_column(col, justify="right")
    counts.add_row(str(r.sent), str(r.completed), str(r.errors), str(r.dropped), f"{r.throughput:,.1f}/s")
    console.print(counts)
    lat = Table(box=None, header_style="bold")
    lat.add_column("")
    for col in ("min", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"):
        lat.add_column(col, justify="right")
    lat.add_row(*_latency_row("latency", r.latency_ms))
    lat.add_row(*_latency_row("service time", r.service_time_ms))
    console.print(lat)
    if len(r.classes) > 1:
        _classes(console, r)
    if r.errors_by_kind:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(r.errors_by_kind.items()))
        console.print(f"[red]errors by kind:[/] {kinds}")
        for kind, words in sorted(r.error_samples.items()):
            console.print(f"  {kind}: {words}", markup=False, highlight=False)
    g = r.generator
    per_req = f"{g.cpu_us_per_request:.1f} µs/request" if g.cpu_us_per_request is not None else "–"
    late = f", send lateness p99 {fmt_ms(g.lateness_p99_ms)}" if g.lateness_p99_ms is not None else ""
    console.print(
        f"generator: {g.threads} threads, {g.cpu_s:.2f} CPU s ({per_req}){late}, "
        f"{g.connections_opened} connections"
    )
    if g.tls_handshakes is not None:
        console.print(
            f"TLS: {g.tls_handshakes} handshakes ({g.tls_handshakes_per_s or 0.0:,.1f}/s), "
            f"{g.tls_resumed} resumed a session"
        )
    if r.steps:
        shown = ", ".join(f"{name} {_ms(s.p50)}/{_ms(s.p99)}" for name, s in r.steps.items())
        console.print(f"steps p50/p99 ms: {shown}", markup=False, highlight=False)
    if g.saturated:
        console.print(f"[bold red]generator saturated:[/] {g.saturation_reason}")
        console.print("[red]these figures describe the generator, not the system under test[/]")
    if r.interrupted:
        console.print("[yellow]interrupted: results cover the part that ran[/]")


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
