"""`caplab run --metrics-port`: while a study runs, its load and the resources sampled with it are
served in Prometheus format, the role's CPU among them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from caplab.dashboards import grafana_dashboard
from support.scrape import scrape_while
from support.studies import CAPLAB, free_port, knownserver_sut, write_study

pytestmark = pytest.mark.slow  # a study of one three-second trial


def test_a_running_study_serves_its_intervals_and_resources(tmp_path: Path) -> None:
    port, metrics = free_port(), free_port()
    study = {
        "name": "live",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "sut": knownserver_sut(port, "--cpu-us", "500"),
        "load": {"rate": 100, "duration": "3s"},
    }
    path = write_study(tmp_path / "s.yaml", study)
    run = subprocess.Popen(
        [str(CAPLAB), "run", str(path), "--db", f"sqlite:///{tmp_path / 'c.db'}", "-o", str(tmp_path / "r"),
         "--metrics-port", str(metrics)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
    )  # fmt: skip
    seen = scrape_while(run, metrics, "caplab_requests_completed_total", 150, timeout=60)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err[-2000:]
    assert seen["caplab_requests_completed_total"] >= 150 and seen["caplab_offered_rate"] == 100.0
    # 500 µs of CPU a request at 100/s: about 5 % of a core, sampled with the interval.
    assert seen.get("caplab_resource{metric=cpu_percent}{scope=role:server}", 0) > 0, [
        k for k in seen if "resource" in k
    ]
    assert missing_from(seen, grafana_dashboard()) == []


QUERIED = re.compile(r"(caplab_\w+)(?:\{([^}]*)\})?")
"""A series a dashboard query reads: its name and its label matchers (``metric="cpu_percent"``)."""


def missing_from(seen: dict[str, float], dashboard_json: str) -> list[str]:
    """The series the dashboard's panels query that the endpoint did not serve: a renamed metric
    would leave a panel empty without a word."""
    exprs = [t["expr"] for p in json.loads(dashboard_json)["panels"] for t in p["targets"]]
    missing = []
    for expr in exprs:
        for name, matchers in QUERIED.findall(expr):
            wanted = [f"{{{k}={v.strip(chr(34))}}}" for k, v in re.findall(r'(\w+)="?([^",]*"?)', matchers)]
            if not any(k.startswith(name) and all(w in k for w in wanted) for k in seen):
                missing.append(f"{name}{{{matchers}}}" if matchers else name)
    return missing


def test_a_metric_the_endpoint_never_serves_is_missing() -> None:
    served = {"caplab_throughput": 1.0, "caplab_resource{metric=cpu_percent}{scope=host}": 2.0}
    dashboard = json.dumps(
        {
            "panels": [
                {"targets": [{"expr": "caplab_throughput"}, {"expr": 'caplab_resource{metric="rss_mb"}'}]}
            ]
        }
    )
    assert missing_from(served, dashboard) == ['caplab_resource{metric="rss_mb"}']
