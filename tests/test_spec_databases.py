"""A PostgreSQL target naming many databases (``…/ag_{i}`` with ``databases:``): which databases a
count and a share pick, how a loaded share is weighted in the load's round-robin, and the lists
that make no sense refused with file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.spec import SpecError, load_study, spread

URL = "postgresql://caplab@127.0.0.1:7600,127.0.0.1:7601/ag_{i}?target_session_attrs=read-write"


def study(tmp_path: Path, databases: str, url: str = URL, load: str = "rate: 10") -> Path:
    path = tmp_path / "study.yaml"
    lines = ["name: ag", "target:", "  postgres:", f'    url: "{url}"', "    workload: tpcb"]
    lines += [f"    databases: {databases}"] if databases else []
    path.write_text("\n".join([*lines, "load:", f"  {load}", ""]))
    return path


def test_a_share_is_an_evenly_spread_subset_and_never_empty_unless_zero() -> None:
    assert spread(100, 0.05) == [0, 20, 40, 60, 80]
    assert spread(20, 0.01) == [0], "a share above 0 of something takes at least one"
    assert spread(4, 1.0) == [0, 1, 2, 3]
    assert spread(20, 0.0) == [] and spread(0, 0.5) == []


def test_a_database_list_names_one_url_per_database(tmp_path: Path) -> None:
    [cell] = load_study(study(tmp_path, "{count: 20, share: 10%}")).cells
    pg = cell.config.requests[0].postgres
    assert pg is not None
    assert [u.split("/")[-1].split("?")[0] for u in pg.urls()] == ["ag_0", "ag_10"]
    assert pg.places() == pg.urls()


def test_loaded_databases_take_weight_places_in_the_round_robin(tmp_path: Path) -> None:
    [cell] = load_study(study(tmp_path, "{count: 10, loaded: 20%, weight: 3}")).cells
    pg = cell.config.requests[0].postgres
    assert pg is not None and len(pg.urls()) == 10
    names = [u.split("/")[-1].split("?")[0] for u in pg.places()]
    assert len(names) == 10 + 2 * 2
    assert names.count("ag_0") == 3 and names.count("ag_5") == 3 and names.count("ag_1") == 1


def test_the_single_database_form_still_works(tmp_path: Path) -> None:
    [cell] = load_study(study(tmp_path, "", url=URL.replace("{i}", "0"))).cells
    pg = cell.config.requests[0].postgres
    assert pg is not None and pg.urls() == pg.places() == [URL.replace("{i}", "0")]


@pytest.mark.parametrize(
    ("databases", "url", "expected"),
    [
        ("{count: 0}", URL, "6: target.postgres.databases: matches no database (100% of 0)"),
        ("{count: 20, share: 0%}", URL, "6: target.postgres.databases: matches no database (0% of 20)"),
        ("{count: 20}", URL.replace("{i}", "0"), "3: target.postgres: a database list needs {i} in the url"),
        ("", URL, "3: target.postgres: a database list needs {i} in the url"),
    ],
    ids=["count-0", "share-0", "no-index", "index-without-list"],
)
def test_a_list_that_names_no_database_is_refused(
    tmp_path: Path, databases: str, url: str, expected: str
) -> None:
    with pytest.raises(SpecError) as raised:
        load_study(study(tmp_path, databases, url))
    assert str(raised.value).startswith(f"{tmp_path / 'study.yaml'}:{expected}")
