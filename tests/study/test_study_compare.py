"""`caplab compare` on two real studies of a known answer: a server that spends 400 µs of CPU per
request against the same server at 200 µs. Each study's capacity comes with an interval from its
replicates; the ratio (400 µs / 200 µs) is about a half with an interval that excludes 1, so the
candidate is called slower, and the CI gate exits 3 on it — and 0 the other way round."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.studies import caplab, free_port, json_out, knownserver_sut, write_study

pytestmark = pytest.mark.slow  # two studies, three capacity searches each


def study(name: str, cpu_us: int) -> dict[str, Any]:
    port = free_port()
    return {
        "name": name,
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": knownserver_sut(port, "--cpu-us", str(cpu_us)),
        # Known answers about 5,000/s and 2,500/s (one core, 1 / the CPU per request): a search from
        # 1,500/s at 20 % precision takes four to six 0.4 s trials. Three replicates, so the
        # t-interval's 4.30 (two would give 12.7) leaves a halving well outside it.
        "load": {"duration": "400ms", "warmup": "200ms"},
        "slo": ["p95<=50ms"],
        "search": {"precision": "20%", "trial": "400ms", "repeats": 1, "start": 1500},
        "replicates": 3,
    }


def test_twice_the_cpu_per_request_is_slower_by_about_half_and_fails_the_gate(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    for name, cpu_us in (("at-200us", 200), ("at-400us", 400)):
        path = write_study(tmp_path / f"{name}.yaml", study(name, cpu_us))
        done = caplab("run", path, "--db", db, "--no-report", timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    compared = caplab("compare", "at-200us", "at-400us", "--db", db, "--json", "--fail-if-slower", "5%")
    assert compared.returncode == 3, compared.stderr  # slower beyond 5 %, its interval excluding it
    assert "slower by more than 5% in: (the one cell)" in compared.stderr
    doc: dict[str, Any] = json_out(compared)
    [cell] = doc["cells"]
    assert doc["basis"] == "absolute" and cell["change"] == "slower"
    assert 0.4 <= cell["ratio"] <= 0.62, cell  # 1/2, the server's own overhead per request aside
    low, high = cell["interval"]
    assert low <= cell["ratio"] <= high < 1.0
    # The interval is the two capacities' own: the candidate's low over the baseline's high, and so on.
    a, b = cell["baseline"], cell["candidate"]
    assert (low, high) == pytest.approx((b["low"] / a["high"], b["high"] / a["low"]))
    back = caplab("compare", "at-400us", "at-200us", "--db", db, "--json", "--fail-if-slower", "5%")
    assert back.returncode == 0, back.stderr
    [reverse] = json.loads(back.stdout)["cells"]
    assert reverse["change"] == "faster" and reverse["ratio"] == pytest.approx(1 / cell["ratio"])
