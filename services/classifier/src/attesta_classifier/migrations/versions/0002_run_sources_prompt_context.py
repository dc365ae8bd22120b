"""Runs keep the sources their answer cites and the collector's prompt context (id, set, tags),
for the metrics' source share, top cited domains and splits by prompt tag (docs/metrics.md).

Runs stay append-only: rows recorded before this revision keep empty sources and no context
(the trigger refuses UPDATE, so they are not backfilled).

Revision ID: 0002
Revises: 0001
"""
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE runs ADD COLUMN sources jsonb NOT NULL DEFAULT '[]'::jsonb, "
               "ADD COLUMN prompt_context jsonb")


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN prompt_context, DROP COLUMN sources")
