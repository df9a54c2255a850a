"""The built-in MIIS disk study's quick cut, end to end on real OpenLDAP and idsync: every cell
stages and synchronises exactly the users seeded (idsync's own answers, against the count the study
asked for), the store on the internal mirror — one device holding data, log and temp — synchronises
slower than on the external array, each phase of each cell has its limit named, and the report
puts the paper's two tables beside ours, at every size either ran.

On device models (a RAID 1 pair of 10,000 rpm disks with no cache, against RAID 0+1 sets behind a
battery-backed cache), measured on the 2-core Xeon test host (objects: internal against external,
items/s): staging 2,000: 1,860 / 2,745; 5,000: 2,143 / 3,008 — idsync's one thread waits for each
of its commits' flushes on the mirror (busy 31-32 %), while on the array a flush returns at once;
synchronising 3,755 / 10,265 and 4,476 / 14,648, the mirror busy 68-73 % against 10 % for the
array's data set. Staging is asserted only in the findings (its margin, 1.4×, is within what a
busy second test worker can take from one cell); synchronising, 2.7-3.3×, is asserted here, with
the mirror far busier while syncing than while staging and than the array while syncing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from caplab import studies
from caplab.profiles import Profile
from caplab.profiles.device_models import Hdd
from support.idsync import require_slapd
from support.require import require_profiles
from support.studies import caplab, json_out

pytestmark = pytest.mark.slow  # four cells of seeding, staging and syncing thousands of users


def test_the_quick_miis_study_stages_and_syncs_every_user(shared_dir: Path) -> None:
    require_slapd()
    require_profiles(Profile.build("v", volumes={"d": "c"}, device_models={"c": Hdd(64 << 20)}))
    path = studies.prepare("miis-disk", shared_dir) / "quick.yaml"
    done = caplab(
        "run", path, "--db", f"sqlite:///{shared_dir / 'c.db'}", "--json", "-o", shared_dir / "r", timeout=900
    )
    assert done.returncode == 0, done.stderr[-4000:]
    cells = json_out(done)["cells"]
    assert len(cells) == 4 and all(c["status"] == "complete" for c in cells)
    _check_sync_slower_on_the_mirror(cells)
    results = json.loads((shared_dir / "r" / "results.json").read_text())
    _check_paper_tables(results, (shared_dir / "r" / "report.md").read_text())
    _check_recommendation(results)


def _check_sync_slower_on_the_mirror(cells: list[dict[str, Any]]) -> None:
    """Every cell staged and synced exactly the users seeded, each phase's limit is named, and
    syncing is slower on the internal mirror, which is then far busier."""
    rates: dict[tuple[int, str], float] = {}
    busy: dict[tuple[int, str, str], float] = {}
    for cell in cells:
        objects, layout = cell["factors"]["objects"], cell["factors"]["layout"]
        phases = cell["metrics"]["job"]["phases"]
        [stage], [sync] = phases["stage"]["runs"], phases["sync"]["runs"]
        assert json.loads(stage["output"].splitlines()[-1])["objects"] == objects
        assert json.loads(sync["output"].splitlines()[-1])["synced"] == objects
        rates[(objects, layout)] = phases["sync"]["items_per_s"]
        # The mirror is one device, measured once under what it holds; the array, three.
        store = "volume:data+log+temp" if layout == "internal" else "volume:data"
        volumes = {r for r in cell["resources"] if r.startswith("volume:")}
        expected = {store} if layout == "internal" else {"volume:data", "volume:log", "volume:temp"}
        assert volumes == expected, "disk use per device"
        for name, phase in phases.items():
            limit = phase["limit"]
            assert limit["resource"] and limit["kind"] in ("hardware", "software"), (name, limit)
            busy[(objects, layout, name)] = phase["resources"][store]["busy_percent"]
    for objects in (2000, 5000):
        assert rates[(objects, "external")] > rates[(objects, "internal")], rates
        mirror = busy[(objects, "internal", "sync")]
        assert mirror > busy[(objects, "internal", "stage")], busy
        assert mirror > 2 * busy[(objects, "external", "sync")], busy


def _check_paper_tables(results: dict[str, Any], report: str) -> None:
    """The paper's two tables whole, ours beside them: its sizes with its figures, ours with ours."""
    papers = {
        (r["factors"]["layout"], r["phase"], r["factors"]["objects"]): r["paper"]
        for r in results["jobs"]["rows"]
    }
    assert all(v is None for v in papers.values()), "the paper has no 2,000- or 5,000-user figures"
    tables = {t["phase"]: t for t in results["jobs"]["paper_tables"]}
    assert set(tables) == {"stage", "sync"} and tables["stage"]["groups"] == ["internal", "external"]
    by_size = {r["size"]: r for r in tables["stage"]["rows"]}
    assert list(by_size) == [2000, 5000, 10000, 50000, 100000, 200000, 500000]
    assert by_size[500000]["paper"] == [39, 139] and by_size[500000]["ours"] == [None, None]
    assert by_size[2000]["paper"] == [None, None] and None not in by_size[2000]["ours"]
    assert [r["paper"] for r in tables["sync"]["rows"] if r["size"] == 100000] == [[9, 27]]
    assert "Batch job" in report and "Drive wear" in report
    assert "sync: ours beside the paper's" in report and "internal (paper's hardware)" in report
    assert "| 500,000 | — | 39 | — | 139 |" in report


def _check_recommendation(results: dict[str, Any]) -> None:
    """Sized by the sync phase (goal: 4,000 objects/s, 25 % headroom): the cheapest layout that
    carries it, priced per object a second, and the drive life of its rated volumes."""
    rec = results["recommendation"]
    assert rec["basis"] == "job" and rec["goal"]["rate"] == 4000 and results["jobs"]["rated_by"] == "sync"
    # rated at the largest size each layout ran, a configuration is a layout: the size is the work
    assert sorted(r["label"] for r in rec["ratings"]) == ["layout=external", "layout=internal"]
    meeting = [r for r in rec["ratings"] if r["rated"] >= 4000]
    cheapest = results["cost"]["cheapest"]
    if meeting:
        best = min(meeting, key=lambda r: r["cost"])
        assert cheapest["cell"] == best["cell"] and cheapest["cost"] == best["cost"], rec["text"]
        assert cheapest["cost_per_item_s"] == best["cost"] / best["rate"]
        assert "per item/s" in rec["text"] and cheapest["label"] in rec["text"]
    else:
        assert cheapest is None and "No priced configuration meets the goal" in rec["text"]
    chosen = [e for e in results["endurance"] if e["chosen"]]
    assert [e["volumes"] for e in chosen] == ([rec["endurance"]] if rec["endurance"] else [])
    # Priced: external = a 6,000 server + the array's three sets (4 + 4 + 2 drives at 400); internal
    # = the server and its one mirrored pair, bought once though it holds three volumes.
    costs = {c["factors"]["layout"]: c["cost"]["total"] for c in results["cells"]}
    assert costs == {"internal": 6000 + 800, "external": 6000 + 1600 + 1600 + 800}
    assert all(r["cost_per_item_s"] is not None for r in results["jobs"]["rows"])
    worn = {w["label"]: w["volumes"] for w in results["jobs"]["endurance"]}
    assert worn and all(v["tb_per_day"] >= 0 for vs in worn.values() for v in vs)
