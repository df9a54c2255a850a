"""The first schema: studies, cells, trials, intervals, histograms, resource samples, events.

Written out in full rather than imported from ``caplab.store.schema``: a migration describes the
schema as it was at this revision, whatever the live module says later.

Revision ID: 0001
Revises:
Create Date: 2024-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "studies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("spec_text", sa.Text(), nullable=False),
        sa.Column("spec_path", sa.Text(), nullable=False),
        sa.Column("environment", sa.JSON(), nullable=False),
        sa.Column("caplab_version", sa.String(40), nullable=False),
        sa.Column("created_at", _timestamp(), nullable=False),
        sa.Column("finished_at", _timestamp(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_studies"),
    )
    op.create_index("ix_studies_name", "studies", ["name"])

    op.create_table(
        "cells",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("factors", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=True),
        sa.Column("resources", sa.JSON(), nullable=True),
        sa.Column("started_at", _timestamp(), nullable=True),
        sa.Column("finished_at", _timestamp(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_cells"),
        sa.ForeignKeyConstraint(
            ["study_id"], ["studies.id"], name="fk_cells_study_id_studies", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("study_id", "idx", name="uq_cells_study_id_idx"),
    )

    op.create_table(
        "trials",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("cell_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("model", sa.String(10), nullable=False),
        sa.Column("offered_rate", sa.Float(), nullable=True),
        sa.Column("users", sa.Integer(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("sent", sa.BigInteger(), nullable=False),
        sa.Column("completed", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("dropped", sa.BigInteger(), nullable=False),
        sa.Column("throughput", sa.Float(), nullable=False),
        sa.Column("summary", sa.JSON(), nullable=False),
        sa.Column("started_at", _timestamp(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_trials"),
        sa.ForeignKeyConstraint(
            ["cell_id"], ["cells.id"], name="fk_trials_cell_id_cells", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("cell_id", "kind", "idx", name="uq_trials_cell_id_kind_idx"),
    )

    op.create_table(
        "intervals",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("start_s", sa.Float(), nullable=False),
        sa.Column("end_s", sa.Float(), nullable=False),
        sa.Column("warmup", sa.Boolean(), nullable=False),
        sa.Column("sent", sa.BigInteger(), nullable=False),
        sa.Column("completed", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("dropped", sa.BigInteger(), nullable=False),
        sa.Column("in_flight", sa.BigInteger(), nullable=False),
        sa.Column("throughput", sa.Float(), nullable=False),
        sa.Column("latency_count", sa.BigInteger(), nullable=False),
        sa.Column("min_ms", sa.Float(), nullable=True),
        sa.Column("mean_ms", sa.Float(), nullable=True),
        sa.Column("p50_ms", sa.Float(), nullable=True),
        sa.Column("p90_ms", sa.Float(), nullable=True),
        sa.Column("p99_ms", sa.Float(), nullable=True),
        sa.Column("p999_ms", sa.Float(), nullable=True),
        sa.Column("max_ms", sa.Float(), nullable=True),
        sa.Column("extra", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("trial_id", "idx", name="pk_intervals"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_intervals_trial_id_trials", ondelete="CASCADE"
        ),
    )

    op.create_table(
        "histograms",
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("class_name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("encoding", sa.String(40), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("trial_id", "class_name", "kind", name="pk_histograms"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_histograms_trial_id_trials", ondelete="CASCADE"
        ),
    )

    op.create_table(
        "resource_samples",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("trial_id", sa.Integer(), nullable=False),
        sa.Column("t", sa.Float(), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_resource_samples"),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_resource_samples_trial_id_trials", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_resource_samples_trial_id", "resource_samples", ["trial_id"])

    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("cell_id", sa.Integer(), nullable=True),
        sa.Column("trial_id", sa.Integer(), nullable=True),
        sa.Column("at", _timestamp(), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.ForeignKeyConstraint(
            ["study_id"], ["studies.id"], name="fk_events_study_id_studies", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["cell_id"], ["cells.id"], name="fk_events_cell_id_cells", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["trial_id"], ["trials.id"], name="fk_events_trial_id_trials", ondelete="SET NULL"
        ),
    )
    op.create_index("ix_events_study_id", "events", ["study_id"])


def downgrade() -> None:
    for index, table in (
        ("ix_events_study_id", "events"),
        ("ix_resource_samples_trial_id", "resource_samples"),
    ):
        op.drop_index(index, table_name=table)
    for table in ("events", "resource_samples", "histograms", "intervals", "trials", "cells"):
        op.drop_table(table)
    op.drop_index("ix_studies_name", table_name="studies")
    op.drop_table("studies")
