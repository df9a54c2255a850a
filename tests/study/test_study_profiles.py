"""Hardware as a factor of a study, against the real kernel: a single-threaded server of fixed CPU
per request on a profile of one core, then of half a core, must carry half the load on the half
core (its whole cost is CPU inside the profile), the limit must be named as the role's CPU, and
nothing caplab made (cgroups, loop devices, namespaces) may be left after the run."""

from __future__ import annotations

import json
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from caplab.analysis.cost import priced_roles
from caplab.profiles import LinkClass, Profile, VolumeClass
from caplab.profiles.device_models import Hdd
from caplab.spec import SpecError, load_study
from caplab.study.hardware import shared_machines
from support.profiles import left_behind, leftovers, outweighing_the_neighbours
from support.require import require_profiles
from support.servers import default_sigint
from support.studies import CAPLAB, caplab, free_port, json_out, knownserver, listening, write_study

pytestmark = pytest.mark.slow


def require(*profiles: Profile) -> None:
    """Skips the test naming exactly the mechanism this machine lacks for the profiles (fails
    under ``CAPLAB_REQUIRE_PROFILES=1``)."""
    __tracebackhide__ = True
    require_profiles(*profiles)


def test_half_a_core_carries_half_the_load(tmp_path: Path) -> None:
    require(Profile.build("probe", cpus=1))
    before = set(leftovers())
    port = free_port()
    study = {
        "name": "cores",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        # One profile core is half a host core: the generator keeps most of the machine's two.
        "profiles": {"one": {"cpus": 1}, "half": {"cpus": 0.5}},
        "scale": {"cpu": 0.5},
        "factors": {"profile": ["one", "half"]},
        "sut": {
            "start": f"exec {knownserver(port, '--cpu-us', '2000')}",
            "ready": {"port": port, "timeout": "20s"},
            "roles": {"server": {"match": f"knownserver --port {port}", "profile": "{profile}"}},
        },
        "load": {"duration": "1s", "warmup": "300ms"},
        "slo": ["p99<=100ms"],
        "search": {"precision": "5%", "trial": "1s", "repeats": 1, "start": 100},
    }
    path = write_study(tmp_path / "study.yaml", study)
    with outweighing_the_neighbours():  # the quota, not the machine's other jobs, holds it back
        done = caplab(
            "run", path, "--db", f"sqlite:///{tmp_path / 'c.db'}", "--json", "-o", tmp_path / "r", timeout=300
        )
    assert done.returncode == 0, done.stderr[-3000:]
    cells = {c["factors"]["profile"]: c for c in json_out(done)["cells"]}
    one, half = (cells[p]["metrics"] for p in ("one", "half"))
    ratio = half["capacity"]["capacity_rps"] / one["capacity"]["capacity_rps"]
    capacities = (
        f"one core {one['capacity']['capacity_rps']:.0f}/s, half {half['capacity']['capacity_rps']:.0f}/s"
    )
    # Without the neighbours outweighed, other jobs on the machine's two cores eat into the quota,
    # more of the whole core's than of the half's (measured back to back under a load average of
    # 8: ratios 0.47 to 0.71); the search's own bracket is 2.5 % wide.
    print(f"{capacities}, ratio {ratio:.3f}")  # shown with pytest -s
    assert ratio == pytest.approx(0.5, abs=0.05), f"{capacities}, ratio {ratio:.3f}"
    for metrics, words in (
        (one, "1 core, emulated as 0.5 host CPUs"),
        (half, "0.5 cores, emulated as 0.25 host CPUs"),
    ):
        assert metrics["limit"]["resource"] == "cpu:server", metrics["limit"]
        hardware = metrics["hardware"]
        assert hardware["scale"] == {"cpu": 0.5}
        assert any(line.startswith(words) for line in hardware["roles"]["server"]), hardware
        assert hardware["launched_under"] == "server"
    # The results table states the role's CPU both ways: of one host core, and of its profile.
    assert "% of profile)" in (tmp_path / "r" / "report.md").read_text()
    assert not (tmp_path / ".caplab-hardware").exists()
    assert left_behind(before) == []


WRITER = (
    "import os, sys, time  # volume-writer\n"
    "path = os.path.join(sys.argv[1], 'log')\n"
    "with open(path, 'wb') as f:\n"
    "    while True:\n"
    "        f.write(b'x' * 4096); f.flush(); os.fsync(f.fileno()); time.sleep(0.005)\n"
)
HOG = (
    "import time  # memory-hog\n"
    "time.sleep(1.5)\n"
    "hog = bytearray(256 << 20)\n"
    "for i in range(0, len(hog), 4096): hog[i] = 1\n"
    "time.sleep(60)\n"
)


def two_roles(tmp_path: Path, port: int, helper: str, helper_role: dict[str, Any]) -> dict[str, Any]:
    """A study whose one start command launches two roles: knownserver, and a helper script that
    becomes the SUT's main process (so its death fails the cell). Callers match the helper by its
    path: a bare ``helper.py`` also matched another test's helper running at the same time on the
    other worker, and moved it into this study's 64 MB group, where the OOM killer took it."""
    script = tmp_path / "helper.py"
    script.write_text(helper)
    start = f"{knownserver(port)} & exec {shlex.join([sys.executable, str(script)])} {{volume.log}}"
    return {
        "name": "two roles",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "profiles": {
            "app": {"cpus": 1, "memory": "256M"},
            "disk": {"volumes": {"log": "slow"}, "memory": "64M"},
        },
        "volumes": {"slow": {"size": "64M", "write_iops": 40}},
        "sut": {
            "start": start,
            "ready": {"port": port, "timeout": "20s"},
            "roles": {
                "server": {"match": f"knownserver --port {port}", "profile": "app"},
                "helper": helper_role,
            },
        },
        "load": {"rate": 20, "duration": "3s"},
    }


def run_here(tmp_path: Path, study: dict[str, Any], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``caplab run --json`` of ``study``, written to tmp_path/s.yaml, into tmp_path/c.db with its
    report in tmp_path/r."""
    path = write_study(tmp_path / "s.yaml", study)
    db = f"sqlite:///{tmp_path / 'c.db'}"
    return caplab("run", path, "--db", db, "--json", "-o", tmp_path / "r", timeout=timeout)


def knownserver_study(
    name: str, port: int, profile: tuple[str, dict[str, Any]], *server_args: str, linked: bool = False
) -> dict[str, Any]:
    """A study of knownserver (``server_args``) as the role ``server`` on one profile; ``linked``:
    the profile has a link, so the server listens, is checked and is loaded at ``{address.server}``."""
    host = "{address.server}" if linked else "127.0.0.1"
    start = f"exec {knownserver(port, *server_args)}" + (" --host {address.server}" if linked else "")
    return {
        "name": name,
        "target": {"http": {"url": f"http://{host}:{port}/"}},
        "profiles": {profile[0]: profile[1]},
        "sut": {
            "start": start,
            "ready": {"port": port, **({"host": host} if linked else {}), "timeout": "20s"},
            "roles": {"server": {"match": f"knownserver --port {port}", "profile": profile[0]}},
        },
    }


def test_roles_of_one_start_command_are_attached_to_their_profiles(tmp_path: Path) -> None:
    """Each role's processes are moved onto its profile as they appear (and the results say they
    ran outside it until then); the volume's IO is reported under its name, the role's memory
    against its limit; everything is removed after the cell."""
    port = free_port()
    study = two_roles(tmp_path, port, WRITER, {"match": str(tmp_path / "helper.py"), "profile": "disk"})
    study["storage_baseline"] = {"size": "4M", "runtime": "1s", "jobs": 2, "depth": 8}
    require(Profile.build("disk", memory="64M", volumes={"log": "slow"}, volume_classes={"slow": _slow()}))
    before = set(leftovers())
    done = run_here(tmp_path, study)
    assert done.returncode == 0, done.stderr[-3000:]
    cell = json_out(done)["cells"][0]
    hardware = cell["metrics"]["hardware"]
    assert "launched_under" not in hardware
    assert set(hardware["ran_outside"]) == {"server", "helper"}, hardware
    assert hardware["roles"]["helper"][1:] == [
        "64M memory, no swap",
        "log (slow): 40 write IOPS throttle on a 64M loop volume",
    ]
    volume = cell["resources"]["volume:log"]
    # fsync'd 4 KiB writes throttled to 40 IOPS: the volume sees writes, never more than its class.
    assert 5 < volume["write_iops"] <= 40 * 1.2, volume
    # The throttle counts each fsync's cache flush as a request too.
    counted = volume["write_iops"] + volume.get("flush_iops", 0.0)
    assert volume["throttle_percent"] == pytest.approx(100 * counted / 40, rel=0.05)
    # fio on the fresh volume, inside the helper's profile, before the system started: its class's
    # 40 write IOPS, against the study directory's baseline far above it.
    [baseline] = hardware["volume_baseline"].values()
    assert list(hardware["volume_baseline"]) == ["helper/log"] and baseline["status"] == "measured"
    writes = next(j for j in baseline["jobs"] if j["name"].startswith("randwrite"))
    assert 20 < writes["iops"] <= 40 * 1.25, baseline
    assert "volume helper/log: randread" in done.stderr
    # The report's per-volume table: the system's writes beside what the volume gave alone.
    [reported] = json.loads((tmp_path / "r" / "results.json").read_text())["cells"]
    log = reported["volumes"]["log"]
    assert log["role"] == "helper" and log["alone_write_iops"] == writes["iops"]
    assert log["write_iops"] == volume["write_iops"] and log["ceiling_percent"] == volume["throttle_percent"]
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "Disk use per volume" in markdown and "helper/log" in markdown
    # The hardware listing says, per role, that its processes ran outside the profile a while.
    for role in ("server", "helper"):
        assert reported["hardware"][role][-1] == hardware["ran_outside"][role], reported["hardware"]
        assert re.match(r"\d+ process\(es\) ran outside the profile for up to", hardware["ran_outside"][role])
    assert markdown.count("ran outside the profile for up to") == 2
    server = cell["resources"]["server"]
    assert server["mem_limit_mb"] == pytest.approx(256)
    # Attached after it started, the server's pages stay charged where it touched them (v1 kernels
    # no longer move charges): what the profile sees is only what it touched since, maybe nothing.
    assert 0 <= server["mem_percent"] < 50 and server["quota_cpus"] == 1
    assert left_behind(before) == []


def test_an_oom_kill_fails_the_cell_with_that_reason(tmp_path: Path) -> None:
    port = free_port()
    study = two_roles(tmp_path, port, HOG, {"match": str(tmp_path / "helper.py"), "profile": "disk"})
    require(Profile.build("disk", memory="64M", volumes={"log": "slow"}, volume_classes={"slow": _slow()}))
    before = set(leftovers())
    done = run_here(tmp_path, study)
    assert done.returncode == 1, done.stderr[-3000:]
    cell = json_out(done)["cells"][0]
    assert cell["status"] == "failed"
    assert "role helper ran out of memory: the OOM killer killed" in cell["error"], cell["error"]
    assert left_behind(before) == []


def test_a_server_that_keeps_memory_per_request_is_stopped_by_its_memory_limit(tmp_path: Path) -> None:
    """knownserver keeping 1 MB per request at 100 requests/s on a 256M profile: its memory, not
    its CPU (2 ms a request of a whole core) nor its software, ends the cell — the OOM killer at
    the profile's limit, reported as the cell's reason."""
    port = free_port()
    study = knownserver_study("leak", port, ("box", {"cpus": 1, "memory": "256M"}), "--alloc-kb", "1024")
    study["load"] = {"rate": 100, "duration": "10s"}
    require(Profile.build("box", cpus=1, memory="256M"))
    before = set(leftovers())
    done = run_here(tmp_path, study)
    assert done.returncode == 1, done.stderr[-3000:]
    [cell] = json_out(done)["cells"]
    assert cell["status"] == "failed" and cell["metrics"]["hardware"]["launched_under"] == "server"
    assert cell["error"].startswith(
        "role server ran out of memory: the OOM killer killed 1 process(es) at its profile's limit of 256 MB"
    ), cell["error"]
    [reported] = json.loads((tmp_path / "r" / "results.json").read_text())["cells"]
    # The report names the limit from the trial's samples: the role's memory, with the kill.
    limit = reported["limit"]
    assert limit["resource"] == "memory:server" and limit["kind"] == "hardware", limit
    assert "the OOM killer killed a process" in limit["summary"], limit["summary"]
    assert left_behind(before) == []


def test_a_search_takes_an_oom_kill_as_that_loads_failure_and_goes_on_below(tmp_path: Path) -> None:
    """knownserver holding 2 MB per request in flight on a 96M profile: each user costs 2 MB, so
    the users that fit are fewer than 48 and more than (96 − its own ~30 MB) / 2. A trial the OOM
    killer ends fails at its load, the server is started afresh, the search goes on below it, and
    the limit is the role's memory."""
    port = free_port()
    hold = ("--hold-kb", "2048", "--sleep-ms", "100")
    study = knownserver_study("sessions", port, ("box", {"cpus": 1, "memory": "96M"}), *hold) | {
        "load": {"users": 8, "duration": "2s", "warmup": "500ms"},
        "slo": ["p99<=2s", "errors<=0%"],
        "search": {"precision": "10%", "trial": "1s", "repeats": 1},
    }
    require(Profile.build("box", cpus=1, memory="96M"))
    before = set(leftovers())
    done = run_here(tmp_path, study, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    [cell] = json_out(done)["cells"]
    trials = cell["metrics"]["search_trials"]
    killed = [t for t in trials if any("ran out of memory" in r for r in t["reasons"])]
    assert killed and all(t["failed_resource"] == "memory:server" for t in killed), trials
    # the search went on after the kill: a later trial passed on the server started afresh
    first_kill = trials.index(killed[0])
    assert any(t["passed"] for t in trials[first_kill + 1 :]), trials
    users = cell["metrics"]["capacity"]["capacity_users"]
    assert 16 < users < 48 and users < min(t["load"] for t in killed), (users, trials)
    [reported] = json.loads((tmp_path / "r" / "results.json").read_text())["cells"]
    assert reported["limit"]["resource"] == "memory:server", reported["limit"]
    assert "OOM killer" in reported["limit"]["summary"], reported["limit"]["summary"]
    assert left_behind(before) == []


def _slow() -> VolumeClass:
    return VolumeClass(64 << 20, write_iops=40)


BASE = """name: hw
target:
  http:
    url: http://127.0.0.1:8080/
profiles:
  small: {cpus: 2, memory: 4G, volumes: {data: hdd}}
volumes:
  hdd: {size: 2G, write_iops: 180}
links:
  1gbit: {rate: 1gbit}
factors: {profile: [small]}
sut:
  start: ./server --data {volume.data}
  roles:
    app: {match: server, profile: "{profile}"}
load: {rate: 10}
"""


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("cpus: 2", "cpus: 0"), ":6: profiles.small.cpus: Input should be greater than 0"),
        (("memory: 4G", "memory: lots"), ":6: profiles.small.memory: 'lots' is not a size"),
        (
            ("data: hdd", "data: nvme"),
            ":6: profiles.small.volumes.data: unknown volume class or device 'nvme' (defined: hdd)",
        ),
        (
            ("{cpus: 2,", "{link: 10gbit, cpus: 2,"),
            ":6: profiles.small.link: unknown link class '10gbit' (defined: 1gbit)",
        ),
        (("[small]", "[large]"), ":15: sut.roles.app.profile: unknown profile 'large' (profiles: small)"),
        (
            ("{volume.data}", "{volume.logs}"),
            ":13: sut.start: {volume.logs}: no role's profile has that volume",
        ),
        (("rate: 1gbit", "rate: fast"), ":10: links.1gbit.rate: 'fast' is not a link rate"),
        (("size: 2G", "size: 900T"), ":8: volumes.hdd.size: 900T is more than the"),
    ],
    ids=["cpus-0", "memory", "volume-class", "link-class", "profile", "volume-ref", "link-rate", "disk-room"],
)
def test_a_bad_hardware_section_names_file_line_and_field(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    path = tmp_path / "study.yaml"
    path.write_text(BASE.replace(*change))
    done = caplab("run", path, "--db", f"sqlite:///{tmp_path / 'c.db'}")
    assert done.returncode == 2, done.stderr
    assert f"{path}{expected}" in done.stderr
    assert "Traceback" not in done.stderr


TWO_ROLES = (
    '    app: {match: server, profile: "{profile}", machine: box}\n'
    "    db: {match: db, profile: small, machine: box}"
)
ON_ONE_MACHINE = BASE.replace("{volume.data}", "{volume.app.data}").replace(
    '    app: {match: server, profile: "{profile}"}', TWO_ROLES
)


def test_roles_on_one_machine_share_it_and_a_machine_holds_one_profile(tmp_path: Path) -> None:
    """``machine:`` puts roles on one instance of their profile (consolidation's together without
    the apart cells): the cell's hardware groups them; a machine of two profiles, a role on a
    machine without a profile, and machine: beside consolidation: are refused with file and line."""
    path = tmp_path / "study.yaml"
    path.write_text(ON_ONE_MACHINE)
    [cell] = load_study(path).cells
    config = cell.config
    assert shared_machines(config) == {"app": "box", "db": "box"}
    [machine] = priced_roles(config.role_profiles(), shared_machines(config), config.profiles)
    assert (machine.role, machine.profile, machine.cpus) == ("app+db", "small", 2), "one box is bought once"
    no_profile = ON_ONE_MACHINE.replace("db: {match: db, profile: small,", "db: {match: db,")
    two_profiles = ON_ONE_MACHINE.replace("profiles:\n", "profiles:\n  large: {cpus: 4}\n").replace(
        "[small]", "[large]"
    )
    consolidated = ON_ONE_MACHINE + "consolidation: {apart: {app: small, db: small}, together: small}\n"
    bad = [
        (
            no_profile,
            ":16: sut.roles.db.machine: a role on a machine needs a profile: (the machine's hardware)",
        ),
        (
            two_profiles,
            ":17: sut.roles.db.machine: machine 'box' is profile 'large' (role 'app'), not 'small': "
            "roles on one machine share one profile",
        ),
        (
            consolidated,
            ":15: sut.roles.app.machine: consolidation: places the roles on machines itself; "
            "leave machine: out",
        ),
    ]
    for text, expected in bad:
        path.write_text(text)
        with pytest.raises(SpecError) as caught:
            load_study(path)
        assert str(caught.value) == f"{path}{expected}"


WHERE_AM_I = (
    "import os, sys, time\n"
    "for _ in range(600):\n"
    "    line = next(l for l in open('/proc/self/cgroup') if ':memory:' in l or l.startswith('0::'))\n"
    "    open(sys.argv[2] + '.new', 'w').write(line)\n"
    "    os.replace(sys.argv[2] + '.new', sys.argv[2])\n"
    "    time.sleep(0.1)\n"
)
"""A process that keeps writing which memory cgroup it is in (argv[2]) for a minute; argv[1] names it.
Each line is written beside the file and renamed over it: stopped between truncating and writing,
it would leave the file empty (a flake in CI)."""


def test_a_role_off_the_combined_machine_is_not_born_on_it(tmp_path: Path) -> None:
    """Two roles on one machine and a third on none (a mail system's mailbox beside its combined
    transport and access): one start command launches all three, so it must not run inside the
    machine's cgroup — the third would be born there and share the machine's CPU and memory."""
    require(Profile.build("small", cpus=1, memory="256M"))
    port = free_port()
    script = tmp_path / "where.py"
    script.write_text(WHERE_AM_I)
    on_box, outside = tmp_path / "on-box", tmp_path / "outside"
    py = shlex.join([sys.executable, str(script)])
    # A launcher stays the parent of all three, as a mail system's supervisor is (and, a script,
    # its command line names none of them).
    launcher = tmp_path / "launch.sh"
    launcher.write_text(
        f"{py} box-helper {on_box} &\n{py} outsider {outside} &\n{knownserver(port)} &\nwait\n"
    )
    study = {
        "name": "one machine and a role beside it",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "profiles": {"small": {"cpus": 1, "memory": "256M"}},
        "sut": {
            "start": f"exec sh {launcher}",
            "ready": {"port": port, "timeout": "20s"},
            "roles": {
                "server": {"match": f"knownserver --port {port}", "profile": "small", "machine": "box"},
                "helper": {"match": "where.py box-helper", "profile": "small", "machine": "box"},
                "outsider": {"match": "where.py outsider"},
            },
        },
        "load": {"rate": 20, "duration": "2s"},
    }
    before = set(leftovers())
    done = run_here(tmp_path, study)
    assert done.returncode == 0, done.stderr[-3000:]
    hardware = json_out(done)["cells"][0]["metrics"]["hardware"]
    assert "launched_under" not in hardware
    assert set(hardware["ran_outside"]) == {"server", "helper"}, hardware
    assert "caplab-" in on_box.read_text(), "the role on the machine was attached to it"
    assert "caplab-" not in outside.read_text(), f"the role off the machine ran in {outside.read_text()}"
    assert left_behind(before) == []


def test_a_role_with_a_link_is_reached_at_its_address(tmp_path: Path) -> None:
    """The start command runs in the role's namespace; the ready check and the target reach it at
    ``{address.ROLE}`` through the shaped link; the namespace goes with the cell."""
    port = free_port()
    study = knownserver_study("link", port, ("web", {"link": "lan"}), linked=True) | {
        "links": {"lan": {"rate": "100mbit", "mtu": 1500}},
        "load": {"rate": 20, "duration": "1s"},
    }
    require(Profile.build("web", link="lan", link_classes={"lan": LinkClass.parse("100mbit")}))
    before = set(leftovers())
    done = run_here(tmp_path, study)
    assert done.returncode == 0, done.stderr[-3000:]
    cell = json_out(done)["cells"][0]
    assert cell["metrics"]["errors"] == 0 and cell["metrics"]["sent"] >= 15, cell["metrics"]
    hardware = cell["metrics"]["hardware"]
    assert hardware["launched_under"] == "server"
    assert hardware["roles"]["server"] == ["profile web", "lan: 100 Mbit/s link, MTU 1500"]
    link = cell["resources"]["link:server"]
    # The role's own link, at its class's rate: the requests came in, the replies went out.
    assert link["link_mb_s"] == 12.5 and link["rx_mb_s"] > 0 and link["tx_mb_s"] > 0, link
    assert not any(k.startswith("net:caplab-") for k in cell["resources"]), "not twice, at 10 Gbit/s"
    assert left_behind(before) == []


def test_a_server_across_a_far_link_is_bound_by_its_round_trips(tmp_path: Path) -> None:
    """knownserver answering at once across a 1 Gbit link that adds 5 ms a round trip, through 4
    connections: each carries one request per round trip, so the four carry at most 4 / 5 ms =
    800/s, with the link's bandwidth and every CPU nearly idle. The search finds capacity under
    that bound, and the limit is the network's round trips with their figures, not ``software``.

    How far under: the open model holds at most four requests in flight (``connections``), so a
    send is dropped whenever four replies are each later than four sends' spacing, and the search
    fails a load that drops 1 % of its sends. The link's queue daemon shares two cores with the
    generator and the server, and puts the round trip's p99 at 1.5–3× its 5 ms (more under a
    neighbour's load); so capacity lands between about 4 / (3 × 5 ms) and 4 / 5 ms (213–475/s in
    six runs here). The floor is the search's start, 100/s: four sends' spacing is then 40 ms, eight
    round trips, which only a broken link or a broken search fails to carry."""
    port = free_port()
    study = knownserver_study("far", port, ("web", {"link": "far"}), linked=True) | {
        "links": {"far": {"rate": "1gbit", "rtt": "5ms"}},
        "load": {"connections": 4, "duration": "2s", "warmup": "500ms"},
        "slo": ["p99<=100ms"],
        "search": {"precision": "10%", "trial": "1s", "repeats": 1, "start": 100},
    }
    links = {"far": LinkClass.parse("1gbit", rtt_ms=5.0)}
    require(Profile.build("web", link="far", link_classes=links))
    before = set(leftovers())
    done = run_here(tmp_path, study, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    [cell] = json_out(done)["cells"]
    capacity = cell["metrics"]["capacity"]["capacity_rps"]
    assert 100 <= capacity <= 800, capacity
    link = cell["resources"]["link:server"]
    assert 5.0 <= link["rtt_ms"] <= 7.0, link
    limit = cell["metrics"]["limit"]
    assert limit["resource"] == "network round trips", limit["summary"]
    [trips] = [s for s in limit["evidence"]["signals"] if "round trips per message × RTT" in s]
    per_message = float(re.search(r"([\d.]+) round trips per message", trips).group(1))  # type: ignore[union-attr]
    assert 0.9 <= per_message <= 2.5, trips  # a request and its reply; ACKs ride on the next request
    report = (tmp_path / "r" / "report.md").read_text()
    assert "the network's round trips, not its bandwidth, at capacity" in report
    assert "| network round trips |" in report, "the capacity table names it, not only `software`"
    assert left_behind(before) == []


def test_ctrl_c_mid_cell_removes_the_cells_hardware(tmp_path: Path) -> None:
    """Ctrl-C during a trial: the study stops (exit 130) and the cell's cgroup, volume, device
    model (its daemon, FUSE mount, loop device and filesystem) and namespace are gone with it."""
    port = free_port()
    study = {
        "name": "interrupted",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        "profiles": {"box": {"cpus": 1, "memory": "128M", "volumes": {"data": "small", "log": "disk"}}},
        "volumes": {"small": {"size": "32M"}},
        "devices": {"disk": {"model": "hdd", "size": "64M"}},
        "sut": {
            "start": f"exec {knownserver(port)}",
            "ready": {"port": port, "timeout": "20s"},
            "profile": "box",
        },
        "load": {"rate": 20, "duration": "20s"},
    }
    require(
        Profile.build(
            "box",
            cpus=1,
            memory="128M",
            volumes={"data": "s", "log": "d"},
            volume_classes={"s": _slow()},
            device_models={"d": Hdd(64 << 20)},
        )
    )
    before = set(leftovers())
    path = write_study(tmp_path / "s.yaml", study)
    proc = subprocess.Popen(
        [str(CAPLAB), "run", str(path), "--db", f"sqlite:///{tmp_path / 'c.db'}"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # bounded: the SUT's ready timeout or the trial ends the output
            if "sut on profile box" in line:
                break
        deadline = time.monotonic() + 30
        while not listening(port) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        time.sleep(1.0)  # into the trial
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 130, err[-2000:]
    assert left_behind(before) == []
    assert not (tmp_path / ".caplab-hardware").exists()


def test_prices_and_drive_life_reach_the_recommendation(tmp_path: Path) -> None:
    """A priced study with a rated log volume: the recommendation names the cheapest configuration
    that meets the goal with its cost per capacity, and ages the log drive at the rate the helper
    wrote it (4 KiB fsync'd writes at most 40 a second: well under 1 MB/s)."""
    port = free_port()
    study = two_roles(tmp_path, port, WRITER, {"match": str(tmp_path / "helper.py"), "profile": "disk"})
    require(Profile.build("disk", memory="64M", volumes={"log": "slow"}, volume_classes={"slow": _slow()}))
    study["volumes"]["slow"] |= {"dwpd": 1, "years": 5}
    study["cost"] = {
        "currency": "USD",
        "profiles": {"app": {"base": 1000, "per_cpu": 500}, "disk": 300},
        "volumes": {"slow": 150},
    }
    study["goal"] = {"rate": 10, "headroom": "25%"}
    done = caplab(
        "run", write_study(tmp_path / "s.yaml", study), "--db", f"sqlite:///{tmp_path / 'c.db'}",
        "-o", tmp_path / "r", timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    [cell] = results["cells"]
    assert cell["cost"]["total"] == 1000 + 500 * 1 + 300 + 150  # app 1 CPU; disk; its slow volume
    recommendation = results["recommendation"]
    cheapest = recommendation["cost"]["cheapest"]
    assert cheapest["cost"] == 1950 and cheapest["cost_per_1000"] == pytest.approx(
        1950 / (20 / 1000), rel=0.05
    )
    [log] = recommendation["endurance"]
    written = cell["volumes"]["log"]["write_mb_s"]
    assert log["volume"] == "log" and log["write_mb_s"] == written and 0 < written < 1
    assert log["tb_per_day"] == pytest.approx(written * 86_400 / 1e6)
    assert log["years"] == pytest.approx(log["rated_tbw"] / (log["tb_per_day"] * 365))
    assert "Cheapest that meets the goal" in recommendation["text"] and "TB a day" in recommendation["text"]
