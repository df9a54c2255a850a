"""Reading caplab's live Prometheus endpoint (``--metrics-port``) as a dashboard would."""

from __future__ import annotations

import subprocess
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(port: int) -> dict[str, float]:
    """``name{label=value}{label=value}…`` (labels sorted) → value, parsed by the Prometheus client
    library."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
        text = reply.read().decode()
    return {
        s.name + "".join(f"{{{k}={v}}}" for k, v in sorted(s.labels.items())): float(s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape_while(
    run: subprocess.Popen[str], port: int, until: str, at_least: float, timeout: float
) -> dict[str, float]:
    """Scrapes (bounded) while ``run`` lives, until the series ``until`` reaches ``at_least``."""
    seen: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and run.poll() is None and seen.get(until, 0.0) < at_least:
        time.sleep(0.2)
        try:
            seen = scrape(port)
        except OSError:
            continue  # not serving yet
    return seen
