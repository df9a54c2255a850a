"""The built-in studies by name: what each reproduces, what it shows, its files and how long it
takes, so that `caplab studies` can list, show, copy and run them from an installed wheel in any
directory (the files live inside the package, where a user should not have to look)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from caplab.studies import study_folder


@dataclass(frozen=True)
class BuiltInStudy:
    """One folder of caplab/studies: its whole study (``study.yaml``), the quick cut the tests run
    (``quick.yaml``) and any parts that run on their own."""

    name: str
    seed: str
    """The seed paper it reproduces (../shared/seeds)."""
    system: str
    """The reference system it runs on."""
    shows: str
    quick_time: str
    full_time: str
    parts: tuple[str, ...] = ()
    """Study files besides study.yaml and quick.yaml, each a part of the study run on its own."""

    @property
    def files(self) -> tuple[str, ...]:
        return ("quick.yaml", "study.yaml", *self.parts)


CATALOG: tuple[BuiltInStudy, ...] = (
    BuiltInStudy(
        "biztalk-scaleout",
        "000 BizTalk Server scale-out",
        "msgbus",
        "capacity per processing hosts × message stores × flow, the limiting tier, the USL scale-out",
        "3 min",
        "30 min",
    ),
    BuiltInStudy(
        "miis-disk",
        "001 MIIS 2003 disks",
        "idsync + OpenLDAP",
        "staging and sync objects/s by size, internal disks against an external array",
        "40 s",
        "30 min",
    ),
    BuiltInStudy(
        "hl7-hardware",
        "002 Connexion HL7 engine",
        "hl7 + PostgreSQL",
        "capacity and limit per storage layout and link; index rebuild, mirroring, one box against two",
        "2 min",
        "31 min",
        ("rebuild.yaml", "mirroring.yaml", "boxes.yaml"),
    ),
    BuiltInStudy(
        "role-consolidation",
        "003 Exchange 2007 roles",
        "mail (Postfix + Dovecot)",
        "most users per profile at <= 75 % CPU, CPU per user by mix and size, one server against two",
        "2 min",
        "1 h 45 min",
        ("users.yaml", "mix.yaml"),
    ),
    BuiltInStudy(
        "availability-groups",
        "004 SQL Server availability groups",
        "pgha (PostgreSQL under Patroni); the quick cut on pgpair",
        "each database's recovery from a switchover and a killed primary, k/K against a 30 s SLO, "
        "Patroni's failover in phases; a partitioned leader; recovery against Patroni's ttl",
        "1.5 min",
        "about 2 h 30 min",
        ("pgha.yaml", "partition.yaml", "ttl.yaml"),
    ),
    BuiltInStudy(
        "pg-failover",
        "004 failover, 002 mirroring",
        "pgpair (PostgreSQL)",
        "switchover and killed primary under tpcb, synchronous against asynchronous, writes lost",
        "40 s",
        "3 min",
    ),
)


class UnknownStudy(LookupError):
    """A name that is not a built-in study; the message names the closest and all of them."""


def built_in(name: str) -> BuiltInStudy:
    for study in CATALOG:
        if study.name == name:
            return study
    names = [s.name for s in CATALOG]
    close = [n for n in names if name and n.startswith(name)] or difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise UnknownStudy(f"no built-in study {name!r}: {hint}built in: {', '.join(names)}")


def study_file(study: BuiltInStudy, part: str) -> str:
    """The file of ``part``: ``quick``, ``study`` (the whole), or a part's name with or without
    ``.yaml``."""
    file = part if part.endswith(".yaml") else f"{part}.yaml"
    if file not in study.files:
        raise UnknownStudy(f"{study.name} has no part {part!r}: its files are {', '.join(study.files)}")
    return file


def description(study: BuiltInStudy) -> str:
    """The whole study's own description, from its study.yaml (one line)."""
    import yaml

    text = (study_folder(study.name) / "study.yaml").read_text()
    loaded = yaml.safe_load(text)
    described = loaded.get("description", "") if isinstance(loaded, dict) else ""
    return " ".join(str(described).split())
