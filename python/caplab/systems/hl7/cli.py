"""``python -m caplab.systems.hl7 [COMMAND]``: the engine and the operations a study runs on it.

    [start] --data-dir D [--channels 4] [--db sqlite:///F | postgresql://USER@HOST/DB]
            [--db-dir DIR] [--log-dir DIR] [--out-dir DIR | --sink HOST:PORT] [--drop-dir DIR]
            [--port 2575] [--metrics-port 2590] [--batch 100] [--repeats ack|queue]
    rebuild-index --data-dir D [--db URL]     REINDEX the queue while it runs; JSON {"rebuild_s": …}
    template --kind adt|oru [--results N] [--prefix P]   a request body with {seq}, for caplab load
    stop --data-dir D                          SIGTERM the engine and wait; JSON {"stopped": PID}
    db start --data D --wal W --port P --passfile F   the queue's own PostgreSQL, its log in W
    db stop --data D [--immediate]                    (initdb --waldir; a study's storage layout)

``start`` is the default, so ``caplab systems start hl7 --channels 4 …`` runs the engine. A
PostgreSQL password never goes on a command line: PGPASSWORD, a passfile, or the whole URL in
``CAPLAB_HL7_DB``. Bad options exit 2 (``option: message``); a database that cannot be reached, 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import NoReturn

import psutil

from caplab.systems.hl7 import generator
from caplab.systems.hl7.database import Database
from caplab.systems.hl7.postgres_queue import SCHEMA_ENV
from caplab.systems.hl7.queue import URL_ENV, open_queue
from caplab.systems.hl7.settings import DEFAULT_METRICS_PORT, DEFAULT_PORT, BadSettings, Settings
from caplab.systems.hl7.supervisor import ENGINE_FILE, run
from caplab.systems.pgpair.server import ServerError
from caplab.systems.secrets import describe

COMMANDS = ("start", "rebuild-index", "template", "stop", "db")


def start_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m caplab.systems.hl7 start",
        description="hl7: an HL7 v2 interface engine — per channel an MLLP listener → a queue in a database "
        "→ transform → writer. The first stdout line is 'listening 127.0.0.1:<channel 0 port>'.",
    )
    p.add_argument("--data-dir", type=Path, required=True, help="engine files; default home of the others")
    p.add_argument("--channels", type=int, default=4, help="channels (listener, queue, transform, writer)")
    p.add_argument(
        "--db", default=None, help=f"sqlite:///FILE or postgresql://… (default ${URL_ENV}, else SQLite)"
    )
    p.add_argument("--db-dir", type=Path, default=None, help="SQLite's queue.db (default: the data dir)")
    p.add_argument(
        "--log-dir", type=Path, default=None, help="SQLite's log, queue.db-wal (default: beside it)"
    )
    p.add_argument("--out-dir", type=Path, default=None, help="written files (default: DATA/out)")
    p.add_argument("--drop-dir", type=Path, default=None, help="also read DIR/channel-N/*.hl7 files")
    p.add_argument("--sink", default=None, help="send documents over MLLP to HOST:PORT instead of files")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="channel 0's MLLP port, then +1 (0: free ports)"
    )
    p.add_argument(
        "--metrics-port", type=int, default=DEFAULT_METRICS_PORT, help="GET /metrics (0: a free port)"
    )
    p.add_argument("--batch", type=int, default=100, help="messages a worker claims at a time")
    p.add_argument(
        "--repeats",
        choices=("ack", "queue"),
        default="ack",
        help="a control id seen before: ack it without queueing (exactly once for resends), or queue it "
        "when it came on another connection (load runs numbering from 0 each time)",
    )
    return p


def start(argv: list[str]) -> NoReturn:
    p = start_parser()
    a = p.parse_args(argv)
    settings = Settings(
        data_dir=a.data_dir,
        channels=a.channels,
        db=a.db or os.environ.get(URL_ENV) or None,
        db_on_command_line=a.db is not None,
        db_dir=a.db_dir,
        log_dir=a.log_dir,
        out_dir=a.out_dir,
        drop_dir=a.drop_dir,
        sink=a.sink,
        port=a.port,
        metrics_port=a.metrics_port,
        batch=a.batch,
        repeats=a.repeats,
    )
    try:
        settings.check()
    except BadSettings as e:
        p.error(str(e))
    sys.exit(run(settings))


def engine_info(data_dir: Path) -> dict[str, object] | None:
    try:
        info: dict[str, object] = json.loads((data_dir / ENGINE_FILE).read_text())
    except FileNotFoundError:
        return None
    return info


def rebuild_index(argv: list[str]) -> NoReturn:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.hl7 rebuild-index")
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument(
        "--db", default=None, help="the queue's URL (default: the running engine's, or DATA/queue.db)"
    )
    a = p.parse_args(argv)
    info = engine_info(a.data_dir) or {}
    url = (
        a.db
        or os.environ.get(URL_ENV)
        or str(info.get("db") or f"sqlite://{(a.data_dir / 'queue.db').resolve()}")
    )
    if info.get("schema") and SCHEMA_ENV not in os.environ:
        os.environ[SCHEMA_ENV] = str(info["schema"])
    try:
        q = open_queue(url)
        rows = sum(c.queued_total for c in q.counts().values())
        t0 = time.perf_counter()
        q.reindex()
        seconds = time.perf_counter() - t0
        q.close()
    except Exception as e:  # the database's own words, on one line, without a password
        print(f"hl7 rebuild-index: {describe(e)}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"rebuild_s": round(seconds, 4), "rows": rows}))
    sys.exit(0)


def template(argv: list[str]) -> NoReturn:
    p = argparse.ArgumentParser(
        prog="python -m caplab.systems.hl7 template",
        description="A message with {seq} in its control id and patient id, for "
        "caplab load tcp://HOST:PORT --framing mllp --template --body-file FILE.",
    )
    p.add_argument("--kind", choices=generator.KINDS, default="adt", help="ADT^A01 or ORU^R01")
    p.add_argument("--results", type=int, default=8, help="ORU: OBX results (the message's size)")
    p.add_argument("--prefix", default="", help="before {seq} in the control id: a run of its own")
    a = p.parse_args(argv)
    if not 0 <= a.results <= 10000:
        p.error(f"--results: must be 0…10000, got {a.results}")
    if any(c in a.prefix for c in "|^~\\&\r\n\x0b\x1c"):
        p.error("--prefix: must not contain HL7 delimiters")
    sys.stdout.write(generator.template(a.kind, a.results, a.prefix))
    sys.exit(0)


def stop(argv: list[str]) -> NoReturn:
    p = argparse.ArgumentParser(prog="python -m caplab.systems.hl7 stop")
    p.add_argument("--data-dir", type=Path, required=True)
    p.add_argument("--timeout", type=float, default=30.0)
    a = p.parse_args(argv)
    info = engine_info(a.data_dir)
    if info is None:
        print(f"hl7 stop: no engine running in {a.data_dir} (no {ENGINE_FILE})", file=sys.stderr)
        sys.exit(1)
    pid = int(str(info["pid"]))
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        (a.data_dir / ENGINE_FILE).unlink(missing_ok=True)
        print(json.dumps({"stopped": pid, "was_running": False}))
        sys.exit(0)
    deadline = time.monotonic() + a.timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            break
        time.sleep(0.05)
    else:
        print(f"hl7 stop: pid {pid} still running after {a.timeout} s", file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"stopped": pid, "was_running": True}))
    sys.exit(0)


def _alive(pid: int) -> bool:
    """Running (an exited process its parent has not reaped yet is not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def db(argv: list[str]) -> NoReturn:
    """``db start``: initdb (once) and start the queue's PostgreSQL, then return, printing JSON;
    ``db stop``: stop it. Errors are one line on stderr and exit 1."""
    p = argparse.ArgumentParser(prog="python -m caplab.systems.hl7 db")
    p.add_argument("action", choices=("start", "stop"))
    p.add_argument("--data", type=Path, required=True, help="the data files' directory (hl7db/ in it)")
    p.add_argument("--wal", type=Path, default=None, help="the log's directory (default: --data)")
    p.add_argument("--port", type=int, default=5432)
    p.add_argument("--passfile", type=Path, default=None, help="libpq passfile written at initdb")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a server setting")
    p.add_argument(
        "--immediate",
        action="store_true",
        help="stop: no shutdown checkpoint (a queue thrown away next; its dirty pages are never written)",
    )
    a = p.parse_args(argv)
    settings: dict[str, str | int] = {}
    for item in a.set:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            p.error(f"--set: expected NAME=VALUE, got {item!r}")
        settings[name.strip()] = value
    if a.action == "start" and a.passfile is None:
        p.error("--passfile: required for start")
    database = Database(a.data.resolve(), (a.wal or a.data).resolve(), a.port)
    try:
        if a.action == "start":
            print(json.dumps(database.start(a.passfile.resolve(), settings)))
        else:
            database.stop("immediate" if a.immediate else "fast")
            print(json.dumps({"stopped": str(database.data_dir)}))
    except (ServerError, OSError) as e:
        print(f"hl7 db {a.action}: {e}", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)


def main(argv: list[str] | None = None) -> NoReturn:
    args = list(sys.argv[1:] if argv is None else argv)
    command = args.pop(0) if args and args[0] in COMMANDS else "start"
    commands = {"start": start, "rebuild-index": rebuild_index, "template": template, "stop": stop, "db": db}
    commands[command](args)
