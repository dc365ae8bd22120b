"""Runs keep how their answer was collected (issue #25 item 4): the engine's declared
``collection_method`` (plain API, API with web search or grounding, our own assistant) and the
``model_build`` the endpoint reported (its response's model name and system fingerprint), so
the metrics can be split by method and a build change marked on the charts.

Runs stay append-only: rows recorded before this revision keep both null (the trigger refuses
UPDATE, so they are not backfilled; the metrics count them as method "unknown").

Revision ID: 0005
Revises: 0004
"""
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE runs ADD COLUMN collection_method text "
               "CHECK (length(collection_method) BETWEEN 1 AND 100), "
               "ADD COLUMN model_build jsonb")


def downgrade() -> None:
    op.execute("ALTER TABLE runs DROP COLUMN model_build, DROP COLUMN collection_method")
