"""Two stored studies compared, as `caplab compare` prints, writes as JSON and as an HTML page:
each configuration's figure with the ratio's interval and a verdict (analysis/compare.py), its
latency distribution side by side, and — when the studies recorded different machines — each
cell taken over a reference cell in its own study, since absolute figures would then mix the
configurations with the machines. Pure: two results documents in, one comparison out.
"""

from __future__ import annotations

from dataclasses import dataclass

from caplab.analysis.compare import CellComparison, Change, Figure, compare_runs, compare_within_runs
from caplab.json_types import JsonDict
from caplab.report.layout.blocks import Column, Para, Report, Section, Table, TableCell, num_cell, text_cell
from caplab.report.model.types import Results

LATENCY_POINTS = ("p50", "p90", "p99", "p999", "max")
"""The points of each cell's latency distribution shown side by side."""

Latency = dict[str, float | None]
"""A cell's latency points (ms) and ``count``: the requests they rest on."""


def machine(results: Results) -> str:
    """The machine a study recorded, as far as it decides its figures: host, CPU model, cores and
    memory (whole GB)."""
    env = results["environment"]
    memory = env.get("memory_gb")
    gb = f"{memory:.0f} GB" if isinstance(memory, int | float) else "? GB"
    return (
        f"{env.get('hostname') or '?'}: {env.get('cpu_model') or '?'}, {env.get('cores') or '?'} cores, {gb}"
    )


def _key(factors: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(factors.items())) or "(the one cell)"


def figures(results: Results) -> dict[str, Figure]:
    """Each rated configuration's figure, keyed by its factors."""
    out: dict[str, Figure] = {}
    for e in results["capacity"]:
        low, high = e["ci95"]
        out[_key(dict(e["factors"]))] = Figure(e["value"], low, high, e["unit"], e["limit"])
    return out


def latencies(results: Results) -> dict[str, Latency]:
    """Each configuration's latency distribution, keyed as ``figures``: the percentiles of its
    measured trials' histograms merged (the cell's own figures in results.json), not an average of
    per-trial percentiles; with the count of requests they rest on."""
    out: dict[str, Latency] = {}
    for c in results["cells"]:
        found = c["metrics"].get("latency_ms")
        if not isinstance(found, dict):
            continue
        points = (*LATENCY_POINTS, "count")
        out[_key(dict(c["factors"]))] = {
            p: v if isinstance(v := found.get(p), int | float) else None for p in points
        }
    return out


@dataclass(frozen=True)
class StudyComparison:
    ids: tuple[int, int]
    stores: tuple[str, str]
    """The two stores' URLs, passwords masked."""
    machines: tuple[str, str]
    reference: str | None
    """With different machines, the cell every other is taken over (None: one machine, or no cell
    both measured)."""
    cells: list[CellComparison]
    latency: dict[str, tuple[Latency, Latency]]
    unmatched: list[str]

    @property
    def same_machine(self) -> bool:
        return self.machines[0] == self.machines[1]

    def machines_note(self) -> str | None:
        """What a comparison across machines compares, or None on one machine."""
        if self.same_machine:
            return None
        basis = (
            f"each cell is compared by its figure over {self.reference}'s in the same study"
            if self.reference is not None
            else "no cell both studies measured can be the reference, so nothing is compared"
        )
        a, b = self.ids
        return (
            f"studies on different machines — #{a} on {self.machines[0]}, #{b} on {self.machines[1]}: "
            f"their absolute figures mix the configurations with the machines; {basis}"
        )

    def slower(self, fraction: float) -> list[str]:
        """The cells slower by more than ``fraction`` with their interval excluding it."""
        return [c.key for c in self.cells if c.slower_than(fraction)]

    def to_json(self) -> JsonDict:
        return {
            "baseline": self.ids[0],
            "candidate": self.ids[1],
            "stores": list(self.stores),
            "machines": {"baseline": self.machines[0], "candidate": self.machines[1]},
            "basis": "absolute" if self.same_machine else "within-study",
            "reference": self.reference,
            "cells": [_cell_json(c) for c in self.cells],
            "latency_ms": {k: {"baseline": a, "candidate": b} for k, (a, b) in self.latency.items()},
            "unmatched": self.unmatched,
        }


def compare_studies(
    baseline: Results, candidate: Results, ids: tuple[int, int], stores: tuple[str, str]
) -> StudyComparison:
    runs = figures(baseline), figures(candidate)
    machines = machine(baseline), machine(candidate)
    reference: str | None = None
    if machines[0] == machines[1]:
        cells, only = compare_runs(*runs)
    else:
        cells, only, reference = compare_within_runs(*runs)
    lat = latencies(baseline), latencies(candidate)
    matched = {k: (lat[0][k], lat[1][k]) for k in runs[0] if k in runs[1] and k in lat[0] and k in lat[1]}
    return StudyComparison(ids, stores, machines, reference, cells, matched, only)


def _cell_json(c: CellComparison) -> JsonDict:
    return {
        "cell": c.key,
        "baseline": c.a.__dict__,
        "candidate": c.b.__dict__,
        "ratio": c.ratio,
        "interval": [c.low, c.high] if c.low is not None else None,
        "change": c.change.value,
        "limit_changed": c.limit_changed,
    }


def shown(f: Figure) -> str:
    """A figure with its interval: ``1,020 [990, 1,050] req/s``."""
    if f.value is None:
        return "not found"
    interval = f" [{f.low:.4g}, {f.high:.4g}]" if f.low is not None and f.high is not None else ""
    return f"{f.value:.4g}{interval} {f.unit}"


def ratio_text(c: CellComparison) -> str:
    if c.ratio is None:
        return "–"
    bounds = f" [{c.low:.2f}, {c.high:.2f}]" if c.low is not None and c.high is not None else ""
    return f"{c.ratio:.2f}{bounds}"


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"


TONES = {Change.FASTER: "good", Change.SLOWER: "bad"}


def comparison_report(c: StudyComparison, generated_at: str) -> Report:
    """The comparison as a report document (written as the HTML page of ``caplab compare -o``)."""
    a, b = c.ids
    figures_table = Table(
        [
            Column("Cell"),
            Column(f"#{a}", numeric=True),
            Column(f"#{b}", numeric=True),
            Column(f"Ratio #{b} / #{a} [95 %]", numeric=True),
            Column("Verdict"),
            Column("Limit"),
        ],
        [
            [
                text_cell(x.key),
                num_cell(x.a.value, shown(x.a)),
                num_cell(x.b.value, shown(x.b)),
                num_cell(x.ratio, ratio_text(x)),
                text_cell(x.change.value, TONES.get(x.change, "")),
                text_cell(x.limit_changed or (x.a.limit or "")),
            ]
            for x in c.cells
        ],
        caption="Each configuration both studies ran",
        note="Faster or slower only where the ratio's interval excludes 1 (interval arithmetic on the "
        "two 95 % intervals); otherwise indistinguishable.",
    )
    blocks: list[Para | Table | Section] = []
    if (note := c.machines_note()) is not None:
        blocks.append(Para(note, "Different machines.", "warning"))
    blocks.append(figures_table)
    if c.unmatched:
        blocks.append(Para("Only in one study: " + "; ".join(c.unmatched) + "."))
    latency = Table(
        [Column("Cell"), *(Column(p, numeric=True, unit="ms") for p in LATENCY_POINTS), Column("requests")],
        [
            [text_cell(k), *(TableCell(f"{ms(x[p])} → {ms(y[p])}") for p in (*LATENCY_POINTS, "count"))]
            for k, (x, y) in c.latency.items()
        ],
        caption=f"Latency of each cell's measured trials, histograms merged: #{a} → #{b}",
    )
    sections = [Section("Figures", "figures", list(blocks)), Section("Latency", "latency", [latency])]
    stores = c.stores[0] if c.stores[0] == c.stores[1] else f"{c.stores[0]} and {c.stores[1]}"
    return Report(
        f"Study {b} against study {a}", f"from {stores} · compared {generated_at[:16]} UTC", sections
    )
