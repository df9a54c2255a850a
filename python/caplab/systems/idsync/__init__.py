"""idsync: a small but real identity-synchronisation system shaped like MIIS 2003, for caplab's batch
(job) studies (seed 001: staging and sync ops/s against object count and disk layout).

    directory ──stage──▶ connector space ──sync──▶ metaverse ──provision──▶ export
    (slapd, or a CSV)    (one row per object)     (join on employeeNumber,  (ou=export in slapd,
                                                   project, flow)            or a CSV file)

- directory (directory.py): OpenLDAP slapd started as an ordinary process on a loopback port with
  its own configuration and mdb database; root password random, in a 0600 file, never printed.
- seed (seed.py, people.py): N inetOrgPerson people of K single-valued attributes, loaded by
  slapadd with slapd stopped (and/or written as the text source's CSV).
- stage (engine.py, sources.py): a paged LDAP search (ldap3) or the CSV, upserted into the
  connector space a page per transaction; staging again is idempotent.
- sync (engine.py, rules.py): each staged object joins the metaverse by employeeNumber or is
  projected; attributes flow by simple rules; each person is provisioned to every export target,
  a batch per transaction; the LDAP target is written after each batch, a CSV at the end.
- store (store.py): SQLite (data, change log, temp in separate directories) or PostgreSQL.
- counters (metrics.py): ``idsync_objects_{staged,synced,exported}_total`` kept in the store,
  printed, served on ``GET /metrics`` or written to a file.

Every operation is a shell command (cli.py), so a job drives it as it would any batch system:
``python -m caplab.systems.idsync run stage --data-dir D --data DATA --log LOG --temp TEMP``.
ROLES tells caplab's role collector which processes are which.
"""

ROLES: dict[str, str] = {
    "directory": "slapd -f ",
    "idsync": "caplab.systems.idsync run ",
    "store": "postgres",
}
"""Role → a command-line substring matching its processes. With SQLite the store runs inside the
idsync process, so only its disk shows the store's share."""

__all__ = ["ROLES"]
