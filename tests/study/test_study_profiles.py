"""Hardware as a factor of a study, against the real kernel: a single-threaded server of fixed CPU
per request on a profile of one core, then of half a core, must carry half the load on the half
core (its whole cost is CPU inside the profile), the limit must be named as the role's CPU, and
nothing caplab made (cgroups, loop devices, namespaces) may be left after the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.profiles import Profile, check_support
from support.profiles import leftovers
from support.studies import caplab, free_port, json_out, knownserver, write_study

pytestmark = pytest.mark.slow


def test_half_a_core_carries_half_the_load(tmp_path: Path) -> None:
    missing = check_support([Profile.build("probe", cpus=1)])
    if missing:
        pytest.skip("; ".join(missing))
    before = set(leftovers())
    port = free_port()
    study = {
        "name": "cores",
        "target": {"http": {"url": f"http://127.0.0.1:{port}/"}},
        # One profile core is half a host core: a quota the server gets in full even when other
        # jobs keep the machine's two cores busy (a whole host core it would not).
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
    # 0.5 ± 0.1, not ± 0.05: the machine's two cores are shared with other jobs, whose bursts cost
    # the server some of its quota in one trial and not in another (measured: 0.47).
    assert ratio == pytest.approx(0.5, abs=0.1), f"{capacities}, ratio {ratio:.3f}"
    for metrics, words in (
        (one, "1 core, emulated as 0.5 host CPUs"),
        (half, "0.5 cores, emulated as 0.25 host CPUs"),
    ):
        assert metrics["limit"]["resource"] == "cpu:server", metrics["limit"]
        hardware = metrics["hardware"]
        assert hardware["scale"] == {"cpu": 0.5}
        assert any(line.startswith(words) for line in hardware["roles"]["server"]), hardware
        assert hardware["launched_under"] == "server"
    assert not (tmp_path / ".caplab-hardware").exists()
    left = [item for item in leftovers() if item not in before]
    assert not left, f"left behind: {left}"
