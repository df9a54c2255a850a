"""The study as validated, every default filled in, kept beside the file as written.

A report then states what was run (``load.duration`` of 30 s when the file left it out) without
repeating the spec's defaults. Nullable: a study stored before this revision has none, and its
report falls back to reading the file as written.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("studies") as batch:
        batch.add_column(sa.Column("validated", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("studies") as batch:
        batch.drop_column("validated")
