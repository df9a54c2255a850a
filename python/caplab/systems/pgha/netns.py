"""Each node in a network namespace of its own, so that a partition is a real one: the node's
Patroni and PostgreSQL see only their own address, and every packet to or from the rest of the
cluster crosses one veth pair that ``isolate`` can cut.

    host ns: etcd on 127.0.0.1 and on each veth's host end (10.204.S.4i+1)
      └─ veth ── ns ``pgha-<scope>-nodeI``: Patroni + PostgreSQL on 10.204.S.4i+2

Node i gets the i-th /30 of the cluster's /24 (host end .4i+1, node end .4i+2). The namespace
routes the /24 through the host, which forwards between the cluster's veths only (forwarding is
switched on for those interfaces, never host-wide). Nothing leaves the machine.

A partition drops everything that enters or leaves the node's interface (iptables in the node's
namespace): TCP sees silence, not a refusal, as across a failed switch. The node's own loopback
and its Unix socket still work, so a client on the node's side of the partition (``isolate``'s
writer) can still reach its PostgreSQL. Deleting the namespace removes the rules with it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from caplab.systems.pgha.settings import HaError

NETNS_DIR = Path("/run/netns")
NODE_IFACE = "eth0"
DEFAULT_SUPERNET = ipaddress.IPv4Network("10.204.0.0/16")
"""Where ``--netns auto`` picks a free /24 (caplab's links use 10.203.0.0/16)."""
DROP_RULES = (("INPUT", "-i"), ("OUTPUT", "-o"))
"""A partition's two rules: what enters and what leaves the node's interface."""


def _run(argv: list[str], what: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    except FileNotFoundError:
        raise HaError(f"{what}: {argv[0]} is not installed (apt-get install iproute2 iptables)") from None
    if done.returncode != 0:
        raise HaError(f"{what}: `{' '.join(argv)}` failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def host_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks addressed on this host now."""
    out = _run(["ip", "-4", "-o", "addr", "show"], "listing the host's addresses")
    return [ipaddress.IPv4Interface(m.group(1)).network for m in re.finditer(r"inet (\S+)", out)]


def choose_subnet(asked: str) -> str:
    """``asked`` (a /24, checked free) or, for ``auto``, a free /24 of 10.204.0.0/16."""
    used = host_networks()
    if asked != "auto":
        try:
            subnet = ipaddress.ip_network(asked)
        except ValueError as e:
            raise HaError(f"--netns: {e}") from None
        if not isinstance(subnet, ipaddress.IPv4Network) or subnet.prefixlen != 24 or not subnet.is_private:
            raise HaError(f"--netns must be a private IPv4 /24 (e.g. 10.204.7.0/24) or auto, got {asked}")
        if any(subnet.overlaps(n) for n in used):
            raise HaError(f"--netns {asked}: the host already has addresses in it (another cluster?)")
        return str(subnet)
    # In random order: two clusters built at once (test workers) would both take the first free one
    # before either had addressed it.
    candidates: list[ipaddress.IPv4Network] = list(DEFAULT_SUPERNET.subnets(new_prefix=24))
    random.shuffle(candidates)
    for candidate in candidates:
        if not any(candidate.overlaps(n) for n in used):
            return str(candidate)
    raise HaError(f"every /24 of {DEFAULT_SUPERNET} is in use")


@dataclass(frozen=True)
class NodeNet:
    """Node ``index``'s namespace and veth pair in ``subnet`` (a /24), named after the cluster's
    scope so that two clusters never share one."""

    scope: str
    index: int
    subnet: str

    @property
    def namespace(self) -> str:
        # not caplab-…: caplab's sweep takes ``caplab-<pid>-…`` for its own, and a scope of
        # digits alone would read as a pid
        return f"pgha-{self.scope.removeprefix('caplab-')}-node{self.index}"

    @property
    def host_iface(self) -> str:
        return f"ph{self.scope[-8:]}{self.index}"  # ≤ 15 characters, the kernel's limit

    def _address(self, offset: int) -> str:
        return str(ipaddress.ip_network(self.subnet).network_address + 4 * self.index + offset)

    @property
    def host_address(self) -> str:
        """The host's end: where the node reaches etcd."""
        return self._address(1)

    @property
    def address(self) -> str:
        """The node's own address: its PostgreSQL and REST API listen there."""
        return self._address(2)

    def exists(self) -> bool:
        return (NETNS_DIR / self.namespace).exists()

    def create(self) -> None:
        """The namespace, the veth pair, addresses, the route to the other nodes, forwarding."""
        ns, host, what = self.namespace, self.host_iface, f"network of node{self.index}"
        _run(["ip", "netns", "add", ns], f"{what}: creating the namespace")
        steps = [
            ["ip", "link", "add", host, "type", "veth", "peer", "name", NODE_IFACE, "netns", ns],
            ["ip", "addr", "add", f"{self.host_address}/30", "dev", host],
            ["ip", "link", "set", host, "up"],
            ["ip", "-n", ns, "addr", "add", f"{self.address}/30", "dev", NODE_IFACE],
            ["ip", "-n", ns, "link", "set", NODE_IFACE, "up"],
            ["ip", "-n", ns, "link", "set", "lo", "up"],
            ["ip", "-n", ns, "route", "add", self.subnet, "via", self.host_address],
        ]
        try:
            for argv in steps:
                _run(argv, f"{what}: setting up the veth pair")
            # IPv4 forwards by the incoming interface's setting: on for this veth alone
            Path("/proc/sys/net/ipv4/conf", host, "forwarding").write_text("1")
        except (HaError, OSError) as e:
            self.remove()
            raise HaError(f"{what}: {e}") from None

    def enter(self, uid: int | None, gid: int | None) -> list[str]:
        """The prefix that runs a command inside the namespace, as ``uid``/``gid`` (the
        namespace is entered as root, then the user switched: a user cannot enter one)."""
        argv = ["nsenter", f"--net={NETNS_DIR / self.namespace}"]
        if uid is not None and gid is not None:
            argv += [f"--setgid={gid}", f"--setuid={uid}"]
        return [*argv, "--"]

    def isolate(self) -> None:
        """Cuts the node off: its interface drops every packet, both ways."""
        for chain, flag in DROP_RULES:
            self._iptables("-I", chain, flag, "partitioning")

    def heal(self) -> None:
        """Removes the partition's rules (each as often as it was added)."""
        for chain, flag in DROP_RULES:
            with contextlib.suppress(HaError):
                while True:
                    self._iptables("-D", chain, flag, "healing")

    def isolated(self) -> bool:
        out = _run(["ip", "netns", "exec", self.namespace, "iptables", "-S"], "reading the partition")
        return f"-i {NODE_IFACE} -j DROP" in out

    def _iptables(self, op: str, chain: str, flag: str, what: str) -> None:
        argv = ["ip", "netns", "exec", self.namespace, "iptables", op, chain, flag, NODE_IFACE, "-j", "DROP"]
        _run(argv, f"node{self.index}: {what}")

    def remove(self) -> None:
        """Kills what still runs in the namespace, deletes it (its rules go with it) and the
        veth pair (deleting one end deletes both)."""
        if self.exists():
            pids = subprocess.run(
                ["ip", "netns", "pids", self.namespace], capture_output=True, text=True, check=False
            ).stdout
            for pid in pids.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True, check=False)
        if Path("/sys/class/net", self.host_iface).exists():
            subprocess.run(["ip", "link", "del", self.host_iface], capture_output=True, check=False)
