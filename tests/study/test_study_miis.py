"""The built-in MIIS disk study's quick cut, end to end on real OpenLDAP and idsync: every cell
stages and synchronises exactly the users seeded (idsync's own answers, against the count the study
asked for), the store on the throttled internal mirror synchronises slower than on the external
array, and the report puts the paper's figures beside ours."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caplab import studies
from caplab.profiles import Profile, VolumeClass, check_support
from support.idsync import require_slapd
from support.studies import caplab, json_out

pytestmark = pytest.mark.slow  # four cells of seeding, staging and syncing thousands of users


def test_the_quick_miis_study_stages_and_syncs_every_user(shared_dir: Path) -> None:
    require_slapd()
    missing = check_support(
        [Profile.build("v", volumes={"d": "c"}, volume_classes={"c": VolumeClass(64 << 20)})]
    )
    if missing:
        pytest.skip("; ".join(missing))
    path = studies.prepare("miis-disk", shared_dir) / "quick.yaml"
    done = caplab(
        "run", path, "--db", f"sqlite:///{shared_dir / 'c.db'}", "--json", "-o", shared_dir / "r", timeout=900
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cells = json_out(done)["cells"]
    assert len(cells) == 4 and all(c["status"] == "complete" for c in cells)
    rates: dict[tuple[int, str], float] = {}
    for cell in cells:
        objects, layout = cell["factors"]["objects"], cell["factors"]["layout"]
        phases = cell["metrics"]["job"]["phases"]
        [stage], [sync] = phases["stage"]["runs"], phases["sync"]["runs"]
        assert json.loads(stage["output"].splitlines()[-1])["objects"] == objects
        assert json.loads(sync["output"].splitlines()[-1])["synced"] == objects
        rates[(objects, layout)] = phases["sync"]["items_per_s"]
        assert {"volume:data", "volume:log", "volume:temp"} <= set(cell["resources"]), "disk use per volume"
    for objects in (2000, 5000):
        assert rates[(objects, "external")] > rates[(objects, "internal")], rates
    results = json.loads((shared_dir / "r" / "results.json").read_text())
    papers = {
        (r["factors"]["layout"], r["phase"], r["factors"]["objects"]): r["paper"]
        for r in results["jobs"]["rows"]
    }
    assert all(v is None for v in papers.values()), "the paper has no 2,000- or 5,000-user figures"
    report = (shared_dir / "r" / "report.md").read_text()
    assert "Batch job" in report and "Drive wear" in report
    # Priced: external = a 6,000 server + two array volumes and a log volume; internal = the server
    # and three volumes of the mirror (study's cost: section).
    costs = {c["factors"]["layout"]: c["cost"]["total"] for c in results["cells"]}
    assert costs == {"internal": 6000 + 3 * 400, "external": 6000 + 2 * 2500 + 1500}
    assert all(r["cost_per_item_s"] is not None for r in results["jobs"]["rows"])
    worn = {w["label"]: w["volumes"] for w in results["jobs"]["endurance"]}
    assert worn and all(v["tb_per_day"] >= 0 for vs in worn.values() for v in vs)
