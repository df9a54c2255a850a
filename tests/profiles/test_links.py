"""Links against the real kernel: a bulk transfer out of a role's namespace runs at its link's
rate. The sender runs in the namespace, the receiver on the host; the figure is TCP payload, so
100 Mbit/s of Ethernet frames carry about 95.6 Mbit/s of it (1448 of every 1514 bytes)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from caplab.profiles import CellHardware, LinkClass, Profile, ProfileError
from caplab.profiles.links import probe_rtt_ms

pytestmark = pytest.mark.slow  # known-answer measurements through the kernel, several seconds each

PORT = 5001
IP_MTU_DISCOVER, IP_PMTUDISC_DO = 10, 2  # <linux/in.h>; the socket module names them from 3.12
SENDER = f"""
import socket
server = socket.create_server(("0.0.0.0", {PORT}))
print("ready", flush=True)
conn, _ = server.accept()
chunk = bytes(1 << 20)
try:
    while True:
        conn.sendall(chunk)
except OSError:
    pass
"""


def received_mbit(address: str, warmup: float = 0.5, windows: int = 3) -> float:
    """Payload Mbit/s read from ``address``: the best of ``windows`` one-second windows after
    ``warmup``. Shaping is a ceiling; a busy host (other work, a starved virtual CPU) can only
    leave a window short of it, so the best window is the figure for the link. The receive buffer
    is left to the kernel's autotuning so a descheduled receiver does not close the window."""
    rates = []
    with socket.create_connection((address, PORT), timeout=5) as conn:
        buffer = bytearray(1 << 20)
        start = time.monotonic()
        while time.monotonic() - start < warmup:
            conn.recv_into(buffer)
        for _ in range(windows):
            counted, start = 0, time.monotonic()
            while (elapsed := time.monotonic() - start) < 1.0:
                counted += conn.recv_into(buffer)
            rates.append(counted * 8 / elapsed / 1e6)
    return max(rates)


def transfer(hw: CellHardware, role: str) -> float:
    sender = subprocess.Popen(
        [*hw.launch_prefix(role), sys.executable, "-c", SENDER], stdout=subprocess.PIPE, text=True
    )
    try:
        assert sender.stdout is not None and sender.stdout.readline().strip() == "ready"
        return received_mbit(hw.addresses[role])
    finally:
        sender.kill()
        sender.wait()


def test_a_bulk_transfer_runs_at_the_link_rate(tmp_path: Path, require: Callable[..., None]) -> None:
    links = {"100mbit": LinkClass.parse("100mbit"), "1gbit": LinkClass.parse("1gbit")}
    slow = Profile.build("slow", link="100mbit", link_classes=links)
    fast = Profile.build("fast", link="1gbit", link_classes=links)
    require(slow, fast)
    with CellHardware(tmp_path, {"slow": slow, "fast": fast}) as hw:
        assert hw.addresses["slow"] != hw.addresses["fast"]
        assert hw.host_addresses["slow"].rsplit(".", 1)[0] == hw.addresses["slow"].rsplit(".", 1)[0]
        at_100 = transfer(hw, "slow")
        at_1000 = transfer(hw, "fast")
        sent = hw.usage("slow")["link"]["sent_bytes"]
    print(f"100mbit link: {at_100:.1f} Mbit/s; 1gbit link: {at_1000:.1f} Mbit/s")
    assert 94 <= at_100 <= 100, f"{at_100:.1f} Mbit/s through a 100mbit link"
    assert int(sent) >= at_100 * 1e6 / 8 * 2, "the veth counters missed the transfer"
    assert at_1000 >= 5 * at_100, (
        f"1gbit link gave {at_1000:.0f} Mbit/s, under 5x the 100mbit link: this host's limit"
        " for a Python sender and receiver"
    )


def test_a_process_started_outside_the_namespace_cannot_be_attached_to_a_linked_role(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    profile = Profile.build(
        "net", cpus=1, link="100mbit", link_classes={"100mbit": LinkClass.parse("100mbit")}
    )
    require(profile)
    with CellHardware(tmp_path, {"web": profile}) as hw:
        outside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:
            with pytest.raises(ProfileError, match=r"runs outside the network namespace"):
                hw.attach("web", outside.pid)
            assert hw.pids("web") == []  # refused before anything was moved
        finally:
            outside.kill()
            outside.wait()


def test_roles_reach_each_other_through_the_host_and_a_jumbo_link_carries_jumbo_frames(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    links = {"plain": LinkClass.parse("1gbit", 1500), "jumbo": LinkClass.parse("1gbit", 9000)}
    app = Profile.build("app", link="plain", link_classes=links)
    db = Profile.build("db", link="jumbo", link_classes=links)
    require(app, db)
    with CellHardware(tmp_path, {"app": app, "db": db}) as hw:
        sender = subprocess.Popen(
            [*hw.launch_prefix("db"), sys.executable, "-c", SENDER], stdout=subprocess.PIPE, text=True
        )
        try:
            assert sender.stdout is not None and sender.stdout.readline().strip() == "ready"
            reach = f"import socket; c = socket.create_connection(({hw.addresses['db']!r}, {PORT}), 5); print(len(c.recv(1000)) > 0)"  # noqa: E501
            done = subprocess.run(
                [*hw.launch_prefix("app"), sys.executable, "-c", reach],
                capture_output=True,
                text=True,
                timeout=30,
            )
        finally:
            sender.kill()
            sender.wait()
        assert done.stdout.strip() == "True", done.stderr
        assert dont_fragment_send(hw.addresses["db"], 8000) == "sent"
        assert dont_fragment_send(hw.addresses["app"], 8000) == "too big for the link"


def test_a_role_without_a_link_is_at_loopback_and_reached_there(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    """One box against two: ``{address.db}`` is the namespace's address when db has a link and
    127.0.0.1 when it has none, and a server started on that profile answers there."""
    db = Profile.build("db", cpus=1)
    require(db)
    with CellHardware(tmp_path, {"db": db}) as hw:
        assert hw.addresses == {"db": "127.0.0.1"}
        sender = subprocess.Popen(
            [*hw.launch_prefix("db"), sys.executable, "-c", SENDER], stdout=subprocess.PIPE, text=True
        )
        try:
            assert sender.stdout is not None and sender.stdout.readline().strip() == "ready"
            with socket.create_connection((hw.addresses["db"], PORT), timeout=5) as conn:
                assert conn.recv(1000)
        finally:
            sender.kill()
            sender.wait()


def dont_fragment_send(address: str, size: int) -> str:
    """Send one UDP datagram of ``size`` bytes that must not be fragmented: the route's MTU decides."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        try:
            udp.sendto(bytes(size), (address, 9))
        except OSError:
            return "too big for the link"
    return "sent"


ECHO = f"""
import socket
server = socket.create_server(("0.0.0.0", {PORT}))
print("ready", flush=True)
conn, _ = server.accept()
while data := conn.recv(64):
    conn.sendall(data)
"""
TCP_INFO_RTT_OFFSET = 68
"""struct tcp_info (<linux/tcp.h>): tcpi_rtt, the smoothed round-trip time in µs, after 8 bytes of
flags and 15 u32 fields."""


def kernel_srtt_ms(hw: CellHardware, role: str, exchanges: int = 50) -> float:
    """The kernel's own smoothed RTT (TCP_INFO) of a connection across ``role``'s link, after
    ``exchanges`` small echoes: each reply carries the ACK at once, so no delayed ACK inflates it."""
    echo = subprocess.Popen(
        [*hw.launch_prefix(role), sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True
    )
    try:
        assert echo.stdout is not None and echo.stdout.readline().strip() == "ready"
        with socket.create_connection((hw.addresses[role], PORT), timeout=5) as conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(exchanges):
                conn.sendall(b"x")
                assert conn.recv(64) == b"x"
            info = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        return int.from_bytes(info[TCP_INFO_RTT_OFFSET : TCP_INFO_RTT_OFFSET + 4], "little") / 1000
    finally:
        echo.kill()
        echo.wait()


def test_a_link_reports_its_round_trip_time(tmp_path: Path, require: Callable[..., None]) -> None:
    """The probe's SYN is answered (RST) by the role's kernel across the link: a round trip of
    the veth pair and its two shapers, checked against the kernel's own smoothed RTT of an
    established connection across the same link (both well under a millisecond when idle; the
    probe's figure adds a connect() call and Python's timing around it)."""
    profile = Profile.build("p", link="fast", link_classes={"fast": LinkClass.parse("1gbit")})
    require(profile)
    with CellHardware(tmp_path, {"app": profile}) as hw:
        usage = hw.usage("app")["link"]
        assert 0 < float(usage["rtt_ms"]) < 50.0, usage
        probed = probe_rtt_ms(hw.addresses["app"], probes=5)
        kernel = kernel_srtt_ms(hw, "app")
        assert probed is not None and probed > 0 and kernel > 0
        assert abs(probed - kernel) <= 0.5, (probed, kernel)


def test_a_link_with_an_added_round_trip_delays_every_exchange_by_it(
    tmp_path: Path, require: Callable[..., None]
) -> None:
    """A 1 Gbit link with ``rtt: 4ms``: the kernel's own smoothed RTT of a connection across it
    reads 4 ms and a little (the delay process wakes within ~0.1 ms of each packet's time), the
    probe the limit analysis uses reads the same, and an idle link without it stays far under."""
    links = {"far": LinkClass.parse("1gbit", rtt_ms=4.0), "near": LinkClass.parse("1gbit")}
    far = Profile.build("far", link="far", link_classes=links)
    near = Profile.build("near", link="near", link_classes=links)
    require(far)
    with CellHardware(tmp_path, {"db": far, "app": near}) as hw:
        kernel = kernel_srtt_ms(hw, "db")
        assert 4.0 <= kernel <= 5.5, kernel
        probed = probe_rtt_ms(hw.addresses["db"], probes=5)
        assert probed is not None and abs(probed - kernel) <= 1.0, (probed, kernel)
        assert kernel_srtt_ms(hw, "app") < 1.0, "the delay is the far link's alone"
