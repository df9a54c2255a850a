"""pgha: PostgreSQL nodes managed by Patroni, with a single-node etcd as its consensus store, for
failover studies where detection, election and promotion are a real HA manager's (issue 29).

    etcd (leader key, TTL) ◀── Patroni node0 ─▶ PostgreSQL (leader)
                           ◀── Patroni node1 ─▶ PostgreSQL (replica, streaming; sync or async)

Debian's ``patroni`` and ``etcd-server``, PostgreSQL's binaries from /usr/lib/postgresql/*/bin,
all started as ordinary processes in one directory (as the unprivileged ``caplab-pg`` when we are
root), never as system services. Patroni's ``ttl``, ``loop_wait``, ``retry_timeout`` and
synchronous mode are options, so they can be a study's factors.

From Python::

    cluster = Cluster.create(HaSettings(Path("/var/tmp/ha"), nodes=3, ttl=10, loop_wait=2,
                                        retry_timeout=4, databases=20))
    failover.kill_primary(cluster, then_rejoin=True)   # {"phases": {"after_fault_s": …}, …}
    failover.switchover(cluster)
    cluster.status()["leader"]
    cluster.stop(); cluster.remove()

From a shell: ``python -m caplab.systems.pgha start|status|switchover|kill-primary|rejoin|stop``
(see cli.py). ROLES names the roles a study attributes resources to.
"""

from caplab.systems.pgha.cluster import Cluster, HaState
from caplab.systems.pgha.failover import kill_primary, rejoin, switchover
from caplab.systems.pgha.phases import Phases
from caplab.systems.pgha.settings import HaError, HaSettings

ROLES = ("primary", "standby")
"""The roles whose processes ``Cluster.role_pids()`` names."""

__all__ = [
    "ROLES",
    "Cluster",
    "HaError",
    "HaSettings",
    "HaState",
    "Phases",
    "kill_primary",
    "rejoin",
    "switchover",
]
