"""Links: a role's own network namespace joined to the host by a veth pair with a private /30
(10.203.X.Y/30: host end .1, role end .2), shaped with tc tbf at the class's rate in both
directions, at the class's MTU. Nothing is routed outside the machine: the namespace knows only
its /30 and the 10.203.0.0/16 of the other roles, which the host forwards between role veths
(forwarding is enabled on those interfaces alone). Traffic between two roles crosses both links.

A link class with an added round trip (``rtt``) gets it without netem, which this kernel may lack:
iptables rules in the role's namespace queue every packet leaving or entering its interface to a
`delay` process in the namespace (NFQUEUE), which holds each for half the round trip. The rules
and the process go with the namespace.

A running process cannot be moved into a namespace from outside (``setns`` acts on the caller),
so a role with a link must be started under ``enter_argv``; ``attach`` only checks that it was.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import secrets
import select
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from caplab.profiles.errors import ProfileError, run_tool
from caplab.profiles.models import LinkClass
from caplab.profiles.resource import Usage

NETNS_DIR = Path("/run/netns")
SUBNETS = ipaddress.ip_network("10.203.0.0/16")
_ROLE_IFACE = "eth0"
_taken_here: set[int] = set()
_lock = threading.Lock()


def _used_blocks() -> set[int]:
    """/30 blocks of 10.203.0.0/16 already addressed on the host."""
    out = run_tool(["ip", "-4", "-o", "addr", "show"], "links: listing host addresses")
    used = set()
    for match in re.finditer(r"inet (10\.203\.\d+\.\d+)/", out):
        offset = int(ipaddress.ip_address(match.group(1))) - int(SUBNETS.network_address)
        used.add(offset // 4)
    return used


def allocate_block() -> int:
    """A free /30 block index (0…16383), unique on the host and within this process."""
    with _lock:
        used = _used_blocks() | _taken_here
        for block in range(SUBNETS.num_addresses // 4):
            if block not in used:
                _taken_here.add(block)
                return block
    raise ProfileError("links: every /30 of 10.203.0.0/16 is in use")


def release_block(block: int) -> None:
    with _lock:
        _taken_here.discard(block)


BUCKET_SECONDS = 0.025
RTT_PROBES = 3
RTT_PORT = 1
"""A port nothing listens on: the role's kernel answers the SYN with a RST, one round trip with
no application in it (were something listening, its SYN-ACK is one round trip too)."""


def probe_rtt_ms(address: str, probes: int = RTT_PROBES, timeout_s: float = 1.0) -> float | None:
    """The link's round-trip time as TCP sees it now: the median of ``probes`` connection attempts
    to ``address`` (each a SYN answered by the far kernel), queueing in the shaped link included.
    None when nothing answered."""
    times = []
    for _ in range(probes):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            t0 = time.perf_counter()
            try:
                s.connect((address, RTT_PORT))
            except ConnectionRefusedError:
                pass
            except OSError:
                continue
            times.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(times) if times else None


def tbf_args(link: LinkClass) -> list[str]:
    """tc tbf for ``link``: a bucket of 25 ms at the rate and a queue of 20 ms beyond it.

    The bucket is what lets the link catch up after the host was late to dequeue: on a busy host
    the softirq that sends runs in ksoftirqd among every other runnable task, and stalls of tens
    of milliseconds are common; a smaller bucket loses that time for good (10 ms gave 79–95 Mbit/s
    on a 100 Mbit link of a loaded 2-core machine; 25 ms gives 95.5, the payload share of the
    frames). The price: after an idle period, the first 25 ms worth of data (≈ 310 KB at
    100 Mbit/s) passes at the veth's own speed, so a small response does not pay its full
    serialisation time. Long-run throughput never exceeds the rate."""
    rate_bytes = link.rate_bits / 8
    burst = max(int(rate_bytes * BUCKET_SECONDS), 2 * (link.mtu + 14), 10_000)
    return ["tbf", "rate", f"{link.rate_bits}bit", "burst", str(burst), "latency", "20ms"]


DELAY_READY_S = 10.0
"""How long the delay process may take to bind its queue (an interpreter start, mostly)."""


DELAY_READY = "ready"
"""The line the delay process prints once its queue is bound."""


def delay_rules() -> list[list[str]]:
    """iptables (in the role's namespace) queueing what leaves and what enters the role's interface
    to the delay process. Never removed: they go with the namespace."""
    return [
        ["iptables", "-t", "mangle", "-A", chain, flag, _ROLE_IFACE, "-j", "NFQUEUE", "--queue-num", "0"]
        for chain, flag in (("OUTPUT", "-o"), ("PREROUTING", "-i"))
    ]


class NamespaceLink:
    """Role ``role``'s namespace ``netns`` and its link of class ``link``."""

    kind = "link"

    def __init__(self, netns: str, link: LinkClass) -> None:
        self.netns = netns
        self.link = link
        self.host_iface = "caplab-" + secrets.token_hex(4)  # 15 characters: the kernel's limit
        self.block: int | None = None
        self._created_netns = False
        self._delay: subprocess.Popen[str] | None = None

    @property
    def host_address(self) -> str:
        return self._address(1)

    @property
    def address(self) -> str:
        """The role's address, as start commands and target URLs see it."""
        return self._address(2)

    def _address(self, host: int) -> str:
        if self.block is None:
            raise ProfileError(f"link of {self.netns}: not created")
        return str(SUBNETS.network_address + self.block * 4 + host)

    def create(self) -> None:
        self.block = allocate_block()
        ns, host, mtu = self.netns, self.host_iface, str(self.link.mtu)
        what = f"link {ns}"
        run_tool(["ip", "netns", "add", ns], f"{what}: creating the network namespace")
        self._created_netns = True
        steps = [
            ["ip", "link", "add", host, "type", "veth", "peer", "name", _ROLE_IFACE, "netns", ns],
            ["ip", "addr", "add", f"{self.host_address}/30", "dev", host],
            ["ip", "link", "set", host, "mtu", mtu, "up"],
            ["ip", "-n", ns, "addr", "add", f"{self.address}/30", "dev", _ROLE_IFACE],
            ["ip", "-n", ns, "link", "set", _ROLE_IFACE, "mtu", mtu, "up"],
            ["ip", "-n", ns, "link", "set", "lo", "up"],
            ["ip", "-n", ns, "route", "add", str(SUBNETS), "via", self.host_address],
            ["tc", "qdisc", "add", "dev", host, "root", *tbf_args(self.link)],
            ["tc", "-n", ns, "qdisc", "add", "dev", _ROLE_IFACE, "root", *tbf_args(self.link)],
        ]
        for argv in steps:
            run_tool(argv, f"{what}: setting up the veth pair")
        # Roles reach each other through the host: forwarding on for what enters from this veth
        # only (IPv4 decides on the incoming interface), never host-wide.
        forwarding = Path("/proc/sys/net/ipv4/conf") / host / "forwarding"
        try:
            forwarding.write_text("1")
        except OSError as exc:
            raise ProfileError(f"{what}: cannot enable forwarding on {host}: {exc.strerror}") from exc
        if self.link.rtt_ms:
            self._start_delay()

    def _start_delay(self) -> None:
        """The delay process in the namespace, then the rules that feed it (a rule with nothing
        bound to its queue drops what it matches, so the process comes first)."""
        what = f"link {self.netns}: the {self.link.rtt_ms:g} ms round trip"
        argv = [*self.enter_argv(), sys.executable, "-m", "caplab.profiles.delay"]
        argv += ["--delay-us", str(round(self.link.rtt_ms * 500))]  # half each way
        self._delay = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        assert self._delay.stdout is not None
        ready, _, _ = select.select([self._delay.stdout], [], [], DELAY_READY_S)
        line = self._delay.stdout.readline().strip() if ready else ""
        if line != DELAY_READY:
            self._stop_delay()
            assert self._delay.stderr is not None
            why = self._delay.stderr.read().strip() or f"no ready line within {DELAY_READY_S:g}s"
            raise ProfileError(f"{what}: the delay process did not start: {why}")
        for rule in delay_rules():
            run_tool(["ip", "netns", "exec", self.netns, *rule], f"{what}: queueing the link's packets")

    def _stop_delay(self) -> None:
        if self._delay is None:
            return
        if self._delay.poll() is None:
            self._delay.terminate()
            try:
                self._delay.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._delay.kill()
                self._delay.wait()

    def procs_files(self) -> list[Path]:
        return []

    def enter_argv(self) -> list[str]:
        return ["nsenter", f"--net={NETNS_DIR / self.netns}"]

    def attach(self, pid: int) -> None:
        """Check that ``pid`` already runs in the namespace (it cannot be moved there)."""
        try:
            inside = os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(NETNS_DIR / self.netns).st_ino
        except FileNotFoundError as exc:
            raise ProfileError(f"link {self.netns}: process {pid} or the namespace is gone") from exc
        if not inside:
            raise ProfileError(
                f"process {pid} runs outside the network namespace {self.netns}; a role with a link"
                " must be started under the hardware's launch prefix"
            )

    def usage(self) -> Usage:
        """Bytes and packets the role sent and received over its link (read on the host end)."""
        stats = Path("/sys/class/net") / self.host_iface / "statistics"

        def read(name: str) -> int:
            return int((stats / name).read_text())

        rtt = probe_rtt_ms(self.address)
        return {
            **({"rtt_ms": rtt} if rtt is not None else {}),
            "interface": self.host_iface,
            "address": self.address,
            "rate_bits": self.link.rate_bits,
            "mtu": self.link.mtu,
            "received_bytes": read("tx_bytes"),
            "sent_bytes": read("rx_bytes"),
            "received_packets": read("tx_packets"),
            "sent_packets": read("rx_packets"),
            "dropped": read("tx_dropped") + read("rx_dropped"),
        }

    def remove(self) -> None:
        errors = []
        self._stop_delay()  # its rules go with the namespace
        if Path("/sys/class/net", self.host_iface).exists():
            try:
                run_tool(["ip", "link", "del", self.host_iface], f"link {self.netns}: removing the veth pair")
            except ProfileError as exc:
                errors.append(str(exc))
        if self._created_netns:
            remove_netns(self.netns)
            self._created_netns = False
        if self.block is not None:
            release_block(self.block)
            self.block = None
        if errors:
            raise ProfileError("; ".join(errors))


def remove_netns(netns: str) -> None:
    """Kill what still runs in ``netns`` (it would keep the namespace alive) and delete it."""
    pids = run_tool(["ip", "netns", "pids", netns], f"link {netns}: listing processes", check=False)
    for pid in pids.split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), 9)
    run_tool(["ip", "netns", "del", netns], f"link {netns}: deleting the network namespace", check=False)
