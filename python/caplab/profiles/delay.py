"""``python -m caplab.profiles.delay --delay-us N``: the process that gives a link its round trip.

`NamespaceLink` starts it inside the role's network namespace (an NFQUEUE is bound per namespace),
waits for its ``ready`` line, then adds the iptables rules that queue the link's packets to it.
The engine's ``delay_link`` holds each packet ``N`` µs (half the link's added round trip: every
packet crosses once each way) and lets it through in order. It runs until SIGTERM; were it to
die, the rules would drop the link's packets (no listener), so a broken delay is never a fast
link in disguise.
"""

from __future__ import annotations

import argparse
import signal
import sys

from caplab._engine import delay_link
from caplab.profiles.links import DELAY_READY


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m caplab.profiles.delay", description=__doc__)
    p.add_argument("--delay-us", type=int, required=True, help="how long each packet is held (µs)")
    p.add_argument("--queue", type=int, default=0, help="the NFQUEUE number to bind (0…65535)")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop between two looks at the queue
    try:
        delay_link(args.queue, args.delay_us, lambda: print(DELAY_READY, flush=True))
    except KeyboardInterrupt:
        return 0
    except RuntimeError as exc:
        print(f"caplab link delay: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
