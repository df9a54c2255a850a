"""``{volume.NAME}`` names a volume by its name alone when one role has it, by ``ROLE.NAME`` when
several do; ``{address.ROLE}`` needs a role on a profile; both say what exists when they name nothing."""

from __future__ import annotations

import pytest

from caplab.profiles.placeholders import check_placeholders, fill

VOLUMES = {"app/data": "/w/app/data", "db/data": "/w/db/data", "db/log": "/w/db/log"}


def test_placeholders_are_filled_with_paths_and_addresses() -> None:
    text = "run --log {volume.log} --data {volume.app.data} --db {address.db}:5432 {seq}"
    assert (
        fill(text, VOLUMES, {"db": "10.0.0.2"})
        == "run --log /w/db/log --data /w/app/data --db 10.0.0.2:5432 {seq}"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{volume.data}", r"ambiguous: roles app, db each have a volume 'data'; write \{volume.ROLE.data\}"),
        ("{volume.tmp}", r"no role's profile has that volume \(volumes: app.data, db.data, db.log\)"),
        ("{address.web}", r"that role is on no profile \(roles on one: app, db\)"),
    ],
)
def test_a_placeholder_that_names_nothing_says_what_exists(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_placeholders(text, VOLUMES, {"app": None, "db": None})
