"""A cell's load as the engine's `LoadSpec`, so a study and ``caplab load`` build plans alike: the
target and load sections read, a PostgreSQL target's databases prepared, a usage profile's actions
each with their own request."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from caplab.engine import LoadSpec, Plan, Target, build_plan
from caplab.spec import StudyConfig
from caplab.study.usage import mail_load, usage_actions
from caplab.workloads.postgres import prepare


def load_spec_for(config: StudyConfig, directory: Path) -> LoadSpec:
    """One cell's load as a `LoadSpec`, so a study and `caplab load` build plans alike. A
    PostgreSQL target is tried first (``DatabaseProblem`` when it cannot be used)."""
    target_spec, load = config.requests
    pg = target_spec.postgres
    places = pg.places() if pg is not None else [""]
    times = len(places) if load.per_target else 1  # users or rate given per place in the list
    shape = LoadSpec(
        url="",
        rate=load.rate * times if load.open_model and load.rate is not None else None,
        ramp_to=load.ramp_to * times if load.ramp_to is not None else None,
        users=None if load.open_model else (load.users or 10) * times,
        think_s=load.think,
        think_dist=load.think_dist,
        logon_s=load.logon,
        schedule=load.schedule,
        duration_s=load.duration,
        warmup_s=load.warmup,
        threads=load.threads,
        connections=load.connections,
        timeout_s=load.timeout,
        interval_s=load.interval,
    )
    if pg is not None:
        sql_file = directory / pg.sql_file if pg.sql_file else None
        passfile = directory / pg.passfile if pg.passfile else None
        # each database tried once (and its ledger made), however many places it takes
        found = {
            u: prepare(u, pg.workload, sql_file, passfile, ledger=pg.ledger) for u in dict.fromkeys(places)
        }
        first = found[places[0]]
        return replace(
            shape,
            url=first.url,
            password=first.password,
            scale=first.scale,
            workload=first.workload,
            body=first.script,
            extra_targets=tuple(
                Target(found[u].url, None, found[u].password, found[u].scale) for u in places[1:]
            ),
        )
    if target_spec.mail is not None:
        return mail_load(target_spec.mail, shape, load.usage, directory)
    target = target_spec.http or target_spec.tcp
    assert target is not None
    http = target_spec.http
    if load.usage is not None:  # each action brings its own request; the target only its URL
        framing = target_spec.tcp.framing if target_spec.tcp else None
        return replace(shape, url=target.url, framing=framing, usage=usage_actions(load.usage, directory))
    return replace(
        shape,
        url=target.url,
        method=http.method if http else "GET",
        headers=tuple(http.headers.items()) if http else (),
        body=target.body,
        body_file=(directory / target.body_file) if target.body_file else None,
        template=target.template,
        framing=target_spec.tcp.framing if target_spec.tcp else None,
        extra_targets=tuple(
            Target(url, target_spec.tcp.framing if target_spec.tcp else None) for url in target.also
        ),
    )


def plan_for(config: StudyConfig, directory: Path) -> Plan:
    return build_plan(load_spec_for(config, directory))
