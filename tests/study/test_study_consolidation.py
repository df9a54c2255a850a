"""`consolidation:` against the real kernel: two knownservers, each on a profile of its own, then
both sharing one profile (one cgroup: one combined server); the same fixed load on each placement.
Their CPU per request is fixed, so the combined server must use what the two used apart (the
verdict is `additive`), and together both roles must report the one shared quota."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caplab.profiles import Profile
from support.profiles import left_behind, leftovers
from support.require import require_profiles
from support.studies import caplab, free_port, json_out, knownserver, write_study

pytestmark = pytest.mark.slow  # two cells of three trials on cgroups


def test_two_single_role_servers_against_one_combined(tmp_path: Path) -> None:
    require_profiles(Profile.build("probe", cpus=1))
    before = set(leftovers())
    front, back = free_port(), free_port()
    servers = f"{knownserver(back, '--cpu-us', '300')} & exec {knownserver(front, '--cpu-us', '1500')}"
    study = {
        "name": "consolidation",
        "target": {"http": {"url": f"http://127.0.0.1:{front}/"}},
        "profiles": {"single": {"cpus": 1}, "combined": {"cpus": 2}},
        "scale": {"cpu": 0.5},
        "consolidation": {"apart": {"front": "single", "back": "single"}, "together": "combined"},
        "sut": {
            "start": servers,
            "ready": {"port": front, "timeout": "20s"},
            "roles": {
                "front": {"match": f"knownserver --port {front}"},
                "back": {"match": f"knownserver --port {back}"},
            },
        },
        "load": {"rate": 100, "duration": "1500ms", "warmup": "300ms", "repeat": 3},
    }
    done = caplab(
        "run", write_study(tmp_path / "s.yaml", study), "--db", f"sqlite:///{tmp_path / 'c.db'}",
        "--json", "-o", tmp_path / "r", timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    cells = {c["factors"]["placement"]: c for c in json_out(done)["cells"]}
    assert set(cells) == {"apart", "together"}
    apart, together = cells["apart"]["resources"], cells["together"]["resources"]
    assert apart["front"]["quota_cpus"] == apart["back"]["quota_cpus"] == 0.5, "a profile each"
    assert together["front"]["quota_cpus"] == together["back"]["quota_cpus"] == 1.0, "one shared quota"
    [entry] = json.loads((tmp_path / "r" / "results.json").read_text())["consolidation"]
    cpu = next(c for c in entry["comparisons"] if c["resource"] == "CPU")
    # 100/s × 1.5 ms on the front end: about 15 % of a core, whichever placement.
    assert cpu["predicted"] > 10 and cpu["verdict"] == "additive", cpu
    # The known answer: the combined server's CPU is the sum of the parts' within 5 points.
    print(f"CPU predicted {cpu['predicted']:.1f} %, actual {cpu['actual']:.1f} %")  # shown with pytest -s
    assert abs(cpu["actual"] - cpu["predicted"]) <= 5, cpu
    assert {c["resource"] for c in entry["comparisons"]} == {"CPU", "memory"}
    assert "Consolidation" in (tmp_path / "r" / "report.md").read_text()
    assert left_behind(before) == []
