"""Role changes, each timed from the moment it begins:

- ``switchover`` (planned): the primary stops cleanly (a clean shutdown sends its last WAL, the
  shutdown checkpoint, to the streaming standby), the standby is promoted once it has received
  that, and the old primary rejoins as a standby of the new one. Nothing committed is lost.
- ``kill_primary`` (the automatic case): SIGKILL to the primary's postmaster, a detection delay
  (what a failure detector would take), then the standby is promoted. With asynchronous
  replication, commits the standby had not received are lost; ``rejoin`` later rewinds the old
  primary (``pg_rewind``) past them and makes it a standby.

A new primary runs without a synchronous standby until its standby streams again (otherwise every
commit would wait for a node that is not there), as Patroni's non-strict synchronous mode does.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from caplab.systems.pgpair import nodes
from caplab.systems.pgpair.pair import STREAM_TIMEOUT_S, SUPERUSER, Pair, PairError
from caplab.systems.pgpair.server import Server

RECEIVE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RoleChange:
    """What a role change did and how long each part took (seconds from its start)."""

    action: str
    old_primary: str
    new_primary: str
    writable_after_s: float
    """Until the new primary accepted writes."""
    paired_after_s: float | None = None
    """Until the old primary streamed from the new one (None: it has not rejoined)."""
    killed_pid: int | None = None
    detect_delay_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _roles(pair: Pair) -> tuple[Server, Server]:
    """(primary, standby), both running; PairError when the pair is not whole."""
    roles = pair.roles()
    primary = next((n for n in pair.nodes if roles[n.name] == "primary"), None)
    standby = next((n for n in pair.nodes if roles[n.name] == "standby"), None)
    if primary is None or standby is None:
        seen = ", ".join(f"{name} {role}" for name, role in roles.items())
        raise PairError(f"the pair needs a primary and a standby for this ({seen}); `rejoin` first?")
    return primary, standby


def switchover(pair: Pair) -> RoleChange:
    """Planned role swap; no committed transaction is lost, whatever the sync mode."""
    old, new = _roles(pair)
    nodes.wait_streaming(old, new, SUPERUSER, pair.password, STREAM_TIMEOUT_S)
    started = time.monotonic()
    old.stop("fast")
    last = _shutdown_checkpoint(old)
    deadline = time.monotonic() + RECEIVE_TIMEOUT_S
    while nodes.received_lsn(new, SUPERUSER, pair.password) <= last:
        if time.monotonic() > deadline:
            old.start()
            raise PairError(
                f"{new.name} did not receive {old.name}'s last WAL within {RECEIVE_TIMEOUT_S:.0f} s; "
                f"{old.name} was started again as the primary"
            )
        time.sleep(0.01)
    _promote(pair, new, old)
    writable = time.monotonic() - started
    rejoin(pair, old)
    return RoleChange("switchover", old.name, new.name, writable, time.monotonic() - started)


def kill_primary(pair: Pair, detect_delay_s: float = 1.0, *, then_rejoin: bool = False) -> RoleChange:
    """SIGKILL the primary, wait ``detect_delay_s``, promote the standby (and, if asked, rewind
    the old primary and make it the new standby)."""
    if detect_delay_s < 0:
        raise PairError(f"the detection delay must be ≥ 0 s, got {detect_delay_s}")
    old, new = _roles(pair)
    started = time.monotonic()
    killed = old.kill()
    time.sleep(max(0.0, detect_delay_s - (time.monotonic() - started)))
    _promote(pair, new, old)
    writable = time.monotonic() - started
    old.wait_gone()
    paired = None
    if then_rejoin:
        rejoin(pair, old)
        paired = time.monotonic() - started
    return RoleChange("kill-primary", old.name, new.name, writable, paired, killed, detect_delay_s)


def _promote(pair: Pair, new: Server, old: Server) -> None:
    """Promotes ``new``, without a synchronous standby, with a slot kept for ``old``."""
    pair.set_sync(new, False)  # caplab.conf is read at promotion too: no commit waits for `old`
    new.promote()
    nodes.wait_writable(new, SUPERUSER, pair.password, 60.0)
    pair.mark_roles(new)
    nodes.ensure_slot(new, old.name, SUPERUSER, pair.password)


def rejoin(pair: Pair, node: Server | None = None) -> float:
    """Makes the stopped (or killed) ``node`` — by default whichever node is down — a standby of
    the primary: ``pg_rewind`` first (a no-op after a clean switchover), then start and wait until
    it streams; synchronous replication is on again after. Returns the seconds it took."""
    started = time.monotonic()
    primary = pair.primary()
    if primary is None:
        raise PairError("no node is primary: nothing to rejoin to")
    target = node or pair.other(primary)
    if target is primary:
        raise PairError(f"{target.name} is the primary")
    if target.postmaster_pid() is not None:
        target.stop("fast")
    target.wait_gone()
    # pg_rewind first completes a crashed node's recovery in single-user mode, which cannot run
    # as a standby; make_standby writes the signal again after the rewind
    (target.data_dir / "standby.signal").unlink(missing_ok=True)
    nodes.ensure_slot(primary, target.name, SUPERUSER, pair.password)
    with nodes.connect(primary, SUPERUSER, pair.password) as conn:
        # a primary just promoted shows its new timeline in its control file only after a
        # checkpoint: without one, pg_rewind sees one timeline and says no rewind is required
        conn.execute("CHECKPOINT")
    target.user.run(
        [
            str(target.bin / "pg_rewind"),
            "-D",
            str(target.data_dir),
            f"--source-server=host=127.0.0.1 port={primary.port} user={SUPERUSER} dbname=postgres",
        ],
        env=target.env(pair.passfile),
        what=f"pg_rewind of {target.name} onto {primary.name}",
    )
    pair.make_standby(target, primary)  # after the rewind, which copies the primary's caplab.conf
    target.start()
    nodes.wait_streaming(primary, target, SUPERUSER, pair.password, STREAM_TIMEOUT_S)
    nodes.drop_idle_slots(target, SUPERUSER, pair.password)
    pair.set_sync(primary, True)
    return time.monotonic() - started


def _shutdown_checkpoint(node: Server) -> int:
    """The stopped node's last checkpoint (its shutdown checkpoint)."""
    found = node.control_data().get("Latest checkpoint location")
    if not found:
        raise PairError(f"pg_controldata of {node.name} shows no checkpoint location")
    return nodes.lsn(found)
