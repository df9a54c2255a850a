"""The store's counters in Prometheus text format.

The counters live in the store itself, incremented in the same transaction as the batch they
count, so they survive between the short-lived ``run`` processes and never run ahead of the data.
They are read three ways: ``metrics`` prints them once; ``metrics --serve PORT`` answers
``GET /metrics`` (reading the store on each scrape) until SIGTERM, for a collector that scrapes
while a job runs; and ``run … --metrics-file FILE`` rewrites FILE (atomically) after each batch.
``reset`` zeroes them, which a Prometheus reader takes as a counter reset.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path

from caplab.systems.exposition import metrics_server
from caplab.systems.idsync.store import Counts

HELP = {
    "staged": "Objects read from a source into the connector space",
    "synced": "Connector-space objects synchronised (joined, projected or filtered)",
    "exported": "Provisioned objects written to an export target",
}
GAUGES = {
    "connector_space": "Objects in the connector space",
    "metaverse": "People in the metaverse",
    "export": "Export rows written to their target",
    "export_pending": "Export rows provisioned but not yet written",
}


def render(counters: dict[str, int], counts: Counts) -> str:
    lines: list[str] = []
    for name, value in counters.items():
        family = f"idsync_objects_{name}_total"
        lines += [f"# HELP {family} {HELP.get(name, name)}", f"# TYPE {family} counter", f"{family} {value}"]
    for name, text in GAUGES.items():
        family = f"idsync_{name}_objects"
        lines += [f"# HELP {family} {text}", f"# TYPE {family} gauge", f"{family} {getattr(counts, name)}"]
    return "\n".join(lines) + "\n"


def write_file(path: Path, text: str) -> None:
    """Replaces ``path`` whole, so a reader never sees half an exposition."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)


def serve(port: int, exposition: Callable[[], str]) -> None:
    """Serves ``GET /metrics`` on 127.0.0.1 until SIGTERM or SIGINT; prints ``listening HOST:PORT``
    first (port 0: a free one)."""

    server = metrics_server(port, exposition)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # in the main thread, out of serve_forever

    # Both set here: a process started in the background by a shell inherits SIGINT ignored, and
    # Python then raises no KeyboardInterrupt for it (relaying SIGTERM as SIGINT did nothing).
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"listening 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    sys.exit(0)
