"""pgpair: a PostgreSQL primary and a hot standby with streaming replication, for caplab's
database and failover studies (the SQL Server availability-group paper, seeds/004).

    node0 (primary) ──WAL stream, slot "node1"──▶ node1 (hot standby)

Debian's server binaries, each node its own data directory under ``--data-dir`` and its own
loopback port, run as ordinary processes (as the unprivileged ``caplab-pg`` when we are root);
``--databases N`` seeded with pgbench's tpcb schema; ``--sync on|remote_apply|off``.

From Python::

    pair = Pair.create(PairSettings(Path("/var/tmp/pair"), databases=20, sync="on"))
    pair.status()["primary"]         # "node0"
    failover.switchover(pair)        # RoleChange(..., writable_after_s=0.4, paired_after_s=1.2)
    failover.kill_primary(pair, detect_delay_s=1.0, then_rejoin=True)
    pair.role_pids()                 # {"primary": [postmaster, children…], "standby": […]}
    pair.stop(); pair.remove()

From a shell: ``python -m caplab.systems.pgpair start|status|switchover|kill-primary|rejoin|stop``
(see cli.py). ROLES names the roles a study attributes resources to.
"""

from caplab.systems.pgpair.failover import RoleChange, kill_primary, rejoin, switchover
from caplab.systems.pgpair.nodes import PasswordRefused
from caplab.systems.pgpair.pair import Pair, PairError, PairSettings, SyncMode
from caplab.systems.pgpair.server import Server, ServerError, ServerUser

ROLES = ("primary", "standby")
"""The roles whose processes ``Pair.role_pids()`` (and ``status``) name."""

__all__ = [
    "ROLES",
    "Pair",
    "PairError",
    "PairSettings",
    "PasswordRefused",
    "RoleChange",
    "Server",
    "ServerError",
    "ServerUser",
    "SyncMode",
    "kill_primary",
    "rejoin",
    "switchover",
]
