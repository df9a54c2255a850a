"""``python -m caplab.systems.idsync COMMAND``: every operation a job runs, as a shell command.

    directory start --data-dir D [--port P]   slapd as an ordinary process (see directory.py)
    directory stop  --data-dir D
    seed --objects N [--attributes 25] [--data-dir D] [--csv FILE] [--sql URL]
    reset [--data-dir D]                       empty connector space, metaverse, export, counters
                                               (and the directory's export subtree)
    run stage [--source ldap | csv:FILE | URL] source → connector space (URL: the SQL source)
    run sync  [--export ldap] [--export csv:FILE] [--export none] [--defer]
    run export [--export …]                    write what sync provisioned (after --defer, or a failure)
    counts [--data-dir D]                      JSON: store counts (and the directory's own)
    metrics [--serve PORT]                     Prometheus text (once, or served)

Store options on reset/run/counts/metrics: ``--store URL`` or ``--data DIR [--log DIR] [--temp DIR]``
(see store.py). Each option also reads an environment variable, so a study can set them once:
CAPLAB_IDSYNC_DIRECTORY (--data-dir), CAPLAB_IDSYNC_STORE, CAPLAB_IDSYNC_DATA, CAPLAB_IDSYNC_LOG,
CAPLAB_IDSYNC_TEMP. Errors are one line on stderr and exit 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from caplab.systems.idsync import engine, metrics, seed
from caplab.systems.idsync.directory import EXPORT, PEOPLE, Directory
from caplab.systems.idsync.errors import IdsyncError
from caplab.systems.idsync.exporters import CsvExporter, Exporter, LdapExporter
from caplab.systems.idsync.sources import CsvSource, LdapSource, Source, SqlSource, connect
from caplab.systems.idsync.store import Placement, Store, redact

DEFAULT_PORT = 3890
ENV = "CAPLAB_IDSYNC_"


def env_path(name: str) -> Path | None:
    value = os.environ.get(ENV + name)
    return Path(value) if value else None


def directory_option(parser: argparse.ArgumentParser, required: bool = False) -> None:
    default = env_path("DIRECTORY")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=default,
        required=required and default is None,
        help=f"the directory's home (slapd config, database, password file); ${ENV}DIRECTORY",
    )


def store_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("store")
    group.add_argument(
        "--store", default=os.environ.get(ENV + "STORE"), help="sqlite:///PATH or postgresql://…"
    )
    group.add_argument("--data", type=Path, default=env_path("DATA"), help="SQLite: the database's directory")
    group.add_argument("--log", type=Path, default=env_path("LOG"), help="SQLite: the change log's directory")
    group.add_argument("--temp", type=Path, default=env_path("TEMP"), help="SQLite: temporary files")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m caplab.systems.idsync", description=__doc__.split("\n")[0])
    commands = top.add_subparsers(dest="command", required=True)

    directory = commands.add_parser("directory", help="start or stop the connected directory (slapd)")
    actions = directory.add_subparsers(dest="action", required=True)
    start = actions.add_parser("start", help="start slapd on a loopback port")
    directory_option(start, required=True)
    start.add_argument("--port", type=int, help=f"loopback port (default: the last one, else {DEFAULT_PORT})")
    start.add_argument(
        "--durable", action="store_true", help="fsync every directory write (default: dbnosync)"
    )
    directory_option(actions.add_parser("stop", help="stop slapd"), required=True)

    seeding = commands.add_parser("seed", help="fill the directory and/or a CSV source with N people")
    seeding.add_argument("--objects", type=int, required=True)
    seeding.add_argument("--attributes", type=int, default=25)
    seeding.add_argument("--csv", type=Path, help="also (or only) write the people to this CSV file")
    seeding.add_argument("--sql", metavar="URL", help="also (or only) load them into a PostgreSQL table")
    directory_option(seeding)

    resetting = commands.add_parser(
        "reset", help="empty the store (and, given --data-dir, the export subtree)"
    )
    store_options(resetting)
    directory_option(resetting)

    run = commands.add_parser("run", help="run a profile: stage, sync or export")
    profiles = run.add_subparsers(dest="profile", required=True)
    stage = profiles.add_parser("stage", help="source → connector space")
    stage.add_argument(
        "--source",
        default="ldap",
        help="ldap (the directory), csv:FILE, or a postgresql:// URL (the SQL source)",
    )
    stage.add_argument("--bind-password-file", type=Path, help="bind with this password, not the directory's")
    helps = {"sync": "connector space → metaverse → export", "export": "write exports left pending"}
    for name, text in helps.items():
        profile = profiles.add_parser(name, help=text)
        profile.add_argument(
            "--export",
            action="append",
            help="ldap (ou=export in the directory), csv:FILE, or none; repeatable",
        )
    profiles.choices["sync"].add_argument(
        "--defer", action="store_true", help="provision to the targets but write nothing (run export writes)"
    )
    for profile in (stage, profiles.choices["sync"], profiles.choices["export"]):
        directory_option(profile)
        store_options(profile)
        profile.add_argument(
            "--metrics-file", type=Path, help="rewrite this Prometheus text file after each batch"
        )

    counts = commands.add_parser("counts", help="JSON: objects in connector space, metaverse, export")
    store_options(counts)
    directory_option(counts)

    shown = commands.add_parser("metrics", help="the counters in Prometheus text format")
    store_options(shown)
    shown.add_argument("--serve", type=int, metavar="PORT", help="serve GET /metrics on 127.0.0.1:PORT")
    return top


def open_store(args: argparse.Namespace) -> Store:
    return Store(args.store, Placement(args.data, args.log, args.temp))


def the_directory(args: argparse.Namespace) -> Directory:
    if args.data_dir is None:
        raise IdsyncError(f"no directory: give --data-dir D (or set ${ENV}DIRECTORY)")
    return Directory(args.data_dir)


def run_directory(args: argparse.Namespace) -> None:
    directory = Directory(args.data_dir)
    if args.action == "start":
        first = not directory.state_file.exists()
        port = args.port if args.port is not None else (DEFAULT_PORT if first else None)
        directory.start(port, args.durable)
        print(f"listening 127.0.0.1:{directory.port()}", flush=True)
    elif not directory.stop():
        print(f"idsync: the directory in {directory.home} was not running", file=sys.stderr)


def run_seed(args: argparse.Namespace) -> None:
    if args.objects < 0:
        raise IdsyncError(f"--objects must be ≥ 0, got {args.objects}")
    if args.data_dir is None and args.csv is None and args.sql is None:
        raise IdsyncError("seed what? give --data-dir D (the directory), --csv FILE and/or --sql URL")
    done: dict[str, Any] = {"objects": args.objects, "attributes": args.attributes}
    if args.data_dir is not None:
        done["directory_seconds"] = round(
            seed.seed_directory(Directory(args.data_dir), args.objects, args.attributes).seconds, 3
        )
    if args.csv is not None:
        done["csv_seconds"] = round(seed.seed_csv(args.csv, args.objects, args.attributes).seconds, 3)
    if args.sql is not None:
        done["sql_seconds"] = round(seed.seed_sql(args.sql, args.objects, args.attributes).seconds, 3)
    print(json.dumps(done))


def make_source(args: argparse.Namespace) -> Source:
    if args.source.startswith("csv:"):
        return CsvSource(Path(args.source.removeprefix("csv:")))
    if args.source == "ldap":
        return LdapSource(the_directory(args).endpoint(args.bind_password_file))
    if args.source.startswith(("postgresql://", "postgres://")):
        return SqlSource(args.source)
    raise IdsyncError(f"--source must be ldap, csv:FILE or postgresql://…, got {redact(args.source)!r}")


def make_exporters(args: argparse.Namespace) -> list[Exporter]:
    exporters: list[Exporter] = []
    for spec in args.export or ["ldap"]:
        if spec == "none":
            continue
        if spec == "ldap":
            exporters.append(LdapExporter(the_directory(args).endpoint()))
        elif spec.startswith("csv:"):
            exporters.append(CsvExporter(Path(spec.removeprefix("csv:"))))
        else:
            raise IdsyncError(f"--export must be ldap, csv:FILE or none, got {spec!r}")
    return exporters


def run_profile(args: argparse.Namespace) -> None:
    with open_store(args) as store:
        refresh = metrics_refresher(store, args.metrics_file)
        started = time.monotonic()
        result: dict[str, Any] = {"profile": args.profile}
        if args.profile == "stage":
            result["objects"] = engine.stage(store, make_source(args), refresh)
        else:
            exporters = make_exporters(args)
            try:
                if args.profile == "sync":
                    synced = engine.sync(store, exporters, refresh, defer=args.defer)
                    result |= {"objects": synced.synced, **asdict(synced)}
                else:
                    result["objects"] = engine.export(store, exporters, refresh)
            finally:
                for exporter in exporters:
                    exporter.close()
        seconds = time.monotonic() - started
        result |= {"seconds": round(seconds, 3), "objects_per_s": round(result["objects"] / seconds, 1)}
        refresh()
    print(json.dumps(result))


def metrics_refresher(store: Store, path: Path | None) -> Callable[[], None]:
    def refresh() -> None:
        if path is not None:
            metrics.write_file(path, metrics.render(store.counters(), store.counts()))

    return refresh


def run_counts(args: argparse.Namespace) -> None:
    with open_store(args) as store:
        counts: dict[str, Any] = asdict(store.counts())
    if args.data_dir is not None:
        counts["directory"] = count_directory(Directory(args.data_dir))
    print(json.dumps(counts))


def count_directory(directory: Directory) -> dict[str, int]:
    """People and exported people as slapd itself holds them (a paged search for DNs only)."""
    connection = connect(directory.endpoint())
    try:
        found = {}
        for name, base in (("people", PEOPLE), ("export", EXPORT)):
            entries = connection.extend.standard.paged_search(
                base, "(objectClass=inetOrgPerson)", attributes=["1.1"], paged_size=1000, generator=True
            )
            found[name] = sum(1 for e in entries if e.get("type") == "searchResEntry")
        return found
    finally:
        connection.unbind()


def run_metrics(args: argparse.Namespace) -> None:
    if args.serve is None:
        with open_store(args) as store:
            print(metrics.render(store.counters(), store.counts()), end="")
        return
    open_store(args).close()  # a bad URL fails now, not at the first scrape

    def exposition() -> str:
        with open_store(args) as store:
            return metrics.render(store.counters(), store.counts())

    metrics.serve(args.serve, exposition)


def reset(args: argparse.Namespace) -> None:
    with open_store(args) as store:
        store.reset()
    if args.data_dir is not None:
        Directory(args.data_dir).empty_export()


COMMANDS: dict[str, Callable[[argparse.Namespace], None]] = {
    "directory": run_directory,
    "seed": run_seed,
    "reset": reset,
    "run": run_profile,
    "counts": run_counts,
    "metrics": run_metrics,
}


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        COMMANDS[args.command](args)
    except IdsyncError as e:
        print(f"idsync: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
