"""Option types and option groups shared by several commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from caplab.cli.mail_options import MAIL_OPTIONS, pop_mail_options
from caplab.engine import DEFAULT_TIMEOUT_S, UsageProblem, is_postgres
from caplab.units import parse_duration
from caplab.workloads.postgres import BUILT_IN, prepare

DB_HELP = "Results store URL [default: $CAPLAB_DB or sqlite:///caplab.db]; postgresql://… for PostgreSQL."


class Duration(click.ParamType[float, Any]):
    """A click type for ``500ms``, ``30s``, ``2m``; the value is seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


DURATION = Duration()


def parse_steps(text: str) -> tuple[tuple[float, float], ...]:
    """``100:5s,200:5s`` → ((100.0, 5.0), (200.0, 5.0))."""
    steps = []
    for item in text.split(","):
        rate, sep, dur = item.partition(":")
        if not sep:
            raise UsageProblem(f"--steps item {item!r} must be RATE:DURATION, e.g. 100:5s")
        try:
            steps.append((float(rate), parse_duration(dur)))
        except ValueError as e:
            raise UsageProblem(f"--steps item {item!r}: {e}") from e
    return tuple(steps)


def parse_header(text: str) -> tuple[str, str]:
    """``Name: value`` → (name, value): the one place a header is text."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise UsageProblem(f"header {text!r} must look like 'Name: value'")
    return name.strip(), value.strip()


def request_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options that shape requests and connections, shared by `load` and `find-capacity`."""
    for option in reversed(_REQUEST_OPTIONS):
        command = option(command)
    return command


def request_fields(options: dict[str, Any], url: str) -> dict[str, Any]:
    """The request options as `LoadSpec` fields (headers parsed into pairs). A PostgreSQL target is
    tried once here (raising ``DatabaseProblem``): its URL loses its password, which travels apart,
    and the transaction script becomes the request's body."""
    workload, sql_file = options.pop("workload", None), options.pop("sql_file", None)
    usage_file: Path | None = options.pop("usage", None)
    mail = pop_mail_options(options, url)
    fields = {**options, "headers": tuple(parse_header(h) for h in options.get("headers", ()))}
    if usage_file is not None:  # raises SpecError (file:line: field: message) for a bad file
        # The study file's parser, only when a profile is given: `ls`, `report` and the other
        # commands that share these options start 0.2 s sooner.
        from caplab.spec import load_usage
        from caplab.study.usage import usage_actions

        fields["usage"] = usage_actions(load_usage(usage_file), usage_file.parent)
    if mail is not None:
        fields["mail"] = mail
    if not is_postgres(url):
        if workload or sql_file:
            raise UsageProblem("--workload and --sql-file apply to postgresql:// targets")
        return fields
    if options.get("body") or options.get("body_file"):
        raise UsageProblem("a postgresql:// target runs --workload or --sql-file, not --body")
    target = prepare(url, workload, sql_file)
    return fields | {
        "url": target.url,
        "password": target.password,
        "scale": target.scale,
        "workload": target.workload,
        "body": target.script,
    }


_REQUEST_OPTIONS = [
    click.option(
        "--usage",
        type=click.Path(path_type=Path, dir_okay=False),
        help="A usage profile (YAML: actions: NAME: {per_hour: R, method, path, headers, body}): each "
        "user does the actions at their rates, thinking 3600 s / their sum (exponential) between them; "
        "statistics per action.",
    ),
    click.option(
        "-t", "--threads", type=click.IntRange(min=1), help="Worker threads [default: CPUs available]."
    ),
    click.option(
        "-c",
        "--connections",
        type=click.IntRange(min=1),
        help="Open model: most requests in flight [default: rate × 1 s]. Closed: users if --users absent.",
    ),
    click.option("-m", "--method", default="GET", show_default=True),
    click.option(
        "-H", "--header", "headers", multiple=True, help="Request header 'Name: value' (repeatable)."
    ),
    click.option("--body", help="Request body (HTTP) or payload (TCP)."),
    click.option(
        "--body-file", type=click.Path(path_type=Path), help="Read the body or payload from a file."
    ),
    click.option(
        "--template", is_flag=True, help="Replace {seq} in the body with a per-request sequence number."
    ),
    click.option(
        "--framing", type=click.Choice(["line", "u32", "mllp"]), help="TCP framing (tcp:// and tls:// URLs)."
    ),
    click.option(
        "--insecure",
        is_flag=True,
        help="https:// and tls:// URLs: take the server's certificate unverified (a test certificate).",
    ),
    click.option(
        "--cacert",
        "ca_file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="https:// and tls:// URLs: trust only the CA certificates in this PEM file.",
    ),
    click.option(
        "--tls-resume/--no-tls-resume",
        "tls_resume",
        default=True,
        show_default=True,
        help="https:// and tls:// URLs: new connections resume the server's TLS session; "
        "--no-tls-resume pays a full handshake every time.",
    ),
    click.option(
        "--workload",
        type=click.Choice(sorted(BUILT_IN)),
        help="postgresql:// URLs: pgbench's built-in transaction (tpcb, the default, or select-only); "
        "load the tables with `pgbench -i -s SCALE` first.",
    ),
    click.option(
        "--sql-file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="postgresql:// URLs: a pgbench script (\\set NAME random(…); SQL with :NAME) to run.",
    ),
    click.option(
        "--timeout",
        "timeout_s",
        type=DURATION,
        default=DEFAULT_TIMEOUT_S,
        show_default=True,
        help="Per request.",
    ),
    *MAIL_OPTIONS,
]
