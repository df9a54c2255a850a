"""``replicates:``, ``order:`` and ``seed:`` in the study file: a count or ``{min, max, until}``,
the run order and its seed, each bad value named with its file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from caplab.spec import SpecError, load_study
from caplab.spec.replicates import ReplicatesSpec

SEARCHED = (
    "name: orders\ntarget:\n  http:\n    url: http://127.0.0.1:8080/\n"
    "load:\n  rate: 100\nsearch: {slo: ['p99<=50ms']}\n"
)
"""Lines 1–7 of every file below: a study with a capacity search."""


def study_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(text)
    return path


def test_replicates_until_an_interval_order_and_seed_are_read(tmp_path: Path) -> None:
    text = SEARCHED + "replicates: {min: 3, max: 10, until: 5%}\norder: interleaved\nseed: 4711\n"
    config = load_study(study_file(tmp_path, text)).cells[0].config
    assert config.replicates == ReplicatesSpec(min=3, max=10, until=0.05)
    assert (config.order, config.seed) == ("interleaved", 4711)
    defaults = load_study(study_file(tmp_path, SEARCHED + "replicates: {until: 10%}\n")).cells[0].config
    assert defaults.replicates == ReplicatesSpec(min=3, max=10, until=0.1)
    assert (defaults.order, defaults.seed) == (None, None), "the runner decides, and records what it chose"


BAD = {
    "min-over-max": ("replicates: {min: 5, max: 3, until: 5%}\n", "replicates: min (5) is more than max (3)"),
    "min-of-one": (
        "replicates: {min: 1, until: 5%}\n",
        "replicates.min: Input should be greater than or equal to 2",
    ),
    "max": ("replicates: {max: 30, until: 5%}\n", "replicates.max: Input should be less than or equal to 20"),
    "no-until": ("replicates: {min: 3}\n", "replicates.until: required field is missing"),
    "until-zero": ("replicates: {until: 0%}\n", "replicates.until: Input should be greater than 0"),
    "misspelt": ("replicates: {untill: 5%}\n", "replicates.untill: unknown field (did you mean until?)"),
    "count": ("replicates: 0\n", "replicates: Input should be greater than or equal to 1"),
    "order": ("order: random\n", "order: Input should be 'interleaved' or 'sequential'"),
    "seed": ("seed: -1\n", "seed: Input should be greater than or equal to 0"),
}
"""Each on line 8, the line after `SEARCHED`."""


@pytest.mark.parametrize(("tail", "expected"), list(BAD.values()), ids=list(BAD))
def test_a_bad_replicates_order_or_seed_is_named(tmp_path: Path, tail: str, expected: str) -> None:
    path = study_file(tmp_path, SEARCHED + tail)
    with pytest.raises(SpecError) as caught:
        load_study(path)
    assert str(caught.value) == f"{path}:8: {expected}"


def test_the_order_is_the_studys_and_names_no_factor(tmp_path: Path) -> None:
    path = study_file(tmp_path, SEARCHED + "factors: {o: [interleaved, sequential]}\norder: '{o}'\n")
    with pytest.raises(SpecError) as caught:
        load_study(path)
    assert (
        str(caught.value) == f"{path}:9: order: the study's own, the same for every cell: it names no factor"
    )


def test_replicates_until_needs_a_searched_capacity(tmp_path: Path) -> None:
    fixed = SEARCHED.replace("search: {slo: ['p99<=50ms']}\n", "replicates:\n  min: 3\n  until: 5%\n")
    path = study_file(tmp_path, fixed)
    with pytest.raises(SpecError) as caught:
        load_study(path)
    assert str(caught.value).startswith(
        f"{path}:9: replicates.until: the interval it waits for is a searched"
    )
