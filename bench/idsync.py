"""Stage and sync objects/s of the idsync reference system at a few sizes, as markdown.

    python bench/idsync.py --objects 10000 100000 [--port P] >> bench/IDSYNC.md

Each size: a fresh slapd seeded by slapadd, an empty SQLite store (data, log and temp in three
directories of one temporary tree, no throttling), then ``run stage`` and ``run sync`` (export to
the directory's ou=export), each timed by idsync itself. Everything is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def idsync(*args: str | Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "caplab.systems.idsync", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"idsync {' '.join(map(str, args))}: {done.stderr.strip()}")
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "{}"
    result: dict[str, Any] = json.loads(line) if line.startswith("{") else {}
    return result


def measure(objects: int, port: int, root: Path) -> dict[str, Any]:
    directory = root / "directory"
    store: list[str | Path] = ["--data", root / "data", "--log", root / "log", "--temp", root / "temp"]
    idsync("directory", "start", "--data-dir", directory, "--port", str(port))
    try:
        seeded = idsync("seed", "--data-dir", directory, "--objects", str(objects), "--attributes", "25")
        idsync("reset", "--data-dir", directory, *store)
        stage = idsync("run", "stage", "--data-dir", directory, *store)
        sync = idsync("run", "sync", "--data-dir", directory, *store)
        counts = idsync("counts", "--data-dir", directory, *store)
    finally:
        idsync("directory", "stop", "--data-dir", directory)
    assert counts["metaverse"] == objects and counts["directory"]["export"] == objects, counts
    return {"objects": objects, "seed_s": seeded["directory_seconds"], "stage": stage, "sync": sync}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--port", type=int, help="the directory's port (default: a free one)")
    args = parser.parse_args()
    rows = []
    for objects in args.objects:
        with tempfile.TemporaryDirectory(prefix="caplab-idsync-bench-") as root:
            before = os.getloadavg()
            rows.append((measure(objects, args.port or free_port(), Path(root)), before))
    print(f"## idsync, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} CPUs\n")
    print("| objects | seed (slapadd) s | stage objects/s | sync objects/s | load average before |")
    print("|---:|---:|---:|---:|---|")
    for row, load in rows:
        print(
            f"| {row['objects']:,} | {row['seed_s']:.1f} | {row['stage']['objects_per_s']:,.0f} "
            f"| {row['sync']['objects_per_s']:,.0f} | {' '.join(f'{x:.1f}' for x in load)} |"
        )


if __name__ == "__main__":
    main()
