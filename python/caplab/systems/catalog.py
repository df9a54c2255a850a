"""The reference systems caplab ships, by name: what `caplab systems list` shows and
`caplab systems start NAME …` runs."""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ReferenceSystem:
    name: str
    module: str
    summary: str
    stands_in_for: str
    example: str


SYSTEMS = (
    ReferenceSystem(
        "msgbus",
        "caplab.systems.msgbus",
        "receive (TCP u32 frames, HTTP POST) → message stores (SQLite WAL or PostgreSQL) → processing "
        "hosts (routing by subscription, messaging and orchestration flows) → TCP sink; Prometheus "
        "counters",
        "BizTalk Server scale-out (seeds/000)",
        "caplab systems start msgbus --hosts 2 --stores 1",
    ),
    ReferenceSystem(
        "pgpair",
        "caplab.systems.pgpair",
        "PostgreSQL primary and hot standby (streaming replication, a slot, sync on|remote_apply|off), "
        "N databases seeded with pgbench's tpcb schema; switchover, kill-primary and rejoin; roles "
        "primary and standby",
        "a SQL Server availability group (seeds/004) and synchronous mirroring (seeds/002)",
        "caplab systems start pgpair --databases 20 --sync on --data-dir /var/tmp/pgpair",
    ),
    ReferenceSystem(
        "knownserver",
        "caplab.systems.knownserver",
        "HTTP or framed TCP server with a known cost per request (CPU, sleep, a serial section), "
        "for checking what caplab measures",
        "a server whose capacity you can compute by hand",
        "caplab systems start knownserver --cpu-us 1000 --port 8080",
    ),
    ReferenceSystem(
        "idsync",
        "caplab.systems.idsync",
        "identity sync as batch jobs: OpenLDAP slapd directory (or CSV) → stage (paged LDAP search) → "
        "connector space → sync (join on employeeNumber, project, flow) → metaverse → export (LDAP "
        "subtree or CSV); store SQLite (data, log, temp apart) or PostgreSQL; Prometheus counters",
        "Microsoft Identity Integration Server 2003 (seeds/001)",
        "caplab systems start idsync run stage --data-dir D --data DATA --log LOG --temp TEMP",
    ),
    ReferenceSystem(
        "hl7",
        "caplab.systems.hl7",
        "HL7 v2 interface engine: per channel an MLLP listener → queue in a database (SQLite WAL or "
        "PostgreSQL; AA once committed, AE for malformed) → transform (python-hl7 → JSON) → writer "
        "(a file per message, or MLLP); exactly once across killed workers; Prometheus counters",
        "the Connexion HL7 interface engine (seeds/002)",
        "caplab systems start hl7 --channels 4 --data-dir /var/tmp/hl7",
    ),
    ReferenceSystem(
        "mail",
        "caplab.systems.mail",
        "Postfix (SMTP, submission and SMTPS; header/body content checks; LMTP delivery) → Dovecot "
        "mailbox (Maildir on --mail-dir, IMAP, POP3) behind a Dovecot IMAP/POP3 proxy; N users, "
        "self-signed TLS; roles transport, access, mailbox",
        "Exchange 2007 Hub Transport, Client Access and Mailbox roles (seeds/003)",
        "caplab systems start mail --users 100 --data-dir /var/tmp/mail",
    ),
    ReferenceSystem(
        "pgha",
        "caplab.systems.pgha",
        "PostgreSQL nodes managed by Patroni with a single-node etcd (ttl, loop_wait, retry_timeout "
        "and synchronous mode as options), N databases seeded with pgbench's tpcb schema; "
        "kill-primary (detection, election, promotion are Patroni's, read back in phases), "
        "switchover through Patroni's API, rejoin with pg_rewind; roles primary and standby",
        "a SQL Server availability group with automatic failover (seeds/004)",
        "caplab systems start pgha --nodes 3 --databases 20 --ttl 10 --loop-wait 2 --retry-timeout 4 "
        "--data-dir /var/tmp/pgha",
    ),
)


def find(name: str) -> ReferenceSystem | None:
    return next((s for s in SYSTEMS if s.name == name), None)


def as_dicts() -> list[dict[str, Any]]:
    return [asdict(s) for s in SYSTEMS]


def exec_system(system: ReferenceSystem, args: list[str]) -> None:
    """Replaces this process with the system's own (so signals and exit codes are its own, and
    a study's role matcher sees the system's command line, not caplab's)."""
    os.execv(sys.executable, [sys.executable, "-m", system.module, *args])
