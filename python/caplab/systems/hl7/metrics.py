"""``GET /metrics``: the engine's counters in Prometheus text format (0.0.4), per channel.

Served by the supervisor from the shared counters file (counters.py): a scrape reads memory and
asks no process or database anything, so it can be scraped every half second under load. The
totals count since the data directory was made; ``hl7_queue_depth`` is queued − written − failed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from caplab.systems.exposition import metrics_server
from caplab.systems.hl7.counters import Counters, Field

COUNTERS = (
    ("hl7_received_total", Field.RECEIVED, "MLLP frames received."),
    ("hl7_queued_total", Field.QUEUED, "Messages durably queued (acknowledged AA)."),
    (
        "hl7_duplicates_total",
        Field.DUPLICATES,
        "Control ids already queued: acknowledged AA, not queued again.",
    ),
    (
        "hl7_rejected_total",
        Field.REJECTED,
        "Malformed messages acknowledged AE and kept in the rejected table.",
    ),
    ("hl7_transformed_total", Field.TRANSFORMED, "Messages transformed to a normalised document."),
    (
        "hl7_written_total",
        Field.WRITTEN,
        "Messages written out (file or downstream sink) and marked written.",
    ),
    ("hl7_failed_total", Field.FAILED, "Queued messages the transform could not map (kept, marked failed)."),
)


def render(counters: Counters) -> str:
    slots = [counters.read(c) for c in range(counters.channels)]
    lines = []
    for name, field, text in COUNTERS:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} counter"]
        lines += [f'{name}{{channel="{c}"}} {s[field]}' for c, s in enumerate(slots)]
    lines += [
        "# HELP hl7_queue_depth Messages acknowledged and not yet written.",
        "# TYPE hl7_queue_depth gauge",
    ]
    for c, s in enumerate(slots):
        depth = s[Field.QUEUED] - s[Field.WRITTEN] - s[Field.FAILED]
        lines.append(f'hl7_queue_depth{{channel="{c}"}} {max(0, depth)}')
    lines += [
        "# HELP hl7_channels Channels configured.",
        "# TYPE hl7_channels gauge",
        f"hl7_channels {len(slots)}",
    ]
    return "\n".join(lines) + "\n"


def serve(port: int, exposition: Callable[[], str]) -> ThreadingHTTPServer:
    """Serves ``GET /metrics`` on 127.0.0.1:port (0: a free one) from a daemon thread."""

    server = metrics_server(port, exposition)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
