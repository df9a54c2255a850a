"""What one field cannot check alone, checked across the cell's configuration once it validated:
files exist, names refer to what the study defines, volumes fit the disk."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from caplab.profiles.design import role_hardware
from caplab.profiles.models import format_size
from caplab.profiles.placeholders import check_placeholders
from caplab.spec.errors import KeyPath, SpecError, line_of, raw_at
from caplab.spec.factors import cell_note
from caplab.spec.fields import Scalar
from caplab.spec.job import CounterItems
from caplab.spec.study import StudyConfig
from caplab.spec.sut import SutSpec


def check_files(path: Path, lines: dict[KeyPath, int], config: StudyConfig) -> None:
    """A body_file must exist (relative to the study file), so a typo fails now, not mid-study."""
    for kind in ("http", "tcp"):
        target = getattr(config.target, kind) if config.target else None
        if target is not None and target.body_file is not None:
            file = path.parent / target.body_file
            if not file.is_file():
                loc: KeyPath = ("target", kind, "body_file")
                raise SpecError(
                    f"{path}:{line_of(lines, loc)}: target.{kind}.body_file: no such file: {file}"
                )
    pg = config.target.postgres if config.target else None
    if pg is not None and pg.sql_file is not None and not (path.parent / pg.sql_file).is_file():
        loc = ("target", "postgres", "sql_file")
        file = path.parent / pg.sql_file
        raise SpecError(f"{path}:{line_of(lines, loc)}: target.postgres.sql_file: no such file: {file}")


def check_usage(path: Path, lines: dict[KeyPath, int], config: StudyConfig) -> None:
    """A usage profile drives an HTTP, TCP or mail target (one protocol of it), and its actions'
    body files exist; a mail target without one drives one protocol too."""
    usage = config.load.usage if config.load else None
    mail = config.target.mail if config.target else None
    if usage is None and mail is not None:
        try:
            mail.driven(None)
        except ValueError as e:
            raise SpecError(f"{path}:{line_of(lines, ('target', 'mail'))}: target.mail: {e}") from e
    if usage is None:
        return
    if config.target is not None and config.target.postgres is not None:
        line = line_of(lines, ("load", "usage"))
        raise SpecError(f"{path}:{line}: load.usage: usage profiles drive http: and tcp: targets")
    target = config.target.http or config.target.tcp if config.target else None
    http = config.target.http if config.target else None
    request = target is not None and (target.body, target.body_file, target.template) != (None, None, False)
    if request or (http is not None and (http.headers or http.method.upper() != "GET")):
        line = line_of(lines, ("load", "usage"))
        raise SpecError(
            f"{path}:{line}: load.usage: each action gives its own request (method, path, headers, "
            "body): leave them out of target:"
        )
    mail = config.target.mail if config.target else None
    named = [n for n, a in usage.actions.items() if a.target is not None]
    if mail is None and named:
        line = line_of(lines, ("load", "usage", "actions", named[0], "target"))
        raise SpecError(
            f"{path}:{line}: load.usage.actions.{named[0]}.target: names a protocol of target.mail, "
            "which this study's target is not"
        )
    if mail is not None:
        try:
            mail.driven(usage)
        except ValueError as e:
            raise SpecError(f"{path}:{line_of(lines, ('load', 'usage'))}: load.usage: {e}") from e
    missing = usage.missing_body_file(path.parent)
    if missing is not None:
        loc: KeyPath = ("load", "usage", "actions", missing[0], "body_file")
        field = f"load.usage.actions.{missing[0]}.body_file"
        raise SpecError(f"{path}:{line_of(lines, loc)}: {field}: no such file: {missing[1]}")


def check_hosts(path: Path, lines: dict[KeyPath, int], config: StudyConfig) -> None:
    """A role's ``host:`` names one of the study's ``hosts:``."""
    for name, role in (config.sut.roles if config.sut else {}).items():
        if role.host is not None and role.host not in config.hosts:
            known = ", ".join(sorted(config.hosts)) or "none: add a hosts: section"
            line = line_of(lines, ("sut", "roles", name, "host"))
            raise SpecError(
                f"{path}:{line}: sut.roles.{name}.host: unknown host {role.host!r} (hosts: {known})"
            )


def check_actions(path: Path, lines: dict[KeyPath, int], config: StudyConfig) -> None:
    """Actions run during a fixed load, within it, and name actions the system declares."""
    declared = config.sut.actions if config.sut else {}
    if config.load is None:
        return  # a job study: its own check refuses actions
    end = config.load.warmup + config.load.duration

    def fail(i: int, field: str, message: str) -> SpecError:
        return SpecError(f"{path}:{line_of(lines, ('actions', i, field))}: actions.{i}.{field}: {message}")

    for i, action in enumerate(config.actions):
        if config.search is not None:
            fired = "at" if action.at is not None else "when" if action.when is not None else "after"
            raise fail(i, fired, "actions run during a fixed load, not a search (whose trials must be alike)")
        if action.at is not None and action.at >= end:
            raise fail(i, "at", f"{action.at:g}s is after the load ends ({end:g}s with its warm-up)")
        if action.do is not None and action.do not in declared:
            known = ", ".join(sorted(declared)) or "none: declare them under sut.actions"
            raise fail(i, "do", f"the system has no action {action.do!r} (its actions: {known})")


Fail = Callable[[KeyPath, str], SpecError]
"""Makes the error for a problem at a key path: file, line, field, message, and the cell."""


def check_machines(config: StudyConfig, fail: Fail) -> None:
    """Roles that share a ``machine:`` are on one profile, and consolidation (which places the
    roles itself) is not given as well."""
    roles = config.sut.roles if config.sut else {}
    first: dict[str, tuple[str, str]] = {}
    for role, spec in roles.items():
        if spec.machine is None:
            continue
        at: KeyPath = ("sut", "roles", role, "machine")
        if config.consolidation is not None:
            raise fail(at, "consolidation: places the roles on machines itself; leave machine: out")
        profile = config.role_profiles().get(role)
        if profile is None:
            raise fail(at, "a role on a machine needs a profile: (the machine's hardware)")
        other, theirs = first.setdefault(spec.machine, (role, profile))
        if theirs != profile:
            raise fail(
                at,
                f"machine {spec.machine!r} is profile {theirs!r} (role {other!r}), not {profile!r}: "
                "roles on one machine share one profile",
            )


def check_hardware(
    path: Path, lines: dict[KeyPath, int], config: StudyConfig, data: Any, cell: dict[str, Scalar]
) -> None:
    """Profiles name classes that exist, roles name profiles that exist, and every
    ``{volume.NAME}`` / ``{address.ROLE}`` has a volume or link behind it."""

    def fail(loc: KeyPath, message: str) -> SpecError:
        field = ".".join(str(p) for p in loc)
        return SpecError(
            f"{path}:{line_of(lines, loc)}: {field}: {message}{cell_note(raw_at(data, loc), cell)}"
        )

    _check_classes(config, fail)
    _check_prices(config, fail)
    sut = config.sut
    if sut is None:
        return
    if config.job is not None and config.job.role is not None and config.job.role not in sut.roles:
        raise fail(("job", "role"), f"no role {config.job.role!r} in sut.roles")
    _check_consolidation(config, sut, fail)
    _check_role_profiles(config, sut, fail)
    check_machines(config, fail)
    _check_placeholders(config, sut, fail)


def _check_classes(config: StudyConfig, fail: Fail) -> None:
    """Each profile's volumes and link name classes the study defines."""
    for name, profile in config.profiles.items():
        for volume, vclass in profile.volumes.items():
            if vclass not in config.volumes and vclass not in config.devices:
                known = (
                    ", ".join(sorted({*config.volumes, *config.devices})) or "none: add a volumes: section"
                )
                raise fail(
                    ("profiles", name, "volumes", volume),
                    f"unknown volume class or device {vclass!r} (defined: {known})",
                )
        if profile.link is not None and profile.link not in config.links:
            known = ", ".join(sorted(config.links)) or "none: add a links: section"
            raise fail(("profiles", name, "link"), f"unknown link class {profile.link!r} (defined: {known})")


def _check_prices(config: StudyConfig, fail: Fail) -> None:
    """Prices name what the study defines, with or without a SUT to run them on."""
    for kind, priced, defined in (
        ("profiles", config.cost.profiles if config.cost else {}, config.profiles),
        ("volumes", config.cost.volumes if config.cost else {}, {**config.volumes, **config.devices}),
        ("links", config.cost.links if config.cost else {}, config.links),
    ):
        for name in priced:
            if name not in defined:
                have = ", ".join(sorted(defined)) or "none"
                raise fail(
                    ("cost", kind, name),
                    f"prices {kind[:-1]} {name!r}, which the study does not define ({have})",
                )


def _known_profiles(config: StudyConfig) -> str:
    return ", ".join(sorted(config.profiles)) or "none: add a profiles: section"


def _check_consolidation(config: StudyConfig, sut: SutSpec, fail: Fail) -> None:
    """Consolidation places roles the SUT declares on profiles the study defines."""
    c = config.consolidation
    if c is None:
        return
    for role, name in [*c.apart.items(), ("", c.together)]:
        at: KeyPath = ("consolidation", "apart", role) if role else ("consolidation", "together")
        if name not in config.profiles:
            raise fail(at, f"unknown profile {name!r} (profiles: {_known_profiles(config)})")
        if role and role not in sut.roles:
            raise fail(at, f"no role {role!r} in sut.roles (roles: {', '.join(sut.roles) or 'none'})")


def _check_role_profiles(config: StudyConfig, sut: SutSpec, fail: Fail) -> None:
    """The SUT and its roles name profiles that exist; a role on a profile has a name its
    cgroup and volumes can carry."""
    known = _known_profiles(config)
    if sut.profile is not None and sut.profile not in config.profiles:
        raise fail(("sut", "profile"), f"unknown profile {sut.profile!r} (profiles: {known})")
    for role, spec in sut.roles.items():
        if spec.profile is not None and spec.profile not in config.profiles:
            raise fail(
                ("sut", "roles", role, "profile"), f"unknown profile {spec.profile!r} (profiles: {known})"
            )
        if role in config.role_profiles() and not re.fullmatch(r"[A-Za-z0-9_.-]+", role):
            raise fail(
                ("sut", "roles", role), "a role on a profile is named with letters, digits, _ . - only"
            )


def _check_placeholders(config: StudyConfig, sut: SutSpec, fail: Fail) -> None:
    """Every ``{volume.NAME}`` and ``{address.ROLE}`` in the cell's commands and URLs has a volume
    or a role on a profile behind it (an address across its link, or loopback without one)."""
    try:
        hardware = role_hardware(config)
    except ValueError as e:
        raise fail(("profiles",), str(e)) from e
    volumes = {f"{r}/{v}": None for r, p in hardware.items() for v in (*p.volumes, *p.devices)}
    addresses = dict.fromkeys(hardware)
    for loc, text in _texts_with_placeholders(config, sut):
        if text:
            try:
                check_placeholders(text, volumes, addresses)
            except ValueError as e:
                raise fail(loc, str(e)) from e


def _texts_with_placeholders(config: StudyConfig, sut: SutSpec) -> list[tuple[KeyPath, str | None]]:
    """The cell's commands and URLs that may name a volume or an address, with where they are."""
    texts: list[tuple[KeyPath, str | None]] = [(("sut", "start"), sut.start), (("sut", "stop"), sut.stop)]
    if sut.ready is not None:
        texts += [(("sut", "ready", k), getattr(sut.ready, k)) for k in ("url", "command", "host")]
    for kind in ("http", "tcp", "postgres"):
        target = getattr(config.target, kind) if config.target else None
        if target is not None:
            texts.append((("target", kind, "url"), target.url))
    if sut.metrics is not None:
        texts.append((("sut", "metrics", "url"), sut.metrics.url))
    if config.job is not None:
        texts += [(("job", "reset"), config.job.reset), (("job", "prepare"), config.job.prepare)]
        texts += [(("job", "phases", i, "run"), p.run) for i, p in enumerate(config.job.phases)]
    return texts


def check_disk_room(path: Path, lines: dict[KeyPath, int], config: StudyConfig) -> None:
    """A cell's volumes fit in the space free where their images go (under the study's directory):
    said here, before anything runs, rather than by the first cell that cannot make its volume."""
    used = [c for p in role_hardware(config).values() for c in p.volume_class_names.values()]
    if not used:
        return
    where = path.parent.resolve()
    free = shutil.disk_usage(where).free
    total = 0
    for vclass in used:
        size = config.volumes[vclass].size
        total += size
        if total > free:
            need = (
                f"{format_size(size)} is"
                if size == total
                else f"with the cell's other volumes, {format_size(total)} in all, is"
            )
            raise SpecError(
                f"{path}:{line_of(lines, ('volumes', vclass, 'size'))}: volumes.{vclass}.size: {need} more "
                f"than the {format_size(free)} free under {where} (where the cell's volumes are made)"
            )


def check_counters(path: Path, lines: dict[KeyPath, int], config: StudyConfig) -> None:
    """A phase whose items are the system's counter needs the endpoint to read it from."""
    if config.job is None or (config.sut is not None and config.sut.metrics is not None):
        return
    for i, phase in enumerate(config.job.phases):
        if isinstance(phase.items, CounterItems):
            loc: KeyPath = ("job", "phases", i, "items", "counter")
            raise SpecError(
                f"{path}:{line_of(lines, loc)}: job.phases.{i}.items.counter: the system's counter is "
                "read from sut.metrics: add it (url, and a rate or gauge to sample)"
            )
