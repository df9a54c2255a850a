"""The store's tables (SQLAlchemy Core). The Alembic migrations build exactly this; a test checks it.

One row per study, cell (a point of the factor matrix) and trial (one engine run); a trial owns its
interval series, its HDR histograms (V2 encoded, as the engine wrote them) and its resource samples
in long format, so a new collector needs no schema change. JSON columns hold what is shaped by the
engine or the analysis rather than by the store (factors, metrics, the trial summary).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.types import TypeDecorator

# Deterministic constraint names, so later migrations can name what they alter (SQLite batch mode
# and PostgreSQL both need the name).
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out. SQLite keeps no offset, so values are stored as UTC and
    read back with the UTC zone attached; PostgreSQL keeps ``timestamptz``."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("the store keeps timezone-aware timestamps only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _json() -> JSON:
    """JSON where Python ``None`` means SQL NULL (not the JSON literal ``null``)."""
    return JSON(none_as_null=True)


def _fk(target: str) -> ForeignKey:
    return ForeignKey(target, ondelete="CASCADE")


# A surrogate key for the long table; SQLite only auto-increments an INTEGER primary key.
_BigId: Any = BigInteger().with_variant(Integer(), "sqlite")

studies = Table(
    "studies",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False, index=True),
    Column("status", String(20), nullable=False),
    Column("spec_text", Text, nullable=False),
    Column("spec_path", Text, nullable=False),
    Column("environment", _json(), nullable=False),
    Column("caplab_version", String(40), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("finished_at", UtcDateTime),
    # The study as validated, every default filled in (null for a study stored before it was kept).
    Column("validated", _json()),
)

cells = Table(
    "cells",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("study_id", Integer, _fk("studies.id"), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("factors", _json(), nullable=False),
    Column("status", String(20), nullable=False),
    Column("error", Text),
    Column("metrics", _json()),
    Column("resources", _json()),
    Column("started_at", UtcDateTime),
    Column("finished_at", UtcDateTime),
    UniqueConstraint("study_id", "idx"),
)

trials = Table(
    "trials",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("cell_id", Integer, _fk("cells.id"), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("kind", String(20), nullable=False),
    Column("status", String(20), nullable=False),
    Column("model", String(10), nullable=False),
    Column("offered_rate", Float),
    Column("users", Integer),
    Column("duration_s", Float, nullable=False),
    Column("sent", BigInteger, nullable=False),
    Column("completed", BigInteger, nullable=False),
    Column("errors", BigInteger, nullable=False),
    Column("dropped", BigInteger, nullable=False),
    Column("throughput", Float, nullable=False),
    # The engine's result object without its interval series and histograms (stored beside it).
    Column("summary", _json(), nullable=False),
    Column("started_at", UtcDateTime, nullable=False),
    UniqueConstraint("cell_id", "kind", "idx"),
)

intervals = Table(
    "intervals",
    metadata,
    Column("trial_id", Integer, _fk("trials.id"), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("start_s", Float, nullable=False),
    Column("end_s", Float, nullable=False),
    Column("warmup", Boolean, nullable=False),
    Column("sent", BigInteger, nullable=False),
    Column("completed", BigInteger, nullable=False),
    Column("errors", BigInteger, nullable=False),
    Column("dropped", BigInteger, nullable=False),
    Column("in_flight", BigInteger, nullable=False),
    Column("throughput", Float, nullable=False),
    Column("latency_count", BigInteger, nullable=False),
    Column("min_ms", Float),
    Column("mean_ms", Float),
    Column("p50_ms", Float),
    Column("p90_ms", Float),
    Column("p99_ms", Float),
    Column("p999_ms", Float),
    Column("max_ms", Float),
    # Fields a newer engine adds to a snapshot, kept so that nothing it reports is lost.
    Column("extra", _json()),
    PrimaryKeyConstraint("trial_id", "idx"),
)

histograms = Table(
    "histograms",
    metadata,
    Column("trial_id", Integer, _fk("trials.id"), nullable=False),
    Column("class_name", String(200), nullable=False),  # a request class, or '*' for all of them
    Column("kind", String(40), nullable=False),  # 'latency' | 'service_time'
    Column("encoding", String(40), nullable=False),  # 'hdr-v2-base64'
    Column("data", Text, nullable=False),
    PrimaryKeyConstraint("trial_id", "class_name", "kind"),
)

resource_samples = Table(
    "resource_samples",
    metadata,
    Column("id", _BigId, primary_key=True),
    Column("trial_id", Integer, _fk("trials.id"), nullable=False, index=True),
    Column("t", Float, nullable=False),
    Column("scope", String(200), nullable=False),
    Column("metric", String(200), nullable=False),
    Column("value", Float, nullable=False),
)

events = Table(
    "events",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("study_id", Integer, _fk("studies.id"), nullable=False, index=True),
    Column("cell_id", Integer, _fk("cells.id")),
    Column("trial_id", Integer, ForeignKey("trials.id", ondelete="SET NULL")),
    Column("at", UtcDateTime, nullable=False),
    Column("kind", String(40), nullable=False),
    Column("message", Text, nullable=False),
)
